// app.metrics(): per-route counts and durations recorded by every loop and summed at the scrape, the connection
// and process figures, and an exposition Prometheus's own checker accepts.
#include "support/promtool.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include <hotpath/core/build_info.hpp>
#include <hotpath/net/sleep.hpp>
#include <hotpath/server/server.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::raw_client;
using test::test_server;

app make_app() {
    app routes;
    routes.get("/users/{id}", [](request& req, response& res) { res.text(req.param("id")); });
    routes.get("/slow", [](request&, response& res) -> task<void> {
        co_await net::sleep_for(30ms);
        res.text("late");
    });
    routes.get("/throws", [](request&, response&) { throw std::runtime_error("no"); });
    routes.metrics("/metrics");
    return routes;
}

std::string get(std::uint16_t port, const std::string& path) {
    raw_client c(port);
    c.send("GET " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    auto r = c.read_reply();
    return r ? std::to_string(r->status) + " " + r->body : std::string("no reply");
}

// The value of the sample whose line starts with `series` followed by a space; -1 when absent.
double value_of(const std::string& text, const std::string& series) {
    const auto at = text.find("\n" + series + " ");
    if (at == std::string::npos) {
        return -1;
    }
    return std::strtod(text.c_str() + at + 1 + series.size() + 1, nullptr);
}

// Requests land on both loops (the kernel spreads connections over their SO_REUSEPORT sockets): the scrape
// sums them, whichever loop answers it.
TEST(metrics_test, routes_count_by_pattern_and_class_summed_over_loops) {
    const app routes = make_app();
    test_server srv(routes, {}, 2);
    for (int i = 0; i < 40; ++i) {
        EXPECT_EQ(get(srv.port(), "/users/" + std::to_string(i)), "200 " + std::to_string(i));
    }
    EXPECT_EQ(get(srv.port(), "/slow").substr(0, 3), "200");
    EXPECT_EQ(get(srv.port(), "/throws").substr(0, 3), "500");
    EXPECT_EQ(get(srv.port(), "/nowhere").substr(0, 3), "404");
    raw_client post(srv.port());
    post.send("POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    ASSERT_TRUE(post.read_reply());

    raw_client scrape(srv.port());
    scrape.send("GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    const auto r = scrape.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->field("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    const std::string text = "\n" + r->body;
    EXPECT_EQ(value_of(text, R"m(hotpath_http_requests_total{method="GET",route="/users/{id}",code="2xx"})m"), 40);
    EXPECT_EQ(value_of(text, R"m(hotpath_http_requests_total{method="GET",route="/throws",code="5xx"})m"), 1);
    EXPECT_EQ(value_of(text, R"m(hotpath_http_requests_total{method="",route="(no route)",code="4xx"})m"), 1);
    EXPECT_EQ(value_of(text, R"m(hotpath_http_requests_total{method="",route="(method not allowed)",code="4xx"})m"), 1);
    EXPECT_EQ(value_of(text, "hotpath_http_handler_exceptions_total"), 1);
    // The slow route's one request took >= 30 ms: never within the 25 ms bound, however loaded the machine.
    EXPECT_EQ(
        value_of(text, R"m(hotpath_http_request_duration_seconds_bucket{method="GET",route="/slow",le="0.025"})m"), 0);
    EXPECT_EQ(value_of(text, R"m(hotpath_http_request_duration_seconds_count{method="GET",route="/slow"})m"), 1);
    EXPECT_GE(value_of(text, R"m(hotpath_http_request_duration_seconds_sum{method="GET",route="/slow"})m"), 0.030);
    EXPECT_EQ(
        value_of(text, R"m(hotpath_http_request_duration_seconds_bucket{method="GET",route="/users/{id}",le="+Inf"})m"),
        40);
    // 44 connections before the scrape's own, each closed after its answer (the scrape's is still open).
    EXPECT_EQ(value_of(text, "hotpath_http_connections_accepted_total"), 45);
    EXPECT_GE(value_of(text, "hotpath_http_connections"), 1);
    EXPECT_EQ(value_of(text, "hotpath_http_requests_in_flight"), 1) << "the scrape itself";
    EXPECT_EQ(value_of(text, R"m(hotpath_loop_turns_total{loop="1"})m") > 0, true);
    EXPECT_GT(value_of(text, "process_resident_memory_bytes"), 1e6);
    EXPECT_GT(value_of(text, "process_open_fds"), 3);
    EXPECT_NE(text.find("hotpath_build_info{version=\""), std::string::npos);
    // Every request's bytes in (at least its request line) and every response's out.
    EXPECT_GT(value_of(text, "hotpath_http_received_bytes_total"), 45 * 16);
    EXPECT_GT(value_of(text, "hotpath_http_sent_bytes_total"), 44 * 60);
    EXPECT_GE(value_of(text, R"m(hotpath_loop_tick_lag_seconds{loop="0"})m"), 0);
    // Never the raw path.
    EXPECT_EQ(text.find("/users/7"), std::string::npos);
}

// A latency objective is a bucket bound of its own: the share of requests within it is exact.
TEST(metrics_test, a_latency_objective_is_a_bucket_bound) {
    const app routes = make_app();
    server_options o;
    o.port = 0;
    o.threads = 1;
    o.io = test::test_io();
    o.latency_objectives = {std::chrono::milliseconds{150}};
    server srv(routes, o);
    ASSERT_TRUE(srv.start());
    EXPECT_EQ(get(srv.port(), "/users/1").substr(0, 3), "200");
    const std::string text = get(srv.port(), "/metrics");
    EXPECT_NE(
        text.find(R"m(hotpath_http_request_duration_seconds_bucket{method="GET",route="/users/{id}",le="0.15"} 1)m"),
        std::string::npos)
        << text;
    srv.stop();
    srv.wait();
}

// A handler that blocks its loop's thread for 200 ms is a stall: counted, its length in the histogram, and one
// line naming the route. Many fast requests are not (a threshold of 50 ms: on this shared 2-core machine the
// scheduler alone can hold a thread for more than 25 ms, which a wall clock cannot tell from a stall).
TEST(metrics_test, a_blocking_handler_is_a_stall_named_in_one_line) {
    app routes = make_app();
    routes.get("/block", [](request&, response& res) {
        std::this_thread::sleep_for(200ms);
        res.text("done");
    });
    std::mutex m;
    std::vector<std::string> lines;
    server_options o;
    o.port = 0;
    o.threads = 1;
    o.io = test::test_io();
    o.stall_threshold = 50ms;
    o.log_line = [&](const std::string& line) {
        const std::lock_guard lock(m);
        lines.push_back(line);
    };
    server srv(routes, o);
    ASSERT_TRUE(srv.start());
    for (int i = 0; i < 500; ++i) {
        ASSERT_EQ(get(srv.port(), "/users/1").substr(0, 3), "200");
    }
    std::string text = "\n" + get(srv.port(), "/metrics");
    EXPECT_EQ(value_of(text, R"m(hotpath_loop_stalls_total{loop="0"})m"), 0) << "fast requests are no stall";
    EXPECT_EQ(get(srv.port(), "/block"), "200 done");
    std::this_thread::sleep_for(100ms); // the watchdog sees the turn over within threshold / 2
    text = "\n" + get(srv.port(), "/metrics");
    EXPECT_EQ(value_of(text, R"m(hotpath_loop_stalls_total{loop="0"})m"), 1);
    EXPECT_GE(value_of(text, R"m(hotpath_loop_stall_seconds_sum{loop="0"})m"), 0.2);
    EXPECT_EQ(value_of(text, R"m(hotpath_loop_stall_seconds_bucket{loop="0",le="0.1"})m"), 0);
    {
        const std::lock_guard lock(m);
        ASSERT_EQ(lines.size(), 1u);
        EXPECT_NE(lines[0].find("loop 0 stalled"), std::string::npos) << lines[0];
        EXPECT_NE(lines[0].find("GET /block"), std::string::npos) << lines[0];
        // Where the thread was: program offsets that addr2line names, the handler's caller among them.
        const auto stack = lines[0].find("; stack (addr2line -Cfpe ");
        ASSERT_NE(stack, std::string::npos) << lines[0];
        const auto frames = lines[0].substr(lines[0].find("): ", stack) + 3);
        EXPECT_TRUE(std::regex_match(frames, std::regex(R"(\S+( \S+)*)"))) << frames;
        std::string ours; // the frames in this program, which addr2line names from its symbol table
        std::istringstream words(frames);
        for (std::string f; words >> f;) {
            if (f.starts_with("0x")) {
                ours += " " + f;
            }
        }
        const std::string program = lines[0].substr(stack + 25, lines[0].find("): ", stack) - stack - 25);
        if (std::system("command -v addr2line >/dev/null 2>&1") == 0) {
            std::string named;
            if (std::FILE* p = ::popen(("addr2line -Cfpe '" + program + "'" + ours).c_str(), "r")) {
                char buf[4096];
                while (std::fgets(buf, sizeof(buf), p) != nullptr) {
                    named += buf;
                }
                ::pclose(p);
            }
            // The frames lead to the handler's call, whatever the compiler inlined into it.
            EXPECT_NE(named.find("server_connection::do_dispatch"), std::string::npos) << named;
        }
    }
    srv.stop();
    srv.wait();
}

// A handler that blocks after a wait (resumed by its timer, or by a client call's answer) is named too: each end
// of its waits says whose code runs next.
TEST(metrics_test, a_handler_blocking_after_a_wait_is_named) {
    app routes = make_app();
    routes.get("/later", [](request&, response& res) -> task<void> {
        co_await net::sleep_for(5ms);
        std::this_thread::sleep_for(150ms);
        res.text("done");
    });
    std::mutex m;
    std::vector<std::string> lines;
    server_options o;
    o.port = 0;
    o.threads = 1;
    o.io = test::test_io();
    o.stall_threshold = 50ms;
    o.log_line = [&](const std::string& line) {
        const std::lock_guard lock(m);
        lines.push_back(line);
    };
    server srv(routes, o);
    ASSERT_TRUE(srv.start());
    EXPECT_EQ(get(srv.port(), "/later"), "200 done");
    std::this_thread::sleep_for(100ms);
    {
        const std::lock_guard lock(m);
        ASSERT_EQ(lines.size(), 1u);
        EXPECT_NE(lines[0].find("in the handler of GET /later"), std::string::npos) << lines[0];
    }
    srv.stop();
    srv.wait();
}

// The output of `command`, without its last newline; "" when it fails.
std::string output_of(const std::string& command) {
    std::string out;
    std::FILE* p = ::popen(command.c_str(), "r");
    if (p == nullptr) {
        return out;
    }
    char buf[512];
    while (std::fgets(buf, sizeof(buf), p) != nullptr) {
        out += buf;
    }
    if (::pclose(p) != 0) {
        return {};
    }
    if (!out.empty() && out.back() == '\n') {
        out.pop_back();
    }
    return out;
}

// hotpath_build_info names the version and the commit built, the source tree's HEAD when it is a git checkout.
TEST(metrics_test, build_info_names_the_version_and_the_commit) {
    const app routes = make_app();
    test_server srv(routes);
    const std::string text = get(srv.port(), "/metrics");
    std::smatch m;
    static const std::regex re(R"re(\nhotpath_build_info\{version="([^"]*)",commit="([^"]*)"\} 1\n)re");
    ASSERT_TRUE(std::regex_search(text, m, re)) << text;
    EXPECT_EQ(m[1].str(), build_version());
    EXPECT_FALSE(m[1].str().empty());
    const std::string commit = m[2].str();
    EXPECT_EQ(commit, build_commit());
    EXPECT_FALSE(commit.empty());
    // As cmake/git-commit.cmake decides: a git checkout whose top is the source tree, else "unknown".
    const std::string source = HOTPATH_SOURCE_DIR;
    const std::string top = output_of("git -C '" + source + "' rev-parse --show-toplevel 2>/dev/null");
    std::error_code ec;
    if (top.empty() || !std::filesystem::equivalent(top, source, ec)) {
        EXPECT_EQ(commit, "unknown") << source << " is not a git checkout";
        return;
    }
    const std::string head = output_of("git -C '" + source + "' rev-parse --short=12 HEAD");
    EXPECT_EQ(commit, head) << "the commit is taken when CMake configures, which a build after a commit does";
}

// Prometheus's own checker (promtool, Debian's prometheus package) accepts the exposition.
TEST(metrics_test, promtool_accepts_the_exposition) {
    if (!test::have_promtool()) {
        GTEST_SKIP() << "promtool not found (Debian package prometheus): exposition not checked by Prometheus";
    }
    const app routes = make_app();
    test_server srv(routes, {}, 2);
    get(srv.port(), "/users/1");
    get(srv.port(), "/nowhere");
    get(srv.port(), "/throws");
    const std::string reply = get(srv.port(), "/metrics");
    ASSERT_EQ(reply.substr(0, 4), "200 ");
    const auto v = test::promtool_check(reply.substr(4));
    EXPECT_TRUE(v.passed) << v.said;
}

} // namespace
} // namespace hotpath
