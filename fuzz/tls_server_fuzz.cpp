// libFuzzer target for the TLS glue (net/tls): the input, in pieces of a size its first byte chooses, as records from
// a client into a real server session on an in-memory transport, then the end of the stream. Properties: no crash
// (ASan, UBSan), the session ends (a failure or the stream's end) and closes by itself, the plain side gets nothing
// that no handshake allowed, and what the session sent stays bounded by what it was given. Certificates are made
// once per run by scripts/make-test-certs.sh.
#include "support/memory_transport.hpp"
#include <hotpath/net/loop.hpp>
#include <hotpath/net/timer.hpp>
#include <hotpath/net/tls.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <unistd.h>

namespace {

void require(bool condition) {
    if (!condition) {
        std::abort();
    }
}

std::shared_ptr<hotpath::net::tls_context> server_context() {
    static const std::shared_ptr<hotpath::net::tls_context> c = [] {
        const std::string dir = "/tmp/hotpath_tls_fuzz_" + std::to_string(::getpid());
        const std::string command = "bash " HOTPATH_SOURCE_DIR "/scripts/make-test-certs.sh " + dir + " > /dev/null";
        require(std::system(command.c_str()) == 0);
        hotpath::net::tls_server_options o;
        o.cert_file = dir + "/server.pem";
        o.key_file = dir + "/server.key";
        o.alpn = {"http/1.1"};
        auto made = hotpath::net::tls_context::server(o);
        require(made.has_value());
        return *made;
    }();
    return c;
}

struct plain final : hotpath::net::transport_owner {
    std::string got;
    bool ended = false;
    bool closed = false;
    void on_transport_data(std::string_view bytes) override { got.append(bytes); }
    void on_transport_end(std::error_code) override { ended = true; }
    void on_transport_written(std::error_code) override {}
    void on_transport_closed() override { closed = true; }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::size_t piece = 1 + data[0] % 64;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    hotpath::net::loop l(0);
    l.disable_ring();
    hotpath::test::memory_transports sockets;
    hotpath::net::tls_transports tls(server_context(), sockets);
    plain side;
    std::unique_ptr<hotpath::net::transport> session;
    l.post([&] {
        session = tls.make(l, -1, side);
        session->start_reading();
        auto& peer = sockets.peers().front();
        for (std::size_t at = 0; at < input.size(); at += piece) {
            peer.send(input.substr(at, piece));
        }
        peer.end();
        peer.on_change([&] {
            if (peer.closed()) {
                l.stop();
            }
        });
    });
    // The end of the stream ends the session; its owner then closes it, as a connection does.
    hotpath::net::timer check(l);
    std::function<void()> poll = [&] {
        if (side.ended && session) {
            session->close();
        }
        check.arm_after(std::chrono::milliseconds{1}, poll);
    };
    check.arm_after(std::chrono::milliseconds{1}, poll);
    hotpath::net::timer guard(l);
    guard.arm_after(std::chrono::seconds{5}, [&l] { l.stop(); });
    l.run();
    require(side.ended);       // no hang: the end came through
    require(side.closed);      // and the session closed
    require(side.got.empty()); // random bytes never complete a handshake with plain data
    require(sockets.peers().front().received().size() <= 64 * 1024 + 8 * input.size()); // bounded answers
    return 0;
}
