// `hotpath load --out` against real receivers: Debian's Prometheus with its remote-write receiver (the pushed series
// queried back and compared with the run's JSON, live and at the end), a Prometheus scrape of the endpoint, and an
// OTLP/HTTP receiver that decodes with OpenTelemetry's own generated code (peers/node/otlp-receiver).
#include "support/child_process.hpp"
#include "support/peers.hpp"
#include "support/prometheus_peer.hpp"
#include "support/promtool.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::child;
using test::port_from;

std::string temp_path(const std::string& name) {
    return ::testing::TempDir() + "hotpath_load_out_" + std::to_string(::getpid()) + "_" + name;
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::int64_t integer(const boost::json::value& v) {
    return v.is_int64() ? v.as_int64() : v.is_uint64() ? static_cast<std::int64_t>(v.as_uint64()) : -1;
}

// A platform service to load, stopped at the end.
class target {
public:
    target() : service_({"serve", "platform", "--port", "0", "--threads", "1"}) { port_ = port_from(service_.line()); }
    ~target() {
        service_.signal(SIGTERM);
        service_.wait_exit();
    }
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
    std::uint16_t port() const { return port_; }

private:
    child service_;
    std::uint16_t port_ = 0;
};

// Runs `hotpath load ARGS` to its end: its exit code, its output (stdout and stderr), its JSON.
struct load_run {
    int code = -1;
    std::string out;
    boost::json::object json;
};

load_run load(std::vector<std::string> args) {
    const std::string json = temp_path("run.json");
    args.insert(args.begin(), "load");
    args.insert(args.end(), {"--json", json});
    child c(args);
    load_run r;
    r.out = c.rest();
    r.code = c.wait_exit(60s);
    boost::system::error_code ec;
    const auto doc = boost::json::parse(read_all(json), ec);
    if (!ec && doc.is_object()) {
        r.json = doc.as_object();
    }
    std::remove(json.c_str());
    return r;
}

// A remote-write push is refused whole when one of its samples is out of order: a run pushed every 500 ms for 3 s,
// queried while it runs and after, has the JSON's totals, and its series end with the run (stale markers).
TEST(load_out_test, prometheus_remote_write_shows_the_runs_totals_live_and_at_the_end) {
    if (std::system("command -v prometheus >/dev/null 2>&1") != 0) {
        GTEST_SKIP() << "prometheus not found (Debian package prometheus)";
    }
    const test::temp_dir dir;
    ASSERT_FALSE(dir.path().empty());
    std::ofstream(dir.path() + "/prometheus.yml") << "global:\n  scrape_interval: 15s\n";
    const std::uint16_t prometheus_port = test::free_port();
    const auto prometheus = test::start_prometheus(dir.path(), prometheus_port, "--web.enable-remote-write-receiver");
    const std::string base = "http://127.0.0.1:" + std::to_string(prometheus_port);
    for (int i = 0; i < 100 && test::get_body(base + "/-/ready").empty(); ++i) {
        std::this_thread::sleep_for(100ms);
    }
    ASSERT_FALSE(test::get_body(base + "/-/ready").empty()) << "Prometheus did not get ready";
    target t;
    ASSERT_NE(t.port(), 0);

    // Live: the run's series are in Prometheus before the run ends.
    const std::string json = temp_path("rw.json");
    child run({"load", t.url("/plaintext"), "-c", "4", "-t", "1", "-d", "3s", "--out",
               "prometheus-rw=" + base + "/api/v1/write", "--out-interval", "500ms", "--tag", "test=rw", "--json",
               json});
    double live = -1;
    for (int i = 0; i < 25 && live <= 0; ++i) {
        std::this_thread::sleep_for(100ms);
        live = test::one_value(prometheus_port, R"(sum(hotpath_load_responses_total{test="rw"}))");
    }
    const double open_while_running =
        test::one_value(prometheus_port, R"(max_over_time(hotpath_load_connections{test="rw"}[1m]))");
    const std::string out = run.rest();
    ASSERT_EQ(run.wait_exit(30s), 0) << out;
    EXPECT_GT(live, 0) << "a push while the run went on";
    EXPECT_EQ(open_while_running, 4) << "the 4 users' connections";
    EXPECT_NE(out.find("  Outputs      prometheus-rw " + base + "/api/v1/write: "), std::string::npos) << out;
    EXPECT_NE(out.find("none failed"), std::string::npos) << out;
    const auto doc = boost::json::parse(read_all(json)).as_object();
    std::remove(json.c_str());
    const std::int64_t responses = integer(doc.at("responses"));
    ASSERT_GT(responses, 100);

    // At the end: the last push holds the JSON's totals, read past the stale markers that ended each series.
    const auto last = [&](const std::string& q) {
        return test::one_value(prometheus_port, "sum(last_over_time(" + q + "[5m]))");
    };
    EXPECT_EQ(last(R"(hotpath_load_responses_total{test="rw"})"), static_cast<double>(responses));
    EXPECT_EQ(last(R"(hotpath_load_responses_total{test="rw",status_class="2xx"})"),
              static_cast<double>(integer(doc.at("successes"))));
    EXPECT_EQ(last(R"(hotpath_load_latency_seconds_count{test="rw"})"), static_cast<double>(responses));
    EXPECT_EQ(last(R"(hotpath_load_latency_seconds_bucket{test="rw",le="+Inf"})"), static_cast<double>(responses));
    EXPECT_EQ(last(R"(hotpath_load_errors_total{test="rw"})"), 0);
    EXPECT_EQ(last(R"(hotpath_load_received_bytes_total{test="rw"})"),
              static_cast<double>(integer(doc.at("bytes_received"))));
    EXPECT_EQ(last(R"(hotpath_load_target{test="rw",kind="users"})"), 4);
    // A p99 from the pushed buckets lands in the bucket that holds the run's own.
    const double p99 = test::one_value(
        prometheus_port,
        R"(histogram_quantile(0.99, sum by (le) (last_over_time(hotpath_load_latency_seconds_bucket{test="rw"}[5m]))))");
    EXPECT_GT(p99, 0);
    EXPECT_LT(p99, 1.0);
    // deploy/grafana's dashboard: Prometheus runs every panel's query.
    const auto dashboard =
        boost::json::parse(read_all(std::string(HOTPATH_SOURCE_DIR) + "/deploy/grafana/hotpath-load.json"));
    std::size_t queries = 0;
    for (const auto& panel : dashboard.at("panels").as_array()) {
        for (const auto& q : panel.at("targets").as_array()) {
            std::string expr(q.at("expr").as_string());
            for (const auto& [from, to] :
                 {std::pair<std::string, std::string>{"$test", "rw"}, {"$__rate_interval", "1m"}}) {
                for (auto at = expr.find(from); at != std::string::npos; at = expr.find(from)) {
                    expr.replace(at, from.size(), to);
                }
            }
            const std::string answer = test::get_body(base + "/api/v1/query?query=" + test::encoded(expr));
            EXPECT_NE(answer.find(R"("status":"success")"), std::string::npos) << expr << "\n" << answer;
            ++queries;
        }
    }
    EXPECT_GE(queries, 8u);
    // Stale: an instant query no longer finds the ended run's series.
    EXPECT_TRUE(test::query(prometheus_port, test::encoded(R"(hotpath_load_responses_total{test="rw"})")).empty());
    prometheus->signal(SIGTERM);
    EXPECT_EQ(prometheus->wait_exit(), 0);
}

// --out prometheus=0: an endpoint on a free port, announced, answering the exposition while the run lasts (promtool
// accepts it; counts grow); a port taken ends the command before any load, in one line.
TEST(load_out_test, the_scrape_endpoint_answers_while_the_run_lasts) {
    target t;
    ASSERT_NE(t.port(), 0);
    child run({"load", t.url("/plaintext"), "-c", "2", "-t", "1", "-d", "2s", "--out", "prometheus=0", "-q"});
    std::string announced;
    std::smatch m;
    for (int i = 0; i < 5 && !std::regex_search(announced, m, std::regex(R"(metrics at (http://\S+))")); ++i) {
        announced += run.line();
    }
    ASSERT_TRUE(std::regex_search(announced, m, std::regex(R"(metrics at (http://127\.0\.0\.1:\d+/metrics))")))
        << announced;
    const std::string url = m[1];
    std::this_thread::sleep_for(700ms);
    const std::string first = test::get_body(url);
    std::this_thread::sleep_for(500ms);
    const std::string second = test::get_body(url);
    ASSERT_NE(first.find("hotpath_load_responses_total{"), std::string::npos) << first;
    const auto count = [](const std::string& text) {
        std::smatch c;
        return std::regex_search(text, c,
                                 std::regex(R"(hotpath_load_responses_total\{[^}]*status_class="2xx"\} (\d+))"))
                   ? std::stod(c[1])
                   : -1.0;
    };
    EXPECT_GT(count(first), 0) << first;
    EXPECT_GT(count(second), count(first)) << "the figures move with the run";
    if (test::have_promtool()) {
        const auto verdict = test::promtool_check(second);
        EXPECT_TRUE(verdict.passed) << verdict.said;
    }
    const std::string out = run.rest();
    EXPECT_EQ(run.wait_exit(30s), 0) << out;
    EXPECT_NE(out.find("  Outputs      prometheus " + url + ": scraped while the run lasted"), std::string::npos)
        << out;

    // The port taken (by the target itself).
    const auto taken = load({t.url("/plaintext"), "-d", "1s", "--out", "prometheus=" + std::to_string(t.port())});
    EXPECT_EQ(taken.code, 1) << taken.out;
    EXPECT_NE(taken.out.find("hotpath: --out prometheus=" + std::to_string(t.port()) + ": "), std::string::npos)
        << taken.out;
    EXPECT_EQ(taken.out.find("responses in"), std::string::npos) << "no load without its endpoint";
}

// OTLP/HTTP into a receiver that decodes with OpenTelemetry's own generated code: the last export holds the JSON's
// totals as cumulative sums and histograms; a partial success is told in the report.
TEST(load_out_test, otlp_exports_decode_in_opentelemetrys_own_code_with_the_runs_totals) {
    if (const std::string missing = test::missing_node_peer("otlp-receiver"); !missing.empty()) {
        GTEST_SKIP() << missing;
    }
    for (const bool reject : {false, true}) {
        std::vector<std::string> argv{test::node_program(), test::node_peer("otlp-receiver"), "{port}"};
        if (reject) {
            argv.insert(argv.end(), {"--reject", "3"});
        }
        auto receiver = test::start_peer(argv);
        ASSERT_NE(receiver.port, 0);
        target t;
        ASSERT_NE(t.port(), 0);
        const std::string collector = "http://127.0.0.1:" + std::to_string(receiver.port);
        const auto r = load({t.url("/json"), "-c", "2", "-t", "1", "-d", "2s", "--out", "otlp=" + collector,
                             "--out-interval", "500ms", "--tag", "test=otlp"});
        ASSERT_EQ(r.code, 0) << r.out;
        const auto received = boost::json::parse(test::get_body(collector + "/received")).as_object();
        EXPECT_GE(integer(received.at("requests")), 3) << "pushes while the run went on, and the last";
        EXPECT_TRUE(received.at("refused").as_array().empty()) << boost::json::serialize(received);
        EXPECT_EQ(received.at("contentTypes").as_array()[0].as_string(), "application/x-protobuf");
        std::int64_t responses = -1;
        std::int64_t latency_count = -1;
        for (const auto& metric : received.at("last").as_array()) {
            const auto& m = metric.as_object();
            EXPECT_EQ(m.at("resource").at("service.name").as_string(), "hotpath-load");
            if (m.at("name").as_string() == "hotpath.load.responses") {
                EXPECT_EQ(m.at("kind").as_string(), "sum");
                EXPECT_TRUE(m.at("monotonic").as_bool());
                responses = 0;
                for (const auto& p : m.at("points").as_array()) {
                    responses += static_cast<std::int64_t>(p.at("value").to_number<double>());
                    EXPECT_EQ(p.at("attributes").at("test").as_string(), "otlp");
                    EXPECT_LT(p.at("start").to_number<double>(), p.at("time").to_number<double>());
                }
            }
            if (m.at("name").as_string() == "hotpath.load.latency") {
                EXPECT_EQ(m.at("kind").as_string(), "histogram");
                EXPECT_EQ(m.at("unit").as_string(), "s");
                const auto& p = m.at("points").as_array().at(0);
                latency_count = static_cast<std::int64_t>(p.at("count").to_number<double>());
                EXPECT_EQ(p.at("bucketCounts").as_array().size(), p.at("explicitBounds").as_array().size() + 1);
            }
        }
        EXPECT_EQ(responses, integer(r.json.at("responses")));
        EXPECT_EQ(latency_count, integer(r.json.at("responses")));
        if (reject) {
            EXPECT_NE(r.out.find("failed (last: 3 data points rejected: planted rejection)"), std::string::npos)
                << r.out;
            EXPECT_NE(r.out.find("hotpath load: --out otlp=" + collector + ": 3 data points rejected"),
                      std::string::npos)
                << r.out;
        } else {
            EXPECT_NE(r.out.find("none failed"), std::string::npos) << r.out;
        }
        receiver.process->signal(SIGTERM);
        receiver.process->wait_exit();
    }
}

// A receiver that is down: the run goes on and ends as it would, says so once while it runs and in its report.
TEST(load_out_test, a_receiver_down_costs_the_run_nothing_but_a_line) {
    target t;
    ASSERT_NE(t.port(), 0);
    const auto r = load({t.url("/plaintext"), "-c", "2", "-t", "1", "-d", "1500ms", "--out",
                         "prometheus-rw=http://127.0.0.1:1/api/v1/write", "--out-interval", "500ms"});
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_GT(integer(r.json.at("responses")), 100);
    EXPECT_NE(r.out.find("hotpath load: --out prometheus-rw=http://127.0.0.1:1/api/v1/write: "), std::string::npos)
        << r.out;
    const auto told = [&](const std::string& what) {
        std::size_t n = 0;
        for (auto at = r.out.find(what); at != std::string::npos; at = r.out.find(what, at + 1)) {
            ++n;
        }
        return n;
    };
    EXPECT_EQ(told("(the run goes on; pushes are tried again)"), 1u) << "once, not every push\n" << r.out;
    EXPECT_NE(r.out.find(" failed (last: "), std::string::npos) << r.out;
}

// A receiver that takes connections and never answers: a socket listening on 127.0.0.1 that no one accepts from (the
// kernel completes the handshakes; the requests wait in its buffers).
class silent_receiver {
public:
    silent_receiver() {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t n = sizeof a;
        if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 64) == 0 &&
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n) == 0) {
            port_ = ntohs(a.sin_port);
        }
    }
    ~silent_receiver() { ::close(fd_); }
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
    std::uint16_t port() const { return port_; }

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

// Receivers that never answer: every push times out (the interval, 2 s here), and the run's end waits for one push
// under way and then the last, all outputs together: two timeouts, not two or three per output one after the other
// (it took 8 s here); the stale markers are not sent after a last push that failed. SIGTERM meanwhile still ends the
// run with its report: the pushers' threads leave the run's signals to it.
TEST(load_out_test, receivers_that_never_answer_delay_the_end_by_two_timeouts_at_most) {
    target t;
    ASSERT_NE(t.port(), 0);
    silent_receiver silent;
    ASSERT_NE(silent.port(), 0);
    const std::vector<std::string> outs{"--out",          "prometheus-rw=" + silent.url("/api/v1/write"),
                                        "--out",          "otlp=" + silent.url("/v1/metrics"),
                                        "--out-interval", "2s"};
    std::vector<std::string> args{t.url("/plaintext"), "-c", "2", "-t", "1", "-d", "1s"};
    args.insert(args.end(), outs.begin(), outs.end());
    const auto began = std::chrono::steady_clock::now();
    const auto r = load(args);
    const auto took = std::chrono::steady_clock::now() - began;
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_GT(integer(r.json.at("responses")), 100);
    EXPECT_LT(took, 6s) << "1 s of load, then 2 timeouts of 2 s at most";
    EXPECT_NE(r.out.find("prometheus-rw " + silent.url("/api/v1/write") + ": 2 pushes, 2 failed (last: "),
              std::string::npos)
        << "the first and the last; no stale markers after a last push that failed\n"
        << r.out;
    EXPECT_NE(r.out.find("otlp " + silent.url("/v1/metrics") + ": 2 pushes, 2 failed (last: "), std::string::npos)
        << r.out;

    args = {"load", t.url("/plaintext"), "-c", "2", "-t", "1", "-d", "30s"};
    args.insert(args.end(), outs.begin(), outs.end());
    child run(args);
    run.line(); // the header: the run has begun
    std::this_thread::sleep_for(1500ms);
    run.signal(SIGTERM);
    const std::string out = run.rest();
    EXPECT_EQ(run.wait_exit(), 143) << out;
    EXPECT_NE(out.find("INTERRUPTED by SIGTERM"), std::string::npos) << out;
    EXPECT_NE(out.find("otlp " + silent.url("/v1/metrics") + ": "), std::string::npos) << out;
}

} // namespace
} // namespace hotpath
