// HTTP/2 flow control in the server (RFC 9113 §5.2), against Python's h2 package driving the frames
// (h2_flow_client.py) and curl: a client that never opens a stream's window holds that stream alone, bounded, until
// the response-rate limit resets it; uploads are held to the connection's body budget yet all answered; a streaming
// route reads its body as it arrives and answers while it does; a body that stops arriving resets its stream alone.
#include "integration/https_support.hpp"
#include "support/test_server.hpp"

#include <hotpath/net/sleep.hpp>
#include <hotpath/server/server.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <iostream>
#include <string>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using https_support::have_program;
using https_support::shell;
using test::test_server;
using test::to_unsigned;

// What the handlers did, read by the tests (the server runs in this process, on one loop thread).
std::atomic<std::size_t> produced_bytes{0};
std::atomic<std::size_t> largest_piece{0};

app make_app() {
    app a;
    a.get("/hello", [](request&, response& res) { res.text("hello"); });
    a.get("/big",
          [](request& req, response& res) { res.text(std::string(to_unsigned(req.query_param("kb")) * 1024, 'x')); });
    // A streamed response of `kb` KiB in 16 KiB pieces, each written as the client makes room.
    a.get("/produce", [](request& req, response& res) -> task<void> {
        const unsigned pieces = to_unsigned(req.query_param("kb")) / 16;
        const std::string piece(16 * 1024, 'p');
        for (unsigned i = 0; i < pieces; ++i) {
            if (!co_await res.write(piece)) {
                co_return;
            }
            produced_bytes += piece.size();
        }
    });
    a.get("/written", [](request&, response& res) { res.text(std::to_string(produced_bytes.load())); });
    a.post("/body-size", [](request& req, response& res) { res.text(std::to_string(req.body().size())); });
    // A streamed upload answered piece by piece: each piece's size as it is read, then the total.
    a.streaming(
        http::method::put, "/sizes",
        [](request& req, response& res) -> task<void> {
            std::size_t total = 0;
            for (;;) {
                auto piece = co_await req.read_body();
                if (!piece || piece->empty()) {
                    break;
                }
                total += piece->size();
                largest_piece = std::max(largest_piece.load(), piece->size());
                co_await res.write(std::to_string(piece->size()) + "\n");
            }
            co_await res.write("total " + std::to_string(total) + "\n");
        },
        0);
    a.metrics("/metrics");
    return a;
}

// Debian's Python, where python3-h2 is installed (a python3 earlier in the PATH may be another).
bool have_python_h2() {
    return shell("/usr/bin/python3 -c 'import h2'").first == 0;
}

std::pair<int, std::string> run_client(unsigned port, const std::string& args, int limit_s = 60) {
    return shell("/usr/bin/python3 " HOTPATH_SOURCE_DIR "/tests/integration/h2_flow_client.py " + std::to_string(port) +
                     " " + args,
                 limit_s);
}

std::string metrics_of(unsigned port) {
    return shell("curl -sS --max-time 5 http://127.0.0.1:" + std::to_string(port) + "/metrics", 10).second;
}

class h2_flow_control : public ::testing::Test {
protected:
    void SetUp() override {
        if (!have_python_h2()) {
            GTEST_SKIP() << "python3-h2 is not installed";
        }
        if (!have_program("curl")) {
            GTEST_SKIP() << "curl is not installed";
        }
        produced_bytes = 0;
        largest_piece = 0;
    }
};

TEST_F(h2_flow_control, a_stream_whose_window_stays_shut_holds_only_itself_until_the_response_rate_resets_it) {
    http::limits limits;
    limits.min_response_rate_grace = 1s;
    app routes = make_app();
    test_server srv(routes, limits);
    ASSERT_TRUE(srv.ok());
    auto [rc, out] = run_client(srv.port(), "zero-window");
    ASSERT_EQ(rc, 0) << out;
    // The stream beside it was answered in full; the held one got its fields and no byte.
    EXPECT_NE(out.find("read 524288 held-status 200 held-bytes 0 "), std::string::npos) << out;
    // Its handler wrote what one stream may hold waiting (64 KiB) and one piece more, then waited: not 2 MiB.
    const auto written = out.find("written ");
    ASSERT_NE(written, std::string::npos) << out;
    const unsigned produced = to_unsigned(std::string_view(out).substr(written + 8));
    EXPECT_LE(produced, 80u * 1024) << out;
    EXPECT_GE(produced, 48u * 1024) << out;
    // Reset with CANCEL once below the minimum rate past the grace period, and counted.
    EXPECT_NE(out.find("held-reset 8 "), std::string::npos) << out;
    const std::string m = metrics_of(srv.port());
    EXPECT_NE(m.find("hotpath_http_timeouts_total{kind=\"response\"} 1"), std::string::npos) << m;
    EXPECT_NE(m.find("hotpath_http_requests_abandoned_total 1"), std::string::npos) << m;
    EXPECT_NE(m.find("hotpath_http2_streams_reset_total 0"), std::string::npos) << m; // ours, not the client's
}

TEST_F(h2_flow_control, uploads_beyond_the_connections_body_budget_wait_or_are_refused_and_all_are_answered) {
    http::limits limits;
    limits.max_body_bytes = 256 * 1024;
    app routes = make_app();
    test_server srv(routes, limits);
    ASSERT_TRUE(srv.ok());
    // 12 uploads of 250 KiB (3 MB): without a budget the windows would open for all of it before any body ended.
    auto [rc, out] = run_client(srv.port(), "uploads 12 250", 90);
    ASSERT_EQ(rc, 0) << out;
    std::cout << out; // what the client sent before ending any stream, and how many streams were refused
    EXPECT_NE(out.find("answered 12 of 12"), std::string::npos) << out;
    const auto at = out.find("before-end ");
    ASSERT_NE(at, std::string::npos) << out;
    const unsigned before_end = to_unsigned(std::string_view(out).substr(at + 11));
    // The budget (256 KiB), the oldest stream's body (250 KiB) and the connection's window (1 MiB), with a frame's
    // slack: what the client could send before ending any stream.
    EXPECT_LE(before_end, (256u + 250u + 1024u + 16u) * 1024) << out;
    EXPECT_GE(before_end, 256u * 1024) << out;
}

TEST_F(h2_flow_control, a_streaming_route_reads_its_body_as_it_arrives_and_answers_while_it_does) {
    app routes = make_app();
    test_server srv(routes);
    ASSERT_TRUE(srv.ok());
    auto [rc, out] = run_client(srv.port(), "duplex 4096");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("early yes status 200 last total 4194304 reset None"), std::string::npos) << out;
    // Never more than the stream's window (768 KiB) held for the handler at once.
    EXPECT_LE(largest_piece.load(), 768u * 1024);
    EXPECT_GT(largest_piece.load(), 0u);
}

TEST_F(h2_flow_control, curl_uploads_a_large_body_to_a_streaming_route_and_to_a_buffered_one) {
    app routes = make_app();
    test_server srv(routes);
    ASSERT_TRUE(srv.ok());
    const https_support::temp_dir dir("h2_flow_upload");
    https_support::write_file(dir / "body", std::string(5 * 1024 * 1024 + 7, 'b'));
    const std::string base = "http://127.0.0.1:" + std::to_string(srv.port());
    auto [rc, out] =
        shell("curl -sS --max-time 20 --http2-prior-knowledge -T " + (dir / "body") + " '" + base + "/sizes'", 30);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("total 5242887\n"), std::string::npos) << out.substr(0, 300);
    std::tie(rc, out) = shell("curl -sS --max-time 20 --http2-prior-knowledge --data-binary @" + (dir / "body") + " '" +
                                  base + "/body-size'",
                              30);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "5242887");
}

TEST_F(h2_flow_control, a_body_that_stops_arriving_resets_its_stream_and_the_connection_goes_on) {
    http::limits limits;
    limits.min_body_rate_grace = 1s;
    app routes = make_app();
    test_server srv(routes, limits);
    ASSERT_TRUE(srv.ok());
    auto [rc, out] = run_client(srv.port(), "slow-body");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("quick 200 slow-reset 8 "), std::string::npos) << out;
    EXPECT_NE(out.find(" then 200 hello"), std::string::npos) << out;
    const std::string m = metrics_of(srv.port());
    EXPECT_NE(m.find("hotpath_http_timeouts_total{kind=\"body\"} 1"), std::string::npos) << m;
}

} // namespace
} // namespace hotpath
