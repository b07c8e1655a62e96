// Parsing load plans: URLs, durations, stages, thresholds; the request bytes built from a plan.
#include <hotpath/load/plan.hpp>

#include <gtest/gtest.h>

namespace hotpath::load {
namespace {

using namespace std::chrono_literals;

TEST(plan_test, stages_nbomber_and_k6_styles) {
    auto s = parse_stages("rate=1/s:5s, rate=2/s:10s, rate=3/s:15s");
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_EQ(s->size(), 3u);
    EXPECT_EQ((*s)[1].what, stage::kind::rate);
    EXPECT_EQ((*s)[1].from, 2);
    EXPECT_EQ((*s)[2].duration, std::chrono::nanoseconds{15s});
    s = parse_stages("vus=0..240:60s, vus=240:60s");
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ((*s)[0].from, 0);
    EXPECT_EQ((*s)[0].to, 240);
    EXPECT_EQ((*s)[1].from, 240);
    s = parse_stages("rate=120/m:1m");
    ASSERT_TRUE(s);
    EXPECT_EQ((*s)[0].from, 2);
    for (const char* bad :
         {"", "rate=1/s", "speed=1:1s", "rate=1/s:1s, vus=2:1s", "vus=1/s:1s", "rate=x:1s", "rate=1/s:0s"}) {
        EXPECT_FALSE(parse_stages(bad)) << bad;
    }
}

TEST(plan_test, level_follows_the_stages) {
    plan p;
    p.stages = *parse_stages("vus=0..100:10s, vus=100:5s");
    EXPECT_DOUBLE_EQ(p.level_at(0s), 0);
    EXPECT_DOUBLE_EQ(p.level_at(5s), 50);
    EXPECT_DOUBLE_EQ(p.level_at(12s), 100);
    EXPECT_DOUBLE_EQ(p.level_at(20s), 100);
    EXPECT_EQ(p.total_time(), std::chrono::nanoseconds{15s});
    EXPECT_FALSE(p.open_model());
}

// A plan never asks for more users than its largest stage, whatever the clock says: a worker adjusting before its
// start once extrapolated a negative level that wrapped to 4294967295 users.
TEST(plan_test, levels_stay_within_the_stages_whatever_the_time) {
    plan p;
    p.stages = *parse_stages("vus=0..300:3s");
    EXPECT_DOUBLE_EQ(p.level_at(-1s), 0);
    EXPECT_DOUBLE_EQ(p.level_at(std::chrono::nanoseconds{-1}), 0);
    EXPECT_DOUBLE_EQ(p.level_at(10s), 300);
    EXPECT_DOUBLE_EQ(p.max_level(), 300);
    p.stages = *parse_stages("vus=50..10:1s, vus=20:1s");
    EXPECT_DOUBLE_EQ(p.level_at(-5s), 50);
    EXPECT_DOUBLE_EQ(p.max_level(), 50);
}

// Arrivals follow the integral of the rate: a ramp sends the area under it (k6's ramping-arrival-rate), not what
// the rate at the previous send allowed (which sent 2 requests for rate=0..100/s:4s).
TEST(plan_test, arrivals_follow_the_integral_of_the_rate) {
    auto count = [](const plan& p) {
        std::size_t n = 0;
        while (true) {
            const auto at = p.arrival_time(static_cast<double>(n));
            if (!at || *at >= p.total_time()) {
                return n;
            }
            ++n;
        }
    };
    plan p;
    p.stages = *parse_stages("rate=0..100/s:4s");
    EXPECT_EQ(count(p), 200u);
    EXPECT_DOUBLE_EQ(p.planned_arrivals(), 200);
    p.stages = *parse_stages("rate=1..100/s:4s");
    EXPECT_EQ(count(p), 202u);
    p.stages = *parse_stages("rate=1/s:5s, rate=2/s:10s, rate=3/s:15s");
    EXPECT_EQ(count(p), 70u);
    p.stages = *parse_stages("rate=100..0/s:2s");
    EXPECT_EQ(count(p), 100u);
    p.stages = *parse_stages("rate=0/s:1s, rate=10/s:1s");
    EXPECT_EQ(count(p), 10u);
    EXPECT_GE(*p.arrival_time(0), std::chrono::nanoseconds{1s}) << "nothing is due while the rate is 0";
    // Times are increasing and the gaps follow the rate: early gaps of a ramp up are longer than late ones.
    p.stages = *parse_stages("rate=10..100/s:2s");
    const auto gap_early = *p.arrival_time(1) - *p.arrival_time(0);
    const auto gap_late = *p.arrival_time(100) - *p.arrival_time(99);
    EXPECT_GT(gap_early, 3 * gap_late);
    plan fixed;
    fixed.rate = 250;
    fixed.duration = 2s;
    EXPECT_EQ(count(fixed), 500u);
    EXPECT_EQ(*fixed.arrival_time(250), std::chrono::nanoseconds{1s});
}

TEST(plan_test, thresholds) {
    auto t = parse_threshold("p95<150ms");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->what, threshold::metric::percentile);
    EXPECT_EQ(t->percentile, 95);
    EXPECT_TRUE(t->less);
    EXPECT_EQ(t->limit, 150e6);
    t = parse_threshold("p99.9 < 1s");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->percentile, 99.9);
    t = parse_threshold("errors<8%");
    ASSERT_TRUE(t);
    EXPECT_DOUBLE_EQ(t->limit, 0.08);
    t = parse_threshold("rps>1000");
    ASSERT_TRUE(t);
    EXPECT_FALSE(t->less);
    EXPECT_EQ(t->limit, 1000);
    t = parse_threshold("dropped<1%");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->what, threshold::metric::dropped);
    EXPECT_DOUBLE_EQ(t->limit, 0.01);
    for (const char* bad :
         {"p95", "p95<150", "p101<1s", "latency<1s", "errors<x", "rps>fast", "dropped<1", "dropped<x%"}) {
        EXPECT_FALSE(parse_threshold(bad)) << bad;
    }
}

TEST(plan_test, request_bytes) {
    plan p;
    p.to = {http::scheme::http, "example.test", 8080, "/a?b=c"};
    p.method = "POST";
    p.body = "hello";
    p.headers = {{"X-Id", "7"}};
    p.keep_alive = false;
    EXPECT_EQ(build_request(p), "POST /a?b=c HTTP/1.1\r\nHost: example.test:8080\r\nX-Id: 7\r\nUser-Agent: "
                                "hotpath-load\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
}

// HTTP/2's fields of the same request: pseudo-fields first, names in lower case, Host as :authority, and the fields
// HTTP/2 forbids left out (RFC 9113 §8.2.2), TE kept only as "trailers".
TEST(plan_test, request_fields_for_http2) {
    plan p;
    p.to = {http::scheme::https, "example.test", 8443, "/a?b=c"};
    request_spec q;
    q.method = "PUT";
    q.path_and_query = "/a?b=c";
    q.body = "hello";
    q.headers = {{"X-Id", "7"},       {"Connection", "keep-alive"},
                 {"Keep-Alive", "5"}, {"Transfer-Encoding", "x"},
                 {"Upgrade", "h2c"},  {"TE", "gzip"},
                 {"te", "trailers"}};
    using fields = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(h2_request_fields(p, q), (fields{{":method", "PUT"},
                                               {":scheme", "https"},
                                               {":authority", "example.test:8443"},
                                               {":path", "/a?b=c"},
                                               {"x-id", "7"},
                                               {"te", "trailers"},
                                               {"user-agent", "hotpath-load"},
                                               {"content-length", "5"}}));
    q.headers = {{"Host", "other.test"}, {"User-Agent", "mine"}};
    q.method = "GET";
    q.body.clear();
    EXPECT_EQ(h2_request_fields(p, q), (fields{{":method", "GET"},
                                               {":scheme", "https"},
                                               {":authority", "other.test"},
                                               {":path", "/a?b=c"},
                                               {"user-agent", "mine"}}));
}

} // namespace
} // namespace hotpath::load
