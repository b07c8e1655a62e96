// The load engine against the project's own server on loopback: counts, rates, latency and the stall test.
#include "load/report.hpp"
#include "load/runner.hpp"
#include "net/sleep.hpp"
#include "server/server.hpp"
#include "support/test_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <charconv>
#include <map>
#include <mutex>
#include <thread>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

std::atomic<int> stalls_left{0};
std::atomic<std::uint64_t> served{0};
std::mutex seen_mutex;
std::map<std::string, int> seen;

app make_app() {
    app a;
    a.get("/fast", [](request&, response& res) {
        served.fetch_add(1);
        res.text("ok");
    });
    a.get("/delay", [](request& req, response& res) -> task<void> {
        unsigned ms = 0;
        const auto v = req.query_param("ms");
        std::from_chars(v.data(), v.data() + v.size(), ms);
        co_await net::sleep_for(std::chrono::milliseconds{ms});
        res.text("delayed");
    });
    // Blocks the whole loop once (like a stop-the-world pause) when armed.
    a.get("/stall", [](request&, response& res) {
        if (stalls_left.fetch_sub(1) == 1) {
            std::this_thread::sleep_for(1s);
        }
        res.text("ok");
    });
    a.get("/item/{id}", [](request& req, response& res) {
        const std::string id(req.param("id"));
        {
            std::lock_guard lock(seen_mutex);
            ++seen[id];
        }
        res.text("item " + id + " body " + std::string(req.query_param("q")));
    });
    a.get("/missing-sometimes", [](request&, response& res) {
        if (served.fetch_add(1) % 4 == 0) {
            res.status(http::status::not_found);
        }
        res.text("x");
    });
    return a;
}

load::plan make_plan(std::uint16_t port, std::string path) {
    load::plan p;
    p.to.host = "127.0.0.1";
    p.to.port = port;
    p.to.path_and_query = std::move(path);
    p.threads = 1;
    p.connections = 8;
    return p;
}

load::results run(const load::plan& p) {
    std::string why;
    auto r = load::run(p, load::progress_mode::none, stderr, why);
    EXPECT_TRUE(r) << why;
    return r ? std::move(*r) : load::results{};
}

class load_test : public ::testing::Test {
protected:
    app routes_ = make_app();
    test::test_server srv_{routes_, {}, 1};
};

TEST_F(load_test, request_count_is_exact) {
    for (unsigned threads : {1u, 2u}) {
        for (unsigned pipeline : {1u, 3u}) {
            served = 0;
            auto p = make_plan(srv_.port(), "/fast");
            p.threads = threads;
            p.pipeline = pipeline;
            p.requests = 1003;
            p.duration = 1h;
            const auto r = run(p);
            EXPECT_EQ(r.responses, 1003u) << threads << " threads, pipeline " << pipeline;
            EXPECT_EQ(r.statuses[200], 1003u);
            EXPECT_EQ(served.load(), 1003u) << "the server saw exactly as many";
            EXPECT_EQ(r.error_total(), 0u);
        }
    }
}

TEST_F(load_test, no_keepalive_opens_a_connection_per_request) {
    // Slow answers keep the last connections gone across several 10 ms ticks: the tick's reconnect must not
    // open more connections than requests are left (it once opened 202 for 200, and 24 for 20 here).
    for (const auto& [path, count] : {std::pair{"/fast", 200u}, std::pair{"/delay?ms=30", 20u}}) {
        auto p = make_plan(srv_.port(), path);
        p.requests = count;
        p.duration = 1h;
        p.keep_alive = false;
        const auto r = run(p);
        EXPECT_EQ(r.responses, count) << path;
        EXPECT_EQ(r.connections_opened, count) << path;
    }
}

TEST_F(load_test, open_model_hits_its_rate) {
    auto p = make_plan(srv_.port(), "/fast");
    p.threads = 2;
    p.rate = 2000;
    p.duration = 2s;
    const auto r = run(p);
    const double rate = static_cast<double>(r.responses) / std::chrono::duration<double>(r.measured).count();
    EXPECT_NEAR(rate, 2000, 2000 * 0.02);
    EXPECT_EQ(r.unsent, 0u);
}

// 100 ms, not less: the bound is relative (5 %), and the ASan build adds about a millisecond of its own per
// request, which is not what this test measures.
TEST_F(load_test, fixed_server_delay_shows_in_the_median) {
    auto p = make_plan(srv_.port(), "/delay?ms=100");
    p.connections = 10;
    p.duration = 2s;
    const auto r = run(p);
    ASSERT_GT(r.responses, 150u);
    const double p50 = static_cast<double>(r.latency.value_at_percentile(50));
    EXPECT_NEAR(p50, 100e6, 100e6 * 0.05);
}

// The coordinated-omission test: a fixed-rate run during which the server stops for 1 s. Measured from the
// scheduled send time, the requests that should have gone out during the stall carry it, so p99 shows it;
// measured from the actual send (what a naive tool reports) it all but disappears.
TEST_F(load_test, a_server_stall_shows_in_p99_from_the_scheduled_time) {
    auto p = make_plan(srv_.port(), "/stall");
    p.connections = 4;
    p.max_connections = 4; // only these four requests are in flight when the stall starts
    p.rate = 500;
    p.duration = 4s;
    std::thread arm([] {
        std::this_thread::sleep_for(1500ms);
        stalls_left = 1;
    });
    const auto r = run(p);
    arm.join();
    EXPECT_GE(r.latency.value_at_percentile(99), 500'000'000u) << "p99 " << r.latency.value_at_percentile(99);
    EXPECT_GE(r.latency.max_ns(), 900'000'000u);
    EXPECT_LT(r.service_time.value_at_percentile(99), 100'000'000u)
        << "naive p99 " << r.service_time.value_at_percentile(99);
    EXPECT_GT(r.late, 100u) << "requests due during the stall waited for a connection";
}

TEST_F(load_test, statuses_can_be_declared_expected) {
    served = 0;
    auto p = make_plan(srv_.port(), "/missing-sometimes");
    p.requests = 400;
    p.duration = 1h;
    auto r = run(p);
    EXPECT_EQ(r.statuses[404], 100u);
    EXPECT_EQ(r.errors[static_cast<std::size_t>(load::error_class::status)], 100u);
    served = 0;
    p.expected_statuses = {404};
    r = run(p);
    EXPECT_EQ(r.statuses[404], 100u);
    EXPECT_EQ(r.error_total(), 0u);
    EXPECT_EQ(r.successes, 400u);
}

TEST_F(load_test, refused_connections_are_connect_errors) {
    auto p = make_plan(1, "/"); // nothing listens on port 1
    p.duration = 500ms;
    const auto r = run(p);
    EXPECT_EQ(r.responses, 0u);
    EXPECT_GT(r.errors[static_cast<std::size_t>(load::error_class::connect)], 0u);
}

TEST_F(load_test, timeouts_are_counted) {
    auto p = make_plan(srv_.port(), "/delay?ms=2000");
    p.connections = 2;
    p.duration = 600ms;
    p.timeout = 200ms;
    const auto r = run(p);
    EXPECT_GE(r.errors[static_cast<std::size_t>(load::error_class::timeout)], 2u);
}

TEST_F(load_test, vus_stages_ramp_connections) {
    auto p = make_plan(srv_.port(), "/delay?ms=10");
    std::string why;
    p.stages = *load::parse_stages("vus=1..2:1s, vus=8:1s", why);
    const auto r = run(p);
    ASSERT_GE(r.seconds.size(), 2u);
    // With 10 ms per request, throughput follows the number of users: 1 to 2 users, then 8.
    EXPECT_GT(r.seconds[1].responses, 2 * r.seconds[0].responses);
    EXPECT_LE(r.connections_opened, 9u);
}

TEST_F(load_test, scenario_fills_placeholders_from_the_feed_and_checks_bodies) {
    auto p = make_plan(srv_.port(), "/");
    p.threads = 2;
    p.requests = 60;
    p.duration = 1h;
    p.data.columns = {"id", "q"};
    for (int i = 1; i <= 6; ++i) {
        p.data.rows.push_back({std::to_string(i), "v" + std::to_string(i)});
    }
    load::request_spec good;
    good.name = "good";
    good.path_and_query = "/item/{{id}}?q={{q}}";
    good.checks.push_back({load::check::kind::body_contains, {}, "body v"});
    load::request_spec bad = good;
    bad.name = "bad";
    bad.checks = {{load::check::kind::body_contains, {}, "not in any body"}};
    bad.weight = 1;
    p.scenario = {good, bad};
    {
        std::lock_guard lock(seen_mutex);
        seen.clear();
    }
    const auto r = run(p);
    EXPECT_EQ(r.responses, 60u);
    ASSERT_EQ(r.per_request.size(), 2u);
    EXPECT_EQ(r.per_request[0].name, "good");
    EXPECT_EQ(r.per_request[0].failures, 0u);
    EXPECT_EQ(r.per_request[1].failures, r.per_request[1].responses);
    EXPECT_EQ(r.errors[static_cast<std::size_t>(load::error_class::check)], r.per_request[1].responses);
    EXPECT_GT(r.per_request[0].responses, 10u) << "weights 1:1 over 60 sends";
    EXPECT_GT(r.per_request[1].responses, 10u);
    std::lock_guard lock(seen_mutex);
    EXPECT_EQ(seen.size(), 6u) << "every feed row reached the server";
    for (const auto& [id, count] : seen) {
        EXPECT_EQ(count, 10) << id << ": rows are dealt in turn";
    }
}

TEST_F(load_test, thresholds_pass_and_fail) {
    auto p = make_plan(srv_.port(), "/fast");
    p.requests = 300;
    p.duration = 1h;
    std::string why;
    p.thresholds.push_back(*load::parse_threshold("p95<5s", why));
    p.thresholds.push_back(*load::parse_threshold("errors<1%", why));
    p.thresholds.push_back(*load::parse_threshold("rps>1000000000", why));
    const auto r = run(p);
    const auto outcomes = load::evaluate(p, r);
    ASSERT_EQ(outcomes.size(), 3u);
    EXPECT_TRUE(outcomes[0].pass);
    EXPECT_TRUE(outcomes[1].pass);
    EXPECT_FALSE(outcomes[2].pass);
}

} // namespace
} // namespace hotpath
