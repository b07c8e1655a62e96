// libFuzzer target for http/h2_session as a server: after a valid connection preface and SETTINGS, the input is what
// a client sends (frames, whole or broken), fed in pieces whose sizes come from the input. Every whole request is
// answered. Properties: no crash, no over-read (ASan), and the session's memory bounded whatever the frames ask for.
#include <hotpath/http/h2_session.hpp>

#include "fuzz_support.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace hotpath::http;
using hotpath::fuzz::require;

struct answering final : h2_events {
    std::vector<std::int32_t> whole;
    void on_h2_field(std::int32_t, std::string_view, std::string_view) override {}
    void on_h2_headers(std::int32_t) override {}
    void on_h2_data(std::int32_t, std::string_view) override {}
    void on_h2_end(std::int32_t s) override { whole.push_back(s); }
    void on_h2_closed(std::int32_t, h2_error) override {}
    void on_h2_goaway(std::int32_t, h2_error) override {}
};

// The client's connection preface (RFC 9113 §3.4) and an empty SETTINGS frame.
constexpr std::string_view preface{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00", 33};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    answering events;
    auto server = h2_session::make(h2_session::role::server, events);
    require(server != nullptr);
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::size_t piece = 1 + data[0] % 64; // the input's first byte: the size of each read
    std::string out;
    bool broken = static_cast<bool>(server->receive(preface));
    require(!broken);
    const std::vector<h2_field> fields{{":status", "200"}, {"content-type", "text/plain"}};
    for (std::size_t at = 0; at < input.size() && !broken; at += piece) {
        broken = static_cast<bool>(server->receive(input.substr(at, piece)));
        for (const std::int32_t s : events.whole) {
            (void)server->respond(s, fields, "Hello, World!"); // a stream already reset refuses: fine
        }
        events.whole.clear();
        out.clear();
        if (server->produce(out, 1 << 20)) {
            broken = true;
        }
        // The peer may ask for a lot (streams, tables, windows): what the session keeps stays bounded.
        require(server->bytes_held() < (32u << 20));
    }
    return 0;
}
