// The client's metrics after real calls over loopback: calls by downstream, route and outcome, durations, the
// pools' connections, waiters and calls in flight, each loop's figures summed, and a page Prometheus accepts.
#include "support/loop_runner.hpp"
#include "support/promtool.hpp"
#include "support/raw_peer.hpp"
#include "support/test_server.hpp"
#include <hotpath/client/client.hpp>
#include <hotpath/core/error.hpp>
#include <hotpath/core/when_all.hpp>
#include <hotpath/metrics/prometheus.hpp>
#include <hotpath/metrics/source.hpp>
#include <hotpath/net/sleep.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::run_on_loop;
using response_result = result<client_response>;

// The page of `clients`' figures, as app.metrics() writes it for the clients an app exposes.
std::string page(std::initializer_list<const client*> clients) {
    std::vector<std::shared_ptr<const metrics::source>> sources;
    for (const client* c : clients) {
        sources.push_back(c->metrics());
    }
    std::string text;
    metrics::prometheus_writer out(text);
    metrics::write_sources(out, sources);
    return text;
}

// The value of the sample `series` (name and labels as written); -1 when absent.
double value_of(const std::string& text, const std::string& series) {
    const auto at = text.find("\n" + series + " ");
    if (at == std::string::npos) {
        return -1;
    }
    return std::strtod(text.c_str() + at + 1 + series.size() + 1, nullptr);
}

std::string calls(const std::string& downstream, std::string_view route, std::string_view outcome) {
    return "hotpath_client_calls_total{downstream=\"" + downstream + "\",route=\"" + std::string(route) +
           "\",outcome=\"" + std::string(outcome) + "\"}";
}
std::string of(std::string_view family, const std::string& downstream, std::string_view more = {}) {
    return std::string(family) + "{downstream=\"" + downstream + "\"" + std::string(more) + "}";
}

struct downstream_service {
    downstream_service() {
        routes.get("/hello", [](request&, response& res) { res.text("hello"); });
        routes.get("/fail", [](request&, response& res) { res.problem(http::status::internal_server_error, "no"); });
        routes.get("/slow", [](request&, response& res) -> task<void> {
            co_await net::sleep_for(150ms);
            res.text("slow");
        });
        routes.get("/abortable", [](request& req, response& res) -> task<void> {
            const auto end = std::chrono::steady_clock::now() + 5s;
            while (!req.aborted().cancelled() && std::chrono::steady_clock::now() < end) {
                co_await net::sleep_for(5ms);
            }
            res.text("done");
        });
        srv = std::make_unique<test::test_server>(routes);
    }
    std::string name() const { return "127.0.0.1:" + std::to_string(srv->port()); }
    std::string url(std::string_view path) const { return "http://" + name() + std::string(path); }
    app routes;
    std::unique_ptr<test::test_server> srv;
};

TEST(client_metrics_test, responses_count_by_downstream_route_and_status_class) {
    downstream_service down;
    ASSERT_TRUE(down.srv->ok());
    client c;
    const client_route hello = c.route("/hello");
    EXPECT_EQ(c.route("/hello").id, hello.id) << "one name, one id";
    auto done = run_on_loop([](client& cl, const downstream_service& d, client_route r) -> task<bool> {
        for (int i = 0; i < 3; ++i) {
            if (!co_await cl.get(d.url("/hello"), {0ns, {}, nullptr, r})) {
                co_return false;
            }
        }
        (void)co_await cl.get(d.url("/nowhere")); // unnamed: route=""
        (void)co_await cl.get(d.url("/nowhere"));
        (void)co_await cl.get(d.url("/fail"));
        co_return true;
    }(c, down, hello));
    ASSERT_TRUE(done && *done);
    const std::string text = page({&c});
    const std::string d = down.name();
    EXPECT_EQ(value_of(text, calls(d, "/hello", "2xx")), 3);
    EXPECT_EQ(value_of(text, calls(d, "", "4xx")), 2);
    EXPECT_EQ(value_of(text, calls(d, "", "5xx")), 1);
    EXPECT_EQ(value_of(text, calls(d, "/hello", "4xx")), -1) << "no sample for what never happened";
    EXPECT_EQ(value_of(text, of("hotpath_client_call_duration_seconds_count", d, ",route=\"/hello\"")), 3);
    EXPECT_EQ(value_of(text, of("hotpath_client_call_duration_seconds_count", d, ",route=\"\"")), 3);
    EXPECT_GT(value_of(text, of("hotpath_client_call_duration_seconds_sum", d, ",route=\"/hello\"")), 0);
    EXPECT_EQ(value_of(text, of("hotpath_client_connections_opened_total", d)), 1);
    EXPECT_EQ(value_of(text, of("hotpath_client_connections_reused_total", d)), 5);
    EXPECT_EQ(value_of(text, of("hotpath_client_calls_in_flight", d)), 0);
    EXPECT_EQ(value_of(text, of("hotpath_client_waits_total", d)), 0);
    // The loop that held the pool is gone: nothing is open any more.
    EXPECT_EQ(value_of(text, of("hotpath_client_pool_connections", d, ",state=\"idle\"")), 0);
    // client::stats() is the same figures summed.
    EXPECT_EQ(c.stats().requests, 6u);
    EXPECT_EQ(c.stats().failures, 0u);
    EXPECT_EQ(c.stats().connections_opened, 1u);
    EXPECT_EQ(c.stats().reused, 5u);
}

TEST(client_metrics_test, errors_count_by_kind) {
    downstream_service down;
    ASSERT_TRUE(down.srv->ok());
    test::raw_peer malformed([](test::peer_socket& s, int) {
        if (!s.read_request().empty()) {
            s.write("hello\r\n\r\n");
            (void)s.read_request(2s);
        }
    });
    test::raw_peer resets([](test::peer_socket& s, int) {
        if (!s.read_request().empty()) {
            s.reset();
        }
    });
    const std::string refused = "127.0.0.1:" + std::to_string(test::closed_port());
    const std::string bad = "127.0.0.1:" + std::to_string(malformed.port());
    const std::string reset = "127.0.0.1:" + std::to_string(resets.port());
    client c;
    cancel_signal cancelled;
    cancelled.cancel();
    auto done = run_on_loop(
        [](client& cl, const downstream_service& d, std::vector<std::string> urls, cancel_signal& sig) -> task<bool> {
            for (const auto& u : urls) {
                (void)co_await cl.get(u);
            }
            (void)co_await cl.get(d.url("/abortable"), {100ms});
            (void)co_await cl.get(d.url("/hello"), {0ns, {}, &sig});
            // A call whose awaiting coroutine is destroyed while the exchange runs.
            task<response_result> dropped = cl.get(d.url("/abortable"));
            dropped.start([](void*) noexcept {}, nullptr);
            co_await net::sleep_for(50ms);
            dropped.reset();
            co_return true;
        }(c, down, {"http://" + refused + "/", "http://" + bad + "/", "http://" + reset + "/"}, cancelled));
    ASSERT_TRUE(done && *done);
    const std::string text = page({&c});
    const std::string d = down.name();
    EXPECT_EQ(value_of(text, calls(refused, "", "refused")), 1);
    EXPECT_EQ(value_of(text, of("hotpath_client_connect_failures_total", refused)), 1);
    EXPECT_EQ(value_of(text, of("hotpath_client_connections_opened_total", refused)), 0);
    EXPECT_EQ(value_of(text, calls(bad, "", "malformed_response")), 1);
    EXPECT_EQ(value_of(text, calls(reset, "", "reset")), 1);
    EXPECT_EQ(value_of(text, calls(d, "", "timeout")), 1);
    EXPECT_EQ(value_of(text, calls(d, "", "cancelled")), 1);
    EXPECT_EQ(value_of(text, calls(d, "", "abandoned")), 1);
    EXPECT_EQ(value_of(text, of("hotpath_client_call_duration_seconds_count", d, ",route=\"\"")), 3);
    EXPECT_EQ(value_of(text, of("hotpath_client_calls_in_flight", d)), 0);
    const client_stats s = c.stats();
    EXPECT_EQ(s.requests, 0u);
    EXPECT_EQ(s.failures, 5u); // abandoned calls returned nothing: not failures
    EXPECT_EQ(s.abandoned, 1u);
    EXPECT_EQ(s.timeouts, 1u);
    EXPECT_EQ(s.cancelled, 1u);
    EXPECT_EQ(s.connect_failures, 1u);
}

// With one connection per host, the second of two calls at once waits: seen while both run, then counted.
TEST(client_metrics_test, a_call_waits_when_the_host_is_at_its_connection_limit) {
    downstream_service down;
    ASSERT_TRUE(down.srv->ok());
    client_options o;
    o.max_connections_per_host = 1;
    client c(o);
    auto during = run_on_loop([](client& cl, const downstream_service& d) -> task<std::string> {
        std::string seen;
        std::vector<task<response_result>> started;
        started.push_back(cl.get(d.url("/slow")));
        started.push_back(cl.get(d.url("/slow")));
        started.push_back([](client& k, std::string& out) -> task<response_result> {
            co_await net::sleep_for(60ms);
            out = page({&k});
            co_return make_error_code(errc::cancelled);
        }(cl, seen));
        auto r = co_await when_all(std::move(started));
        if (!r[0] || !r[1]) {
            co_return "a call failed";
        }
        co_return seen;
    }(c, down));
    ASSERT_TRUE(during);
    const std::string d = down.name();
    EXPECT_EQ(value_of(*during, of("hotpath_client_waiters", d)), 1) << *during;
    EXPECT_EQ(value_of(*during, of("hotpath_client_calls_in_flight", d)), 2);
    EXPECT_EQ(value_of(*during, of("hotpath_client_pool_connections", d, ",state=\"busy\"")), 1);
    EXPECT_EQ(value_of(*during, of("hotpath_client_pool_connections", d, ",state=\"idle\"")), 0);
    const std::string after = page({&c});
    EXPECT_EQ(value_of(after, of("hotpath_client_waits_total", d)), 1);
    EXPECT_EQ(value_of(after, of("hotpath_client_waiters", d)), 0);
    EXPECT_EQ(value_of(after, of("hotpath_client_connections_opened_total", d)), 1);
    EXPECT_EQ(value_of(after, of("hotpath_client_connections_reused_total", d)), 1); // handed to the waiting call
    EXPECT_EQ(value_of(after, calls(d, "", "2xx")), 2);
    EXPECT_EQ(c.stats().waited_for_connection, 1u);
}

// Two loops call one downstream through one client: each keeps its own pool and figures; a scrape sums them.
TEST(client_metrics_test, the_figures_of_every_loop_are_summed) {
    downstream_service down;
    ASSERT_TRUE(down.srv->ok());
    client c;
    const client_route hello = c.route("/hello");
    std::atomic<int> arrived{0};
    std::atomic<bool> release{false};
    const auto caller = [&] {
        auto ok = run_on_loop([](client& cl, const downstream_service& d, client_route r, std::atomic<int>& here,
                                 std::atomic<bool>& go) -> task<bool> {
            for (int i = 0; i < 5; ++i) {
                if (!co_await cl.get(d.url("/hello"), {0ns, {}, nullptr, r})) {
                    co_return false;
                }
            }
            ++here;
            while (!go) { // the loop stays, with its idle connection, while the test reads the page
                co_await net::sleep_for(5ms);
            }
            co_return true;
        }(c, down, hello, arrived, release));
        EXPECT_TRUE(ok && *ok);
    };
    std::thread a(caller);
    std::thread b(caller);
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (arrived < 2 && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(5ms);
    }
    const std::string during = page({&c});
    release = true;
    a.join();
    b.join();
    const std::string d = down.name();
    EXPECT_EQ(value_of(during, calls(d, "/hello", "2xx")), 10) << during;
    EXPECT_EQ(value_of(during, of("hotpath_client_connections_opened_total", d)), 2);
    EXPECT_EQ(value_of(during, of("hotpath_client_connections_reused_total", d)), 8);
    EXPECT_EQ(value_of(during, of("hotpath_client_pool_connections", d, ",state=\"idle\"")), 2);
    EXPECT_EQ(value_of(during, of("hotpath_client_call_duration_seconds_count", d, ",route=\"/hello\"")), 10);
    EXPECT_EQ(value_of(during, of("hotpath_client_call_duration_seconds_bucket", d, ",route=\"/hello\",le=\"+Inf\"")),
              10);
    const std::string after = page({&c});
    EXPECT_EQ(value_of(after, calls(d, "/hello", "2xx")), 10);
    EXPECT_EQ(value_of(after, of("hotpath_client_pool_connections", d, ",state=\"idle\"")), 0);
}

// Two clients on one page: each family once, their calls to the same downstream summed into one series.
TEST(client_metrics_test, two_clients_on_one_page_write_each_family_once) {
    downstream_service down;
    ASSERT_TRUE(down.srv->ok());
    client first;
    client second;
    auto done = run_on_loop([](client& x, client& y, const downstream_service& d) -> task<bool> {
        co_return (co_await x.get(d.url("/hello"))) && (co_await y.get(d.url("/hello")));
    }(first, second, down));
    ASSERT_TRUE(done && *done);
    const std::string text = page({&first, &second});
    EXPECT_EQ(value_of(text, calls(down.name(), "", "2xx")), 2);
    std::size_t helps = 0;
    for (auto at = text.find("# HELP hotpath_client_calls_total "); at != std::string::npos;
         at = text.find("# HELP hotpath_client_calls_total ", at + 1)) {
        ++helps;
    }
    EXPECT_EQ(helps, 1u);
}

// Route names are few by construction: past client_route::max_named, every new name counts as "(other)".
TEST(client_metrics_test, route_names_past_the_limit_share_other) {
    client c;
    client_route last{};
    for (int i = 0; i < client_route::max_named; ++i) {
        last = c.route("/r" + std::to_string(i));
    }
    EXPECT_EQ(last.id, client_route::max_named);
    const client_route over = c.route("/one-too-many");
    EXPECT_EQ(over.id, client_route::max_named + 1);
    EXPECT_EQ(c.route("/another").id, over.id);
    EXPECT_EQ(c.route("/r0").id, 1);
    downstream_service down;
    ASSERT_TRUE(down.srv->ok());
    auto done = run_on_loop([](client& cl, const downstream_service& d, client_route r) -> task<bool> {
        co_return static_cast<bool>(co_await cl.get(d.url("/hello"), {0ns, {}, nullptr, r}));
    }(c, down, over));
    ASSERT_TRUE(done && *done);
    EXPECT_EQ(value_of(page({&c}), calls(down.name(), "(other)", "2xx")), 1);
}

// Prometheus's own checker accepts the client families, responses and errors of several kinds included.
TEST(client_metrics_test, promtool_accepts_the_client_families) {
    if (!test::have_promtool()) {
        GTEST_SKIP() << "promtool not found (Debian package prometheus): exposition not checked by Prometheus";
    }
    downstream_service down;
    ASSERT_TRUE(down.srv->ok());
    client c;
    const client_route hello = c.route("/hello");
    auto done =
        run_on_loop([](client& cl, const downstream_service& d, client_route r, std::string refused) -> task<bool> {
            (void)co_await cl.get(d.url("/hello"), {0ns, {}, nullptr, r});
            (void)co_await cl.get(d.url("/fail"));
            (void)co_await cl.get(refused);
            co_return true;
        }(c, down, hello, "http://127.0.0.1:" + std::to_string(test::closed_port()) + "/"));
    ASSERT_TRUE(done);
    const std::string text = page({&c});
    const auto v = test::promtool_check(text);
    EXPECT_TRUE(v.passed) << v.said << "\n" << text;
}

} // namespace
} // namespace hotpath
