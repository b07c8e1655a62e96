// A real Prometheus server (Debian's prometheus package) scrapes a running `hotpath serve platform` and answers
// queries on its series: the exposition is read by the program it is written for, not only checked by promtool.
#include "support/child_process.hpp"
#include "support/prometheus_peer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

using test::child;
using test::encoded;
using test::free_port;
using test::get_body;
using test::label;
using test::one_value;
using test::port_from;
using test::query;
using test::start_prometheus;
using test::temp_dir;
using test::value_of;
using test::wait_listening;

TEST(prometheus_test, a_prometheus_server_scrapes_the_platform_service_and_answers_queries) {
    if (std::system("command -v prometheus >/dev/null 2>&1") != 0) {
        GTEST_SKIP() << "prometheus not found (Debian package prometheus): no real scrape tested";
    }
    child service({"serve", "platform", "--port", "0", "--threads", "1"});
    const std::uint16_t port = port_from(service.line());
    ASSERT_NE(port, 0);
    constexpr int sent = 7;
    for (int i = 0; i < sent; ++i) {
        ASSERT_EQ(get_body("http://127.0.0.1:" + std::to_string(port) + "/plaintext"), "Hello, World!");
    }

    const temp_dir dir;
    ASSERT_FALSE(dir.path().empty());
    std::ofstream(dir.path() + "/prometheus.yml") << "global:\n"
                                                     "  scrape_interval: 1s\n"
                                                     "  scrape_timeout: 1s\n"
                                                     "scrape_configs:\n"
                                                     "  - job_name: hotpath\n"
                                                     "    metrics_path: /metrics\n"
                                                     "    static_configs:\n"
                                                     "      - targets: ['127.0.0.1:"
                                                  << port << "']\n";
    const std::uint16_t prometheus_port = free_port();
    ASSERT_NE(prometheus_port, 0);
    const auto prometheus = start_prometheus(dir.path(), prometheus_port);
    ASSERT_TRUE(wait_listening(prometheus_port, 20s)) << "prometheus did not start listening: " << prometheus->rest();

    // Scraped once a second: the series shows up within a few.
    double counted = -1;
    double up = -1;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while ((counted < sent || up != 1) && std::chrono::steady_clock::now() < deadline) {
        for (const auto& sample : query(prometheus_port, "hotpath_http_requests_total")) {
            if (label(sample, "route") == "/plaintext" && label(sample, "method") == "GET" &&
                label(sample, "code") == "2xx" && label(sample, "job") == "hotpath") {
                counted = value_of(sample);
            }
        }
        // up{job="hotpath"}: the last scrape of the target succeeded.
        const boost::json::array ups = query(prometheus_port, "up%7Bjob%3D%22hotpath%22%7D");
        up = ups.size() == 1 ? value_of(ups[0]) : -1;
        std::this_thread::sleep_for(250ms);
    }
    EXPECT_GE(counted, sent) << "hotpath_http_requests_total{route=\"/plaintext\"} as Prometheus answers it";
    EXPECT_EQ(up, 1) << "up{job=\"hotpath\"}";

    prometheus->signal(SIGTERM);
    EXPECT_EQ(prometheus->wait_exit(), 0);
    service.signal(SIGTERM);
    EXPECT_EQ(service.wait_exit(), 0);
}

// deploy/prometheus as a user runs it: its configuration and rules pass promtool (the rules' own unit test too), and
// a real Prometheus with it scrapes three instances listed in its targets file, two fast (5 ms) and one slow (40
// ms), each with its own labels. Over all three, the p99 is the slow one's (a third of the requests), as the load
// generators' merged histogram says too: the quantile of the summed buckets finds it, the average of the
// instances' p99s does not.
TEST(prometheus_test, the_deploy_configuration_scrapes_several_instances_and_sums_their_buckets) {
    if (std::system("command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1") != 0) {
        GTEST_SKIP() << "prometheus or promtool not found (Debian package prometheus)";
    }
    const std::string deploy = HOTPATH_SOURCE_DIR "/deploy/prometheus/";
    EXPECT_EQ(std::system(("promtool check config " + deploy + "prometheus.yml > /dev/null").c_str()), 0);
    EXPECT_EQ(std::system(("promtool test rules " + deploy + "rules_test.yml > /dev/null").c_str()), 0);

    const char* zones[] = {"a", "b", "c"};
    const char* delays[] = {"5ms", "5ms", "40ms"};
    std::vector<std::unique_ptr<child>> services;
    std::vector<std::uint16_t> ports;
    for (const char* delay : delays) {
        services.push_back(std::make_unique<child>(
            std::vector<std::string>{"serve", "weather", "--port", "0", "--threads", "1", "--delay", delay}));
        ports.push_back(port_from(services.back()->line()));
        ASSERT_NE(ports.back(), 0);
    }
    const temp_dir dir;
    ASSERT_FALSE(dir.path().empty());
    // The same load on each, at once; their results merged give the latency over all.
    std::vector<std::unique_ptr<child>> loads;
    std::string merge = HOTPATH_BINARY " load merge";
    for (std::size_t i = 0; i < ports.size(); ++i) {
        const std::string json = dir.path() + "/load-" + zones[i] + ".json";
        loads.push_back(std::make_unique<child>(
            std::vector<std::string>{"load", "http://127.0.0.1:" + std::to_string(ports[i]) + "/weatherForecast", "-R",
                                     "100", "-d", "3s", "-c", "8", "-t", "1", "-q", "--json", json}));
        merge += " " + json;
    }
    for (auto& l : loads) {
        const std::string out = l->rest();
        ASSERT_EQ(l->wait_exit(30s), 0) << out;
    }
    ASSERT_EQ(std::system((merge + " > " + dir.path() + "/merged.json 2>/dev/null").c_str()), 0);
    std::ifstream merged_in(dir.path() + "/merged.json");
    const std::string merged_text{std::istreambuf_iterator<char>(merged_in), std::istreambuf_iterator<char>()};
    const auto merged = boost::json::parse(merged_text).as_object();
    const double load_p99_s = merged.at("latency").at("percentiles_us").at("99").to_number<double>() / 1e6;
    const auto answered = merged.at("responses").to_number<std::uint64_t>();

    // The configuration as shipped, scraping every second here, its targets in the file beside it.
    std::ifstream in(deploy + "prometheus.yml");
    std::string config{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    for (const auto& [key, value] :
         std::vector<std::pair<std::string, std::string>>{{"scrape_interval: 15s", "scrape_interval: 1s"},
                                                          {"scrape_timeout: 5s", "scrape_timeout: 1s"},
                                                          {"evaluation_interval: 15s", "evaluation_interval: 1s"}}) {
        const auto at = config.find(key);
        ASSERT_NE(at, std::string::npos) << key;
        config.replace(at, key.size(), value);
    }
    std::ofstream(dir.path() + "/prometheus.yml") << config;
    std::ifstream rules_in(deploy + "rules.yml");
    std::ofstream(dir.path() + "/rules.yml") << rules_in.rdbuf();
    std::string targets = "[";
    for (std::size_t i = 0; i < ports.size(); ++i) {
        targets += std::string(i == 0 ? "" : ", ") + R"({"targets": ["127.0.0.1:)" + std::to_string(ports[i]) +
                   R"("], "labels": {"service": "weather", "zone": ")" + zones[i] + R"("}})";
    }
    std::ofstream(dir.path() + "/hotpath-targets.json") << targets << "]\n";
    std::ofstream(dir.path() + "/haproxy-targets.json") << "[]\n";
    const std::uint16_t prometheus_port = free_port();
    ASSERT_NE(prometheus_port, 0);
    const auto prometheus = start_prometheus(dir.path(), prometheus_port);
    ASSERT_TRUE(wait_listening(prometheus_port, 20s)) << "prometheus did not start listening: " << prometheus->rest();

    const std::string buckets =
        R"(hotpath_http_request_duration_seconds_bucket{job="hotpath",route="/weatherForecast"})";
    double scraped = -1;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (scraped != static_cast<double>(answered) && std::chrono::steady_clock::now() < deadline) {
        scraped =
            one_value(prometheus_port,
                      R"(sum(hotpath_http_request_duration_seconds_count{job="hotpath",route="/weatherForecast"}))");
        std::this_thread::sleep_for(250ms);
    }
    ASSERT_EQ(scraped, static_cast<double>(answered)) << "every answer counted by one instance or another";
    // Each instance with its own labels.
    const boost::json::array ups = query(prometheus_port, encoded(R"(up{job="hotpath",service="weather"})"));
    ASSERT_EQ(ups.size(), 3u);
    std::vector<std::string> seen;
    for (const auto& u : ups) {
        EXPECT_EQ(value_of(u), 1);
        seen.push_back(label(u, "zone"));
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "c"}));

    const double summed = one_value(prometheus_port, "histogram_quantile(0.99, sum by (le) (" + buckets + "))");
    const double averaged =
        one_value(prometheus_port, "avg(histogram_quantile(0.99, sum by (instance, le) (" + buckets + ")))");
    // The slow instance's bucket, (25 ms, 50 ms], holds the p99 of all: the load's own and the summed buckets'.
    EXPECT_GT(load_p99_s, 0.025);
    EXPECT_LE(load_p99_s, 0.05 + 0.005) << "the client's p99 adds the network to the server's";
    EXPECT_GT(summed, 0.025);
    EXPECT_LE(summed, 0.05);
    EXPECT_LT(averaged, 0.025) << "averaged percentiles miss the slow instance: " << averaged;

    prometheus->signal(SIGTERM);
    EXPECT_EQ(prometheus->wait_exit(), 0);
    for (auto& s : services) {
        s->signal(SIGTERM);
        EXPECT_EQ(s->wait_exit(), 0);
    }
}

} // namespace
} // namespace hotpath
