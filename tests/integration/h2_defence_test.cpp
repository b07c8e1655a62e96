// HTTP/2's known attacks against a running server (h2_attack_client.py builds the frames by hand): each attacking
// connection is cut off with a GOAWAY (or its stream answered) well before the attack is over, the refusal is counted
// in /metrics, and the server goes on answering others.
#include "integration/https_support.hpp"
#include "support/test_server.hpp"

#include <hotpath/net/sleep.hpp>
#include <hotpath/server/server.hpp>

#include <gtest/gtest.h>

#include <charconv>
#include <string>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using https_support::have_program;
using https_support::shell;
using test::test_server;
using test::to_unsigned;

app make_app() {
    app a;
    a.get("/hello", [](request&, response& res) { res.text("hello"); });
    a.get("/slow", [](request& req, response& res) -> task<void> {
        co_await net::sleep_for(std::chrono::milliseconds{to_unsigned(req.query_param("ms"))});
        res.text("slow");
    });
    a.post("/body-size", [](request& req, response& res) { res.text(std::to_string(req.body().size())); });
    a.metrics("/metrics");
    return a;
}

// The number after `key` in `out`, or -1.
long long number_after(const std::string& out, const std::string& key) {
    const auto at = out.find(key);
    if (at == std::string::npos) {
        return -1;
    }
    long long v = -1;
    const char* from = out.data() + at + key.size();
    std::from_chars(from, out.data() + out.size(), v);
    return v;
}

class h2_defence : public ::testing::Test {
protected:
    void SetUp() override {
        if (shell("/usr/bin/python3 -c 'import hpack'").first != 0) {
            GTEST_SKIP() << "python3-hpack is not installed";
        }
        if (!have_program("curl")) {
            GTEST_SKIP() << "curl is not installed";
        }
        ASSERT_TRUE(srv_.ok());
    }
    std::pair<int, std::string> attack(const std::string& args, int limit_s = 60) {
        return shell("/usr/bin/python3 " HOTPATH_SOURCE_DIR "/tests/integration/h2_attack_client.py " +
                         std::to_string(srv_.port()) + " " + args,
                     limit_s);
    }
    std::string metrics() {
        return shell("curl -sS --max-time 5 http://127.0.0.1:" + std::to_string(srv_.port()) + "/metrics", 10).second;
    }
    // The server still answers an ordinary client, over HTTP/2.
    void still_serves() {
        auto [rc, out] = shell(
            "curl -sS --max-time 5 --http2-prior-knowledge http://127.0.0.1:" + std::to_string(srv_.port()) + "/hello",
            10);
        EXPECT_EQ(rc, 0) << out;
        EXPECT_EQ(out, "hello");
    }
    // An attack of `n` frames was cut off with GOAWAY(ENHANCE_YOUR_CALM, 11) after at most `most` of them, and
    // counted under `limit`.
    void cut_off(const std::string& out, long long most, const std::string& limit) {
        EXPECT_NE(out.find(" goaway 11 closed yes"), std::string::npos) << out;
        const long long sent = number_after(out, " sent ");
        EXPECT_GT(sent, 0) << out;
        EXPECT_LE(sent, most) << out;
        const std::string m = metrics();
        EXPECT_EQ(number_after(m, "hotpath_http2_refusals_total{limit=\"" + limit + "\"} "), 1) << m;
        still_serves();
    }

    app app_ = make_app();
    test_server srv_{app_};
};

TEST_F(h2_defence, rapid_reset_is_cut_off_after_the_reset_budget) {
    // 1,000 resets at once are allowed (nghttp2's numbers), then the connection goes: the client cannot tell how far
    // the server had read when it sent its GOAWAY, hence the slack of a few of its batches of 100.
    auto [rc, out] = attack("rapid-reset 100000");
    ASSERT_EQ(rc, 0) << out;
    cut_off(out, 5000, "stream_resets");
    EXPECT_EQ(number_after(metrics(), "\nhotpath_http_requests_in_flight "), 1); // this scrape's own: none left over
}

TEST_F(h2_defence, made_you_reset_streams_the_server_resets_itself_count_the_same) {
    auto [rc, out] = attack("made-you-reset 100000");
    ASSERT_EQ(rc, 0) << out;
    cut_off(out, 5000, "stream_resets");
}

TEST_F(h2_defence, a_continuation_flood_ends_the_connection_at_nghttp2s_limit) {
    auto [rc, out] = attack("continuation 100000");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find(" closed yes"), std::string::npos) << out;
    // nghttp2 allows 8; the rest is what the sockets' buffers took (16-byte frames: 20,000 are 320 KB, which loopback's
    // grown buffers sometimes pass)
    EXPECT_LE(number_after(out, " sent "), 50000) << out;
    EXPECT_EQ(number_after(metrics(), "hotpath_http2_refusals_total{limit=\"frame_limits\"} "), 1);
    still_serves();
}

TEST_F(h2_defence, an_hpack_bomb_ends_its_connection_at_once_and_the_server_goes_on) {
    auto [rc, out] = attack("hpack-bomb");
    ASSERT_EQ(rc, 0) << out;
    // ~150,000 references to a 4 KB field (600 MB once decoded): the connection ends once the fields pass four times
    // the header limit, the rest of the block unread; within a fraction of a second.
    EXPECT_NE(out.find(" status None reset None goaway 11 closed yes in 0."), std::string::npos) << out;
    EXPECT_NE(out.find(" then 200"), std::string::npos) << out;
    EXPECT_EQ(number_after(metrics(), "hotpath_http2_refusals_total{limit=\"header_fields\"} "), 1);
}

TEST_F(h2_defence, floods_of_frames_that_carry_no_request_are_cut_off) {
    for (const char* kind : {"ping", "settings", "empty-data", "window-update", "priority"}) {
        SCOPED_TRACE(kind);
        // What the client sent includes what the sockets' buffers took after the server stopped reading (a few MB
        // on loopback): 2,000,000 frames are 18 MB or more.
        auto [rc, out] = attack(std::string("flood ") + kind + " 2000000");
        ASSERT_EQ(rc, 0) << out;
        EXPECT_NE(out.find(" goaway 11 closed yes"), std::string::npos) << out;
        EXPECT_LE(number_after(out, " sent "), 1000000) << out;
    }
    const std::string m = metrics();
    EXPECT_EQ(number_after(m, "hotpath_http2_refusals_total{limit=\"control_frames\"} "), 5) << m;
    still_serves();
}

TEST(h2_defence_headers, a_header_block_never_ended_is_cut_at_the_headers_timeout) {
    if (shell("/usr/bin/python3 -c 'import hpack'").first != 0) {
        GTEST_SKIP() << "python3-hpack is not installed";
    }
    http::limits limits;
    limits.request_headers_timeout = 1s;
    app routes = make_app();
    test_server srv(routes, limits);
    ASSERT_TRUE(srv.ok());
    auto [rc, out] = shell("/usr/bin/python3 " HOTPATH_SOURCE_DIR "/tests/integration/h2_attack_client.py " +
                               std::to_string(srv.port()) + " slow-headers",
                           30);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("slow-headers closed yes"), std::string::npos) << out;
    EXPECT_LE(number_after(out, " after "), 4) << out;
}

} // namespace
} // namespace hotpath
