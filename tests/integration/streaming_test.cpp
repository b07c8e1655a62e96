// Bodies streamed to and from handlers (app.streaming, request::read_body, response::write), over real sockets:
// every byte arrives in order, the connection reads no further than the handler takes, a slow reader holds its
// handler and never its loop, and every failure ends as a status, never a crash or a hang.
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include <hotpath/net/sleep.hpp>
#include <hotpath/server/server.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::raw_client;
using test::test_server;

// FNV-1a, the checksum both sides compute.
std::uint64_t fnv(std::uint64_t h, std::string_view bytes) {
    for (const char c : bytes) {
        h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    }
    return h;
}
constexpr std::uint64_t fnv_start = 14695981039346656037ULL;

// Deterministic bytes: byte i of a body.
std::string pattern_bytes(std::size_t offset, std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) {
        s[i] = static_cast<char>((offset + i) * 2654435761U >> 13);
    }
    return s;
}

struct upload_stats {
    std::atomic<int> handlers{0};
    std::atomic<std::uint64_t> taken{0}; // bytes the handler has read so far
    std::atomic<bool> may_read{true};    // the handler waits for this before reading past its first piece
};

// PUT /up: reads the body piece by piece and answers {"bytes":N,"sum":"...","pieces":K,"largest":L}, or the
// read's error as {"error":"..."} (which the connection replaces with the error's status).
app make_app(upload_stats& stats, std::uint64_t max_body = 0) {
    app a;
    a.streaming(
        http::method::put, "/up",
        [&stats](request& req, response& res) -> task<void> {
            ++stats.handlers;
            std::uint64_t bytes = 0;
            std::uint64_t sum = fnv_start;
            std::size_t pieces = 0;
            std::size_t largest = 0;
            for (;;) {
                auto piece = co_await req.read_body();
                if (!piece) {
                    res.text("{\"error\":\"" + piece.error().message() + "\"}", "application/json");
                    co_return;
                }
                if (piece->empty()) {
                    break;
                }
                bytes += piece->size();
                stats.taken = bytes;
                sum = fnv(sum, *piece);
                ++pieces;
                largest = std::max(largest, piece->size());
                while (!stats.may_read.load()) {
                    co_await net::sleep_for(5ms);
                }
            }
            boost::json::object o;
            o["bytes"] = bytes;
            o["sum"] = std::to_string(sum);
            o["pieces"] = pieces;
            o["largest"] = largest;
            res.text(boost::json::serialize(o), "application/json");
        },
        max_body);
    // Answers at once, without reading the body.
    a.streaming(
        http::method::post, "/refuse",
        [](request&, response& res) -> task<void> {
            res.problem(http::status::forbidden, "not this one");
            co_return;
        },
        0);
    a.get("/hello", [](request&, response& res) { res.text("hello"); });
    // GET /stream/{n}?length=1: n pieces of 16 KiB, chunked (or with Content-Length when asked).
    a.get("/stream/{n}", [&stats](request& req, response& res) -> task<void> {
        const std::size_t n = std::stoul(std::string(req.param("n")));
        constexpr std::size_t piece = 16 * 1024;
        res.content_type("application/octet-stream");
        if (req.has_query_param("length")) {
            res.content_length(n * piece);
        }
        for (std::size_t i = 0; i < n; ++i) {
            const std::string bytes = pattern_bytes(i * piece, piece);
            if (auto written = co_await res.write(bytes); !written) {
                co_return;
            }
            stats.taken = (i + 1) * piece;
        }
    });
    return a;
}

std::string put_head(std::size_t length, std::string_view extra = "") {
    return "PUT /up HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(length) + "\r\n" + std::string(extra) +
           "\r\n";
}

boost::json::object parse(const std::string& body) {
    return boost::json::parse(body).as_object();
}

// The body of a chunked message, decoded; empty with ok=false when the framing is broken or unfinished.
std::string dechunk(std::string_view s, bool& ok) {
    std::string out;
    ok = false;
    for (;;) {
        const auto eol = s.find("\r\n");
        if (eol == std::string_view::npos) {
            return out;
        }
        const std::size_t size = std::stoul(std::string(s.substr(0, eol)), nullptr, 16);
        s.remove_prefix(eol + 2);
        if (size == 0) {
            ok = s == "\r\n";
            return out;
        }
        if (s.size() < size + 2) {
            return out;
        }
        out.append(s.substr(0, size));
        s.remove_prefix(size + 2);
    }
}

class streaming_test : public ::testing::Test {
protected:
    upload_stats stats_;
};

TEST_F(streaming_test, a_large_upload_arrives_whole_in_pieces_no_larger_than_the_buffer) {
    app routes = make_app(stats_);
    test_server srv(routes);
    constexpr std::size_t size = 8 * 1024 * 1024 + 13;
    const std::string body = pattern_bytes(0, size);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send(put_head(size) + body));
    const auto r = c.read_reply(10s);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto o = parse(r->body);
    EXPECT_EQ(o.at("bytes").as_int64(), static_cast<std::int64_t>(size));
    EXPECT_EQ(o.at("sum").as_string(), std::to_string(fnv(fnv_start, body)));
    EXPECT_GT(o.at("pieces").as_int64(), 100);
    EXPECT_LE(o.at("largest").as_int64(), 64 * 1024);
    // The connection goes on.
    c.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    const auto next = c.read_reply();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "hello");
}

TEST_F(streaming_test, a_chunked_upload_arrives_whole_whatever_its_chunks_and_splits) {
    app routes = make_app(stats_);
    test_server srv(routes);
    const std::string body = pattern_bytes(7, 300'000);
    std::string wire = "PUT /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    std::size_t at = 0;
    for (std::size_t size = 1; at < body.size(); size = size * 3 + 1) {
        const std::size_t n = std::min(size % 70'000 + 1, body.size() - at);
        char line[32];
        std::snprintf(line, sizeof(line), "%zx;ext=1\r\n", n);
        wire += line;
        wire.append(body, at, n);
        wire += "\r\n";
        at += n;
    }
    wire += "0\r\nTrailer-Field: x\r\n\r\n";
    wire += "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"; // pipelined behind the body
    raw_client c(srv.port());
    // Sent in uneven pieces with pauses, so that reads end anywhere in the framing.
    for (std::size_t sent = 0, step = 1; sent < wire.size(); step = step * 7 % 40'000 + 1) {
        const std::size_t n = std::min(step, wire.size() - sent);
        ASSERT_TRUE(c.send(std::string_view(wire).substr(sent, n)));
        sent += n;
        if (step % 5 == 0) {
            std::this_thread::sleep_for(1ms);
        }
    }
    const auto r = c.read_reply(10s);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto o = parse(r->body);
    EXPECT_EQ(o.at("bytes").as_int64(), static_cast<std::int64_t>(body.size()));
    EXPECT_EQ(o.at("sum").as_string(), std::to_string(fnv(fnv_start, body)));
    const auto next = c.read_reply();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "hello");
}

TEST_F(streaming_test, the_connection_reads_no_further_than_the_handler_takes) {
    app routes = make_app(stats_);
    test_server srv(routes);
    stats_.may_read = false; // the handler takes one piece, then waits
    constexpr std::size_t size = 128 * 1024 * 1024;
    raw_client p(srv.port());
    ASSERT_TRUE(p.connected());
    const std::string head = put_head(size);
    ASSERT_EQ(p.send_for(head, 1s), head.size());
    const std::string block = pattern_bytes(0, 1 << 20);
    std::size_t sent = 0;
    const auto until = std::chrono::steady_clock::now() + 700ms;
    while (std::chrono::steady_clock::now() < until) {
        sent += p.send_for(std::string_view(block).substr(sent % block.size()), 50ms);
    }
    // What the kernel buffers on both sides and the server's 64 KiB, far below the body.
    EXPECT_LT(sent, 48u << 20);
    EXPECT_LE(stats_.taken.load(), 64u * 1024);
    // Reading again, every byte comes, and memory stays bounded by the buffer, not the body.
    rusage before{};
    ::getrusage(RUSAGE_SELF, &before);
    stats_.may_read = true;
    while (sent < size) {
        const std::size_t n = std::min(block.size() - sent % block.size(), size - sent);
        const std::size_t done = p.send_for(std::string_view(block).substr(sent % block.size(), n), 10s);
        ASSERT_GT(done, 0u) << "the server stopped reading at " << sent;
        sent += done;
    }
    const std::string reply = p.read_until_close(3s);
    EXPECT_NE(reply.find("\"bytes\":" + std::to_string(size)), std::string::npos) << reply.substr(0, 300);
    rusage after{};
    ::getrusage(RUSAGE_SELF, &after);
    EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 32 * 1024); // kB: a 128 MiB body moved 32 MiB of peak at most
}

TEST_F(streaming_test, a_content_length_over_the_route_limit_is_413_before_the_handler_runs) {
    app routes = make_app(stats_, 1000);
    test_server srv(routes);
    raw_client c(srv.port());
    c.send(put_head(1001));
    const auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_TRUE(c.wait_closed());
    EXPECT_EQ(stats_.handlers.load(), 0);
    // At the limit, and over limits.max_body_bytes (the route's own limit replaces it).
    app big = make_app(stats_, 64ull << 20);
    http::limits l;
    l.max_body_bytes = 1000;
    test_server srv2(big, l);
    raw_client d(srv2.port());
    const std::string body = pattern_bytes(0, 100'000);
    d.send(put_head(body.size()) + body);
    const auto ok = d.read_reply();
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
}

TEST_F(streaming_test, a_chunked_body_passing_the_route_limit_fails_the_read_and_answers_413) {
    app routes = make_app(stats_, 1000);
    test_server srv(routes);
    raw_client c(srv.port());
    c.send("PUT /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n200\r\n" + std::string(0x200, 'a') +
           "\r\n300\r\n" + std::string(0x300, 'b') + "\r\n0\r\n\r\n");
    const auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(r->field("content-type"), "application/problem+json");
    EXPECT_TRUE(c.wait_closed());
    EXPECT_EQ(stats_.handlers.load(), 1);
}

TEST_F(streaming_test, malformed_chunked_coding_fails_the_read_and_answers_400) {
    app routes = make_app(stats_);
    test_server srv(routes);
    raw_client c(srv.port());
    c.send("PUT /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n");
    const auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_TRUE(c.wait_closed());
}

TEST_F(streaming_test, expect_100_continue_is_answered_only_when_the_handler_reads) {
    app routes = make_app(stats_);
    test_server srv(routes);
    {
        raw_client c(srv.port());
        c.send("POST /refuse HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n");
        const auto r = c.read_reply();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 403); // no 100 Continue before it: the client never sent the body
        EXPECT_EQ(r->field("connection"), "close");
        EXPECT_TRUE(c.wait_closed());
    }
    raw_client c(srv.port());
    c.send(put_head(5, "Expect: 100-continue\r\n"));
    const auto go = c.read_reply();
    ASSERT_TRUE(go);
    EXPECT_EQ(go->status, 100);
    c.send("hello");
    const auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(parse(r->body).at("bytes").as_int64(), 5);
}

TEST_F(streaming_test, an_answer_before_the_body_is_read_arrives_whole_then_the_connection_closes) {
    app routes = make_app(stats_);
    test_server srv(routes);
    raw_client c(srv.port());
    c.send("POST /refuse HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n" + std::string(300'000, 'x'));
    const auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 403);
    EXPECT_EQ(r->field("connection"), "close");
    c.send(std::string(700'000, 'x')); // the rest is read and discarded: no reset before the client has read
    EXPECT_TRUE(c.wait_closed());
}

TEST_F(streaming_test, a_body_slower_than_the_minimum_rate_fails_the_read_and_answers_408) {
    app routes = make_app(stats_);
    http::limits l;
    l.min_body_bytes_per_second = 1000;
    l.min_body_rate_grace = 1s;
    test_server srv(routes, l);
    raw_client c(srv.port());
    c.send(put_head(100'000) + "abc");
    const auto r = c.read_reply(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(c.wait_closed());
    EXPECT_EQ(srv.get().stats().body_timeouts, 1u);
}

TEST_F(streaming_test, a_client_gone_mid_body_ends_the_read_and_the_server_goes_on) {
    app routes = make_app(stats_);
    test_server srv(routes);
    {
        raw_client p(srv.port());
        const std::string part = put_head(10'000'000) + pattern_bytes(0, 500'000);
        ASSERT_EQ(p.send_for(part, 2s), part.size());
        std::this_thread::sleep_for(50ms);
        p.reset();
    }
    std::this_thread::sleep_for(100ms);
    raw_client c(srv.port());
    c.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    const auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "hello");
    EXPECT_EQ(stats_.handlers.load(), 1);
}

TEST_F(streaming_test, a_streamed_response_is_chunked_and_keeps_the_connection) {
    app routes = make_app(stats_);
    test_server srv(routes);
    raw_client p(srv.port());
    const std::string requests =
        "GET /stream/40 HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    ASSERT_EQ(p.send_for(requests, 1s), requests.size());
    const std::string all = p.read_until_close(5s);
    const auto head_end = all.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos);
    const std::string head = all.substr(0, head_end);
    EXPECT_NE(head.find("Transfer-Encoding: chunked"), std::string::npos) << head;
    EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
    const auto next = all.find("HTTP/1.1 200", head_end);
    ASSERT_NE(next, std::string::npos);
    bool ok = false;
    const std::string body = dechunk(std::string_view(all).substr(head_end + 4, next - head_end - 4), ok);
    EXPECT_TRUE(ok);
    EXPECT_EQ(body, pattern_bytes(0, 40 * 16 * 1024));
    EXPECT_TRUE(all.ends_with("hello"));
}

TEST_F(streaming_test, a_streamed_response_with_a_length_and_to_head_and_http_1_0) {
    app routes = make_app(stats_);
    test_server srv(routes);
    {
        raw_client c(srv.port());
        c.send("GET /stream/3?length=1 HTTP/1.1\r\nHost: t\r\n\r\n");
        const auto r = c.read_reply();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->field("content-length"), std::to_string(3 * 16 * 1024));
        EXPECT_EQ(r->body, pattern_bytes(0, 3 * 16 * 1024));
        c.send("HEAD /stream/3 HTTP/1.1\r\nHost: t\r\n\r\n");
        const auto h = c.read_reply(5s, true);
        ASSERT_TRUE(h);
        EXPECT_EQ(h->field("transfer-encoding"), "chunked");
        c.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"); // nothing of the HEAD's pieces came before this
        const auto next = c.read_reply();
        ASSERT_TRUE(next);
        EXPECT_EQ(next->body, "hello");
    }
    raw_client p(srv.port());
    p.send_for("GET /stream/2 HTTP/1.0\r\n\r\n", 1s);
    const std::string all = p.read_until_close(5s); // no length, no chunks: the body ends with the connection
    const auto head_end = all.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos);
    EXPECT_EQ(all.substr(head_end + 4), pattern_bytes(0, 2 * 16 * 1024));
    EXPECT_NE(all.substr(0, head_end).find("Connection: close"), std::string::npos);
}

TEST_F(streaming_test, a_slow_reader_holds_its_handler_and_never_its_loop) {
    app routes = make_app(stats_);
    test_server srv(routes); // one loop
    raw_client slow(srv.port());
    slow.small_receive_buffer();
    constexpr std::size_t pieces = 4096; // 64 MiB
    slow.send_for("GET /stream/" + std::to_string(pieces) + "?length=1 HTTP/1.1\r\nHost: t\r\n\r\n", 1s);
    std::this_thread::sleep_for(300ms);
    const std::uint64_t written = stats_.taken.load();
    EXPECT_LT(written, 32u << 20); // the handler waits for room
    // The loop serves others meanwhile.
    raw_client other(srv.port());
    const auto t0 = std::chrono::steady_clock::now();
    other.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    const auto r = other.read_reply();
    ASSERT_TRUE(r);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 200ms);
    // Reading now, every byte comes.
    std::string all;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (all.size() < pieces * 16 * 1024 && std::chrono::steady_clock::now() < deadline) {
        all += slow.read_until_close(100ms);
    }
    const auto head_end = all.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos);
    EXPECT_EQ(all.size() - head_end - 4, pieces * 16 * 1024);
}

TEST_F(streaming_test, a_client_that_goes_away_ends_a_streamed_response) {
    app routes = make_app(stats_);
    test_server srv(routes);
    {
        raw_client p(srv.port());
        p.small_receive_buffer();
        p.send_for("GET /stream/100000 HTTP/1.1\r\nHost: t\r\n\r\n", 1s);
        std::this_thread::sleep_for(100ms);
        p.reset();
    }
    std::this_thread::sleep_for(200ms);
    EXPECT_LT(stats_.taken.load(), 100000u * 16 * 1024);
    raw_client c(srv.port());
    c.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    const auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "hello");
}

} // namespace
} // namespace hotpath
