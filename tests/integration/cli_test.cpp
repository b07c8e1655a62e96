// The `hotpath` binary as a child process: serve, answer real peers (curl), stop on SIGTERM, usage errors.
#include "support/child_process.hpp"
#include "support/raw_client.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <netinet/in.h>
#include <regex>
#include <set>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

using test::child;
using test::port_from;
using test::run_curl;

TEST(cli_test, serve_platform_answers_curl_and_stops_cleanly_on_sigterm) {
    child c({"serve", "platform", "--port", "0", "--threads", "2"});
    const std::string hello = c.line();
    const auto port = port_from(hello);
    ASSERT_NE(port, 0) << hello;
    const std::string base = "http://127.0.0.1:" + std::to_string(port);
    EXPECT_EQ(run_curl(base + "/plaintext"), "Hello, World!");
    EXPECT_EQ(run_curl(base + "/json"), R"({"message":"Hello, World!"})");
    const std::string head = run_curl("-i " + base + "/json");
    EXPECT_NE(head.find("Content-Type: application/json"), std::string::npos) << head;
    EXPECT_NE(head.find("Server: hotpath"), std::string::npos);
    EXPECT_NE(head.find("Date: "), std::string::npos);
    // curl reuses one connection for several URLs on the command line.
    EXPECT_EQ(run_curl(base + "/plaintext " + base + "/plaintext"), "Hello, World!Hello, World!");
    c.signal(SIGTERM);
    EXPECT_EQ(c.wait_exit(), 0);
    EXPECT_NE(c.rest().find("stopped after"), std::string::npos);
}

// Out of file descriptors, a listener whose accept fails at once must not retry at once: that spins a core
// for as long as a connection waits in the backlog. It pauses, and serves again once descriptors are free.
TEST(cli_test, out_of_file_descriptors_pauses_accepting_instead_of_spinning) {
    if (HOTPATH_SANITIZED) {
        // UBSan's vptr check reads memory through a pipe it opens: with no descriptor left it reports
        // every object it has not seen yet as having an invalid vptr, and stops the server.
        GTEST_SKIP() << "needs a build without sanitizers: they need free file descriptors themselves";
    }
    for (const char* io : {"uring", "epoll"}) {
        child c({"serve", "platform", "--port", "0", "--threads", "1", "--io", io}, 32);
        const std::string hello = c.line();
        const auto port = port_from(hello);
        ASSERT_NE(port, 0) << io << ": " << hello;
        // Twice as many idle connections as the server has descriptors: the rest wait in the backlog.
        std::vector<int> held;
        for (int i = 0; i < 64; ++i) {
            const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(port);
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << io << ", connection " << i;
            held.push_back(fd);
        }
        std::this_thread::sleep_for(200ms);
        const auto before = c.cpu_time();
        std::this_thread::sleep_for(1s);
        const auto used = c.cpu_time() - before;
        EXPECT_LT(used, 300ms) << io << ": the server spun on accept for " << used.count() << " ms of 1000";
        for (const int fd : held) {
            ::close(fd);
        }
        // Descriptors come back as the server sees its connections close; accepting resumes after a pause.
        EXPECT_EQ(run_curl("http://127.0.0.1:" + std::to_string(port) + "/plaintext"), "Hello, World!") << io;
        c.signal(SIGTERM);
        EXPECT_EQ(c.wait_exit(), 0) << io;
        const std::string rest = c.rest();
        EXPECT_NE(rest.find("accepting paused"), std::string::npos) << io << ": " << rest;
    }
}

TEST(cli_test, serve_avatar_redirects_to_a_renard_in_range) {
    child c({"serve", "avatar", "0", "3"});
    const auto port = port_from(c.line());
    ASSERT_NE(port, 0);
    std::set<std::string> seen;
    for (int i = 0; i < 60; ++i) {
        const std::string out =
            run_curl("-o /dev/null -w '%{http_code} %{redirect_url}' http://127.0.0.1:" + std::to_string(port) + "/");
        std::smatch m;
        static const std::regex re(R"(^302 https://avatar\.spacefox\.fr/Renard-([0-3])\.png$)");
        ASSERT_TRUE(std::regex_match(out, m, re)) << out;
        seen.insert(m[1]);
    }
    EXPECT_GE(seen.size(), 3u); // uniform over 0..3: 60 draws miss two values with negligible probability
    c.signal(SIGINT);
    EXPECT_EQ(c.wait_exit(), 0);
}

// The port is --port on every service, avatar included, whose two positionals follow the write-up.
TEST(cli_test, serve_avatar_takes_the_port_as_an_option_too) {
    child c({"serve", "avatar", "--port", "0", "--threads", "1"});
    const auto port = port_from(c.line());
    ASSERT_NE(port, 0);
    const std::string out =
        run_curl("-o /dev/null -w '%{http_code} %{redirect_url}' http://127.0.0.1:" + std::to_string(port) + "/");
    EXPECT_EQ(out, "302 https://avatar.spacefox.fr/Renard-0.png");
    c.signal(SIGINT);
    EXPECT_EQ(c.wait_exit(), 0);
}

TEST(cli_test, bad_usage_exits_2_with_one_line) {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"serve", "platform", "--port", "notanumber"},
             {"serve", "nosuchapp"},
             {"frobnicate"},
             {"serve", "platform", "--headers-timeout", "0"},
             {"serve", "platform", "--min-response-rate", "-5"},
             {"serve", "platform", "--max-connections", "-1"},
             {"serve", "platform", "--max-body-bytes", "-1"},
             {"serve", "platform", "--threads", "5000"},
             {"serve", "aggregator", "--strategy", "parallel"},
             {"serve", "aggregator", "--upstream", "https://127.0.0.1:5176", "--upstream-cacert",
              HOTPATH_SOURCE_DIR "/README.md"}, // not PEM
             {"serve", "aggregator", "--timeout", "soon"},
             {"serve", "aggregator", "--calls", "0"},
             {"serve", "weather", "--delay", "x"},
             {"serve", "profile", "--delay", "soon"},
             {"serve", "profile", "--blocking-threads", "0"},
             {"serve", "profile", "--blocking-queue", "-1"},
             {"serve", "platform", "--access-log", "/nonexistent-dir/access.log"},
             {"serve", "platform", "--access-log", "-", "--access-log-format", "xml"},
         }) {
        child c(args);
        const std::string out = c.rest();
        EXPECT_EQ(c.wait_exit(), 2) << out;
        EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
        EXPECT_EQ(out.rfind("hotpath: ", 0), 0u) << out;
    }
}

// Case 4's service: its delay and its pool come from the command line (the pool's figures on /metrics say so), and
// its help names them with their defaults.
TEST(cli_test, serve_profile_takes_its_delay_and_its_pool_from_options) {
    child c({"serve", "profile", "--port", "0", "--threads", "1", "--delay", "30ms", "--blocking-threads", "3",
             "--blocking-queue", "5"});
    const std::string hello = c.line();
    const auto port = port_from(hello);
    ASSERT_NE(port, 0) << hello;
    EXPECT_NE(hello.find("serving profile"), std::string::npos) << hello;
    const std::string base = "http://127.0.0.1:" + std::to_string(port);
    for (const char* way : {"sync", "async", "offload"}) {
        const std::string out = run_curl("-w ' %{http_code} %{time_total}' " + base + "/profile/" + way + "/42");
        EXPECT_EQ(out.substr(0, out.rfind(' ')), R"({"id":42,"name":"User 42","email":"user42@example.com"} 200)")
            << way;
        EXPECT_GE(std::stod(out.substr(out.rfind(' ') + 1)), 0.029) << way << ": " << out;
    }
    EXPECT_EQ(run_curl("-o /dev/null -w '%{http_code}' " + base + "/profile/async/x"), "404");
    const std::string page = run_curl(base + "/metrics");
    EXPECT_NE(page.find("hotpath_blocking_threads{pool=\"profile\"} 3"), std::string::npos) << page;
    EXPECT_NE(page.find("hotpath_blocking_queue_capacity{pool=\"profile\"} 5"), std::string::npos) << page;
    EXPECT_NE(page.find("hotpath_blocking_completed_total{pool=\"profile\"} 1"), std::string::npos) << page;
    c.signal(SIGTERM);
    EXPECT_EQ(c.wait_exit(), 0);

    child help({"serve", "profile", "--help"});
    const std::string out = help.rest();
    EXPECT_EQ(help.wait_exit(), 0);
    for (const char* opt : {"--port", "5090", "--delay", "2s", "--blocking-threads", "--blocking-queue"}) {
        EXPECT_NE(out.find(opt), std::string::npos) << opt << "\n" << out;
    }
}

// What operators look at first: the access log on standard output, Server-Timing, and the per-route report.
TEST(cli_test, serve_logs_requests_and_says_where_their_time_went) {
    child c({"serve", "platform", "--port", "0", "--threads", "1", "--access-log", "-", "--access-log-format", "common",
             "--server-timing"});
    const auto port = port_from(c.line());
    ASSERT_NE(port, 0);
    const std::string base = "http://127.0.0.1:" + std::to_string(port);
    const std::string head = run_curl("-si " + base + "/plaintext");
    EXPECT_NE(head.find("Server-Timing: queue;dur="), std::string::npos) << head;
    const std::string report = run_curl(base + "/debug/routes");
    EXPECT_NE(report.find(R"("route":"/plaintext")"), std::string::npos) << report;
    const std::string logged = c.line(); // written within the writer's 50 ms
    EXPECT_TRUE(
        std::regex_search(logged, std::regex(R"(^127\.0\.0\.1 - - \[.*\] "GET /plaintext HTTP/1\.1" 200 \d+$)")))
        << logged;
    c.signal(SIGTERM);
    EXPECT_EQ(c.wait_exit(), 0);
    EXPECT_NE(c.rest().find(R"("GET /debug/routes HTTP/1.1" 200)"), std::string::npos);
}

// A second server on a port the first holds does not start and split the traffic with it (SO_REUSEPORT would
// let it): it stops at once, saying why, as nginx or Kestrel do.
TEST(cli_test, port_in_use_is_a_clear_error) {
    child first({"serve", "platform", "--port", "0", "--threads", "2"});
    const auto port = port_from(first.line());
    ASSERT_NE(port, 0);
    child second({"serve", "platform", "--port", std::to_string(port), "--threads", "2"});
    const std::string out = second.line(); // its error, or (were it to share the port) its announcement
    EXPECT_EQ(second.wait_exit(5s), 1) << out;
    EXPECT_NE(out.find("cannot listen"), std::string::npos) << out;
    EXPECT_NE(out.find("Address already in use"), std::string::npos) << out;
    // The first one serves on.
    EXPECT_EQ(run_curl("http://127.0.0.1:" + std::to_string(port) + "/plaintext"), "Hello, World!");

    child bad_address({"serve", "platform", "--port", "0", "--address", "256.1.1.1"});
    const std::string bad = bad_address.rest();
    EXPECT_EQ(bad_address.wait_exit(), 1) << bad;
    EXPECT_NE(bad.find("cannot listen"), std::string::npos) << bad;
    EXPECT_NE(bad.find("an address is needed"), std::string::npos) << bad;
}

// --address takes a host name as well as an address.
TEST(cli_test, serve_listens_on_a_host_name) {
    child c({"serve", "platform", "--port", "0", "--address", "localhost"});
    const std::string hello = c.line();
    std::smatch m;
    static const std::regex re(R"(http://[^ ]*:(\d+))");
    ASSERT_TRUE(std::regex_search(hello, m, re)) << hello;
    EXPECT_EQ(run_curl("http://localhost:" + m[1].str() + "/plaintext"), "Hello, World!");
    c.signal(SIGTERM);
    EXPECT_EQ(c.wait_exit(), 0);
}

TEST(cli_test, load_reports_and_gates_on_thresholds) {
    child server({"serve", "platform", "--port", "0", "--threads", "1"});
    const auto port = port_from(server.line());
    ASSERT_NE(port, 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/json";
    {
        child load({"load", url, "-n", "500", "-c", "4", "-t", "1", "--threshold", "p99<10s", "--threshold",
                    "errors<1%", "--json", "/dev/stdout", "-q"});
        const std::string out = load.rest();
        EXPECT_EQ(load.wait_exit(), 0) << out;
        EXPECT_NE(out.find("500 responses"), std::string::npos) << out;
        EXPECT_NE(out.find("200: 500"), std::string::npos) << out;
        EXPECT_NE(out.find("\"schema\":\"hotpath-load/1\""), std::string::npos) << out;
        EXPECT_NE(out.find("p99<10s"), std::string::npos) << out;
    }
    {
        child load({"load", url, "-n", "100", "-c", "2", "-t", "1", "--threshold", "rps>1000000000", "-q"});
        const std::string out = load.rest();
        EXPECT_EQ(load.wait_exit(), 3) << out;
        EXPECT_NE(out.find("FAIL"), std::string::npos) << out;
    }
    {
        // Not a terminal: progress comes as plain lines on stderr, at least one per 5 s.
        child load({"load", url, "-d", "6s", "-c", "2", "-t", "1", "--rate", "200"});
        const std::string out = load.rest();
        EXPECT_EQ(load.wait_exit(), 0) << out;
        EXPECT_NE(out.find("hotpath load: "), std::string::npos) << out;
        EXPECT_NE(out.find("req/s"), std::string::npos) << out;
    }
    server.signal(SIGTERM);
    EXPECT_EQ(server.wait_exit(), 0);
}

TEST(cli_test, serve_weather_and_aggregator_as_case_1_describes) {
    child weather({"serve", "weather", "--port", "0", "--delay", "5ms", "--threads", "1"});
    const auto weather_port = port_from(weather.line());
    ASSERT_NE(weather_port, 0);
    child aggregator({"serve", "aggregator", "--port", "0", "--threads", "1", "--calls", "20", "--strategy", "bounded",
                      "--upstream", "http://127.0.0.1:" + std::to_string(weather_port) + "/"});
    const auto port = port_from(aggregator.line());
    ASSERT_NE(port, 0);
    const std::string base = "http://127.0.0.1:" + std::to_string(port) + "/";
    for (const char* query : {"", "?strategy=sequential", "?strategy=all", "?strategy=bounded&limit=4"}) {
        const std::string out = run_curl("-w ' %{http_code}' '" + base + query + "'");
        EXPECT_EQ(out.substr(0, 10), R"([{"date":")") << query << ": " << out;
        EXPECT_EQ(out.substr(out.size() - 4), " 200") << query << ": " << out;
    }
    weather.signal(SIGTERM);
    EXPECT_EQ(weather.wait_exit(), 0);
    // The downstream is gone: a 502 problem naming the call, not a hang.
    const std::string out = run_curl("-w ' %{http_code}' " + base);
    EXPECT_NE(out.find("\"status\":502"), std::string::npos) << out;
    EXPECT_NE(out.find("/weatherForecast (call 1 of 20, bounded): connection refused"), std::string::npos) << out;
    aggregator.signal(SIGINT);
    EXPECT_EQ(aggregator.wait_exit(), 0);
}

TEST(cli_test, load_with_fewer_connections_than_threads_sends_every_request) {
    child server({"serve", "platform", "--port", "0", "--threads", "1"});
    const auto port = port_from(server.line());
    ASSERT_NE(port, 0);
    child load(
        {"load", "http://127.0.0.1:" + std::to_string(port) + "/plaintext", "-n", "50", "-c", "1", "-t", "2", "-q"});
    const std::string out = load.rest();
    EXPECT_EQ(load.wait_exit(), 0) << out;
    EXPECT_NE(out.find("200: 50"), std::string::npos) << out;
    server.signal(SIGTERM);
    EXPECT_EQ(server.wait_exit(), 0);
}

TEST(cli_test, load_bad_usage_exits_2_with_one_line) {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"load"},
             {"load", "https://127.0.0.1:1/", "--tls-min", "1.1"},
             {"load", "https://127.0.0.1:1/", "--cacert", "/nonexistent/ca.pem"},
             {"load", "https://127.0.0.1:1/", "--cacert", HOTPATH_SOURCE_DIR "/README.md"}, // not PEM
             {"load", "https://127.0.0.1:1/", "--cert", HOTPATH_SOURCE_DIR "/README.md"},   // no --key
             {"load", "http://127.0.0.1:1/", "-d", "ten"},
             {"load", "http://127.0.0.1:1/", "--threshold", "p95<fast"},
             {"load", "http://127.0.0.1:1/", "--stages", "rate=1/s"},
             {"load", "http://127.0.0.1:1/", "--rate", "10", "--pipeline", "4"},
             {"load", "http://127.0.0.1:1/", "-H", "NoColon"},
             {"load", "http://127.0.0.1:1/", "--body-file", "/nonexistent/file"},
             {"load", "http://127.0.0.1:1/", "-c", "0"},
             {"load", "http://127.0.0.1:1/", "-n", "-5"},
         }) {
        child c(args);
        const std::string out = c.rest();
        EXPECT_EQ(c.wait_exit(), 2) << args.back() << ": " << out;
        EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
        EXPECT_EQ(out.rfind("hotpath: ", 0), 0u) << out;
    }
}

TEST(cli_test, help_explains_every_option) {
    child c({"serve", "platform", "--help"});
    const std::string out = c.rest();
    EXPECT_EQ(c.wait_exit(), 0);
    for (const char* opt :
         {"--port", "--threads", "--address", "--max-connections", "--max-body-bytes", "--headers-timeout",
          "--keepalive-timeout", "--drain-timeout", "--min-body-rate", "--min-response-rate"}) {
        EXPECT_NE(out.find(opt), std::string::npos) << opt;
    }
}

// The exit line tells slow clients (408, closed) apart from malformed requests, and an IPv6 listener is announced
// with its address in brackets.
TEST(cli_test, the_exit_line_counts_timeouts_apart_and_ipv6_urls_have_brackets) {
    child c({"serve", "platform", "--port", "0", "--threads", "1", "--headers-timeout", "1", "--address", "::1"});
    const std::string hello = c.line();
    EXPECT_NE(hello.find("on http://[::1]:"), std::string::npos) << hello;
    std::smatch m;
    static const std::regex re(R"(\]:(\d+) with)");
    ASSERT_TRUE(std::regex_search(hello, m, re)) << hello;
    const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(static_cast<std::uint16_t>(std::stoi(m[1])));
    a.sin6_addr = in6addr_loopback;
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::send(fd, "GET /plaintext HTTP/1.1\r\n", 25, 0), 25); // and never the rest of the head
    char buf[512];
    timeval wait{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    ASSERT_GT(n, 0);
    EXPECT_EQ(std::string(buf, static_cast<std::size_t>(n)).rfind("HTTP/1.1 408", 0), 0u);
    ::close(fd);
    c.signal(SIGTERM);
    EXPECT_EQ(c.wait_exit(), 0);
    const std::string rest = c.rest();
    EXPECT_NE(rest.find("(0 malformed, 1 timed out, 0 handler errors)"), std::string::npos) << rest;
    EXPECT_NE(rest.find("1 waiting for a request head"), std::string::npos) << rest;
}

} // namespace
} // namespace hotpath
