// `hotpath load` as users type it: options in any order, conflicts refused, ramps bounded, exit codes that tell.
#include "support/child_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace hotpath {
namespace {

using test::child;
using test::port_from;
using namespace std::chrono_literals;

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string temp_path(const std::string& name) {
    return ::testing::TempDir() + "hotpath_load_cli_" + std::to_string(::getpid()) + "_" + name;
}

// A platform server for one test, stopped (and checked to stop cleanly) at the end.
class platform {
public:
    platform() : server_({"serve", "platform", "--port", "0", "--threads", "1"}) { port_ = port_from(server_.line()); }
    ~platform() {
        server_.signal(SIGTERM);
        EXPECT_EQ(server_.wait_exit(), 0);
    }
    std::uint16_t port() const { return port_; }
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

private:
    child server_;
    std::uint16_t port_ = 0;
};

// Runs `hotpath` with `args` (memory bounded to 2 GiB, except under sanitizers, which reserve terabytes of address
// space for their shadow) and returns its exit code and output.
std::pair<int, std::string> run(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 30s) {
    child c(args, 0, HOTPATH_SANITIZED ? 0 : rlim_t{2} << 30);
    std::string out = c.rest();
    return {c.wait_exit(timeout), std::move(out)};
}

std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const auto& a : args) {
        s.append(s.empty() ? "" : " ").append(a);
    }
    return s;
}

// The regression that ate the machine: a closed-model ramp from 0 users opened thousands of connections before
// its start, grew ~200 MB/s and ran past its end. Under a 2 GiB limit it must finish on time with at most the
// largest stage's users, and say so in the JSON.
TEST(load_cli_test, a_ramp_from_zero_users_stays_within_its_largest_stage) {
    platform srv;
    ASSERT_NE(srv.port(), 0);
    const std::string json = temp_path("ramp.json");
    const auto started = std::chrono::steady_clock::now();
    const auto [code, out] =
        run({"load", srv.url("/plaintext"), "--stages", "vus=0..100:2s", "-t", "1", "-q", "--json", json});
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_EQ(code, 0) << out;
    EXPECT_LT(took, 6s) << "the run went past its planned 2 s";
    const auto doc = boost::json::parse(read_all(json)).as_object();
    EXPECT_LE(doc.at("connections_opened").to_number<std::uint64_t>(), 100u) << out;
    EXPECT_GT(doc.at("connections_opened").to_number<std::uint64_t>(), 50u) << out;
    EXPECT_EQ(doc.at("run").as_object().at("connections").to_number<int>(), 100) << "the plan's most users";
    EXPECT_NE(out.find("closed model, staged virtual users (up to 100)"), std::string::npos) << out;
    std::remove(json.c_str());
}

// wrk, wrk2, oha, hey and ab users write options first: every documented form works with its options before and
// after the positional arguments, and a repeatable option takes one value per occurrence.
TEST(load_cli_test, options_work_before_and_after_the_positional_arguments) {
    platform srv;
    ASSERT_NE(srv.port(), 0);
    const std::string url = srv.url("/plaintext");
    const std::string json_a = temp_path("a.json");
    const std::string json_b = temp_path("b.json");
    const std::vector<std::pair<std::vector<std::string>, std::string>> forms{
        {{"-t", "1", "-c", "8", "-d", "1s", "--threshold", "p95<5s", "--threshold", "errors<1%"}, "p95<5s"},
        {{"--expect-status", "200", "--expect-status", "404", "-n", "50", "-c", "2"}, "200: 50"},
        {{"-H", "X-A: 1", "-H", "X-B: 2", "-n", "20", "-c", "2"}, "200: 20"},
        {{"--rate", "200", "-d", "1s", "-c", "4"}, "open model, 200 req/s"},
        {{"--stages", "rate=50..150/s:1s", "--warmup", "200ms"}, "open model, staged rate"},
        {{"--stages", "vus=1..4:1s"}, "staged virtual users (up to 4)"},
        {{"-n", "100", "-c", "4", "--no-keepalive"}, "200: 100"},
        {{"--pipeline", "4", "-n", "400", "-c", "2"}, "200: 400"},
    };
    for (const auto& [options, expected] : forms) {
        for (const bool first : {true, false}) {
            std::vector<std::string> args{"load"};
            if (!first) {
                args.push_back(url);
            }
            args.insert(args.end(), options.begin(), options.end());
            args.push_back("-q");
            if (first) {
                args.push_back(url);
            }
            const auto [code, out] = run(args);
            EXPECT_EQ(code, 0) << joined(args) << "\n" << out;
            EXPECT_NE(out.find(expected), std::string::npos) << joined(args) << "\n" << out;
        }
    }
    // merge takes its files after or among options alike.
    ASSERT_EQ(run({"load", "-n", "30", "-c", "1", "-q", "--json", json_a, url}).first, 0);
    ASSERT_EQ(run({"load", url, "-n", "20", "-c", "1", "-q", "--json", json_b}).first, 0);
    const auto [code, out] = run({"load", "merge", json_a, json_b});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("50 responses"), std::string::npos) << out;
    std::remove(json_a.c_str());
    std::remove(json_b.c_str());
    // The avatar takes two positionals: options before, between and after them.
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"serve", "avatar", "--threads", "1", "0", "3"},
                                               {"serve", "avatar", "0", "--threads", "1", "3"},
                                               {"serve", "avatar", "0", "3", "--threads", "1"}}) {
        child c(args);
        const std::string hello = c.line();
        EXPECT_NE(port_from(hello), 0) << joined(args) << ": " << hello;
        EXPECT_NE(hello.find("with 1 event loop "), std::string::npos) << joined(args) << ": " << hello;
        c.signal(SIGTERM);
        EXPECT_EQ(c.wait_exit(), 0) << joined(args);
    }
}

TEST(load_cli_test, conflicting_or_out_of_range_options_are_bad_usage_naming_them) {
    const std::string url = "http://127.0.0.1:1/";
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"load", url, "--rate", "0"}, "--rate must be a number of requests per second > 0"},
        {{"load", url, "--rate", "-5"}, "--rate must be"},
        {{"load", url, "--stages", "rate=1/s:1s", "--rate", "5"}, "--stages and --rate do not mix"},
        {{"load", url, "--stages", "rate=1/s:1s", "-d", "5s"}, "--stages and --duration do not mix"},
        {{"load", url, "--stages", "vus=0..5:1s", "-c", "5"}, "-c and vus stages do not mix"},
        {{"load", url, "--expect-status", "700"}, "700"},
        {{"load", url, "--max-connections", "10"}, "--max-connections applies to the open model"},
        {{"load", url, "--rate", "10", "-c", "8", "--max-connections", "4"}, "--max-connections must be at least -c"},
        {{"load", url, "--pipeline", "2", "--no-keepalive"}, "--pipeline and --no-keepalive do not mix"},
        {{"load", url, "-n", "0"}, "-n must be at least 1"},
        {{"load", url, "--warmup", "10s", "-d", "5s"}, "--warmup must be shorter than the run"},
        {{"load", url, "-b", "x", "--body-file", "/etc/hostname"}, "--body and --body-file do not mix"},
        {{"frobnicate"}, "'frobnicate' is not a hotpath command; try one of: freight, lab, load, probe, serve"},
        {{"serve", "nope"}, "'nope' is not a hotpath serve command; try one of: platform, avatar, weather, aggregator"},
        {{"serve"}, "A subcommand is required"},
    };
    for (const auto& [args, expected] : cases) {
        const auto [code, out] = run(args);
        EXPECT_EQ(code, 2) << joined(args) << "\n" << out;
        EXPECT_NE(out.find(expected), std::string::npos) << joined(args) << "\n" << out;
        EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << joined(args) << "\n" << out;
        EXPECT_EQ(out.rfind("hotpath: ", 0), 0u) << out;
    }
}

// A run in which nothing succeeded must not pass: the target is down, every connection is refused.
TEST(load_cli_test, a_run_where_nothing_succeeded_exits_4_and_says_why) {
    for (const char* model : {"closed", "open"}) {
        std::vector<std::string> args{"load", "http://127.0.0.1:1/", "-d", "500ms", "-q", "--threshold", "errors<1%"};
        if (std::string_view(model) == "open") {
            args.insert(args.end(), {"--rate", "100"});
        }
        const auto [code, out] = run(args);
        EXPECT_EQ(code, 4) << model << "\n" << out;
        EXPECT_NE(out.find("nothing succeeded; no connection could be opened (Connection refused)"), std::string::npos)
            << model << "\n"
            << out;
        EXPECT_NE(out.find("0 errors"), std::string::npos) << "refused connections are not failed requests\n" << out;
    }
}

// Failure in the headline: the first line of the report says that nothing connected and that the run stopped
// (as wrk does) instead of running its whole duration; asked to keep trying, it does.
TEST(load_cli_test, a_target_where_nothing_connects_stops_after_the_grace_unless_asked_to_keep_trying) {
    auto started = std::chrono::steady_clock::now();
    auto [code, out] = run({"load", "http://127.0.0.1:1/", "-d", "20s", "-q", "-t", "1", "-c", "2"});
    EXPECT_LT(std::chrono::steady_clock::now() - started, 8s) << out;
    EXPECT_EQ(code, 4) << out;
    const auto requests_line =
        out.substr(out.find("  Requests "), out.find('\n', out.find("  Requests ")) - out.find("  Requests "));
    EXPECT_NE(requests_line.find("connection attempts failed (Connection refused)"), std::string::npos) << out;
    EXPECT_NE(requests_line.find("STOPPED: no connection opened in the first 2s"), std::string::npos) << out;

    started = std::chrono::steady_clock::now();
    std::tie(code, out) = run({"load", "http://127.0.0.1:1/", "-d", "3s", "-q", "-t", "1", "-c", "2", "--keep-trying"});
    EXPECT_GE(std::chrono::steady_clock::now() - started, 2900ms) << out;
    EXPECT_EQ(code, 4) << out;
    EXPECT_EQ(out.find("STOPPED"), std::string::npos) << out;
}

// An open-model rate the connections cannot carry: the sends never made are in the headline and fail the run
// (a default threshold, k6's dropped iterations), unless the user bounds them otherwise.
TEST(load_cli_test, an_open_model_rate_the_connections_cannot_carry_fails_on_dropped_sends) {
    child server({"serve", "weather", "--port", "0", "--threads", "1", "--delay", "50ms"});
    const auto port = port_from(server.line());
    ASSERT_NE(port, 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/weatherForecast";
    auto [code, out] = run({"load", url, "--rate", "400", "-c", "1", "-d", "1s", "-q", "-t", "1"});
    EXPECT_EQ(code, 3) << out;
    EXPECT_NE(out.find("planned requests never sent"), std::string::npos) << out;
    EXPECT_NE(out.find("dropped<1% (default) FAIL"), std::string::npos) << out;
    std::tie(code, out) =
        run({"load", url, "--rate", "400", "-c", "1", "-d", "1s", "-q", "-t", "1", "--threshold", "dropped<100%"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out.find("(default)"), std::string::npos) << out;
    server.signal(SIGTERM);
    EXPECT_EQ(server.wait_exit(), 0);
}

// Ctrl-C: the partial report says the run was cut short, the JSON too, and the exit code is 130.
TEST(load_cli_test, an_interrupted_run_is_marked_in_the_report_the_json_and_the_exit_code) {
    platform srv;
    ASSERT_NE(srv.port(), 0);
    const std::string json = temp_path("interrupted.json");
    child load({"load", srv.url("/plaintext"), "-d", "20s", "-c", "2", "-t", "1", "-q", "--json", json});
    load.line(); // the header: the run has started
    std::this_thread::sleep_for(1s);
    load.signal(SIGINT);
    const std::string out = load.rest();
    EXPECT_EQ(load.wait_exit(), 130) << out;
    EXPECT_NE(out.find("INTERRUPTED by SIGINT after"), std::string::npos) << out;
    std::ifstream in(json);
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(doc.find(R"("ended":"interrupted")"), std::string::npos) << doc;
    EXPECT_NE(doc.find(R"("signal":"SIGINT")"), std::string::npos) << doc;
    std::remove(json.c_str());
}

// --json - writes the document to standard output, alone; the report goes to standard error.
TEST(load_cli_test, json_to_standard_output) {
    platform srv;
    ASSERT_NE(srv.port(), 0);
    child sh("/bin/sh", {"-c", std::string(HOTPATH_BINARY) + " load " + srv.url("/plaintext") +
                                   " -d 500ms -c 2 -t 1 -q --json - 2>/dev/null"});
    const std::string out = sh.rest();
    EXPECT_EQ(sh.wait_exit(), 0) << out;
    EXPECT_EQ(out.rfind(R"({"schema":"hotpath-load/1")", 0), 0u) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_NE(out.find(R"("ended":"completed")"), std::string::npos) << out;
}

// The header tells what runs as it starts, not only at the end.
TEST(load_cli_test, the_header_is_printed_as_the_run_starts) {
    platform srv;
    ASSERT_NE(srv.port(), 0);
    child load({"load", srv.url("/plaintext"), "-d", "2s", "-c", "2", "-t", "1", "-q"});
    const auto started = std::chrono::steady_clock::now();
    const std::string first = load.line();
    EXPECT_LT(std::chrono::steady_clock::now() - started, 1500ms) << "the header came only at the end";
    EXPECT_EQ(
        first.rfind("hotpath load http://127.0.0.1:" + std::to_string(srv.port()) + "/plaintext: closed model", 0), 0u)
        << first;
    const std::string rest = load.rest();
    EXPECT_EQ(load.wait_exit(), 0) << rest;
    EXPECT_EQ(rest.find("hotpath load http"), std::string::npos) << "printed twice:\n" << rest;
}

// IPv6 literals in brackets reach the server; a fragment never goes on the wire.
TEST(load_cli_test, urls_with_ipv6_literals_and_fragments) {
    child v6({"serve", "platform", "--port", "0", "--threads", "1", "--address", "::1"});
    const std::string hello = v6.line();
    std::smatch m;
    static const std::regex re(R"(:(\d+) with)");
    ASSERT_TRUE(std::regex_search(hello, m, re)) << hello;
    const std::string port = m[1];
    auto [code, out] = run({"load", "http://[::1]:" + port + "/plaintext", "-n", "20", "-c", "2", "-q"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("200: 20"), std::string::npos) << out;
    EXPECT_NE(out.find("hotpath load http://[::1]:" + port + "/plaintext"), std::string::npos) << out;
    std::tie(code, out) = run({"load", "http://[::1]:" + port + "/plaintext#section", "-n", "20", "-c", "2", "-q"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("200: 20"), std::string::npos) << "the fragment was sent: " << out;
    v6.signal(SIGTERM);
    EXPECT_EQ(v6.wait_exit(), 0);
}

// Without io_uring (HOTPATH_IO_URING=off stands for a kernel or sandbox without it), `auto` falls back to epoll on
// the server and the load generator alike, and asking for io_uring is a clear error.
TEST(load_cli_test, without_io_uring_auto_falls_back_to_epoll) {
    ::setenv("HOTPATH_IO_URING", "off", 1);
    child server({"serve", "platform", "--port", "0", "--threads", "1"});
    const std::string hello = server.line();
    EXPECT_NE(hello.find("on epoll"), std::string::npos) << hello;
    const auto port = port_from(hello);
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/plaintext";
    auto [code, out] = run({"load", url, "-n", "50", "-c", "2", "-q"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("200: 50"), std::string::npos) << out;
    std::tie(code, out) = run({"load", url, "-n", "50", "-c", "2", "-q", "--io", "uring"});
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(out.find("io_uring is not available here"), std::string::npos) << out;
    std::tie(code, out) = run({"serve", "platform", "--port", "0", "--io", "uring"});
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(out.find("cannot listen"), std::string::npos) << out;
    ::unsetenv("HOTPATH_IO_URING");
    server.signal(SIGTERM);
    EXPECT_EQ(server.wait_exit(), 0);
    // And with io_uring back, auto uses it.
    child ring({"serve", "platform", "--port", "0", "--threads", "1"});
    EXPECT_NE(ring.line().find("on io_uring"), std::string::npos);
    ring.signal(SIGTERM);
    EXPECT_EQ(ring.wait_exit(), 0);
}

} // namespace
} // namespace hotpath
