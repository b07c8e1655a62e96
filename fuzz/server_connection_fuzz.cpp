// libFuzzer target at the connection level: the input, in pieces of a size its first byte chooses, into a real
// server_connection on in-memory transports (routing, handlers, bodies, pipelining, errors), then the end of the
// stream. Properties: no crash (ASan, UBSan), the connection closes by itself after the end (no hang), what it wrote
// is HTTP responses one after another, at most one final response per request it could have read, and the loop
// holds no connection afterwards. An input that opens with HTTP/2's preface reaches the HTTP/2 path (h2_connection):
// its streams routed to the same handlers, answered as frames.
#include "support/memory_server.hpp"
#include <hotpath/server/app.hpp>
#include <hotpath/server/h2_connection.hpp>

#include "fuzz_support.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace {

using hotpath::fuzz::require;

const hotpath::app& routes() {
    static const hotpath::app a = [] {
        hotpath::app r;
        r.get("/", [](hotpath::request&, hotpath::response& res) { res.text("hello"); });
        r.any("/echo", [](hotpath::request& req, hotpath::response& res) { res.text(req.body()); });
        r.get("/items/{id}", [](hotpath::request& req, hotpath::response& res) { res.text(req.param("id")); });
        r.get("/stream", [](hotpath::request&, hotpath::response& res) -> hotpath::task<void> {
            for (int i = 0; i < 3; ++i) {
                if (!co_await res.write(std::string(20000, 's'))) { // past a stream's 64 KiB high water by the third
                    co_return;
                }
            }
        });
        r.streaming(
            hotpath::http::method::put, "/up",
            [](hotpath::request& req, hotpath::response& res) -> hotpath::task<void> {
                std::size_t bytes = 0;
                for (;;) {
                    auto piece = co_await req.read_body();
                    if (!piece || piece->empty()) {
                        break;
                    }
                    bytes += piece->size();
                }
                res.text(std::to_string(bytes));
            },
            4096);
        return r;
    }();
    return a;
}

hotpath::test::memory_server& server() {
    static hotpath::test::memory_server s(routes(), [] {
        hotpath::server_options o;
        // Small limits, so that short inputs reach them.
        o.limits.max_request_line_bytes = 256;
        o.limits.max_header_bytes = 1024;
        o.limits.max_header_count = 16;
        o.limits.max_body_bytes = 4096;
        return o;
    }());
    return s;
}

// Status lines at the start of each response in `out`: each response starts where the previous one's head and
// body end is not known here (HEAD answers), so every "HTTP/1.1 " that begins a line after a blank line counts.
std::size_t responses(std::string_view out) {
    std::size_t n = 0;
    for (std::size_t at = out.find("HTTP/1.1 "); at != std::string_view::npos; at = out.find("HTTP/1.1 ", at + 1)) {
        if (at == 0 || out.substr(0, at).ends_with("\r\n\r\n") || out.substr(0, at).ends_with("\r\n")) {
            ++n;
        }
    }
    return n;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::size_t piece = data[0] == 0 ? size : data[0]; // 0: the whole input at once
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    hotpath::test::memory_server& s = server();
    hotpath::test::memory_peer* peer = nullptr;
    const bool closed = s.run(
        [&] {
            peer = &s.connect();
            for (std::size_t at = 0; at < input.size(); at += piece) {
                peer->send(input.substr(at, piece));
            }
            peer->end();
        },
        [&] { return peer != nullptr && peer->closed(); }, std::chrono::seconds{3});
    require(closed);
    const std::string& out = peer->received();
    if (input.starts_with(hotpath::h2_connection::preface)) {
        // HTTP/2 with prior knowledge: the server's first frame is its SETTINGS (type 4, no flags, stream 0).
        require(out.size() >= 9 && out[3] == '\x04' && out[4] == '\0' &&
                out.substr(5, 4) == std::string_view("\0\0\0\0", 4));
    } else {
        require(out.empty() || out.starts_with("HTTP/1.1 "));
        // A request is at least "GET / HTTP/1.0\r\n\r\n" less its version's digits: 14 bytes (and each may draw a
        // 100 Continue besides its answer).
        require(responses(out) <= 2 * (input.size() / 14 + 1));
    }
    require(s.loop_worker().connection_count() == 0);
    s.forget_peers(); // one run's peer at a time: kept, they grew the process by ~2 KB a run (2 GB in two minutes)
    return 0;
}
