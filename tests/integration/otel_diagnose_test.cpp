// `hotpath lab diagnose URL --metrics URL` on services of other stacks it never saw, each with a planted problem,
// each exposing OpenTelemetry metrics through OpenTelemetry's Prometheus exporter: the Node inventory service
// (peers/node, the OpenTelemetry metrics SDK from npm) and the .NET originals started with --otel-metrics true
// (OpenTelemetry .NET from NuGet). Published by scripts/build-peers.sh into HOTPATH_PEERS_DIR; each test skips,
// naming what is missing, where they were not built (no node, no dotnet).
#include "support/peers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

using test::child;
using test::running_peer;

std::string node_service() {
    return test::node_peer("inventory");
}

using test::node_program;

std::string missing_node() {
    return test::missing_node_peer("inventory");
}

std::string local(std::uint16_t port, const std::string& path = "") {
    return "http://127.0.0.1:" + std::to_string(port) + path;
}

// The inventory service with its pricing downstream; the metrics' port in `metrics_port`.
struct node_services {
    running_peer pricing;
    running_peer inventory;
    std::uint16_t metrics_port = 0;
};

node_services start_node() {
    node_services s;
    s.pricing = test::start_peer({node_program(), node_service(), "--role", "pricing", "--port", "{port}"});
    if (s.pricing.port == 0) {
        return s;
    }
    s.inventory = test::start_peer({node_program(), node_service(), "--port", "{port}", "--metrics-port", "{port2}",
                                    "--downstream", local(s.pricing.port)},
                                   30s, &s.metrics_port);
    return s;
}

std::pair<int, std::string> diagnose(std::vector<std::string> args) {
    args.insert(args.begin(), {"lab", "diagnose"});
    child run(std::move(args));
    std::string out = run.rest();
    return {run.wait_exit(60s), out};
}

TEST(otel_diagnose_test, node_calls_awaited_one_after_another_are_named_with_their_host) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_services s = start_node();
    ASSERT_NE(s.inventory.port, 0);
    const auto [code, out] = diagnose({local(s.inventory.port, "/inventory/SKU-7"), "--metrics",
                                       local(s.metrics_port, "/metrics"), "-c", "8", "-d", "3s"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("problem  sequential_calls"), std::string::npos) << out;
    EXPECT_NE(out.find("8.0 outbound calls per request to " + local(s.pricing.port).substr(7)), std::string::npos)
        << out;
    EXPECT_NE(out.find("GET /inventory/:sku"), std::string::npos) << out; // the route, as the service names it
    EXPECT_NE(out.find("verdict: see the problems above"), std::string::npos) << out;
}

TEST(otel_diagnose_test, node_calls_started_together_are_not_a_problem) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_services s = start_node();
    ASSERT_NE(s.inventory.port, 0);
    const auto [code, out] = diagnose({local(s.inventory.port, "/inventory/together/SKU-7"), "--metrics",
                                       local(s.metrics_port, "/metrics"), "-c", "8", "-d", "3s"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out.find("sequential_calls"), std::string::npos) << out;
    EXPECT_EQ(out.find("flooding"), std::string::npos) << out; // 8 calls at once is not a flood
    EXPECT_EQ(out.find("blocked_loop"), std::string::npos) << out;
}

TEST(otel_diagnose_test, node_work_on_the_event_loop_is_a_blocked_loop) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_services s = start_node();
    ASSERT_NE(s.inventory.port, 0);
    const auto [code, out] = diagnose({local(s.inventory.port, "/checksum/20"), "--metrics",
                                       local(s.metrics_port, "/metrics"), "-c", "8", "-d", "4s"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("problem  blocked_loop"), std::string::npos) << out;
    EXPECT_NE(out.find("GET /checksum/:n"), std::string::npos) << out;
    // No client metric moved: the outbound rules had nothing to judge, and the line says which evidence lacked.
    EXPECT_EQ(out.find("sequential_calls"), std::string::npos) << out;
}

TEST(otel_diagnose_test, dotnet_blocking_handlers_starve_the_pool_from_the_runtime_meter) {
    if (const auto m = test::missing_original({"profile"}); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const running_peer profile = test::start_original(
        "profile", {"--urls", "http://127.0.0.1:{port}", "--delay", "300", "--otel-metrics", "true"});
    ASSERT_NE(profile.port, 0);
    const auto [code, out] = diagnose({local(profile.port, "/profile/sync/42"), "--metrics",
                                       local(profile.port, "/metrics"), "-c", "32", "-d", "6s", "--timeout", "10s"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("problem  thread_pool_starvation"), std::string::npos) << out;
    EXPECT_NE(out.find("GET /profile/sync/{id:long}"), std::string::npos) << out;
}

TEST(otel_diagnose_test, dotnet_sequential_calls_from_the_http_client_histogram) {
    if (const auto m = test::missing_original({"weather", "aggregator"}); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const running_peer weather = test::start_original("weather", {"--urls", "http://127.0.0.1:{port}"});
    ASSERT_NE(weather.port, 0);
    const running_peer aggregator =
        test::start_original("aggregator", {"--urls", "http://127.0.0.1:{port}", "--upstream", local(weather.port),
                                            "--otel-metrics", "true"});
    ASSERT_NE(aggregator.port, 0);
    const auto [code, out] = diagnose({local(aggregator.port, "/?strategy=sequential&limit=10"), "--metrics",
                                       local(aggregator.port, "/metrics"), "-c", "4", "-d", "4s"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("problem  sequential_calls"), std::string::npos) << out;
    EXPECT_NE(out.find("outbound calls per request to " + local(weather.port).substr(7)), std::string::npos) << out;
}

TEST(otel_diagnose_test, a_page_that_is_not_metrics_or_a_service_that_is_down_gets_one_line) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_services s = start_node();
    ASSERT_NE(s.inventory.port, 0);
    // The service's own JSON is not Prometheus text: exit 3, one line.
    auto [code, out] =
        diagnose({local(s.inventory.port, "/health"), "--metrics", local(s.inventory.port, "/health"), "-d", "1s"});
    EXPECT_EQ(code, 3) << out;
    EXPECT_NE(out.find("is not Prometheus text"), std::string::npos) << out;
    // A metrics URL nothing listens on: exit 1.
    std::tie(code, out) =
        diagnose({local(s.inventory.port, "/health"), "--metrics", local(test::free_port(), "/metrics"), "-d", "1s"});
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(out.find("nothing answers at"), std::string::npos) << out;
    // Not a URL: bad usage.
    std::tie(code, out) = diagnose({local(s.inventory.port, "/health"), "--metrics", "metrics", "-d", "1s"});
    EXPECT_EQ(code, 2) << out;
    // Both ways of reading a service at once: bad usage.
    std::tie(code, out) = diagnose({local(s.inventory.port, "/health"), "--metrics", local(s.metrics_port, "/metrics"),
                                    "--dotnet", "1", "-d", "1s"});
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find("give one"), std::string::npos) << out;
}

TEST(otel_diagnose_test, watching_without_load_reads_the_metrics_and_says_the_rules_need_load) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_services s = start_node();
    ASSERT_NE(s.inventory.port, 0);
    const auto [code, out] =
        diagnose({local(s.inventory.port), "--metrics", local(s.metrics_port, "/metrics"), "-d", "1s"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("no load sent"), std::string::npos) << out;
}

} // namespace
} // namespace hotpath
