// libFuzzer target for http/h2_session as a client, used as hotpath load uses it: ten requests in flight (some with
// bodies the caller keeps, larger than the peer's windows), each with a slot of its own as its stream's user data, and
// a new request in place of each stream that closes until a GOAWAY. The input is what a server sends (its SETTINGS,
// responses, resets, GOAWAYs, whole or broken), fed in pieces whose sizes come from the input. Properties: no crash,
// no over-read (ASan); every callback's stream names a slot in use or none; a slot closes once per request; the
// session's memory stays bounded.
#include <hotpath/http/h2_session.hpp>

#include "fuzz_support.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace hotpath::http;
using hotpath::fuzz::require;

struct slot {
    bool in_use = false;
    std::int32_t stream = 0;
    h2_body body;
};

struct client final : h2_events {
    std::unique_ptr<h2_session> session;
    std::array<slot, 10> slots{};
    std::vector<slot*> closed;
    bool gone_away = false;

    // The slot `stream` names: one of ours and in use, or none.
    slot* of(std::int32_t stream) const {
        auto* s = static_cast<slot*>(session->stream_user(stream));
        require(s == nullptr ||
                (s >= slots.data() && s < slots.data() + slots.size() && s->in_use && s->stream == stream));
        return s;
    }
    void on_h2_field(std::int32_t stream, std::string_view, std::string_view) override { (void)of(stream); }
    void on_h2_headers(std::int32_t stream) override { (void)of(stream); }
    void on_h2_data(std::int32_t stream, std::string_view) override { (void)of(stream); }
    void on_h2_end(std::int32_t stream) override { (void)of(stream); }
    void on_h2_closed(std::int32_t stream, h2_error) override {
        if (slot* s = of(stream); s != nullptr) {
            for (const slot* c : closed) {
                require(c != s); // closed once
            }
            closed.push_back(s);
        }
    }
    void on_h2_goaway(std::int32_t, h2_error) override { gone_away = true; }

    void fill(const std::string& big) {
        static const std::array<h2_field, 4> get{
            {{":method", "GET"}, {":scheme", "http"}, {":authority", "fuzz.test"}, {":path", "/"}}};
        static const std::array<h2_field, 5> post{{{":method", "POST"},
                                                   {":scheme", "http"},
                                                   {":authority", "fuzz.test"},
                                                   {":path", "/upload"},
                                                   {"content-length", "100000"}}};
        for (std::size_t i = 0; i < slots.size() && !gone_away && session->may_open_stream(); ++i) {
            slot& s = slots[i];
            if (s.in_use) {
                continue;
            }
            const bool upload = i % 3 == 0;
            s.body = {big, 0};
            const std::int32_t id = upload ? session->request(post, &s.body, &s) : session->request(get, nullptr, &s);
            if (id < 0) {
                return;
            }
            s.in_use = true;
            s.stream = id;
        }
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::string big(100000, 'b');
    client c;
    h2_settings settings;
    settings.initial_window_size = (1u << 30) - 1; // the load generator's windows
    settings.connection_window = (1u << 30) - 1;
    c.session = h2_session::make(h2_session::role::client, c, settings);
    require(c.session != nullptr);
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::size_t piece = 1 + data[0] % 64; // the input's first byte: the size of each read
    std::string out;
    c.fill(big);
    bool broken = static_cast<bool>(c.session->produce(out, 1 << 20));
    for (std::size_t at = 0; at < input.size() && !broken; at += piece) {
        broken = static_cast<bool>(c.session->receive(input.substr(at, piece)));
        out.clear();
        broken = c.session->produce(out, 1 << 20) || broken; // closes may come as frames go out too
        for (slot* s : c.closed) {
            s->in_use = false;
            s->stream = 0;
        }
        c.closed.clear();
        if (!broken) {
            c.fill(big);
        }
        require(c.session->bytes_held() < (32u << 20));
    }
    return 0;
}
