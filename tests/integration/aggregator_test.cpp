// Case 1 end to end in-process: the aggregator calling the weather service through the pooled client.
#include "apps/apps.hpp"
#include "support/promtool.hpp"
#include "support/raw_client.hpp"
#include "support/raw_peer.hpp"
#include "support/test_server.hpp"
#include <hotpath/net/sleep.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

struct pair_of_services {
    explicit pair_of_services(std::chrono::milliseconds delay, apps::aggregator_options o = {},
                              std::string upstream = {}) {
        apps::map_weather(weather_routes, delay);
        weather = std::make_unique<test::test_server>(weather_routes);
        o.upstream = upstream.empty() ? "http://127.0.0.1:" + std::to_string(weather->port()) : upstream;
        apps::map_aggregator(aggregator_routes, o);
        aggregator = std::make_unique<test::test_server>(aggregator_routes);
    }
    app weather_routes;
    app aggregator_routes;
    std::unique_ptr<test::test_server> weather;
    std::unique_ptr<test::test_server> aggregator;
};

std::optional<test::http_reply> get(std::uint16_t port, const std::string& target,
                                    std::chrono::milliseconds timeout = 10s) {
    test::raw_client c(port);
    if (!c.send("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n")) {
        return std::nullopt;
    }
    return c.read_reply(timeout);
}

void expect_five_forecasts(const std::string& body) {
    boost::system::error_code ec;
    const auto doc = boost::json::parse(body, ec);
    ASSERT_FALSE(ec) << body;
    ASSERT_TRUE(doc.is_array()) << body;
    ASSERT_EQ(doc.as_array().size(), 5u);
    for (const auto& f : doc.as_array()) {
        ASSERT_TRUE(f.is_object());
        const auto& o = f.as_object();
        EXPECT_EQ(o.size(), 4u);
        EXPECT_TRUE(o.contains("date") && o.at("date").is_string());
        EXPECT_TRUE(o.contains("temperatureC") && o.at("temperatureC").is_int64());
        EXPECT_TRUE(o.contains("temperatureF") && o.at("temperatureF").is_int64());
        EXPECT_TRUE(o.contains("summary") && o.at("summary").is_string());
    }
}

TEST(aggregator_test, each_strategy_answers_five_forecasts_with_its_shape_of_latency) {
    // 20 calls of 20 ms: sequential ≈ 400 ms, bounded(5) ≈ 4 × 20 ms, all ≈ 20 ms. Bounds are generous:
    // timing tests must not flake on a shared machine or under ASan.
    apps::aggregator_options o;
    o.calls = 20;
    o.limit = 5;
    pair_of_services p(20ms, o);
    ASSERT_TRUE(p.weather->ok() && p.aggregator->ok());
    std::map<std::string, std::chrono::steady_clock::duration> took;
    for (const std::string strategy : {"sequential", "bounded", "all"}) {
        SCOPED_TRACE(strategy);
        ASSERT_TRUE(get(p.aggregator->port(), "/?strategy=" + strategy)); // warms the pool's connections
        const auto t0 = std::chrono::steady_clock::now();
        auto r = get(p.aggregator->port(), "/?strategy=" + strategy);
        took[strategy] = std::chrono::steady_clock::now() - t0;
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200) << r->body;
        EXPECT_EQ(r->field("content-type"), "application/json");
        expect_five_forecasts(r->body);
    }
    EXPECT_GE(took["sequential"], 400ms);
    EXPECT_GE(took["bounded"], 80ms);
    EXPECT_GE(took["all"], 20ms);
    EXPECT_LT(took["bounded"], took["sequential"] / 2);
    EXPECT_LT(took["all"], took["sequential"] / 4);
    EXPECT_LT(took["all"], took["bounded"]);
}

TEST(aggregator_test, the_query_picks_the_limit_and_the_calls) {
    pair_of_services p(1ms);
    auto r = get(p.aggregator->port(), "/?strategy=bounded&limit=3&calls=7");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    expect_five_forecasts(r->body);
    EXPECT_EQ(p.weather->get().stats().requests, 7u);
    EXPECT_EQ(p.weather->get().stats().connections_accepted, 3u); // at most 3 in flight, each kept
    for (const std::string bad : {"/?strategy=parallel", "/?limit=0", "/?calls=x", "/?limit=-1"}) {
        SCOPED_TRACE(bad);
        auto e = get(p.aggregator->port(), bad);
        ASSERT_TRUE(e);
        EXPECT_EQ(e->status, 400);
        EXPECT_EQ(e->field("content-type"), "application/problem+json");
    }
}

TEST(aggregator_test, a_refused_downstream_is_a_502_naming_the_call) {
    pair_of_services p(1ms, {}, "http://127.0.0.1:" + std::to_string(test::closed_port()));
    for (const std::string strategy : {"sequential", "bounded", "all"}) {
        SCOPED_TRACE(strategy);
        auto r = get(p.aggregator->port(), "/?strategy=" + strategy);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 502);
        EXPECT_EQ(r->field("content-type"), "application/problem+json");
        EXPECT_NE(r->body.find("/weatherForecast (call 1 of 100, " + strategy + "): connection refused"),
                  std::string::npos)
            << r->body;
    }
}

TEST(aggregator_test, a_downstream_answering_garbage_is_a_502) {
    test::raw_peer peer([](test::peer_socket& s, int) {
        while (!s.read_request().empty()) {
            s.write("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nnotjson");
        }
    });
    apps::aggregator_options o;
    o.calls = 3;
    pair_of_services p(1ms, o, "http://127.0.0.1:" + std::to_string(peer.port()));
    auto r = get(p.aggregator->port(), "/");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 502);
    EXPECT_NE(r->body.find("invalid JSON"), std::string::npos) << r->body;
}

TEST(aggregator_test, a_slow_downstream_is_a_504) {
    apps::aggregator_options o;
    o.calls = 5;
    o.timeout = 100ms;
    pair_of_services p(2s, o);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = get(p.aggregator->port(), "/?strategy=all");
    ASSERT_TRUE(r);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
    EXPECT_EQ(r->status, 504);
    EXPECT_NE(r->body.find("timed out"), std::string::npos) << r->body;
}

// A downstream whose calls hang (up to 3 s) until their caller hangs up, except that the first call to arrive
// may fail fast with a 500; counts the calls started and those abandoned by the aggregator.
struct hanging_downstream {
    explicit hanging_downstream(bool first_fails, apps::aggregator_options o) {
        routes.get("/weatherForecast", [this, first_fails](request& req, response& res) -> task<void> {
            if (started++ == 0 && first_fails) {
                co_await net::sleep_for(50ms); // the others are in flight by now
                res.problem(http::status::internal_server_error, "out of forecasts");
                co_return;
            }
            for (int i = 0; i < 300 && !req.aborted().cancelled(); ++i) {
                co_await net::sleep_for(10ms);
            }
            if (req.aborted().cancelled()) {
                ++abandoned;
            }
            res.text("[]");
        });
        weather = std::make_unique<test::test_server>(routes);
        o.upstream = "http://127.0.0.1:" + std::to_string(weather->port());
        apps::map_aggregator(aggregator_routes, o);
        aggregator = std::make_unique<test::test_server>(aggregator_routes);
    }
    // Every call started and not failed was abandoned: the aggregator closed its connection.
    bool all_abandoned(int failed) const {
        const auto end = std::chrono::steady_clock::now() + 2s;
        while (abandoned.load() < started.load() - failed && std::chrono::steady_clock::now() < end) {
            std::this_thread::sleep_for(10ms);
        }
        return abandoned.load() == started.load() - failed;
    }
    std::atomic<int> started{0};
    std::atomic<int> abandoned{0};
    app routes;
    app aggregator_routes;
    std::unique_ptr<test::test_server> weather;
    std::unique_ptr<test::test_server> aggregator;
};

TEST(aggregator_test, a_slow_downstream_is_a_504_at_the_first_timeout_whatever_the_strategy) {
    // 20 calls, 2 at a time, 300 ms each: waiting out every timeout would take 10 × 300 ms when bounded.
    // Bounds are loose (2 × one timeout): the machine is shared.
    apps::aggregator_options o;
    o.calls = 20;
    o.limit = 2;
    o.timeout = 300ms;
    for (const std::string strategy : {"sequential", "bounded", "all"}) {
        SCOPED_TRACE(strategy);
        hanging_downstream d(false, o);
        const auto t0 = std::chrono::steady_clock::now();
        auto r = get(d.aggregator->port(), "/?strategy=" + strategy);
        const auto took = std::chrono::steady_clock::now() - t0;
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 504) << r->body;
        EXPECT_NE(r->body.find("timed out"), std::string::npos) << r->body;
        EXPECT_GE(took, 300ms);
        EXPECT_LT(took, 600ms) << "answered at the first timeout";
        std::printf("[ timing   ] %s: 504 after %lld ms\n", strategy.c_str(),
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
        const int at_most = strategy == "sequential" ? 1 : strategy == "bounded" ? 2 : 20;
        EXPECT_GE(d.started.load(), 1);
        EXPECT_LE(d.started.load(), at_most) << "no call started after the first failure";
        EXPECT_TRUE(d.all_abandoned(0)) << d.abandoned.load() << " of " << d.started.load();
    }
}

TEST(aggregator_test, a_failing_downstream_is_answered_at_once_and_the_calls_in_flight_are_cancelled) {
    // The first call fails after 50 ms while the others hang: the 502 must not wait for their 3 s timeout.
    apps::aggregator_options o;
    o.calls = 20;
    o.limit = 5;
    o.timeout = 3s;
    for (const std::string strategy : {"sequential", "bounded", "all"}) {
        SCOPED_TRACE(strategy);
        hanging_downstream d(true, o);
        const auto t0 = std::chrono::steady_clock::now();
        auto r = get(d.aggregator->port(), "/?strategy=" + strategy);
        const auto took = std::chrono::steady_clock::now() - t0;
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 502) << r->body;
        EXPECT_NE(r->body.find("unexpected status"), std::string::npos)
            << "the failure, not a cancellation: " << r->body;
        EXPECT_LT(took, 1500ms) << "answered at the failure";
        std::printf("[ timing   ] %s: 502 after %lld ms\n", strategy.c_str(),
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
        EXPECT_GE(d.started.load(), 1);
        EXPECT_LE(d.started.load(), strategy == "sequential" ? 1 : strategy == "bounded" ? 5 : 20);
        EXPECT_TRUE(d.all_abandoned(1)) << d.abandoned.load() << " of " << d.started.load();
    }
}

TEST(aggregator_test, a_client_going_away_cancels_the_downstream_calls) {
    // A downstream that waits up to 5 s and notices when its caller hangs up (request::aborted()).
    std::atomic<int> started{0};
    std::atomic<int> abandoned{0};
    app downstream;
    downstream.get("/weatherForecast", [&](request& req, response& res) -> task<void> {
        ++started;
        for (int i = 0; i < 500 && !req.aborted().cancelled(); ++i) {
            co_await net::sleep_for(10ms);
        }
        if (req.aborted().cancelled()) {
            ++abandoned;
        }
        res.text("[]");
    });
    test::test_server weather(downstream);
    apps::aggregator_options o;
    o.calls = 10;
    o.strategy = apps::fan_out::all;
    o.upstream = "http://127.0.0.1:" + std::to_string(weather.port());
    app routes;
    apps::map_aggregator(routes, o);
    test::test_server aggregator(routes);
    {
        test::raw_client c(aggregator.port());
        ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
        const auto end = std::chrono::steady_clock::now() + 3s;
        while (started < 10 && std::chrono::steady_clock::now() < end) {
            std::this_thread::sleep_for(10ms);
        }
        ASSERT_EQ(started.load(), 10);
    } // the inbound connection closes here, long before the downstream's 5 s are up
    const auto end = std::chrono::steady_clock::now() + 2s;
    while (abandoned < 10 && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(abandoned.load(), 10); // every downstream call's connection was closed, none finished
}

// The aggregator's /metrics shows its downstream calls beside its own routes, summed over its two loops, and
// Prometheus's checker accepts the page.
TEST(aggregator_test, its_metrics_show_the_downstream_calls) {
    app weather_routes;
    apps::map_weather(weather_routes, 1ms);
    test::test_server weather(weather_routes);
    apps::aggregator_options o;
    o.calls = 6;
    o.limit = 2;
    o.upstream = "http://127.0.0.1:" + std::to_string(weather.port());
    app routes;
    apps::map_aggregator(routes, o);
    routes.metrics("/metrics");
    test::test_server aggregator(routes, {}, 2);
    ASSERT_TRUE(weather.ok() && aggregator.ok());
    for (const std::string strategy : {"sequential", "bounded", "all"}) {
        auto r = get(aggregator.port(), "/?strategy=" + strategy);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200) << r->body;
    }
    auto page = get(aggregator.port(), "/metrics");
    ASSERT_TRUE(page);
    ASSERT_EQ(page->status, 200);
    const std::string& text = page->body;
    const std::string downstream = "downstream=\"127.0.0.1:" + std::to_string(weather.port()) + "\"";
    const auto value = [&](const std::string& series) {
        const auto at = text.find("\n" + series + " ");
        return at == std::string::npos ? -1.0 : std::strtod(text.c_str() + at + 1 + series.size() + 1, nullptr);
    };
    EXPECT_EQ(value("hotpath_client_calls_total{" + downstream + ",route=\"/weatherForecast\",outcome=\"2xx\"}"), 18)
        << text;
    EXPECT_EQ(value("hotpath_client_call_duration_seconds_count{" + downstream + ",route=\"/weatherForecast\"}"), 18);
    EXPECT_GE(value("hotpath_client_connections_opened_total{" + downstream + "}"), 6); // `all` had 6 in flight
    EXPECT_EQ(value("hotpath_client_calls_in_flight{" + downstream + "}"), 0);
    EXPECT_EQ(value("hotpath_client_waiters{" + downstream + "}"), 0);
    EXPECT_NE(text.find("hotpath_http_requests_total{method=\"GET\",route=\"/\",code=\"2xx\"} 3"), std::string::npos);

    if (!test::have_promtool()) {
        GTEST_SKIP() << "promtool not found (Debian package prometheus): exposition not checked by Prometheus";
    }
    const auto v = test::promtool_check(text);
    EXPECT_TRUE(v.passed) << v.said;
}

} // namespace
} // namespace hotpath
