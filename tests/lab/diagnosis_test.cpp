// The lab's diagnosis rules on synthetic /debug/routes reports, with route names no case uses.
#include <hotpath/lab/diagnosis.hpp>
#include <hotpath/server/stall_event.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>

namespace hotpath::lab {
namespace {

// A report with one route; the figures given, the rest zero.
std::string report(const std::string& route, unsigned requests, double downstream, double app, double queue,
                   double calls, unsigned max_in_flight, unsigned errors_5xx = 0,
                   const std::string& allocations = "null") {
    return R"({"loops":2,"allocations_counted":false,"routes":[{"method":"POST","route":")" + route +
           R"(","requests":)" + std::to_string(requests) + R"(,"status":{"2xx":)" +
           std::to_string(requests - errors_5xx) + R"(,"5xx":)" + std::to_string(errors_5xx) +
           R"(},"latency_ms":{"mean":900,"p50":880,"p95":1200,"p99":1300},"mean_ms":{"queue":)" +
           std::to_string(queue * 900) + R"(},"share":{"queue":)" + std::to_string(queue) + R"(,"app":)" +
           std::to_string(app) + R"(,"downstream":)" + std::to_string(downstream) +
           R"(,"wait":0,"write":0.01},"downstream":{"calls_per_request":)" + std::to_string(calls) +
           R"(,"mean_concurrency":1,"max_concurrency":)" + std::to_string(max_in_flight) +
           R"(},"allocations_per_request":)" + allocations + "}]}";
}

std::vector<finding> diagnose_text(const std::string& json) {
    const auto parsed = parse_route_report(json);
    EXPECT_TRUE(parsed.has_value()) << parsed.error().message;
    return parsed ? diagnose(*parsed) : std::vector<finding>{};
}

TEST(diagnosis_test, mostly_4xx_is_a_problem_not_nothing_wrong) {
    const std::string refused =
        R"j({"loops":1,"allocations_counted":false,"routes":[{"method":"POST","route":"/basket/{id}","requests":100,)j"
        R"j("status":{"2xx":40,"4xx":60},"latency_ms":{"mean":1,"p50":1,"p95":1,"p99":1},)j"
        R"j("share":{"app":0.9,"write":0.1}},{"method":"","route":"(no route)","requests":50,)j"
        R"j("status":{"4xx":50},"latency_ms":{"mean":1,"p50":1,"p95":1,"p99":1},"share":{"app":1}}]})j";
    const auto f = diagnose_text(refused);
    ASSERT_EQ(f.size(), 2u);
    for (const auto& one : f) {
        EXPECT_EQ(one.what, finding::kind::client_errors) << one.text;
        EXPECT_TRUE(one.problem);
    }
    const auto basket = std::find_if(f.begin(), f.end(), [](const finding& x) { return x.route == "/basket/{id}"; });
    ASSERT_NE(basket, f.end());
    EXPECT_NE(basket->text.find("60 of 100 answers of POST /basket/{id} are 4xx"), std::string::npos) << basket->text;
    const auto none = std::find_if(f.begin(), f.end(), [](const finding& x) { return x.route == "(no route)"; });
    ASSERT_NE(none, f.end());
    EXPECT_NE(none->text.find("all 50 answers matched no route (404)"), std::string::npos) << none->text;
    // Fewer than half: the route's figures are of its work.
    EXPECT_EQ(diagnose_text(report("/ping", 100, 0, 0.9, 0.02, 0, 0)).at(0).what, finding::kind::healthy);
}

TEST(diagnosis_test, calls_awaited_one_after_another) {
    const auto f = diagnose_text(report("/orders/{id}/lines", 40, 0.92, 0.05, 0.01, 25, 1));
    ASSERT_FALSE(f.empty());
    EXPECT_EQ(f[0].what, finding::kind::sequential_calls);
    EXPECT_TRUE(f[0].problem);
    EXPECT_EQ(f[0].route, "/orders/{id}/lines");
    EXPECT_NE(f[0].text.find("92 % of POST /orders/{id}/lines is downstream"), std::string::npos) << f[0].text;
    EXPECT_NE(f[0].text.find("at most 1 call in flight"), std::string::npos) << f[0].text;
}

TEST(diagnosis_test, every_call_at_once_floods_the_downstream) {
    const auto f = diagnose_text(report("/quote", 40, 0.8, 0.1, 0.0, 30, 30));
    ASSERT_FALSE(f.empty());
    EXPECT_EQ(f[0].what, finding::kind::flooding);
}

// A few calls started together (a token and a profile, 8 prices) are the fix for calls in a row, not a flood.
TEST(diagnosis_test, a_few_calls_at_once_are_a_note_not_a_flood) {
    const auto f = diagnose_text(report("/quote", 40, 0.8, 0.1, 0.0, 8, 8));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].what, finding::kind::downstream_bound);
    EXPECT_NE(f[0].text.find("the calls run together"), std::string::npos) << f[0].text;
}

TEST(diagnosis_test, bounded_concurrency_is_a_note_not_a_problem) {
    const auto f = diagnose_text(report("/quote", 40, 0.8, 0.1, 0.0, 30, 6));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].what, finding::kind::downstream_bound);
    EXPECT_FALSE(f[0].problem);
}

// One call that takes most of the time: not sequential, not healthy either: the downstream is named as the cost.
TEST(diagnosis_test, one_slow_downstream_call_per_request_names_the_downstream) {
    const auto f = diagnose_text(report("/proxy", 40, 0.95, 0.03, 0.0, 1, 1));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].what, finding::kind::downstream_bound);
    EXPECT_FALSE(f[0].problem);
    EXPECT_NE(f[0].text.find("95 % of POST /proxy is its downstream call"), std::string::npos) << f[0].text;
    EXPECT_NE(f[0].text.find("the downstream is the bottleneck"), std::string::npos) << f[0].text;
}

// Two calls in a row may be a chain (a token, then the data): a note with what running them together would save.
TEST(diagnosis_test, two_calls_in_a_row_are_a_note_with_the_saving_not_a_problem) {
    const auto f = diagnose_text(report("/checkout", 40, 0.9, 0.05, 0.0, 2, 1));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].what, finding::kind::sequential_calls);
    EXPECT_FALSE(f[0].problem) << f[0].text;
    EXPECT_NE(f[0].text.find("a chain"), std::string::npos) << f[0].text;
    EXPECT_NE(f[0].text.find("running them together would save about"), std::string::npos) << f[0].text;
}

TEST(diagnosis_test, a_healthy_route_in_a_build_without_the_counter_says_allocations_were_not_counted) {
    const auto f = diagnose_text(report("/ping", 1000, 0.0, 0.9, 0.02, 0, 0));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].text.find("allocations not counted in this build"), std::string::npos) << f[0].text;
}

TEST(diagnosis_test, allocations_of_a_route_that_calls_out_are_also_given_per_call) {
    const auto f = diagnose_text(report("/fanout", 40, 0.3, 0.6, 0.0, 100, 10, 0, "2803.0"));
    const auto churn =
        std::find_if(f.begin(), f.end(), [](const finding& x) { return x.what == finding::kind::allocation_churn; });
    ASSERT_NE(churn, f.end());
    EXPECT_NE(churn->text.find("2803 allocations per request on POST /fanout (28 per downstream call, 100 calls"),
              std::string::npos)
        << churn->text;
}

TEST(diagnosis_test, a_healthy_route_says_nothing_wrong) {
    const auto f = diagnose_text(report("/ping", 1000, 0.0, 0.9, 0.02, 0, 0));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].what, finding::kind::healthy);
    EXPECT_NE(f[0].text.find("nothing wrong on POST /ping"), std::string::npos) << f[0].text;
}

TEST(diagnosis_test, queueing_errors_and_allocations_are_named_with_their_evidence) {
    const auto f = diagnose_text(report("/upload", 200, 0.0, 0.5, 0.45, 0, 0, 20, "412.0"));
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[0].what, finding::kind::queueing);
    EXPECT_NE(f[0].text.find("45 %"), std::string::npos) << f[0].text;
    EXPECT_EQ(f[1].what, finding::kind::server_errors);
    EXPECT_NE(f[1].text.find("20 of 200"), std::string::npos) << f[1].text;
    EXPECT_EQ(f[2].what, finding::kind::allocation_churn);
    EXPECT_NE(f[2].text.find("412 allocations per request on POST /upload"), std::string::npos) << f[2].text;
}

TEST(diagnosis_test, a_large_share_of_a_tiny_wait_is_not_queueing) {
    auto r = parse_route_report(report("/tiny", 5000, 0.0, 0.1, 0.8, 0, 0));
    ASSERT_TRUE(r);
    r->routes[0].queue_mean_ms = 0.05; // 80 % of a 60 us request
    const auto f = diagnose(*r);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].what, finding::kind::healthy);
    EXPECT_NE(f[0].text.find("most of the time in queue (80 %)"), std::string::npos) << f[0].text;
}

TEST(diagnosis_test, too_few_requests_are_no_evidence) {
    EXPECT_TRUE(diagnose_text(report("/debug/anything", 2, 0.9, 0.0, 0.0, 50, 1)).empty());
}

TEST(diagnosis_test, problems_come_before_notes_across_routes) {
    auto a = parse_route_report(report("/fine", 100, 0.0, 0.9, 0.0, 0, 0));
    auto b = parse_route_report(report("/slow", 100, 0.9, 0.05, 0.0, 10, 1));
    ASSERT_TRUE(a && b);
    a->routes.push_back(b->routes.front());
    const auto f = diagnose(*a);
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].route, "/slow");
    EXPECT_EQ(f[1].route, "/fine");
}

// A route with stalls named for it: `app_ms` is its handler's mean time on the loop per request.
route_figures stalled_route(const std::string& route, std::uint64_t requests, double app_ms, std::uint64_t stalls,
                            double held_ms) {
    route_figures r;
    r.method = "GET";
    r.route = route;
    r.requests = requests;
    r.mean_ms = app_ms + 1;
    r.p50_ms = r.p95_ms = r.p99_ms = r.mean_ms;
    r.app = app_ms / r.mean_ms;
    r.app_mean_ms = app_ms;
    r.stalls = stalls;
    r.stall_held_ms = held_ms;
    r.stall_longest_ms = held_ms / static_cast<double>(stalls);
    return r;
}

TEST(diagnosis_test, a_handler_that_holds_its_loop_is_a_blocked_loop) {
    route_report r;
    r.loops = 2;
    r.routes.push_back(stalled_route("/reports/{year}", 37, 54, 37, 2000));
    const auto f = diagnose(r);
    ASSERT_FALSE(f.empty());
    EXPECT_EQ(f[0].what, finding::kind::blocked_loop);
    EXPECT_TRUE(f[0].problem);
    EXPECT_NE(f[0].text.find("GET /reports/{year} held its loop 2.00s in 37 stalls"), std::string::npos) << f[0].text;
}

// The verdict ranks its levers by the request time their fix would save in the window: a loop held 2 s against
// calls in a row that cost 6 x 100 requests x 25 ms = 12.5 s less one call each; and the other way round.
route_figures sequential_route(const std::string& route, std::uint64_t requests, double calls, double call_ms) {
    route_figures r;
    r.method = "GET";
    r.route = route;
    r.requests = requests;
    r.downstream_mean_ms = calls * call_ms;
    r.mean_ms = r.downstream_mean_ms + 1;
    r.p50_ms = r.p95_ms = r.p99_ms = r.mean_ms;
    r.downstream = r.downstream_mean_ms / r.mean_ms;
    r.calls_per_request = calls;
    r.max_concurrency = 1;
    return r;
}

TEST(diagnosis_test, problems_are_ranked_by_the_time_their_fix_would_save) {
    route_report big_calls;
    big_calls.loops = 2;
    big_calls.routes.push_back(stalled_route("/reports/{year}", 37, 54, 37, 2000));
    big_calls.routes.push_back(sequential_route("/orders/{id}/lines", 100, 6, 25));
    auto f = diagnose(big_calls);
    ASSERT_GE(f.size(), 2u);
    EXPECT_EQ(f[0].what, finding::kind::sequential_calls);
    EXPECT_NEAR(f[0].saved_ms, 100 * 5 * 25, 1);
    EXPECT_NE(f[0].text.find("[worth about 12.50s of the window's"), std::string::npos) << f[0].text;
    EXPECT_NE(f[0].text.find(": the largest lever]"), std::string::npos) << f[0].text;
    EXPECT_EQ(f[1].what, finding::kind::blocked_loop);
    EXPECT_EQ(f[1].text.find("the largest lever"), std::string::npos) << f[1].text;

    route_report small_calls;
    small_calls.loops = 2;
    small_calls.routes.push_back(sequential_route("/orders/{id}/lines", 10, 6, 5)); // 250 ms in all
    small_calls.routes.push_back(stalled_route("/reports/{year}", 37, 54, 37, 2000));
    f = diagnose(small_calls);
    ASSERT_GE(f.size(), 2u);
    EXPECT_EQ(f[0].what, finding::kind::blocked_loop);
    EXPECT_EQ(f[1].what, finding::kind::sequential_calls);
    // One lever alone needs no ranking words.
    route_report one;
    one.routes.push_back(sequential_route("/orders/{id}/lines", 100, 6, 25));
    EXPECT_EQ(diagnose(one).at(0).text.find("worth about"), std::string::npos);
}

// With the watchdog's measure of the thread, the finding says what held it and the fix that matches: computing
// (offload the work), a blocking system call (asynchronous I/O), a lock (a shorter critical section).
TEST(diagnosis_test, a_blocked_loop_says_what_held_its_thread_and_the_matching_fix) {
    const struct {
        const char* label;
        std::optional<double> cpu_share;
        std::vector<stall_wait> waiting;
        const char* want;
    } cases[] = {
        {"asleep in a system call",
         0.03,
         {{"clock_nanosleep", 28}},
         "GET /x held its loop 6.80s in 28 stalls (longest 242.86ms), its thread on the CPU 3 % of that time, waiting "
         "in clock_nanosleep: a blocking system call; make the I/O asynchronous (or move it to the blocking pool)"},
        {"computing",
         0.98,
         {{"computes", 28}},
         "GET /x held its loop 6.80s in 28 stalls (longest 242.86ms), its thread on the CPU 98 % of that time: it "
         "computes; move the work off the loop (the blocking pool)"},
        {"on a lock, mostly",
         0.01,
         {{"lock", 27}, {"computes", 1}},
         "GET /x held its loop 6.80s in 28 stalls (longest 242.86ms), its thread on the CPU 1 % of that time, waiting "
         "on a lock (futex) held elsewhere (in 27 of 28 stalls): shrink the critical section, or do not share the "
         "lock across loops"},
        {"in a call the table does not name",
         0.02,
         {{"system_call", 28}},
         "GET /x held its loop 6.80s in 28 stalls (longest 242.86ms), its thread on the CPU 2 % of that time, waiting "
         "in a blocking system call: make the I/O asynchronous (or move it to the blocking pool)"},
        {"nothing told: the older words, with the CPU share",
         0.4,
         {{"unknown", 28}},
         "GET /x held its loop 6.80s in 28 stalls (longest 242.86ms), its thread on the CPU 40 % of that time; its "
         "handler ran 245.00ms per request on the loop (100 % of its time): it blocks its thread or computes too long, "
         "and every request on that loop waits"},
        {"an older report: today's words",
         std::nullopt,
         {},
         "GET /x held its loop 6.80s in 28 stalls (longest 242.86ms); its handler ran 245.00ms per request on the loop "
         "(100 % of its time): it blocks its thread or computes too long, and every request on that loop waits"},
    };
    for (const auto& c : cases) {
        route_report r;
        r.loops = 1;
        r.routes.push_back(stalled_route("/x", 28, 245, 28, 6800));
        r.routes[0].stall_cpu_share = c.cpu_share;
        r.routes[0].stall_measured_ms = c.cpu_share ? 6000 : 0;
        r.routes[0].stall_waiting = c.waiting;
        const auto f = diagnose(r);
        ASSERT_FALSE(f.empty()) << c.label;
        EXPECT_EQ(f[0].what, finding::kind::blocked_loop) << c.label;
        EXPECT_EQ(f[0].text, c.want) << c.label;
    }
}

// The watchdog names the last handler of a long turn: a turn of thousands of quick refusals names one too.
TEST(diagnosis_test, stalls_a_route_own_time_cannot_explain_are_a_busy_loop_not_a_block) {
    route_report r;
    r.loops = 1;
    r.routes.push_back(stalled_route("/thumbnail", 5000, 0.002, 12, 400));
    r.routes.back().status_5xx = 4900;
    r.server.present = true;
    r.server.max_requests_in_flight_per_loop = 4;
    r.server.refused_in_flight = 4900;
    r.server.stalls = 12;
    const auto f = diagnose(r);
    for (const auto& x : f) {
        EXPECT_NE(x.what, finding::kind::blocked_loop) << x.text;
    }
    const auto busy =
        std::find_if(f.begin(), f.end(), [](const finding& x) { return x.what == finding::kind::busy_loop; });
    ASSERT_NE(busy, f.end());
    EXPECT_FALSE(busy->problem);
    EXPECT_NE(busy->text.find("not a handler of its own that blocks"), std::string::npos) << busy->text;
}

TEST(diagnosis_test, refusals_at_the_in_flight_limit_are_overload) {
    route_report r;
    r.loops = 2;
    r.routes.push_back(stalled_route("/search", 5000, 3, 0, 0));
    r.routes.back().status_5xx = 1234;
    r.server.present = true;
    r.server.max_requests_in_flight_per_loop = 8;
    r.server.refused_in_flight = 1234;
    const auto f = diagnose(r);
    const auto o = std::find_if(f.begin(), f.end(), [](const finding& x) { return x.what == finding::kind::overload; });
    ASSERT_NE(o, f.end());
    EXPECT_TRUE(o->problem);
    EXPECT_NE(o->text.find("requests in flight at the limit (8 per loop, 2 loops): 1,234 of 5,000 answers were 503"),
              std::string::npos)
        << o->text;
    EXPECT_NE(o->text.find("GET /search 1,234"), std::string::npos) << o->text;
}

TEST(diagnosis_test, a_few_refusals_among_many_answers_are_not_overload) {
    route_report r;
    r.routes.push_back(stalled_route("/search", 100000, 3, 0, 0));
    r.server.refused_in_flight = 3;
    for (const auto& x : diagnose(r)) {
        EXPECT_NE(x.what, finding::kind::overload) << x.text;
    }
}

TEST(diagnosis_test, the_report_parses_stalls_and_the_server_figures) {
    const std::string json =
        R"({"loops":2,"routes":[{"method":"PUT","route":"/blobs/{id}","requests":10,"status":{"2xx":10},)"
        R"("latency_ms":{"mean":50,"p50":50,"p95":60,"p99":70},"mean_ms":{"queue":0,"app":45},)"
        R"("share":{"queue":0,"app":0.9,"downstream":0,"wait":0,"write":0.1},)"
        R"("stalls":{"count":10,"held_ms":450.5,"longest_ms":60}}],)"
        R"("server":{"stall_threshold_ms":25,"stalls":11,"max_requests_in_flight_per_loop":0,"max_connections":0,)"
        R"("overload_responses":{"requests_in_flight":0,"connections":0,"drain_timeout":0}}})";
    const auto r = parse_route_report(json);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->loops, 2u);
    EXPECT_EQ(r->routes[0].stalls, 10u);
    EXPECT_DOUBLE_EQ(r->routes[0].stall_held_ms, 450.5);
    EXPECT_DOUBLE_EQ(r->routes[0].app_mean_ms, 45);
    EXPECT_TRUE(r->server.present);
    EXPECT_EQ(r->server.stalls, 11u);
    const auto f = diagnose(*r);
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].what, finding::kind::blocked_loop);
    EXPECT_EQ(f[1].what, finding::kind::busy_loop); // the one stall outside any handler, a note
    EXPECT_FALSE(f[1].problem);
}

TEST(diagnosis_test, the_difference_of_two_reports_is_the_window) {
    route_report before;
    before.routes.push_back(stalled_route("/feed", 100, 1, 2, 60));
    before.routes.back().status_5xx = 10;
    before.server.refused_in_flight = 10;
    route_report after = before;
    // 100 more requests at 3 ms of app time each: the window's mean app time is 3 ms, not the cumulative 2 ms.
    route_figures& a = after.routes[0];
    a.requests = 200;
    a.mean_ms = (100 * 2.0 + 100 * 4.0) / 200; // 1 ms of write each
    a.app = (100 * 1.0 + 100 * 3.0) / 200 / a.mean_ms;
    a.app_mean_ms = 2;
    a.stalls = 5;
    a.stall_held_ms = 200;
    a.status_5xx = 10;
    after.server.refused_in_flight = 10;
    after.routes.push_back(stalled_route("/idle", 7, 1, 0, 0)); // nothing new: gone from the window
    before.routes.push_back(after.routes.back());
    const route_report w = difference(before, after);
    ASSERT_EQ(w.routes.size(), 1u);
    EXPECT_EQ(w.routes[0].requests, 100u);
    EXPECT_EQ(w.routes[0].stalls, 3u);
    EXPECT_NEAR(w.routes[0].stall_held_ms, 140, 1e-9);
    EXPECT_NEAR(w.routes[0].app_mean_ms, 3, 1e-9);
    EXPECT_NEAR(w.routes[0].mean_ms, 4, 1e-9);
    EXPECT_EQ(w.routes[0].status_5xx, 0u);
    EXPECT_EQ(w.server.refused_in_flight, 0u);
}

// What held the thread over the window: the stalls by cause subtracted, the CPU share of the window's own time.
TEST(diagnosis_test, the_difference_says_what_held_the_thread_in_the_window) {
    route_report before;
    before.routes.push_back(stalled_route("/feed", 100, 1, 2, 60));
    before.routes[0].stall_cpu_share = 1.0; // 50 ms computing
    before.routes[0].stall_measured_ms = 50;
    before.routes[0].stall_waiting = {{"computes", 2}};
    route_report after = before;
    route_figures& a = after.routes[0];
    a.stalls = 5;
    a.stall_held_ms = 460;
    a.stall_measured_ms = 450;                 // 400 ms more, 10 ms of it on the CPU
    a.stall_cpu_share = (50.0 + 10.0) / 450.0; // the cumulative share, as the server writes it
    a.stall_waiting = {{"read", 3}, {"computes", 2}};
    const route_report w = difference(before, after);
    ASSERT_EQ(w.routes.size(), 1u);
    EXPECT_NEAR(w.routes[0].stall_measured_ms, 400, 1e-9);
    ASSERT_TRUE(w.routes[0].stall_cpu_share.has_value());
    EXPECT_NEAR(*w.routes[0].stall_cpu_share, 10.0 / 400.0, 1e-9);
    ASSERT_EQ(w.routes[0].stall_waiting.size(), 1u);
    EXPECT_EQ(w.routes[0].stall_waiting[0], (stall_wait{"read", 3}));

    route_report older = before; // a report from before the measure: nothing to subtract
    older.routes[0].stall_cpu_share.reset();
    older.routes[0].stall_measured_ms = 0;
    older.routes[0].stall_waiting.clear();
    const route_report v = difference(older, after);
    EXPECT_NEAR(*v.routes[0].stall_cpu_share, 60.0 / 450.0, 1e-9);
    EXPECT_EQ(v.routes[0].stall_waiting, after.routes[0].stall_waiting);
}

// A service whose loops are all held cannot answer its report; its stall watchdog's lines name the handler.
TEST(diagnosis_test, stall_lines_name_the_route_that_held_its_loops) {
    using namespace std::chrono_literals;
    // As the server writes them (server/stall_event.hpp), among other lines, the last one cut short.
    const std::string output =
        "hotpath: serving things on http://127.0.0.1:4000 with 2 event loops on io_uring (Ctrl-C stops)\n" +
        format_stall_line({0, 2001ms, false, "POST", "/render/{page}", "", ""}) + "\n" +
        format_stall_line({1, 1500ms, false, "", "", "", ""}) + "\n" +
        format_stall_line({1, 2400ms, false, "POST", "/render/{page}", "x", "0x1 0x2"}) + "\n" +
        format_stall_line({0, 2003ms, true, "POST", "/render/{page}", "", ""}) + "\n" +
        format_stall_line({0, 30ms, false, "GET", "/list", "", ""}) + "\n" + "hotpath: loop 0 stalled 12";
    const auto found = diagnose_stall_lines(output);
    ASSERT_EQ(found.size(), 2u);
    EXPECT_EQ(found[0].what, finding::kind::blocked_loop);
    EXPECT_TRUE(found[0].problem);
    EXPECT_EQ(found[0].method, "POST");
    EXPECT_EQ(found[0].route, "/render/{page}");
    EXPECT_NE(found[0].text.find("3 lines on 2 loops"), std::string::npos) << found[0].text;
    EXPECT_NE(found[0].text.find("2.40s"), std::string::npos) << found[0].text;
    EXPECT_EQ(found[1].route, "/list");
    EXPECT_NE(found[0].text.find("(longest stall 2.40s): it blocks its thread"), std::string::npos) << found[0].text;
    EXPECT_TRUE(diagnose_stall_lines("hotpath: serving x\nnothing else\n").empty());
    EXPECT_TRUE(diagnose_stall_lines("").empty());
}

// Newer servers' lines say what held the thread: the finding names it, with its fix.
TEST(diagnosis_test, stall_lines_that_say_what_held_the_thread_name_it) {
    using namespace std::chrono_literals;
    const std::string output = format_stall_line({0, 2001ms, true, "GET", "/x", "", "", 2, "read"}) + "\n" +
                               format_stall_line({0, 2400ms, false, "GET", "/x", "", "", 1, "read"}) + "\n" +
                               format_stall_line({1, 2100ms, false, "GET", "/x", "", "", 99, "computes"}) + "\n";
    const auto found = diagnose_stall_lines(output);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].text,
              "GET /x held its loop: the service did not answer its report, and its stall watchdog "
              "named this handler in 3 lines on 2 loops (longest stall 2.40s), its thread on the CPU 1 % "
              "of the longest, waiting in read (in 2 of 3 lines): a blocking system call; make the I/O "
              "asynchronous (or move it to the blocking pool)");
}

} // namespace
} // namespace hotpath::lab
