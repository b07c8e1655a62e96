// Every limit and timeout of the server, over real loopback sockets: the exact status, then the close.
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include <hotpath/net/sleep.hpp>
#include <hotpath/server/server.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::raw_client;
using test::test_server;

app make_app() {
    app a;
    a.get("/hello", [](request&, response& res) { res.text("hello"); });
    a.post("/echo", [](request& req, response& res) { res.body(req.body(), "application/octet-stream"); });
    return a;
}

// Sends `bytes` and expects one reply with `status`, then the connection closed by the server.
void expect_rejected(std::uint16_t port, const std::string& bytes, int status) {
    raw_client c(port);
    ASSERT_TRUE(c.connected());
    c.send(bytes); // the server may close before reading everything
    auto r = c.read_reply();
    ASSERT_TRUE(r) << "no reply; expected " << status;
    EXPECT_EQ(r->status, status);
    EXPECT_EQ(r->field("connection"), "close");
    EXPECT_EQ(r->field("content-type"), "application/problem+json");
    EXPECT_TRUE(c.wait_closed());
}

class limits_test : public ::testing::Test {
protected:
    app routes_ = make_app();
};

TEST_F(limits_test, request_line_over_the_limit_is_414) {
    http::limits l;
    l.max_request_line_bytes = 1024;
    test_server srv(routes_, l);
    expect_rejected(srv.port(), "GET /" + std::string(1100, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n", 414);
    // Just under the limit is fine (and a 404).
    raw_client c(srv.port());
    const std::string line = "GET /" + std::string(1024 - 16, 'a') + " HTTP/1.1\r\n";
    ASSERT_EQ(line.size(), 1024u);
    c.send(line + "Host: t\r\n\r\n");
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
}

TEST_F(limits_test, request_line_without_end_is_414_before_the_head_completes) {
    http::limits l;
    l.max_request_line_bytes = 1024;
    test_server srv(routes_, l);
    expect_rejected(srv.port(), "GET /" + std::string(5000, 'a'), 414);
}

TEST_F(limits_test, header_section_over_the_byte_limit_is_431) {
    http::limits l;
    l.max_header_bytes = 2048;
    test_server srv(routes_, l);
    expect_rejected(srv.port(), "GET /hello HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(3000, 'v') + "\r\n\r\n", 431);
}

TEST_F(limits_test, too_many_header_fields_is_431) {
    test_server srv(routes_);
    std::string req = "GET /hello HTTP/1.1\r\nHost: t\r\n";
    for (int i = 0; i < 100; ++i) {
        req += "X-F" + std::to_string(i) + ": v\r\n";
    }
    expect_rejected(srv.port(), req + "\r\n", 431);
}

TEST_F(limits_test, default_limits_accept_100_fields) {
    test_server srv(routes_);
    std::string req = "GET /hello HTTP/1.1\r\nHost: t\r\n";
    for (int i = 0; i < 99; ++i) {
        req += "X-F" + std::to_string(i) + ": v\r\n";
    }
    raw_client c(srv.port());
    c.send(req + "\r\n");
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
}

TEST_F(limits_test, content_length_over_the_body_limit_is_413_without_reading_it) {
    http::limits l;
    l.max_body_bytes = 1000;
    test_server srv(routes_, l);
    expect_rejected(srv.port(), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\n\r\n", 413);
}

TEST_F(limits_test, chunked_body_over_the_limit_is_413) {
    http::limits l;
    l.max_body_bytes = 1000;
    test_server srv(routes_, l);
    std::string req = "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 5; ++i) {
        req += "100\r\n" + std::string(256, 'x') + "\r\n";
    }
    expect_rejected(srv.port(), req + "0\r\n\r\n", 413);
}

// Resident memory of this process (server and test client share it).
std::size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0;
    std::size_t resident = 0;
    statm >> pages >> resident;
    return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// A chunked body can carry far more framing than payload (one-byte chunks, 4 KiB extensions each). The
// connection keeps only the decoded body: 48 MB on the wire for 12 KB of body must not cost 48 MB.
TEST_F(limits_test, chunk_framing_is_not_kept_in_memory) {
    test_server srv(routes_);
    raw_client c(srv.port());
    const std::size_t before = resident_bytes();
    ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"));
    const std::string chunk = "1;e=" + std::string(4000, 'x') + "\r\na\r\n";
    std::string burst;
    for (int i = 0; i < 100; ++i) {
        burst += chunk;
    }
    constexpr int bursts = 120; // 120 x 100 chunks: 48 MB of framing, 12,000 body bytes
    for (int i = 0; i < bursts; ++i) {
        ASSERT_TRUE(c.send(burst));
    }
    ASSERT_TRUE(c.send("0\r\n\r\n"));
    auto r = c.read_reply(30s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::string(bursts * 100, 'a'));
    const std::size_t after = resident_bytes(); // the connection, and its buffer, are still open
    EXPECT_LT(after, before + 8 * 1024 * 1024) << "grew by " << (after - before) << " bytes";
}

TEST_F(limits_test, smuggling_attempts_are_rejected) {
    test_server srv(routes_);
    expect_rejected(srv.port(),
                    "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "0\r\n\r\n",
                    400);
    expect_rejected(srv.port(), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n",
                    400);
    expect_rejected(srv.port(), "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501);
    expect_rejected(srv.port(), "GET /hello HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n", 400);
    expect_rejected(srv.port(), "GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
    expect_rejected(srv.port(), "GET /hello HTTP/1.1\r\n\r\n", 400);
    expect_rejected(srv.port(), "GET /hello HTTP/1.1\rHost: t\r\n\r\n", 400);
    expect_rejected(srv.port(), "GET /hello HTTP/2.0\r\nHost: t\r\n\r\n", 505);
    expect_rejected(srv.port(), "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400);
}

// A TLS hello (or any binary input) sent to the plain-text port has no line end to wait for: it is refused
// at its first byte that cannot start a request, not after the headers timeout.
TEST_F(limits_test, binary_input_is_refused_at_once) {
    http::limits l;
    l.request_headers_timeout = 20s;
    test_server srv(routes_, l);
    raw_client c(srv.port());
    const auto t0 = std::chrono::steady_clock::now();
    c.send(std::string_view("\x16\x03\x01\x00\xa5\x01", 6));
    auto r = c.read_reply(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    EXPECT_TRUE(c.wait_closed());
}

// A line that is complete but cannot be valid is refused when its LF arrives: a request line without a version
// (as a hand-typed "GET /hello" is) or a malformed field, with the head left open behind it.
TEST_F(limits_test, complete_invalid_line_is_refused_at_once) {
    http::limits l;
    l.request_headers_timeout = 20s;
    test_server srv(routes_, l);
    for (const std::string_view bytes : {"GET /hello\r\n", "GET /hello HTTP/1.1\r\nHost t\r\n"}) {
        raw_client c(srv.port());
        const auto t0 = std::chrono::steady_clock::now();
        c.send(bytes);
        auto r = c.read_reply(3s);
        ASSERT_TRUE(r) << bytes;
        EXPECT_EQ(r->status, 400);
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
        EXPECT_TRUE(c.wait_closed());
    }
}

// A HEAD request's answer has no body, even when it is an error (RFC 9110 §9.3.2).
TEST_F(limits_test, refused_head_request_gets_no_body) {
    test_server srv(routes_);
    raw_client c(srv.port());
    c.send("HEAD /hello HTTP/1.1\r\n\r\n"); // no Host: 400
    auto r = c.read_reply(5s, true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->field("content-length"), "0");
    EXPECT_TRUE(c.wait_closed());
    EXPECT_EQ(c.unread(), ""); // no body bytes before the close
}

TEST_F(limits_test, slow_request_head_is_408_after_the_headers_timeout) {
    http::limits l;
    l.request_headers_timeout = 1s;
    test_server srv(routes_, l);
    raw_client c(srv.port());
    const auto t0 = std::chrono::steady_clock::now();
    c.send("GET /hello HTTP/1.1\r\nHo");
    auto r = c.read_reply(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(c.wait_closed());
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 900ms);
    // A slow client is a timeout, not a malformed request.
    const auto s = srv.get().stats();
    EXPECT_EQ(s.header_timeouts, 1u);
    EXPECT_EQ(s.timeouts, 1u);
    EXPECT_EQ(s.bad_requests, 0u);
}

TEST_F(limits_test, silent_new_connection_is_closed_after_the_headers_timeout) {
    http::limits l;
    l.request_headers_timeout = 1s;
    test_server srv(routes_, l);
    raw_client c(srv.port());
    EXPECT_TRUE(c.wait_closed(5s));
}

TEST_F(limits_test, idle_keep_alive_connection_is_closed) {
    http::limits l;
    l.keep_alive_timeout = 1s;
    test_server srv(routes_, l);
    raw_client c(srv.port());
    c.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_TRUE(c.read_reply());
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(c.wait_closed(5s));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 500ms);
    // Closing an idle connection is no fault of the client's.
    const auto s = srv.get().stats();
    EXPECT_EQ(s.idle_timeouts, 1u);
    EXPECT_EQ(s.timeouts, 0u);
    EXPECT_EQ(s.bad_requests, 0u);
}

TEST_F(limits_test, body_slower_than_the_minimum_rate_is_408) {
    http::limits l;
    l.min_body_rate_grace = 1s;
    l.min_body_bytes_per_second = 10'000;
    test_server srv(routes_, l);
    raw_client c(srv.port());
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\nabc");
    auto r = c.read_reply(6s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
    const auto s = srv.get().stats();
    EXPECT_EQ(s.body_timeouts, 1u);
    EXPECT_EQ(s.timeouts, 1u);
    EXPECT_EQ(s.bad_requests, 0u);
}

// A client may pipeline many requests and read the answers later. While their responses wait for it, the
// requests behind them are not a slow head: no 408 and no lost request, however long the client pauses
// (within the response rate).
TEST_F(limits_test, pipelined_requests_behind_unread_responses_do_not_time_out) {
    http::limits l;
    l.request_headers_timeout = 1s;
    l.keep_alive_timeout = 1s;
    const std::string big(256 * 1024, 'b');
    app a;
    a.get("/big", [&big](request&, response& res) { res.body(big, "application/octet-stream"); });
    test_server srv(a, l);
    raw_client c(srv.port());
    constexpr int count = 200; // 51 MB of responses: far more than socket buffers hold
    std::string requests;
    for (int i = 0; i < count; ++i) {
        requests += "GET /big HTTP/1.1\r\nHost: t\r\n\r\n";
    }
    ASSERT_TRUE(c.send(requests));
    std::this_thread::sleep_for(3s); // three headers timeouts
    for (int i = 0; i < count; ++i) {
        auto r = c.read_reply();
        ASSERT_TRUE(r) << "reply " << i;
        ASSERT_EQ(r->status, 200) << "reply " << i;
        ASSERT_EQ(r->body.size(), big.size()) << "reply " << i;
    }
    EXPECT_EQ(srv.get().stats().timeouts, 0u);
    // With every response taken, the keep-alive timeout applies again.
    EXPECT_TRUE(c.wait_closed(5s));
}

// Waits up to `timeout` for the server to count a response timeout; how long it took.
std::chrono::steady_clock::duration wait_for_response_timeout(server& srv, std::chrono::milliseconds timeout) {
    const auto t0 = std::chrono::steady_clock::now();
    while (srv.stats().response_timeouts == 0 && std::chrono::steady_clock::now() - t0 < timeout) {
        std::this_thread::sleep_for(20ms);
    }
    return std::chrono::steady_clock::now() - t0;
}

// A client that stops reading may not hold its connection (and the unsent response) forever: once it has taken
// nothing for the grace period, it is closed, however large the response. One that reads gets it whole.
TEST_F(limits_test, client_that_stops_reading_is_closed_at_the_response_rate) {
    http::limits l;
    l.min_response_bytes_per_second = 16 * 1024 * 1024;
    l.min_response_rate_grace = 1s;
    const std::string huge(32 * 1024 * 1024, 'h'); // far over socket buffers
    app a;
    a.get("/huge", [&huge](request&, response& res) { res.body(huge, "application/octet-stream"); });
    test_server srv(a, l);

    raw_client reader(srv.port());
    ASSERT_TRUE(reader.send("GET /huge HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto r = reader.read_reply(10s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body.size(), huge.size());
    EXPECT_EQ(srv.get().stats().timeouts, 0u);

    raw_client stalled(srv.port());
    ASSERT_TRUE(stalled.send("GET /huge HTTP/1.1\r\nHost: t\r\n\r\n"));
    const auto waited = wait_for_response_timeout(srv.get(), 10s);
    EXPECT_EQ(srv.get().stats().response_timeouts, 1u);
    EXPECT_EQ(srv.get().stats().bad_requests, 0u);
    EXPECT_GE(waited, 1s);                // not before the grace period
    EXPECT_FALSE(stalled.read_reply(5s)); // part of the response, then the close
    // The reader's connection is still served.
    ASSERT_TRUE(reader.send("GET /huge HTTP/1.1\r\nHost: t\r\n\r\n"));
    EXPECT_TRUE(reader.read_reply(10s));
}

// The rate is measured on progress, not granted per write: a large response that the client stops taking is cut
// after the grace period, not after size / rate (16 MB at 32 KB/s would be 8.5 minutes).
TEST_F(limits_test, large_echo_never_read_is_closed_after_the_grace_period) {
    http::limits l;
    l.min_response_bytes_per_second = 32 * 1024;
    l.min_response_rate_grace = 1s;
    test_server srv(routes_, l);
    raw_client c(srv.port());
    const std::string body(16 * 1024 * 1024, 'e');
    ASSERT_TRUE(
        c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
    const auto waited = wait_for_response_timeout(srv.get(), 10s);
    EXPECT_EQ(srv.get().stats().response_timeouts, 1u);
    EXPECT_LT(waited, 6s);
    EXPECT_TRUE(c.wait_closed(10s));
}

// The same for pipelined requests whose responses are never read: each write is small, but the client's progress
// is nil.
TEST_F(limits_test, pipelined_requests_never_read_are_closed_after_the_grace_period) {
    http::limits l;
    l.min_response_bytes_per_second = 32 * 1024;
    l.min_response_rate_grace = 1s;
    const std::string big(256 * 1024, 'b');
    app a;
    a.get("/big", [&big](request&, response& res) { res.body(big, "application/octet-stream"); });
    test_server srv(a, l);
    raw_client c(srv.port());
    std::string requests;
    for (int i = 0; i < 100; ++i) { // 25 MB of responses
        requests += "GET /big HTTP/1.1\r\nHost: t\r\n\r\n";
    }
    ASSERT_TRUE(c.send(requests));
    const auto waited = wait_for_response_timeout(srv.get(), 12s);
    EXPECT_EQ(srv.get().stats().response_timeouts, 1u);
    EXPECT_LT(waited, 6s);
    EXPECT_EQ(srv.get().stats().header_timeouts, 0u);
}

// Reads a response for `span` at about `bytes_per_second`, in pieces every 50 ms; stops early once the server
// has counted a response timeout.
void read_at(raw_client& c, std::size_t bytes_per_second, std::chrono::milliseconds span, server& srv) {
    const std::size_t piece = bytes_per_second / 20;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto next = t0; next - t0 < span && srv.stats().response_timeouts == 0; next += 50ms) {
        std::this_thread::sleep_until(next);
        for (std::size_t got = 0; got < piece;) {
            const std::size_t n = c.read_some(piece - got, 1s);
            if (n == 0) {
                return;
            }
            got += n;
        }
    }
}

// A client that keeps reading, but slower than the minimum rate, is closed too; one just above it is not, however
// long its responses wait (far past the grace period).
TEST_F(limits_test, reading_below_the_minimum_rate_is_closed_and_above_it_is_served) {
    http::limits l;
    l.min_response_bytes_per_second = 512 * 1024;
    l.min_response_rate_grace = 1s;
    const std::string huge(48 * 1024 * 1024, 'h');
    app a;
    a.get("/huge", [&huge](request&, response& res) { res.body(huge, "application/octet-stream"); });
    test_server srv(a, l);

    raw_client fast_enough(srv.port());
    ASSERT_TRUE(fast_enough.send("GET /huge HTTP/1.1\r\nHost: t\r\n\r\n"));
    read_at(fast_enough, 1024 * 1024, 3500ms, srv.get());
    EXPECT_EQ(srv.get().stats().response_timeouts, 0u);
    auto r = fast_enough.read_reply(10s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body.size(), huge.size());

    raw_client too_slow(srv.port());
    ASSERT_TRUE(too_slow.send("GET /huge HTTP/1.1\r\nHost: t\r\n\r\n"));
    const auto t0 = std::chrono::steady_clock::now();
    read_at(too_slow, 256 * 1024, 10s, srv.get());
    EXPECT_EQ(srv.get().stats().response_timeouts, 1u);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);
}

// Past the maximum, a connection's first request gets 503 with Retry-After and the connection closes; past the
// margin above it (a tenth and 16), new connections are closed at once.
TEST_F(limits_test, connections_over_the_maximum_get_503_then_are_closed) {
    http::limits l;
    l.max_connections = 2;
    l.retry_after = 7s;
    test_server srv(routes_, l);
    raw_client a(srv.port());
    raw_client b(srv.port());
    a.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    b.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_TRUE(a.read_reply());
    ASSERT_TRUE(b.read_reply());
    std::vector<std::unique_ptr<raw_client>> over;
    for (int i = 0; i < 16; ++i) {
        over.push_back(std::make_unique<raw_client>(srv.port()));
    }
    raw_client past_margin(srv.port());
    EXPECT_TRUE(past_margin.wait_closed(3s));
    EXPECT_EQ(srv.get().stats().connections_rejected, 1u);
    for (auto& c : over) {
        c->send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
        const auto r = c->read_reply();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 503);
        EXPECT_EQ(r->field("retry-after"), "7");
        EXPECT_EQ(r->field("connection"), "close");
        EXPECT_EQ(r->field("content-type"), "application/problem+json");
        EXPECT_TRUE(c->wait_closed());
    }
    EXPECT_EQ(srv.get().stats().refused_connections, 16u);
    // The first two still work, and once the refused ones are gone, a new connection is served again.
    a.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_TRUE(a.read_reply());
    over.clear();
    b.send("GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    ASSERT_TRUE(b.read_reply());
    ASSERT_TRUE(b.wait_closed());
    bool served = false;
    for (int attempt = 0; attempt < 50 && !served; ++attempt) { // the server sees the closes a moment later
        raw_client again(srv.port());
        again.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
        const auto r = again.read_reply();
        served = r && r->status == 200;
        if (!served) {
            std::this_thread::sleep_for(20ms);
        }
    }
    EXPECT_TRUE(served);
}

// Loops accept at the same time; together they still serve no more than the maximum.
TEST_F(limits_test, the_connection_maximum_holds_across_loops) {
    http::limits l;
    l.max_connections = 4;
    test_server srv(routes_, l, 2);
    ASSERT_EQ(srv.get().threads(), 2u);
    constexpr int per_thread = 20;
    std::vector<std::unique_ptr<raw_client>> clients[2];
    std::thread connectors[2];
    for (auto& list : clients) {
        connectors[&list - clients] = std::thread([&list, port = srv.port()] {
            for (int i = 0; i < per_thread; ++i) {
                list.push_back(std::make_unique<raw_client>(port));
            }
        });
    }
    for (auto& t : connectors) {
        t.join();
    }
    // Every connection taken or closed by the loops before any is answered: a refused connection that closes after
    // its 503 gives its place back, and one accepted after that would be refused instead of closed at once.
    const auto all_seen = [&srv] {
        const auto st = srv.get().stats();
        return st.connections_accepted + st.connections_rejected == 2u * per_thread;
    };
    for (int i = 0; i < 500 && !all_seen(); ++i) {
        std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(all_seen());
    int served = 0;
    int refused = 0;
    for (auto& list : clients) {
        for (auto& c : list) {
            c->send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
            const auto r = c->read_reply(3s);
            served += r && r->status == 200 ? 1 : 0;
            refused += r && r->status == 503 ? 1 : 0;
        }
    }
    EXPECT_EQ(served, 4);
    EXPECT_EQ(refused, 16); // the margin: 4 / 10 + 16
    EXPECT_EQ(srv.get().stats().connections_rejected, 2u * per_thread - 4 - 16);
}

// Past limits.max_requests_in_flight on a loop, a request is answered 503 at once, its connection kept; once the
// handlers in flight end, requests are served again.
TEST_F(limits_test, requests_over_the_in_flight_limit_get_503_at_once_and_the_server_recovers) {
    app slow;
    slow.get("/slow", [](request&, response& res) -> task<void> {
        co_await net::sleep_for(400ms);
        res.text("done");
    });
    slow.get("/fast", [](request&, response& res) { res.text("fast"); });
    http::limits l;
    l.max_requests_in_flight = 2;
    test_server srv(slow, l);
    raw_client a(srv.port());
    raw_client b(srv.port());
    raw_client c(srv.port());
    a.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    b.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    std::this_thread::sleep_for(100ms); // both handlers are waiting
    const auto t0 = std::chrono::steady_clock::now();
    c.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    const auto refused = c.read_reply();
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 503);
    EXPECT_EQ(refused->field("retry-after"), "1");
    EXPECT_EQ(refused->field("content-type"), "application/problem+json");
    EXPECT_EQ(refused->field("connection"), "");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 200ms);
    // A synchronous handler never waits: it is refused too while the loop is at the limit.
    c.send("GET /fast HTTP/1.1\r\nHost: t\r\n\r\n");
    const auto fast = c.read_reply();
    ASSERT_TRUE(fast);
    EXPECT_EQ(fast->status, 503);
    for (raw_client* x : {&a, &b}) {
        const auto r = x->read_reply();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
    c.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"); // the same connection, served once there is room
    const auto later = c.read_reply();
    ASSERT_TRUE(later);
    EXPECT_EQ(later->status, 200);
    EXPECT_EQ(later->body, "done");
    EXPECT_EQ(srv.get().stats().refused_in_flight, 2u);
}

// Handlers that block their loop's thread keep it from turning, so the drain's timer cannot fire while a batch of
// requests runs one blocked handler after another. Past limits.drain_timeout the loop refuses what it has not
// started (503, closed): the stop ends soon after the deadline, not after every queued handler.
TEST_F(limits_test, a_stop_ends_near_the_drain_timeout_even_when_handlers_block_the_loop) {
    app blocking;
    blocking.get("/block", [](request&, response& res) {
        std::this_thread::sleep_for(200ms); // the anti-pattern, on purpose
        res.text("slept");
    });
    http::limits l;
    l.drain_timeout = 100ms;
    test_server srv(blocking, l);
    constexpr int clients = 8;
    std::vector<std::unique_ptr<raw_client>> c;
    for (int i = 0; i < clients; ++i) {
        c.push_back(std::make_unique<raw_client>(srv.port()));
        c.back()->send("GET /block HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    std::this_thread::sleep_for(50ms); // the first handler sleeps; the others wait behind it
    const auto t0 = std::chrono::steady_clock::now();
    srv.get().stop();
    srv.get().wait();
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(took, 1s) << "every queued handler ran: " << clients << " x 200 ms";
    int slept = 0;
    int refused = 0;
    for (auto& x : c) {
        if (const auto r = x->read_reply(1s)) {
            slept += r->status == 200 ? 1 : 0;
            refused += r->status == 503 ? 1 : 0;
        }
    }
    EXPECT_GE(slept, 1);
    EXPECT_LT(slept, clients);
    EXPECT_EQ(static_cast<std::uint64_t>(refused), srv.get().stats().refused_draining);
}

} // namespace
} // namespace hotpath
