// The OpenTelemetry metrics' summary and rules, on scrapes recorded from real exporters (tests/lab/data/otel: the
// .NET originals with OpenTelemetry's Prometheus exporter, and a Node service with OpenTelemetry's metrics SDK, each
// before, during and after a load; the loads' own figures from the folder's READMEs), and on figures built for
// the rules' edges.
#include <hotpath/lab/otel_metrics.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hotpath::lab {
namespace {

metrics::scrape page(const std::string& name) {
    std::ifstream in(std::string(HOTPATH_SOURCE_DIR) + "/tests/lab/data/otel/" + name + ".prom");
    std::ostringstream text;
    text << in.rdbuf();
    auto read = metrics::read_prometheus_text(text.str());
    EXPECT_TRUE(read.has_value()) << name << ": " << (read ? "" : read.error().message);
    return read ? std::move(*read) : metrics::scrape{};
}

// A recording's before, during and after pages, over the load's seconds.
otel_figures recorded(const std::string& name, double seconds) {
    const std::vector<metrics::scrape> during{page(name + "_during")};
    return summarize_otel(page(name + "_before"), during, page(name + "_after"), seconds);
}

[[maybe_unused]] bool has(const std::vector<finding>& f, finding::kind k) {
    return std::any_of(f.begin(), f.end(), [k](const finding& x) { return x.what == k && x.problem; });
}

std::string lines(const std::vector<finding>& f) {
    std::string out;
    for (const finding& x : f) {
        out += std::string(to_string(x.what)) + (x.problem ? " (problem): " : ": ") + x.text + "\n";
    }
    return out;
}

TEST(otel_metrics_test, dotnet_routes_hosts_and_runtime_read_from_the_exporters_names) {
    const otel_figures f = recorded("dotnet_aggregator_sequential", 5);
    EXPECT_TRUE(f.server_metrics);
    EXPECT_TRUE(f.client_metrics);
    EXPECT_EQ(f.runtime, "dotnet");
    ASSERT_FALSE(f.routes.empty());
    EXPECT_EQ(f.routes.front().method, "GET");
    EXPECT_EQ(f.routes.front().route, "/");
    ASSERT_EQ(f.hosts.size(), 1U);
    EXPECT_EQ(f.hosts.front().address, "127.0.0.1:5493");
    // 64 requests answered in the load's 5 s, 100 calls each; the window's counts are after less before.
    EXPECT_NEAR(f.hosts.front().calls / f.routes.front().requests, 100, 10) << f.hosts.front().calls;
    ASSERT_TRUE(f.cpu_seconds.has_value());
    EXPECT_GT(*f.cpu_seconds, 0);
    ASSERT_TRUE(f.allocated_bytes.has_value());
    ASSERT_TRUE(f.routes.front().p50_s.has_value());
    EXPECT_GT(*f.routes.front().p50_s, 0.5); // 100 calls of ~10 ms one after another
}

// The loads' own figures (tests/lab/data/otel/README*.md): answers, seconds, connections, mean and p95 (ms), and
// connections opened.
const load_window node_sequential{1554, 5, 16, 51.71, 68.68, 16};
const load_window node_together{3638, 5, 16, 22.04, 50.86, 16};
const load_window node_checksum{331, 5, 16, 248.52, 316.67, 16};
const load_window dotnet_sequential{64, 5, 16, 1360, 1600, 16};
const load_window dotnet_all{292, 5, 16, 277.46, 557.84, 16};
const load_window dotnet_sync{127, 6, 64, 3290, 4870, 64};
const load_window dotnet_async{1920, 6, 64, 202.14, 207.62, 64};

TEST(otel_metrics_test, node_routes_hosts_and_event_loop_read_from_the_exporters_names) {
    const otel_figures f = recorded("node_inventory_sequential", 5);
    EXPECT_EQ(f.runtime, "nodejs");
    ASSERT_EQ(f.routes.size(), 1U);
    EXPECT_EQ(f.routes.front().route, "/inventory/:sku");
    EXPECT_EQ(f.routes.front().requests, 1554); // as many as the load's answers
    ASSERT_EQ(f.hosts.size(), 1U);
    EXPECT_EQ(f.hosts.front().calls, 8 * 1554.0); // 8 calls each
    ASSERT_TRUE(f.cpu_seconds.has_value());       // process.cpu.time, without the unit's suffix
    ASSERT_TRUE(f.loop_delay_p99_s.has_value());
    EXPECT_LT(*f.loop_delay_p99_s, 0.02); // the monitor's 10 ms interval is not the loop's delay
}

TEST(otel_metrics_test, calls_one_after_another_are_sequential_with_their_host_and_saving) {
    const auto node = diagnose_otel(recorded("node_inventory_sequential", 5), node_sequential, "GET /inventory/SKU-1");
    ASSERT_FALSE(node.empty());
    EXPECT_EQ(node.front().what, finding::kind::sequential_calls) << lines(node);
    EXPECT_TRUE(node.front().problem);
    EXPECT_EQ(node.front().route, "/inventory/:sku");
    EXPECT_NE(node.front().text.find("8.0 outbound calls per request to 127.0.0.1:5301"), std::string::npos)
        << lines(node);
    EXPECT_NE(node.front().text.find("saving up to"), std::string::npos) << lines(node);
    EXPECT_FALSE(has(node, finding::kind::blocked_loop)) << lines(node);

    const auto dotnet = diagnose_otel(recorded("dotnet_aggregator_sequential", 5), dotnet_sequential, "GET /");
    ASSERT_FALSE(dotnet.empty());
    EXPECT_EQ(dotnet.front().what, finding::kind::sequential_calls) << lines(dotnet);
    EXPECT_NE(dotnet.front().text.find("to 127.0.0.1:5493"), std::string::npos) << lines(dotnet);
}

TEST(otel_metrics_test, a_hundred_calls_at_once_flood_and_eight_do_not) {
    const auto all = diagnose_otel(recorded("dotnet_aggregator_all", 5), dotnet_all, "GET /");
    EXPECT_TRUE(has(all, finding::kind::flooding)) << lines(all);
    EXPECT_FALSE(has(all, finding::kind::sequential_calls)) << lines(all);
    const auto together = diagnose_otel(recorded("node_inventory_together", 5), node_together, "GET /x");
    EXPECT_FALSE(has(together, finding::kind::flooding)) << lines(together);
    EXPECT_FALSE(has(together, finding::kind::sequential_calls)) << lines(together);
    EXPECT_FALSE(has(together, finding::kind::blocked_loop)) << lines(together); // busy, but in short turns
}

TEST(otel_metrics_test, work_on_the_event_loop_is_a_blocked_loop_before_its_queueing) {
    const auto found = diagnose_otel(recorded("node_checksum", 5), node_checksum, "GET /checksum/20");
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found.front().what, finding::kind::blocked_loop) << lines(found);
    EXPECT_EQ(found.front().route, "/checksum/:n");
    EXPECT_NE(found.front().text.find("busy"), std::string::npos) << lines(found); // it computes
}

TEST(otel_metrics_test, an_awaited_wait_is_healthy_and_a_blocking_one_is_not) {
    const auto async = diagnose_otel(recorded("dotnet_profile_async", 6), dotnet_async, "GET /profile/async/1");
    EXPECT_TRUE(std::none_of(async.begin(), async.end(), [](const finding& x) { return x.problem; })) << lines(async);
    // The sync recording's one scrape during the load read 3 work items queued: not a queue held in two readings,
    // but requests that waited before ASP.NET Core measured them while the pool grew at an idle CPU.
    const auto sync = diagnose_otel(recorded("dotnet_profile_sync", 6), dotnet_sync, "GET /profile/sync/1");
    ASSERT_FALSE(sync.empty());
    EXPECT_EQ(sync.front().what, finding::kind::thread_pool_starvation) << lines(sync);
}

// A run in CI under other tests' load: the pool held 3 threads through the window (it grows a thread in seconds on
// a busy machine) and its queue read empty (Kestrel hands reads to the pool through a queue or two of its own), but
// the requests inside ASP.NET Core's measure were as many as its threads while the CPU idled: starvation. Awaited
// handlers have many more inside than threads; the same wait then is queueing, and its line gives the pool's figures.
TEST(otel_metrics_test, a_pool_whose_every_thread_holds_a_request_at_an_idle_cpu_is_starved) {
    otel_figures f;
    f.seconds = 7;
    f.server_metrics = true;
    f.runtime = "dotnet";
    f.cpu_seconds = 0.67;
    f.routes.push_back({"GET", "/profile/sync/{id:long}", 61, 61 * 0.3, 0, 0.3, 0.3}); // 3.05 inside over 6 s
    f.threads_first = 3;
    f.threads_last = 3;
    f.queue_readings = 4;
    f.queue_held = 0;
    f.queue_mean = 0;
    f.queue_max = 0;
    const load_window load{61, 6, 32, 3790, 7220, 32};
    const auto starved = diagnose_otel(f, load, "GET /profile/sync/42");
    ASSERT_FALSE(starved.empty());
    EXPECT_EQ(starved.front().what, finding::kind::thread_pool_starvation) << lines(starved);
    EXPECT_NE(starved.front().text.find("held 3 threads, as many as the 3.1 requests inside"), std::string::npos)
        << lines(starved);

    f.threads_first = f.threads_last = 8; // 8 threads for 3 requests inside: not what holds them
    const auto waiting = diagnose_otel(f, load, "GET /profile/sync/42");
    EXPECT_FALSE(has(waiting, finding::kind::thread_pool_starvation)) << lines(waiting);
    ASSERT_TRUE(has(waiting, finding::kind::queueing)) << lines(waiting);
    EXPECT_NE(lines(waiting).find("the .NET pool held 8 threads (8 before) for 3.1 requests inside on average, its "
                                  "queue a work item or more in 0 of 4 readings, at 0.10 of a core"),
              std::string::npos)
        << lines(waiting);

    f.threads_first = f.threads_last = 3;
    f.routes.front().requests = 600; // awaited: 30 inside for 3 threads (a far service's round trips, say)
    f.routes.front().seconds = 600 * 0.3;
    const auto awaited = diagnose_otel(f, load, "GET /profile/sync/42");
    EXPECT_FALSE(has(awaited, finding::kind::thread_pool_starvation)) << lines(awaited);

    f.routes.front().requests = 61;
    f.routes.front().seconds = 61 * 0.3;
    f.cpu_seconds = 7 * 1.5; // busy: the wait is for the CPU, not for a thread
    const auto busy = diagnose_otel(f, load, "GET /profile/sync/42");
    EXPECT_FALSE(has(busy, finding::kind::thread_pool_starvation)) << lines(busy);
}

TEST(otel_metrics_test, a_service_without_the_http_server_histogram_gets_one_line_of_what_to_expose) {
    const metrics::scrape empty;
    const otel_figures f = summarize_otel(empty, {}, empty, 5);
    const auto found = diagnose_otel(f, node_sequential, "GET /x");
    ASSERT_EQ(found.size(), 1U);
    EXPECT_FALSE(found.front().problem);
    EXPECT_NE(found.front().text.find("http.server.request.duration"), std::string::npos) << lines(found);
    EXPECT_FALSE(otel_lacking(f).empty());
}

TEST(otel_metrics_test, the_older_conventions_milliseconds_are_read_as_seconds) {
    auto page = [](double count, double sum_ms) {
        auto read = metrics::read_prometheus_text(
            "# TYPE http_server_duration histogram\n"
            "http_server_duration_bucket{http_method=\"GET\",http_route=\"/a\",http_status_code=\"200\",le=\"5\"} " +
            std::to_string(count) +
            "\n"
            "http_server_duration_bucket{http_method=\"GET\",http_route=\"/a\",http_status_code=\"200\",le=\"+Inf\"} " +
            std::to_string(count) +
            "\nhttp_server_duration_sum{http_method=\"GET\",http_route=\"/a\",http_status_code=\"200\"} " +
            std::to_string(sum_ms) +
            "\nhttp_server_duration_count{http_method=\"GET\",http_route=\"/a\",http_status_code=\"200\"} " +
            std::to_string(count) + "\n");
        EXPECT_TRUE(read.has_value());
        return read ? *read : metrics::scrape{};
    };
    const otel_figures f = summarize_otel(page(10, 20), {}, page(110, 420), 5);
    ASSERT_EQ(f.routes.size(), 1U);
    EXPECT_EQ(f.routes.front().requests, 100);
    EXPECT_DOUBLE_EQ(f.routes.front().seconds, 0.4); // 400 ms
    EXPECT_LE(*f.routes.front().p95_s, 0.005);
}

TEST(otel_metrics_test, a_series_that_restarted_counts_from_zero_and_5xx_are_errors) {
    auto page = [](double ok, double failed) {
        const std::string text =
            "http_server_request_duration_seconds_count{http_request_method=\"GET\",http_route=\"/b\","
            "http_response_status_code=\"200\"} " +
            std::to_string(ok) +
            "\nhttp_server_request_duration_seconds_sum{http_request_method=\"GET\",http_route=\"/b\","
            "http_response_status_code=\"200\"} 1\n"
            "http_server_request_duration_seconds_count{http_request_method=\"GET\",http_route=\"/b\","
            "http_response_status_code=\"503\"} " +
            std::to_string(failed) +
            "\nhttp_server_request_duration_seconds_sum{http_request_method=\"GET\",http_route=\"/b\","
            "http_response_status_code=\"503\"} 1\n";
        auto read = metrics::read_prometheus_text(text);
        EXPECT_TRUE(read.has_value());
        return read ? *read : metrics::scrape{};
    };
    // The 200 series fell from 500 to 90: the service restarted; its 90 are the window's.
    const otel_figures f = summarize_otel(page(500, 0), {}, page(90, 10), 5);
    ASSERT_EQ(f.routes.size(), 1U);
    EXPECT_EQ(f.routes.front().requests, 100);
    EXPECT_EQ(f.routes.front().server_errors, 10);
    const auto found = diagnose_otel(f, {100, 5, 4, 10, 20, 4}, "GET /b");
    EXPECT_TRUE(has(found, finding::kind::server_errors)) << lines(found);
}

} // namespace
} // namespace hotpath::lab
