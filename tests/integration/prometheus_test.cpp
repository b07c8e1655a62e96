// A real Prometheus server (Debian's prometheus package) scrapes a running `hotpath serve platform` and answers
// queries on its series: the exposition is read by the program it is written for, not only checked by promtool.
#include "support/child_process.hpp"
#include "support/loop_runner.hpp"
#include <hotpath/client/client.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

using test::child;
using test::free_port;
using test::port_from;
using test::wait_listening;

// The body of GET `url` when it answers 200, else "".
std::string get_body(const std::string& url) {
    client_options options;
    options.connect_timeout = 2s;
    options.request_timeout = 5s;
    client c(options);
    auto body = test::run_on_loop([](client& cl, std::string u) -> task<std::string> {
        auto r = co_await cl.get(std::move(u));
        co_return r && r->status() == 200 ? r->body() : std::string{};
    }(c, url));
    return body.value_or(std::string{});
}

// The samples of an instant query's answer (`data.result`), or an empty array when it failed or is not one.
boost::json::array query(std::uint16_t prometheus_port, const std::string& encoded_query) {
    const std::string body =
        get_body("http://127.0.0.1:" + std::to_string(prometheus_port) + "/api/v1/query?query=" + encoded_query);
    boost::system::error_code ec;
    const boost::json::value answer = boost::json::parse(body, ec);
    if (ec || !answer.is_object()) {
        return {};
    }
    const auto* data = answer.as_object().if_contains("data");
    const auto* result = data != nullptr && data->is_object() ? data->as_object().if_contains("result") : nullptr;
    return result != nullptr && result->is_array() ? result->as_array() : boost::json::array{};
}

// A sample's value ("value": [time, "text"]) as a number; -1 when it has none.
double value_of(const boost::json::value& sample) {
    const auto* value = sample.as_object().if_contains("value");
    if (value == nullptr || !value->is_array() || value->as_array().size() != 2 || !value->as_array()[1].is_string()) {
        return -1;
    }
    return std::strtod(value->as_array()[1].as_string().c_str(), nullptr);
}

// A sample's label, or "" without it.
std::string label(const boost::json::value& sample, const char* name) {
    const auto* metric = sample.as_object().if_contains("metric");
    const auto* v = metric != nullptr && metric->is_object() ? metric->as_object().if_contains(name) : nullptr;
    return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string{};
}

// A directory of its own under /tmp, removed with what Prometheus wrote in it.
class temp_dir {
public:
    temp_dir() {
        char path[] = "/tmp/hotpath-prometheus-XXXXXX";
        if (::mkdtemp(path) != nullptr) {
            path_ = path;
        }
    }
    ~temp_dir() {
        if (!path_.empty()) {
            std::system(("rm -rf '" + path_ + "'").c_str());
        }
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

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
    // Through a shell only to find prometheus on PATH and to cap its heap (GOMEMLIMIT): exec leaves the child's PID
    // prometheus's own. Five minutes of retention and warnings only: a small store, and a log that cannot fill
    // the pipe nobody reads while the test runs. Its address space is bounded too (it maps about 1.2 GB at rest,
    // with a heap of tens of MB).
    constexpr rlim_t max_prometheus_memory_bytes = 3ull << 30;
    child prometheus("/bin/sh",
                     {"-c", "GOMEMLIMIT=256MiB exec prometheus --config.file='" + dir.path() +
                                "/prometheus.yml' --storage.tsdb.path='" + dir.path() +
                                "/data' --storage.tsdb.retention.time=5m --web.listen-address=127.0.0.1:" +
                                std::to_string(prometheus_port) + " --log.level=warn"},
                     0, max_prometheus_memory_bytes);
    ASSERT_TRUE(wait_listening(prometheus_port, 20s)) << "prometheus did not start listening: " << prometheus.rest();

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

    prometheus.signal(SIGTERM);
    EXPECT_EQ(prometheus.wait_exit(), 0);
    service.signal(SIGTERM);
    EXPECT_EQ(service.wait_exit(), 0);
}

} // namespace
} // namespace hotpath
