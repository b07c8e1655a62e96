// `hotpath lab diagnose URL` and `hotpath lab compare OLD NEW` as a user runs them: the real binary against
// in-process services built for the test (routes named unlike the lab's), and against hand-written result files.
#include "support/child_process.hpp"
#include "support/test_server.hpp"
#include <hotpath/client/client.hpp>
#include <hotpath/net/sleep.hpp>
#include <hotpath/server/app.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

namespace hotpath {
namespace {

using test::child;
using namespace std::chrono_literals;

// The child's address space: a runaway fails, not the machine. None under the sanitizers: ASan reserves terabytes
// of shadow memory up front, which any such limit refuses.
constexpr rlim_t memory_limit_bytes = HOTPATH_SANITIZED ? 0 : rlim_t{1} << 30;

std::string url(const test::test_server& s, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(s.port()) + path;
}

// Runs `hotpath lab diagnose URL --load -c N -d 2s`; its output (stdout and stderr), and its exit code in `code`.
std::string diagnose(const std::string& target, int& code, const std::string& connections = "4") {
    child lab({"lab", "diagnose", target, "--load", "-c", connections, "-d", "2s"}, 0, memory_limit_bytes);
    std::string said = lab.rest();
    code = lab.wait_exit(30s);
    return said;
}

server_options quiet(unsigned threads = 1) {
    server_options o;
    o.threads = threads;
    o.stall_backtraces = false;
    o.log_line = [](const std::string&) {}; // the stall lines: the report counts them
    return o;
}

// A downstream whose every answer takes 5 ms, awaited.
struct stock_service {
    stock_service() {
        routes.get("/stock/{sku}", [](request&, response& res) -> task<void> {
            co_await net::sleep_for(5ms);
            res.text("7");
        });
        server = std::make_unique<test::test_server>(routes, quiet());
    }
    app routes;
    std::unique_ptr<test::test_server> server;
};

TEST(lab_diagnose_test, calls_awaited_one_after_another_are_named) {
    stock_service stock;
    app routes;
    auto downstream = std::make_shared<client>();
    const std::string base = url(*stock.server, "/stock/");
    routes.get("/basket/{id}/total", [downstream, base](request&, response& res) -> task<void> {
        for (int i = 0; i < 6; ++i) { // each awaited before the next starts
            auto r = co_await downstream->get(base + std::to_string(i));
            if (!r) {
                res.problem(http::status::bad_gateway, "stock");
                co_return;
            }
        }
        res.text("ok");
    });
    routes.debug_routes("/debug/routes");
    // Its metrics page with the client's calls by downstream: the finding names the host they went to.
    routes.metrics("/metrics");
    routes.expose(downstream->metrics());
    test::test_server s(routes, quiet());
    ASSERT_TRUE(s.ok());
    int code = -1;
    const std::string said = diagnose(url(s, "/basket/9/total"), code, "2");
    EXPECT_EQ(code, 0) << said;
    EXPECT_NE(said.find("sequential_calls"), std::string::npos) << said;
    EXPECT_NE(said.find("GET /basket/{id}/total is downstream"), std::string::npos) << said;
    const std::string host = url(*stock.server, "").substr(7); // 127.0.0.1:PORT
    EXPECT_NE(said.find("; the calls went to " + host + " (mean "), std::string::npos) << said;
}

TEST(lab_diagnose_test, a_handler_blocking_its_loop_is_named_with_its_stalls) {
    app routes;
    routes.get("/render/{page}", [](request&, response& res) {
        std::this_thread::sleep_for(60ms); // the anti-pattern: the loop's thread waits
        res.text("page");
    });
    routes.debug_routes("/debug/routes");
    test::test_server s(routes, quiet());
    ASSERT_TRUE(s.ok());
    int code = -1;
    const std::string said = diagnose(url(s, "/render/3"), code, "2");
    EXPECT_EQ(code, 0) << said;
    EXPECT_NE(said.find("blocked_loop"), std::string::npos) << said;
    EXPECT_NE(said.find("GET /render/{page} held its loop"), std::string::npos) << said;
}

// Two routes loaded together (--path twice): the one that blocks is named, not the one that waits behind it.
TEST(lab_diagnose_test, of_two_routes_on_one_loop_the_blocking_one_is_named) {
    app routes;
    routes.get("/pdf/{doc}", [](request&, response& res) {
        std::this_thread::sleep_for(50ms);
        res.text("pdf");
    });
    routes.get("/ping/{n}", [](request&, response& res) { res.text("pong"); });
    routes.debug_routes("/debug/routes");
    test::test_server s(routes, quiet());
    ASSERT_TRUE(s.ok());
    child lab({"lab", "diagnose", url(s, ""), "--path", "/pdf/1", "--path", "/ping/1", "-c", "2", "-d", "2s"}, 0,
              memory_limit_bytes);
    const std::string said = lab.rest();
    ASSERT_EQ(lab.wait_exit(30s), 0) << said;
    EXPECT_NE(said.find("GET /pdf/{doc} held its loop"), std::string::npos) << said;
    EXPECT_EQ(said.find("GET /ping/{n} held its loop"), std::string::npos) << said;
}

TEST(lab_diagnose_test, refusals_at_a_small_in_flight_limit_are_overload) {
    app routes;
    routes.get("/quote/{id}", [](request&, response& res) -> task<void> {
        co_await net::sleep_for(50ms);
        res.text("42");
    });
    routes.debug_routes("/debug/routes");
    server_options o = quiet();
    o.limits.max_requests_in_flight = 1;
    test::test_server s(routes, o);
    ASSERT_TRUE(s.ok());
    int code = -1;
    const std::string said = diagnose(url(s, "/quote/1"), code, "8");
    EXPECT_EQ(code, 0) << said;
    EXPECT_NE(said.find("overload"), std::string::npos) << said;
    EXPECT_NE(said.find("503 from the in-flight limit"), std::string::npos) << said;
    EXPECT_EQ(said.find("blocked_loop"), std::string::npos) << said; // 503s name no blocking handler
}

// A service with one quick route and the route report.
struct health_service {
    health_service() {
        routes.get("/health/{part}", [](request&, response& res) { res.text("fine"); });
        routes.debug_routes("/debug/routes");
        server = std::make_unique<test::test_server>(routes, quiet());
    }
    app routes;
    std::unique_ptr<test::test_server> server;
};

TEST(lab_diagnose_test, a_healthy_service_is_nothing_wrong) {
    health_service h;
    ASSERT_TRUE(h.server->ok());
    int code = -1;
    const std::string said = diagnose(url(*h.server, "/health/disk"), code);
    EXPECT_EQ(code, 0) << said;
    EXPECT_NE(said.find("verdict: nothing wrong"), std::string::npos) << said;
    EXPECT_EQ(said.find("problem "), std::string::npos) << said;
    // The load's latency and the server's, each named for what it is.
    EXPECT_NE(said.find("load (as its client saw it): "), std::string::npos) << said;
    EXPECT_NE(said.find(", client p50 "), std::string::npos) << said;
    EXPECT_NE(said.find("server p95 "), std::string::npos) << said;
    EXPECT_NE(said.find("(GET /health/{part}): the rest is the network"), std::string::npos) << said;
}

// A service named by a host name, not an address (in a container or on another machine it would be): resolved,
// its report read and its path loaded there.
TEST(lab_diagnose_test, a_service_named_by_its_host_name_is_read_there) {
    health_service h;
    ASSERT_TRUE(h.server->ok());
    int code = -1;
    const std::string said = diagnose("http://localhost:" + std::to_string(h.server->port()) + "/health/disk", code);
    EXPECT_EQ(code, 0) << said;
    EXPECT_NE(said.find("loading http://localhost:"), std::string::npos) << said;
    EXPECT_NE(said.find("verdict: nothing wrong"), std::string::npos) << said;
}

// A path no route has: every answer a 404 is never "nothing wrong".
TEST(lab_diagnose_test, a_path_that_answers_404_to_everything_is_a_problem) {
    health_service h;
    ASSERT_TRUE(h.server->ok());
    int code = -1;
    const std::string said = diagnose(url(*h.server, "/helth/disk"), code);
    EXPECT_EQ(code, 0) << said;
    EXPECT_NE(said.find("problem  client_errors"), std::string::npos) << said;
    EXPECT_NE(said.find("answers matched no route (404): is the path one the service has?"), std::string::npos) << said;
    EXPECT_NE(said.find("verdict: see the problems above"), std::string::npos) << said;
    EXPECT_EQ(said.find("nothing wrong"), std::string::npos) << said;
}

TEST(lab_diagnose_test, watching_diagnoses_the_window_of_someone_elses_load) {
    app routes;
    routes.get("/export/{fmt}", [](request&, response& res) {
        std::this_thread::sleep_for(40ms);
        res.text("csv");
    });
    routes.debug_routes("/debug/routes");
    test::test_server s(routes, quiet());
    ASSERT_TRUE(s.ok());
    // Before any load: nothing in the window, so the whole report (empty but for scrapes) is judged.
    child idle({"lab", "diagnose", url(s, "/"), "-d", "1s"}, 0, memory_limit_bytes);
    std::string said = idle.rest();
    EXPECT_EQ(idle.wait_exit(15s), 0) << said;
    EXPECT_NE(said.find("nothing was answered in the 1s"), std::string::npos) << said;
    EXPECT_NE(said.find("verdict: nothing to judge"), std::string::npos) << said;

    child load({"load", url(s, "/export/csv"), "-c", "2", "-d", "4s"}, 0, memory_limit_bytes);
    child watch({"lab", "diagnose", url(s, "/"), "-d", "2s"}, 0, memory_limit_bytes);
    said = watch.rest();
    EXPECT_EQ(watch.wait_exit(15s), 0) << said;
    EXPECT_NE(said.find("under the load it had"), std::string::npos) << said;
    EXPECT_NE(said.find("GET /export/{fmt} held its loop"), std::string::npos) << said;
    const std::string load_said = load.rest();
    EXPECT_EQ(load.wait_exit(15s), 0) << load_said;
}

TEST(lab_diagnose_test, down_is_exit_1_and_not_hotpath_is_exit_3_in_one_line) {
    const std::uint16_t nothing = test::free_port();
    child down({"lab", "diagnose", "http://127.0.0.1:" + std::to_string(nothing), "-d", "1s"});
    std::string said = down.rest();
    EXPECT_EQ(down.wait_exit(), 1) << said;
    EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
    EXPECT_NE(said.find("nothing answers"), std::string::npos) << said;

    app routes; // an HTTP server without the route report
    routes.get("/", [](request&, response& res) { res.text("hello"); });
    test::test_server s(routes, quiet());
    child other({"lab", "diagnose", url(s, "/"), "-d", "1s"});
    said = other.rest();
    EXPECT_EQ(other.wait_exit(), 3) << said;
    EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
    EXPECT_NE(said.find("is not a hotpath service"), std::string::npos) << said;
    EXPECT_NE(said.find("`hotpath load URL` measures it"), std::string::npos) << "a next step: " << said;
}

// A service of another kind, loaded: no report to read, so the load, requests timed alone and the service's own
// Server-Timing are the evidence; the handler holds its one loop 20 ms a request, so 8 connections queue behind it
// while its own time (Server-Timing: app) stays 20 ms.
TEST(lab_diagnose_test, a_service_that_reports_nothing_is_diagnosed_from_the_load_and_server_timing) {
    app routes;
    routes.get("/ledger/{id}", [](request&, response& res) {
        std::this_thread::sleep_for(20ms);
        res.header("Server-Timing", "app;dur=20.0, cache;dur=0.1");
        res.text("entry");
    });
    test::test_server s(routes, quiet());
    ASSERT_TRUE(s.ok());
    child run({"lab", "diagnose", url(s, "/ledger/7"), "-c", "8", "-d", "2s"});
    const std::string said = run.rest();
    EXPECT_EQ(run.wait_exit(30s), 0) << said;
    EXPECT_NE(said.find("reports nothing lab diagnose reads"), std::string::npos) << said;
    EXPECT_NE(said.find("Server-Timing metrics: app, cache"), std::string::npos) << said;
    EXPECT_NE(said.find("problem  queueing"), std::string::npos) << said;
    EXPECT_NE(said.find("Server-Timing 'app' reads 20.00ms under load"), std::string::npos) << said;
    EXPECT_NE(said.find("outside the server's own measure"), std::string::npos) << said;
    EXPECT_NE(said.find("lacking  evidence          no report of the service's own"), std::string::npos) << said;
    EXPECT_EQ(said.find("no Server-Timing field"), std::string::npos) << said;
}

// --- compare -------------------------------------------------------------------------------------------------

std::string temp_dir(const std::string& name) {
    const std::string d = ::testing::TempDir() + "hotpath_compare_" + std::to_string(::getpid()) + "_" + name;
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
}

void write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

std::string variant(const std::string& name, double rps, double p95, unsigned errors) {
    return R"({"name":")" + name + R"(","requests":1000,"errors":)" + std::to_string(errors) + R"(,"rps":)" +
           std::to_string(rps) + R"(,"latency_ms":{"mean":1,"p50":1,"p90":2,"p95":)" + std::to_string(p95) +
           R"(,"p99":9,"max":20}})";
}

std::string result(const std::string& name, const std::string& variants, double headline) {
    return R"({"schema":"hotpath-lab/1","case":")" + name + R"(","variants":[)" + variants +
           R"(],"headline":{"label":"x/y p95","value":)" + std::to_string(headline) + "}}";
}

TEST(lab_compare_test, deltas_missing_variants_and_a_page) {
    const std::string d = temp_dir("folders");
    write(d + "/old/batch/result.json",
          result("batch", variant("serial", 100, 40, 0) + "," + variant("pooled", 300, 10, 0), 4));
    write(d + "/new/batch/result.json", result("batch", variant("serial", 150, 41, 3), 4.1));
    write(d + "/new/upload/result.json", result("upload", variant("one", 10, 1, 0), 1));
    child lab({"lab", "compare", d + "/old", d + "/new", "--html", d + "/compare.html"});
    const std::string said = lab.rest();
    ASSERT_EQ(lab.wait_exit(), 0) << said;
    EXPECT_NE(said.find("+50.0 %  faster"), std::string::npos) << said;      // rps 100 -> 150
    EXPECT_NE(said.find("+2.5 %  within noise"), std::string::npos) << said; // p95 40 -> 41
    EXPECT_NE(said.find("more errors"), std::string::npos) << said;          // 0 -> 3
    EXPECT_NE(said.find("only in old: batch/pooled"), std::string::npos) << said;
    EXPECT_NE(said.find("only in new: upload"), std::string::npos) << said;
    std::ifstream in(d + "/compare.html");
    const std::string html{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EXPECT_NE(html.find("<svg"), std::string::npos);
    EXPECT_NE(html.find("prefers-color-scheme: dark"), std::string::npos);
    EXPECT_EQ(html.find("http://"), std::string::npos); // self-contained
    EXPECT_EQ(html.find("https://"), std::string::npos);
    std::filesystem::remove_all(d);
}

TEST(lab_compare_test, two_result_files_compare_and_a_bad_file_is_exit_2) {
    const std::string d = temp_dir("files");
    write(d + "/a.json", result("batch", variant("serial", 100, 40, 0), 4));
    write(d + "/b.json", result("batch", variant("serial", 60, 80, 0), 4));
    write(d + "/bad.json", R"({"schema":"something-else"})");
    child ok({"lab", "compare", d + "/a.json", d + "/b.json"});
    std::string said = ok.rest();
    ASSERT_EQ(ok.wait_exit(), 0) << said;
    EXPECT_NE(said.find("-40.0 %  slower"), std::string::npos) << said;  // rps
    EXPECT_NE(said.find("+100.0 %  slower"), std::string::npos) << said; // p95
    // --html -: the page alone on standard output.
    child page("/bin/sh", {"-c", std::string(HOTPATH_BINARY) + " lab compare " + d + "/a.json " + d +
                                     "/b.json --html - 2>/dev/null"});
    said = page.rest();
    ASSERT_EQ(page.wait_exit(), 0) << said;
    EXPECT_EQ(said.rfind("<!doctype html>", 0), 0u) << said.substr(0, 200);
    EXPECT_NE(said.find("</html>"), std::string::npos);
    for (const std::string& bad : {d + "/bad.json", d + "/missing.json"}) {
        child lab({"lab", "compare", d + "/a.json", bad});
        said = lab.rest();
        EXPECT_EQ(lab.wait_exit(), 2) << said;
        EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
    }
    std::filesystem::remove_all(d);
}

} // namespace
} // namespace hotpath
