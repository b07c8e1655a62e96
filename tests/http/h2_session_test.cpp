// h2_session, a client and a server session talking through memory: requests and responses crossing with their
// bytes split at every size, a hundred streams at once, bodies past the flow-control windows, resets, GOAWAY, a bad
// preface, and what an idle session holds.
#include <hotpath/http/h2_session.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hotpath::http {
namespace {

// What one side heard, per stream.
struct heard_stream {
    std::vector<std::pair<std::string, std::string>> fields;
    bool headers = false;
    std::string body;
    bool ended = false;
    bool closed = false;
    h2_error error = h2_error::no_error;

    std::string field(const std::string& name) const {
        for (const auto& [n, v] : fields) {
            if (n == name) {
                return v;
            }
        }
        return {};
    }
};

struct recorder final : h2_events {
    std::map<std::int32_t, heard_stream> streams;
    std::vector<std::int32_t> ended_order; // streams whose message is whole, in order
    bool goaway = false;
    std::int32_t goaway_last = -1;
    h2_error goaway_error = h2_error::no_error;

    void on_h2_field(std::int32_t s, std::string_view name, std::string_view value) override {
        streams[s].fields.emplace_back(name, value);
    }
    void on_h2_headers(std::int32_t s) override { streams[s].headers = true; }
    void on_h2_data(std::int32_t s, std::string_view bytes) override { streams[s].body.append(bytes); }
    void on_h2_end(std::int32_t s) override {
        streams[s].ended = true;
        ended_order.push_back(s);
    }
    void on_h2_closed(std::int32_t s, h2_error e) override {
        streams[s].closed = true;
        streams[s].error = e;
    }
    void on_h2_goaway(std::int32_t last, h2_error e) override {
        goaway = true;
        goaway_last = last;
        goaway_error = e;
    }
};

const std::vector<h2_field> get_fields{
    {":method", "GET"}, {":scheme", "http"}, {":authority", "localhost"}, {":path", "/plaintext"}};

// A client and a server session, their bytes moved `piece` at a time; the server answers each whole request with
// "Hello, World!" (or its body echoed, for a POST).
struct pair_of_sessions {
    recorder client_heard;
    recorder server_heard;
    std::unique_ptr<h2_session> client = h2_session::make(h2_session::role::client, client_heard);
    std::unique_ptr<h2_session> server = h2_session::make(h2_session::role::server, server_heard);
    std::size_t piece = 1 << 20;
    bool hold_answers = false; // the server leaves whole requests unanswered while set
    std::size_t answered = 0;
    std::error_code client_error;
    std::error_code server_error;

    // Moves bytes both ways until neither side has any to send.
    void pump() {
        for (int round = 0; round < 100000; ++round) {
            std::string to_server;
            std::string to_client;
            if (auto e = client->produce(to_server)) {
                client_error = e;
            }
            if (!deliver(*server, to_server, server_error)) {
                return;
            }
            answer();
            if (auto e = server->produce(to_client)) {
                server_error = e;
            }
            if (!deliver(*client, to_client, client_error)) {
                return;
            }
            if (to_server.empty() && to_client.empty()) {
                return;
            }
        }
        ADD_FAILURE() << "the sessions never went quiet";
    }

    bool deliver(h2_session& to, const std::string& bytes, std::error_code& error) {
        for (std::size_t at = 0; at < bytes.size(); at += piece) {
            if (auto e = to.receive(std::string_view(bytes).substr(at, piece))) {
                error = e;
                return false;
            }
        }
        return true;
    }

    void answer() {
        for (; !hold_answers && answered < server_heard.ended_order.size(); ++answered) {
            const std::int32_t s = server_heard.ended_order[answered];
            const heard_stream& r = server_heard.streams[s];
            if (r.closed) {
                continue; // reset by the client meanwhile
            }
            const bool post = r.field(":method") == "POST";
            const std::string body = post ? r.body : "Hello, World!";
            const std::string length = std::to_string(body.size());
            const std::vector<h2_field> fields{
                {":status", "200"}, {"content-type", "text/plain"}, {"content-length", length}};
            EXPECT_FALSE(server->respond(s, fields, body)) << s;
        }
    }
};

TEST(h2_session_test, a_request_and_its_response_cross_with_bytes_split_at_every_size) {
    for (const std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{9},
                                    std::size_t{24}, std::size_t{64}, std::size_t{1} << 20}) {
        pair_of_sessions p;
        ASSERT_TRUE(p.client && p.server);
        p.piece = piece;
        const std::int32_t s = p.client->request(get_fields);
        ASSERT_EQ(s, 1) << "the first client stream is 1";
        p.pump();
        EXPECT_FALSE(p.client_error) << p.client_error.message();
        EXPECT_FALSE(p.server_error) << p.server_error.message();
        const heard_stream& request = p.server_heard.streams[s];
        EXPECT_TRUE(request.headers && request.ended) << "pieces of " << piece;
        EXPECT_EQ(request.field(":method"), "GET");
        EXPECT_EQ(request.field(":path"), "/plaintext");
        EXPECT_EQ(request.field(":authority"), "localhost");
        const heard_stream& response = p.client_heard.streams[s];
        EXPECT_EQ(response.field(":status"), "200") << "pieces of " << piece;
        EXPECT_EQ(response.field("content-type"), "text/plain");
        EXPECT_EQ(response.body, "Hello, World!") << "pieces of " << piece;
        EXPECT_TRUE(response.ended && response.closed);
        EXPECT_EQ(response.error, h2_error::no_error);
        EXPECT_TRUE(p.server_heard.streams[s].closed);
    }
}

TEST(h2_session_test, a_hundred_streams_at_once_are_each_answered) {
    pair_of_sessions p;
    std::vector<std::int32_t> ids;
    for (int i = 0; i < 100; ++i) {
        const std::string path = "/item/" + std::to_string(i);
        const std::vector<h2_field> fields{
            {":method", "GET"}, {":scheme", "http"}, {":authority", "localhost"}, {":path", path}};
        ids.push_back(p.client->request(fields));
        ASSERT_GT(ids.back(), 0);
    }
    p.pump();
    EXPECT_EQ(p.answered, 100u);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(p.server_heard.streams[ids[i]].field(":path"), "/item/" + std::to_string(i));
        EXPECT_EQ(p.client_heard.streams[ids[i]].body, "Hello, World!") << ids[i];
        EXPECT_TRUE(p.client_heard.streams[ids[i]].closed);
    }
    EXPECT_EQ(ids.back(), 199) << "client streams are odd and rise";
}

// 3 MiB each way: past the stream's window (768 KiB) and the connection's (1 MiB) and the peer's default (64 KiB),
// so that both sides must send WINDOW_UPDATEs.
TEST(h2_session_test, bodies_past_the_flow_control_windows_arrive_whole) {
    pair_of_sessions p;
    p.piece = 1000;
    std::string body(3 << 20, '\0');
    for (std::size_t i = 0; i < body.size(); ++i) {
        body[i] = static_cast<char>('a' + i % 26);
    }
    const std::string length = std::to_string(body.size()); // outlives the fields that view it
    const std::vector<h2_field> fields{{":method", "POST"},
                                       {":scheme", "http"},
                                       {":authority", "localhost"},
                                       {":path", "/echo"},
                                       {"content-length", length}};
    const std::int32_t s = p.client->request(fields, body);
    ASSERT_GT(s, 0);
    p.pump();
    EXPECT_FALSE(p.client_error) << p.client_error.message();
    EXPECT_FALSE(p.server_error) << p.server_error.message();
    EXPECT_EQ(p.server_heard.streams[s].body.size(), body.size());
    EXPECT_TRUE(p.server_heard.streams[s].body == body);
    EXPECT_EQ(p.client_heard.streams[s].body.size(), body.size());
    EXPECT_TRUE(p.client_heard.streams[s].body == body);
}

TEST(h2_session_test, a_reset_closes_only_its_stream_with_its_code) {
    pair_of_sessions p;
    p.hold_answers = true;
    const std::int32_t first = p.client->request(get_fields);
    const std::int32_t second = p.client->request(get_fields);
    p.pump();
    ASSERT_TRUE(p.server_heard.streams[first].ended && p.server_heard.streams[second].ended);
    EXPECT_FALSE(p.client->reset(first, h2_error::cancel));
    p.pump();
    EXPECT_TRUE(p.server_heard.streams[first].closed);
    EXPECT_EQ(p.server_heard.streams[first].error, h2_error::cancel) << "the server hears the client's code";
    p.hold_answers = false;
    p.pump();
    EXPECT_TRUE(p.client_heard.streams[first].closed);
    EXPECT_EQ(p.client_heard.streams[first].error, h2_error::cancel);
    EXPECT_TRUE(p.client_heard.streams[first].body.empty());
    EXPECT_EQ(p.client_heard.streams[second].body, "Hello, World!");
    EXPECT_EQ(p.client_heard.streams[second].error, h2_error::no_error);
}

TEST(h2_session_test, goaway_tells_the_client_the_last_stream_processed) {
    pair_of_sessions p;
    EXPECT_TRUE(p.client->may_open_stream());
    const std::int32_t s = p.client->request(get_fields);
    p.pump();
    ASSERT_EQ(p.client_heard.streams[s].body, "Hello, World!");
    EXPECT_FALSE(p.server->go_away(h2_error::enhance_your_calm));
    p.pump();
    EXPECT_TRUE(p.client_heard.goaway);
    EXPECT_EQ(p.client_heard.goaway_last, s);
    EXPECT_EQ(p.client_heard.goaway_error, h2_error::enhance_your_calm);
    EXPECT_FALSE(p.client->may_open_stream()) << "no new stream after the peer's GOAWAY";
}

TEST(h2_session_test, a_server_refuses_bytes_that_are_not_the_connection_preface) {
    recorder heard;
    auto server = h2_session::make(h2_session::role::server, heard);
    const std::error_code e = server->receive("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    ASSERT_TRUE(e);
    EXPECT_EQ(e.category(), h2_category());
    EXPECT_NE(e.message().find("HTTP/2: "), std::string::npos) << e.message();
}

// What a session holds once its requests are done: the figure the 8 kB per idle connection of #28 is measured
// against (nghttp2 1.52 allocates its frame buffer, stream map and HPACK tables up front). Printed, and bounded so
// that a change that makes it grow is seen.
TEST(h2_session_test, an_idle_session_holds_a_bounded_amount_that_does_not_grow_with_requests) {
    pair_of_sessions p;
    const std::size_t fresh_client = p.client->bytes_held();
    const std::size_t fresh_server = p.server->bytes_held();
    p.client->request(get_fields);
    p.pump();
    const std::size_t client_after_one = p.client->bytes_held();
    const std::size_t server_after_one = p.server->bytes_held();
    for (int i = 0; i < 1000; ++i) {
        p.client->request(get_fields);
        p.pump();
    }
    EXPECT_EQ(p.answered, 1001u);
    const std::size_t client_after_many = p.client->bytes_held();
    const std::size_t server_after_many = p.server->bytes_held();
    std::printf("[ h2 idle ] client: %zu B fresh, %zu after one request, %zu after 1,001; server: %zu, %zu, %zu\n",
                fresh_client, client_after_one, client_after_many, fresh_server, server_after_one, server_after_many);
    EXPECT_GT(server_after_one, 0u);
    EXPECT_LT(server_after_one, 64u * 1024) << "an idle server session";
    EXPECT_LT(client_after_one, 64u * 1024) << "an idle client session";
    // Requests done leave nothing behind (HPACK's table is bounded by its 4,096 bytes).
    EXPECT_LE(server_after_many, server_after_one + 4096);
    EXPECT_LE(client_after_many, client_after_one + 4096);
    p.client.reset();
    p.server.reset();
}

// An idle session gives its frame buffer's pages back to the kernel (and its stream map's, once empty), once per use,
// and both sides go on as before: the pages read as zeros when nghttp2 next writes its frames into them.
TEST(h2_session_test, an_idle_session_gives_its_large_blocks_pages_back_and_goes_on) {
    pair_of_sessions p;
    p.client->request(get_fields);
    p.pump();
    const std::size_t server_given = p.server->trim();
    const std::size_t client_given = p.client->trim();
    std::printf("[ h2 idle ] pages given back: server %zu B, client %zu B\n", server_given, client_given);
    EXPECT_GE(server_given, 16384u + 4096u) << "the frame buffer's pages and the empty stream map's";
    EXPECT_GE(client_given, 16384u + 4096u);
    EXPECT_EQ(p.server->trim(), 0u) << "nothing used since: nothing to give back again";
    // Bodies that fill the frame buffer whole, both ways, after the pages went.
    std::vector<h2_field> post{
        {":method", "POST"}, {":scheme", "http"}, {":authority", "localhost"}, {":path", "/echo"}};
    std::string body(200000, '\0');
    for (std::size_t i = 0; i < body.size(); ++i) {
        body[i] = static_cast<char>('a' + i % 26);
    }
    for (int round = 0; round < 3; ++round) {
        const std::int32_t s = p.client->request(post, body);
        ASSERT_GT(s, 0);
        p.pump();
        EXPECT_FALSE(p.client_error) << p.client_error.message();
        EXPECT_FALSE(p.server_error) << p.server_error.message();
        EXPECT_EQ(p.client_heard.streams[s].body, body) << round;
        EXPECT_EQ(p.client_heard.streams[s].field(":status"), "200");
        EXPECT_GE(p.server->trim(), 16384u) << round;
        EXPECT_GE(p.client->trim(), 16384u) << round;
    }
}

} // namespace
} // namespace hotpath::http
