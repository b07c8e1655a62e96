// A response's fields for HTTP/2: the exact list, names lower-cased, connection-specific fields left out, statuses
// without content, the buffers reused; and the list through a real server session to a client, byte for byte.
#include <hotpath/http/h2_fields.hpp>
#include <hotpath/http/response.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace hotpath::http {
namespace {

using field_list = std::vector<std::pair<std::string, std::string>>;

field_list listed(const h2_response_fields& f) {
    field_list out;
    for (const h2_field& x : f.fields()) {
        out.emplace_back(x.name, x.value);
    }
    return out;
}

constexpr std::string_view date = "Sat, 05 Dec 2026 18:00:00 GMT";

TEST(h2_fields_test, a_response_as_http2_sends_it) {
    response r;
    r.status(404);
    ASSERT_TRUE(r.header("X-Request-Id", "abc"));
    ASSERT_TRUE(r.header("Cache-Control", "no-store"));
    ASSERT_TRUE(r.header("Keep-Alive", "timeout=5")); // HTTP/1.1's own: HTTP/2 forbids it
    ASSERT_TRUE(r.header("Upgrade", "h2c"));
    ASSERT_TRUE(r.header("Server-Timing", "app;dur=1.5"));
    r.text("not here");
    h2_response_fields f;
    f.build(r, date, r.body().size());
    EXPECT_EQ(listed(f), (field_list{{":status", "404"},
                                     {"server", "hotpath"},
                                     {"date", std::string(date)},
                                     {"x-request-id", "abc"},
                                     {"cache-control", "no-store"},
                                     {"server-timing", "app;dur=1.5"},
                                     {"content-type", "text/plain; charset=utf-8"},
                                     {"content-length", "8"}}));

    // The handler's fields come back as written, in order.
    field_list seen;
    r.for_each_field([&](std::string_view n, std::string_view v) { seen.emplace_back(n, v); });
    EXPECT_EQ(seen, (field_list{{"X-Request-Id", "abc"},
                                {"Cache-Control", "no-store"},
                                {"Keep-Alive", "timeout=5"},
                                {"Upgrade", "h2c"},
                                {"Server-Timing", "app;dur=1.5"}}));
}

TEST(h2_fields_test, statuses_without_content_and_bodies_of_unknown_length) {
    response r;
    r.status(204);
    r.text("ignored");
    h2_response_fields f;
    f.build(r, date, 7);
    EXPECT_EQ(listed(f), (field_list{{":status", "204"}, {"server", "hotpath"}, {"date", std::string(date)}}));
    r.clear();
    r.status(200);
    r.content_type("application/octet-stream");
    f.build(r, date, std::nullopt); // streamed, length unknown: END_STREAM ends it
    EXPECT_EQ(listed(f), (field_list{{":status", "200"},
                                     {"server", "hotpath"},
                                     {"date", std::string(date)},
                                     {"content-type", "application/octet-stream"}}));
    r.clear();
    r.redirect("/elsewhere", status::moved_permanently);
    f.build(r, date, 0);
    EXPECT_EQ(listed(f), (field_list{{":status", "301"},
                                     {"server", "hotpath"},
                                     {"date", std::string(date)},
                                     {"location", "/elsewhere"},
                                     {"content-length", "0"}}));
}

TEST(h2_fields_test, the_buffers_keep_their_place_once_grown) {
    response r;
    for (int i = 0; i < 40; ++i) {
        ASSERT_TRUE(r.header("X-Field-" + std::to_string(i), std::string(100, 'v')));
    }
    h2_response_fields f;
    f.build(r, date, 0);
    ASSERT_EQ(f.fields().size(), 3u + 40u + 1u);
    const h2_field* first = f.fields().data();
    const char* text = f.fields()[3].name.data();
    f.build(r, date, 0);
    EXPECT_EQ(f.fields().data(), first) << "the same response again: no growth";
    EXPECT_EQ(f.fields()[3].name.data(), text);
    EXPECT_EQ(f.fields()[42].name, "x-field-39");
    EXPECT_EQ(f.fields()[42].value, std::string(100, 'v'));
}

// Through nghttp2 both ways: what a server session sends from these fields is what a client session hears (nghttp2
// checks the header block as HTTP/2 messaging requires: lower-case names, no connection-specific fields).
struct heard final : h2_events {
    field_list fields;
    std::string body;
    bool closed = false;
    h2_error error = h2_error::internal_error;
    std::int32_t request = 0;
    void on_h2_field(std::int32_t, std::string_view n, std::string_view v) override { fields.emplace_back(n, v); }
    void on_h2_headers(std::int32_t) override {}
    void on_h2_data(std::int32_t, std::string_view b) override { body.append(b); }
    void on_h2_end(std::int32_t s) override { request = s; }
    void on_h2_closed(std::int32_t, h2_error e) override {
        closed = true;
        error = e;
    }
    void on_h2_goaway(std::int32_t, h2_error) override {}
};

TEST(h2_fields_test, a_client_session_hears_them_unchanged) {
    heard client_heard;
    heard server_heard;
    auto client = h2_session::make(h2_session::role::client, client_heard);
    auto server = h2_session::make(h2_session::role::server, server_heard);
    const std::vector<h2_field> get{{":method", "GET"}, {":scheme", "http"}, {":authority", "t"}, {":path", "/"}};
    ASSERT_GT(client->request(get), 0);
    const auto exchange = [&] {
        for (int i = 0; i < 8; ++i) {
            std::string bytes;
            ASSERT_FALSE(client->produce(bytes));
            ASSERT_FALSE(server->receive(bytes));
            bytes.clear();
            ASSERT_FALSE(server->produce(bytes));
            ASSERT_FALSE(client->receive(bytes));
        }
    };
    exchange();
    ASSERT_GT(server_heard.request, 0);
    response r;
    ASSERT_TRUE(r.header("X-Trace", "t-1"));
    ASSERT_TRUE(r.header("Keep-Alive", "timeout=5"));
    r.text("Hello, World!");
    h2_response_fields f;
    f.build(r, date, r.body().size());
    ASSERT_FALSE(server->respond(server_heard.request, f.fields(), r.body()));
    exchange();
    EXPECT_TRUE(client_heard.closed);
    EXPECT_EQ(client_heard.error, h2_error::no_error) << "nghttp2 took the header block as valid";
    EXPECT_EQ(client_heard.fields, listed(f));
    EXPECT_EQ(client_heard.body, "Hello, World!");
}

} // namespace
} // namespace hotpath::http
