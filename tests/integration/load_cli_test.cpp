// `hotpath load` as users type it: options in any order, conflicts refused, ramps bounded, exit codes that tell.
#include "support/child_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
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

// Unix seconds (as `date +%s` prints) `ahead` from now, rounded up to a whole second.
std::string unix_seconds_from_now(std::chrono::seconds ahead) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return std::to_string(std::chrono::ceil<std::chrono::seconds>(now + ahead).count());
}

// What curl prints for `args` (its own options and a URL).
std::string curl(const std::string& args) {
    child c("/bin/sh", {"-c", "curl -sS --max-time 5 " + args});
    std::string out = c.rest();
    c.wait_exit();
    return out;
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
        {{"--think-time", "50ms..150ms", "-n", "10", "-c", "2"}, "closed model, 2 connections, 50ms..150ms think time"},
        {{"--ignore-retry-after", "-n", "20", "-c", "2"}, "200: 20"},
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
        {{"serve"}, "hotpath: serve needs a command: one of platform, avatar"},
        {{"load", url, "--segment", "3/3"}, "I-th of N equal segments"},
        {{"load", url, "--segment", "1/2:1/4"}, "segment 1/2:1/4 is empty"},
        {{"load", url, "--segment", "0:1/3", "--segment-sequence", "0,1/2,1"}, "is not in the sequence"},
        {{"load", url, "--segment-sequence", "0,1/2,1"}, "--segment-sequence needs --segment"},
        {{"load", url, "-c", "2", "--segment", "2/3"}, "holds none of the plan's 2 users"},
        {{"load", url, "--start-at", "2020-01-01T00:00:00Z"}, "--start-at 2020-01-01T00:00:00.000Z was "},
        {{"load", url, "--start-at", "tomorrow"}, "--start-at tomorrow: not a time; give RFC 3339"},
        {{"load", url, "--start-at", "2026-12-06T16:00:00"}, "with its zone"},
        {{"load", url, "--start-at", unix_seconds_from_now(48h)}, "is more than a day ahead"},
        {{"load", url, "--start-at", unix_seconds_from_now(60s), "--paused"}, "two ways to begin"},
        {{"load", url, "--control", "nope"}, "--control nope: expected PORT, HOST:PORT or [IPv6]:PORT"},
        {{"load", url, "--control", "::1:80"}, "expected PORT, HOST:PORT"},
        {{"load", url, "--control", "70000"}, "expected PORT, HOST:PORT"},
        {{"load", url, "--think-time", "soon"}, "--think-time: bad think time 'soon' (e.g. 500ms, or 1s..3s"},
        {{"load", url, "--think-time", "1s", "--rate", "10"}, "--think-time is a user's pause between its requests"},
        {{"load", url, "--think-time", "1s", "--pipeline", "2"}, "not with --pipeline or --streams above 1"},
        {{"load", url, "--out", "nope"},
         "--out 'nope': expected prometheus-rw=URL, otlp=URL or prometheus=[HOST:]PORT"},
        {{"load", url, "--out", "prometheus-rw=localhost:9090"}, "is not an http:// or https:// URL"},
        {{"load", url, "--out", "prometheus=x"}, "is not PORT or HOST:PORT to listen on"},
        {{"load", url, "--tag", "9=x"}, "--tag '9=x': expected NAME=VALUE"},
        {{"load", url, "--tag", "generator=me"}, "'generator' is a label of the run's own series"},
        {{"load", url, "--out-interval", "10ms"}, "--out-interval '10ms': a duration from 100ms to 1h"},
        {{"load", url, "--out", "prometheus=0", "--out", "prometheus=0"}, "one scrape endpoint per run"},
        {{"load", url, "--tag", "test=a", "--tag", "test=b"}, "--tag test: given twice (test=a and test=b)"},
        {{"load", url, "--tag", "test=\xff"}, "--tag test: the value is not UTF-8"},
        {{"load", url, "--think-time", "2562047h"}, "is longer than a day"},
        {{"load", url, "-d", "2562047h"}, "-d must be at most 366 days"},
    };
    for (const auto& [args, expected] : cases) {
        const auto [code, out] = run(args);
        EXPECT_EQ(code, 2) << joined(args) << "\n" << out;
        EXPECT_NE(out.find(expected), std::string::npos) << joined(args) << "\n" << out;
        EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << joined(args) << "\n" << out;
        EXPECT_EQ(out.rfind("hotpath: ", 0), 0u) << out;
    }
}

// Generators of one plan given one start time: each begins at it (its event loops' first tick), and the merge
// says how far apart they began.
TEST(load_cli_test, generators_given_one_start_time_begin_together_at_it) {
    platform server;
    ASSERT_NE(server.port(), 0);
    const std::string at = unix_seconds_from_now(2s);
    const std::int64_t at_ns = std::stoll(at) * 1'000'000'000;
    std::vector<std::string> files;
    std::vector<std::unique_ptr<child>> parts;
    for (int i = 0; i < 3; ++i) {
        files.push_back(temp_path("together_" + std::to_string(i) + ".json"));
        parts.push_back(std::make_unique<child>(std::vector<std::string>{
            "load", server.url("/plaintext"), "-n", "900", "-c", "3", "-t", "1", "--start-at", at, "--segment",
            std::to_string(i) + "/3", "--no-thresholds", "-q", "--json", files.back()}));
    }
    for (int i = 0; i < 3; ++i) {
        const std::string out = parts[static_cast<std::size_t>(i)]->rest();
        EXPECT_EQ(parts[static_cast<std::size_t>(i)]->wait_exit(), 0) << out;
        EXPECT_NE(out.find("  Started      "), std::string::npos) << out;
        EXPECT_NE(out.find(" (--start-at "), std::string::npos) << out;
        const auto doc = boost::json::parse(read_all(files[static_cast<std::size_t>(i)])).as_object();
        const std::int64_t began = doc.at("run").at("started_unix_ns").to_number<std::int64_t>();
        // At the time, not before; late by what a loaded machine (or a sanitizer) takes to wake a thread.
        EXPECT_GE(began, at_ns) << out;
        EXPECT_LT(began, at_ns + 100'000'000) << out;
    }
    // The merged document to a file of its own: on one pipe, standard error's report would cut through it.
    const std::string merged_file = temp_path("together_merged.json");
    std::string command = std::string(HOTPATH_BINARY) + " load merge";
    for (const auto& f : files) {
        command += " " + f;
    }
    child merge("/bin/sh", {"-c", command + " > " + merged_file});
    const std::string report = merge.rest();
    EXPECT_EQ(merge.wait_exit(), 0) << report;
    EXPECT_NE(report.find(", every event loop within "), std::string::npos) << report;
    const auto merged = boost::json::parse(read_all(merged_file)).as_object();
    EXPECT_EQ(merged.at("responses").to_number<std::int64_t>(), 900);
    EXPECT_LT(merged.at("run").at("start_spread_ns").to_number<std::int64_t>(), 100'000'000) << report;
    files.push_back(merged_file);
    for (const auto& f : files) {
        std::remove(f.c_str());
    }
}

// --paused waits for POST /start on --control (once: a second is a conflict), as k6-operator's starter releases
// its generators; the run's start is after the release.
TEST(load_cli_test, a_paused_run_waits_for_its_release_through_the_control_endpoint) {
    platform server;
    ASSERT_NE(server.port(), 0);
    const std::string json = temp_path("paused.json");
    child load({"load", server.url("/plaintext"), "-n", "200", "-c", "2", "-t", "1", "--paused", "--control", "0", "-q",
                "--json", json});
    const std::string first = load.line();
    ASSERT_NE(first.find("hotpath load: control endpoint http://127.0.0.1:"), std::string::npos) << first;
    const std::string control = "http://127.0.0.1:" + std::to_string(port_from(first));
    const std::string second = load.line();
    EXPECT_NE(second.find("paused until SIGUSR1 (kill -USR1 " + std::to_string(load.pid()) + ") or POST " + control +
                          "/start"),
              std::string::npos)
        << second;
    std::this_thread::sleep_for(300ms);
    const std::string waiting = curl(control + "/status");
    EXPECT_NE(waiting.find(R"("phase":"waiting","paused":true)"), std::string::npos) << waiting;
    EXPECT_NE(curl("-X POST " + control + "/stop-nothing -w ' %{http_code}'").find(" 404"), std::string::npos);
    const auto released = std::chrono::system_clock::now();
    EXPECT_EQ(curl("-X POST " + control + "/start"), R"({"released":true})");
    const std::string again = curl("-X POST " + control + "/start -w ' %{http_code}'");
    EXPECT_NE(again.find(" 409"), std::string::npos) << again;
    const std::string out = load.rest();
    EXPECT_EQ(load.wait_exit(), 0) << out;
    EXPECT_NE(out.find("200 responses"), std::string::npos) << out;
    EXPECT_NE(out.find(" (released)"), std::string::npos) << out;
    const auto doc = boost::json::parse(read_all(json)).as_object();
    EXPECT_GE(doc.at("run").at("started_unix_ns").to_number<std::int64_t>(),
              std::chrono::duration_cast<std::chrono::nanoseconds>(released.time_since_epoch()).count());
    std::remove(json.c_str());
}

// SIGUSR1 releases a paused run; SIGTERM before the release ends it with no report and no file.
TEST(load_cli_test, sigusr1_releases_a_paused_run_and_sigterm_before_it_ends_it_without_a_report) {
    platform server;
    ASSERT_NE(server.port(), 0);
    {
        child load({"load", server.url("/plaintext"), "-n", "50", "-c", "1", "-t", "1", "--paused", "-q"});
        const std::string first = load.line();
        EXPECT_NE(first.find("paused until SIGUSR1 (kill -USR1 " + std::to_string(load.pid()) + ")"), std::string::npos)
            << first;
        std::this_thread::sleep_for(200ms);
        load.signal(SIGUSR1);
        const std::string out = load.rest();
        EXPECT_EQ(load.wait_exit(), 0) << out;
        EXPECT_NE(out.find("50 responses"), std::string::npos) << out;
    }
    {
        const std::string json = temp_path("never.json");
        child load({"load", server.url("/plaintext"), "-n", "50", "-c", "1", "-t", "1", "--paused", "--json", json});
        load.line();
        std::this_thread::sleep_for(200ms);
        load.signal(SIGTERM);
        const std::string out = load.rest();
        EXPECT_EQ(load.wait_exit(), 143) << out;
        EXPECT_NE(out.find("hotpath: interrupted before the start (SIGTERM)"), std::string::npos) << out;
        EXPECT_EQ(out.find("Requests"), std::string::npos) << out;
        EXPECT_FALSE(std::ifstream(json).is_open());
    }
}

// POST /stop ends a running run as SIGTERM does; a control port already taken is told, exit 1.
TEST(load_cli_test, the_control_endpoint_shows_a_running_run_and_stops_it) {
    platform server;
    ASSERT_NE(server.port(), 0);
    const std::string json = temp_path("stopped.json");
    child load({"load", server.url("/plaintext"), "-d", "20s", "-c", "2", "-t", "1", "-q", "--control", "127.0.0.1:0",
                "--json", json});
    const std::string control = "http://127.0.0.1:" + std::to_string(port_from(load.line()));
    std::this_thread::sleep_for(500ms);
    const std::string status = curl(control + "/status");
    EXPECT_NE(status.find(R"("phase":"running","paused":false,"start_at":null,"started_at":"20)"), std::string::npos)
        << status;
    EXPECT_EQ(curl("-X POST " + control + "/stop"), R"({"stopping":true})");
    const std::string out = load.rest();
    EXPECT_EQ(load.wait_exit(), 143) << out;
    EXPECT_NE(out.find("INTERRUPTED by SIGTERM"), std::string::npos) << out;
    EXPECT_NE(read_all(json).find(R"("ended":"interrupted")"), std::string::npos);
    std::remove(json.c_str());

    const auto [code, taken] =
        run({"load", server.url("/plaintext"), "-n", "1", "--control", std::to_string(server.port())});
    EXPECT_EQ(code, 1) << taken;
    EXPECT_NE(taken.find("hotpath: --control: cannot listen on " + std::to_string(server.port())), std::string::npos)
        << taken;
}

// A plan split in three parts run as three processes, options before and after the URL: the parts' answers add
// up to -n, each part's failing threshold leaves its exit code alone (--no-thresholds), and the merge judges the
// whole: rps>N held by the three together, p99 below a bound nothing meets failed.
TEST(load_cli_test, a_plan_split_in_segments_merges_to_the_whole_with_one_verdict) {
    platform server;
    ASSERT_NE(server.port(), 0);
    for (const char* bound : {"errors<1%", "p99<1us"}) {
        std::vector<std::string> files;
        for (int i = 0; i < 3; ++i) {
            files.push_back(temp_path("segment_" + std::to_string(i) + ".json"));
            const std::string part = std::to_string(i) + "/3";
            std::vector<std::string> args{"load",        server.url("/plaintext"),
                                          "-n",          "1000",
                                          "-c",          "6",
                                          "-t",          "1",
                                          "--threshold", bound,
                                          "-q",          "--json",
                                          files.back()};
            // The part's options before the URL for one of them, after it for the others.
            const std::vector<std::string> split{"--segment", part, "--no-thresholds"};
            args.insert(i == 1 ? args.begin() + 1 : args.end(), split.begin(), split.end());
            const auto [code, out] = run(args);
            EXPECT_EQ(code, 0) << joined(args) << "\n" << out;
            const std::string named =
                std::vector<std::string>{"0:1/3", "1/3:2/3", "2/3:1"}[static_cast<std::size_t>(i)];
            EXPECT_NE(out.find("; segment " + named + " of it"), std::string::npos) << out;
            EXPECT_NE(read_all(files.back()).find("\"segment\":\"" + named + "\""), std::string::npos);
        }
        std::vector<std::string> merge{"load", "merge"};
        merge.insert(merge.end(), files.begin(), files.end());
        const auto [code, out] = run(merge);
        EXPECT_EQ(code, std::string(bound) == "errors<1%" ? 0 : 3) << bound << "\n" << out;
        EXPECT_NE(out.find("\"responses\":1000,"), std::string::npos) << out;
        EXPECT_NE(out.find("\"connections_opened\":6,"), std::string::npos) << out;
        EXPECT_EQ(out.find("\"segment\""), std::string::npos) << "the merged run is the whole: " << out;
        for (const auto& f : files) {
            std::remove(f.c_str());
        }
    }
}

// A service refusing its overload with 503 and Retry-After: 1 (4 requests in flight at most, each 50 ms). Users
// that honour it wait their second and the service serves the others; told to ignore it, they ask again at once, and
// the service spends its time refusing (the issue's 34-133 k refusals a second).
TEST(load_cli_test, users_told_to_retry_after_a_second_wait_it_unless_told_to_ignore_it) {
    child shapes({"serve", "shapes", "--port", "0", "--pool", "100", "--max-in-flight", "4", "--retry-after", "1"});
    const std::uint16_t port = port_from(shapes.line());
    ASSERT_NE(port, 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/pool?ms=50";
    std::map<bool, boost::json::object> runs;
    for (const bool ignore : {false, true}) {
        const std::string json = temp_path(ignore ? "ignored.json" : "honoured.json");
        std::vector<std::string> args{"load", url, "-c", "16", "-d", "2s", "-t", "1", "--json", json};
        if (ignore) {
            args.push_back("--ignore-retry-after");
        }
        const auto [code, out] = run(args);
        EXPECT_EQ(code, 0) << out;
        EXPECT_NE(out.find(ignore ? "users sent again at once (--ignore-retry-after)" : "users held "),
                  std::string::npos)
            << out;
        runs[ignore] = boost::json::parse(read_all(json)).as_object();
        std::remove(json.c_str());
    }
    const auto count = [](const boost::json::object& doc, const char* status) {
        const auto* n = doc.at("statuses").as_object().if_contains(status);
        return n == nullptr ? std::int64_t{0} : n->to_number<std::int64_t>();
    };
    // Honoured: 4 users served every 50 ms (about 160 in 2 s), the 12 others refused about once a second each.
    EXPECT_GT(count(runs[false], "200"), 100);
    EXPECT_LT(count(runs[false], "503"), 12 * 3 + 16) << boost::json::serialize(runs[false]);
    EXPECT_GE(runs[false].at("retry_after").at("held").to_number<std::int64_t>(), 12);
    // Ignored: thousands of refusals.
    EXPECT_GT(count(runs[true], "503"), 20 * count(runs[false], "503")) << boost::json::serialize(runs[true]);
    EXPECT_EQ(runs[true].at("retry_after").at("held").to_number<std::int64_t>(), 0);
    shapes.signal(SIGTERM);
    EXPECT_EQ(shapes.wait_exit(), 0);
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

// --json FILE appears whole or not at all (a merge may be waiting for it): written beside it, then renamed; a path
// that is not a regular file is written in place; one that cannot be written is told, exit 1.
TEST(load_cli_test, the_json_file_appears_whole_and_a_bad_path_is_told) {
    platform srv;
    ASSERT_NE(srv.port(), 0);
    const auto dir = std::filesystem::path(::testing::TempDir()) / ("hotpath_json_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string json = (dir / "run.json").string();
    auto [code, out] = run({"load", srv.url("/plaintext"), "-n", "100", "-c", "2", "-t", "1", "-q", "--json", json});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NO_THROW((void)boost::json::parse(read_all(json)));
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1)
        << "nothing left beside it";
    std::filesystem::remove_all(dir);
    std::tie(code, out) =
        run({"load", srv.url("/plaintext"), "-n", "10", "-c", "1", "-t", "1", "-q", "--json", "/dev/null"});
    EXPECT_EQ(code, 0) << out;
    std::tie(code, out) = run(
        {"load", srv.url("/plaintext"), "-n", "10", "-c", "1", "-t", "1", "-q", "--json", "/nonexistent-dir/run.json"});
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(out.find("hotpath: cannot write /nonexistent-dir/run.json"), std::string::npos) << out;
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
