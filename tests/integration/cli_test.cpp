// The `hotpath` binary as a child process: serve, answer real peers (curl), stop on SIGTERM, usage errors.
#include "support/raw_client.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <regex>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

// A running `hotpath` with its stdout on a pipe. Killed (SIGKILL) on destruction if still running.
class child {
public:
    explicit child(std::vector<std::string> args) {
        int out[2];
        if (::pipe(out) != 0) {
            return;
        }
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(out[1], STDOUT_FILENO);
            ::dup2(out[1], STDERR_FILENO);
            ::close(out[0]);
            ::close(out[1]);
            std::vector<char*> argv;
            argv.push_back(const_cast<char*>(HOTPATH_BINARY));
            for (auto& a : args) {
                argv.push_back(a.data());
            }
            argv.push_back(nullptr);
            ::execv(HOTPATH_BINARY, argv.data());
            ::_exit(127);
        }
        ::close(out[1]);
        out_ = ::fdopen(out[0], "r");
    }
    ~child() {
        if (pid_ > 0 && !exited_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        if (out_ != nullptr) {
            std::fclose(out_);
        }
    }

    // One line of output (without the newline); empty at EOF.
    std::string line() {
        char buf[4096];
        if (out_ == nullptr || std::fgets(buf, sizeof(buf), out_) == nullptr) {
            return {};
        }
        std::string s(buf);
        if (!s.empty() && s.back() == '\n') {
            s.pop_back();
        }
        return s;
    }
    // Everything until EOF.
    std::string rest() {
        std::string all;
        char buf[4096];
        std::size_t n = 0;
        while (out_ != nullptr && (n = std::fread(buf, 1, sizeof(buf), out_)) > 0) {
            all.append(buf, n);
        }
        return all;
    }
    void signal(int sig) { ::kill(pid_, sig); }
    // The exit code, or -1 when it did not exit within `timeout` or died of a signal.
    int wait_exit(std::chrono::milliseconds timeout = 10s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            int st = 0;
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                exited_ = true;
                return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            }
            std::this_thread::sleep_for(10ms);
        }
        return -1;
    }

private:
    pid_t pid_ = -1;
    FILE* out_ = nullptr;
    bool exited_ = false;
};

std::uint16_t port_from(const std::string& announcement) {
    std::smatch m;
    static const std::regex re(R"(http://127\.0\.0\.1:(\d+))");
    if (!std::regex_search(announcement, m, re)) {
        return 0;
    }
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}

std::string run_curl(const std::string& args) {
    std::string out;
    FILE* p = ::popen(("curl -sS --max-time 5 " + args + " 2>&1").c_str(), "r");
    if (p == nullptr) {
        return out;
    }
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) {
        out.append(buf, n);
    }
    ::pclose(p);
    return out;
}

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

TEST(cli_test, bad_usage_exits_2_with_one_line) {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"serve", "platform", "--port", "notanumber"},
             {"serve", "nosuchapp"},
             {"frobnicate"},
             {"serve", "platform", "--headers-timeout", "0"},
             {"serve", "aggregator", "--strategy", "parallel"},
             {"serve", "aggregator", "--upstream", "https://127.0.0.1:5176"},
             {"serve", "aggregator", "--timeout", "soon"},
             {"serve", "aggregator", "--calls", "0"},
             {"serve", "weather", "--delay", "x"},
         }) {
        child c(args);
        const std::string out = c.rest();
        EXPECT_EQ(c.wait_exit(), 2) << out;
        EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
        EXPECT_EQ(out.rfind("hotpath: ", 0), 0u) << out;
    }
}

TEST(cli_test, port_in_use_is_a_clear_error) {
    child first({"serve", "platform", "--port", "0"});
    const auto port = port_from(first.line());
    ASSERT_NE(port, 0);
    // SO_REUSEPORT lets processes of the same user share a port; a different address family is refused
    // the same way, so bind a bad address instead to see the error path.
    child second({"serve", "platform", "--port", "0", "--address", "256.1.1.1"});
    const std::string out = second.rest();
    EXPECT_EQ(second.wait_exit(), 1) << out;
    EXPECT_NE(out.find("cannot listen"), std::string::npos) << out;
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
             {"load", "https://127.0.0.1/"},
             {"load", "http://127.0.0.1:1/", "-d", "ten"},
             {"load", "http://127.0.0.1:1/", "--threshold", "p95<fast"},
             {"load", "http://127.0.0.1:1/", "--stages", "rate=1/s"},
             {"load", "http://127.0.0.1:1/", "--rate", "10", "--pipeline", "4"},
             {"load", "http://127.0.0.1:1/", "-H", "NoColon"},
             {"load", "http://127.0.0.1:1/", "--body-file", "/nonexistent/file"},
             {"load", "http://127.0.0.1:1/", "-c", "0"},
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
    for (const char* opt : {"--port", "--threads", "--address", "--max-connections", "--max-body-bytes",
                            "--headers-timeout", "--keepalive-timeout", "--drain-timeout"}) {
        EXPECT_NE(out.find(opt), std::string::npos) << opt;
    }
}

} // namespace
} // namespace hotpath
