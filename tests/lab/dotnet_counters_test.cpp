// The .NET counters' reader and rules: on sessions recorded from the originals on Kestrel under load
// (tests/lab/data/dotnet/, dotnet-counters 10 with the lab's providers, trimmed to the counters the rules read), and
// on small documents for the reader's refusals.
#include <hotpath/lab/dotnet_counters.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace hotpath::lab {
namespace {

std::string recorded(const std::string& name) {
    std::ifstream in(std::string(HOTPATH_SOURCE_DIR) + "/tests/lab/data/dotnet/" + name + ".json");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

dotnet_figures figures_of(const std::string& name) {
    auto parsed = parse_dotnet_counters(recorded(name));
    EXPECT_TRUE(parsed.has_value()) << parsed.error().message;
    return parsed ? summarize(*parsed) : dotnet_figures{};
}

bool has(const std::vector<finding>& f, finding::kind k) {
    return std::any_of(f.begin(), f.end(), [k](const finding& x) { return x.what == k; });
}

std::string lines(const std::vector<finding>& f) {
    std::string out;
    for (const finding& x : f) {
        out += std::string(to_string(x.what)) + ": " + x.text + "\n";
    }
    return out;
}

TEST(dotnet_counters_test, reads_series_by_counter_and_tags_with_times_from_the_first_reading) {
    const auto parsed = parse_dotnet_counters(R"j({"TargetProcess": "svc", "StartTime": "x", "Events": [
        {"timestamp": "2026-12-05T03:45:24.5+00:00", "provider": "System.Runtime", "name": "CPU Usage (%)",
         "tags": "", "counterType": "Metric", "value": 12.5},
        {"timestamp": "2026-12-05T03:45:24.5+00:00", "provider": "Microsoft.AspNetCore.Hosting",
         "name": "http.server.active_requests ({request})", "tags": "http.request.method=GET", "counterType": "Metric",
         "value": 3},
        {"timestamp": "2026-12-05T03:45:25.75+00:00", "provider": "System.Runtime", "name": "CPU Usage (%)",
         "tags": "", "counterType": "Metric", "value": 20},
        {"timestamp": "2026-12-05T04:45:26.5+01:00", "provider": "System.Runtime", "name": "Allocation Rate (B / 1 sec)",
         "tags": "", "counterType": "Rate", "value": 1024}]})j");
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
    EXPECT_EQ(parsed->process, "svc");
    ASSERT_EQ(parsed->series.size(), 3U);
    EXPECT_EQ(parsed->series[0].name, "CPU Usage");
    ASSERT_EQ(parsed->series[0].samples.size(), 2U);
    EXPECT_DOUBLE_EQ(parsed->series[0].samples[1].at_s, 1.25);
    EXPECT_EQ(parsed->series[1].name, "http.server.active_requests");
    EXPECT_EQ(parsed->series[1].tags, "http.request.method=GET");
    EXPECT_EQ(parsed->series[2].name, "Allocation Rate");
    EXPECT_TRUE(parsed->series[2].rate);
    EXPECT_DOUBLE_EQ(parsed->series[2].samples[0].at_s, 2.0); // +01:00 is an hour ahead: the same instant + 2 s
}

TEST(dotnet_counters_test, refuses_what_is_not_a_session_with_a_line_that_says_why) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"not json", "not JSON"},
        {R"({"TargetProcess": "svc"})", "no \"Events\""},
        {R"({"Events": [{"timestamp": "2026-12-05T03:45:24+00:00", "provider": "p", "value": 1}]})", "event 0 lacks"},
        {R"({"Events": [{"timestamp": "yesterday", "provider": "p", "name": "n", "value": 1}]})",
         "bad timestamp 'yesterday'"},
    };
    for (const auto& [text, words] : cases) {
        const auto parsed = parse_dotnet_counters(text);
        ASSERT_FALSE(parsed.has_value()) << text;
        EXPECT_NE(parsed.error().message.find(words), std::string::npos) << parsed.error().message;
    }
    const auto empty = parse_dotnet_counters(R"({"Events": []})");
    ASSERT_TRUE(empty.has_value());
    EXPECT_TRUE(empty->series.empty());
}

// profile's sync route on Kestrel: Thread.Sleep(2000) in the handler, 200 users.
TEST(dotnet_counters_test, a_blocking_handler_starves_the_thread_pool) {
    const dotnet_figures f = figures_of("profile_sync");
    ASSERT_TRUE(f.queue_mean && f.cpu_percent && f.threads_first && f.threads_last);
    EXPECT_GT(*f.queue_mean, 100);
    EXPECT_LT(*f.cpu_percent, 10);
    EXPECT_GT(*f.threads_last, *f.threads_first); // the pool grows while starved
    const auto found = diagnose_dotnet(f, {22, 6, 200, 4340, 9000}, "GET /profile/sync/42");
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found.front().what, finding::kind::thread_pool_starvation) << lines(found);
    EXPECT_TRUE(found.front().problem);
    EXPECT_NE(found.front().text.find("work items waited for a thread"), std::string::npos) << found.front().text;
}

// The same service awaiting the same 2 s: nothing wrong, and no starvation.
TEST(dotnet_counters_test, an_awaited_call_is_healthy) {
    const dotnet_figures f = figures_of("profile_async");
    const auto found = diagnose_dotnet(f, {600, 6, 200, 2060, 2160}, "GET /profile/async/42");
    ASSERT_EQ(found.size(), 1U) << lines(found);
    EXPECT_EQ(found.front().what, finding::kind::healthy);
    EXPECT_NE(found.front().text.find("nothing wrong"), std::string::npos) << found.front().text;
    ASSERT_FALSE(f.routes.empty());
    EXPECT_EQ(f.routes.front().route, "/profile/async/{id:long}");
    ASSERT_TRUE(f.routes.front().p50_s.has_value());
    EXPECT_NEAR(*f.routes.front().p50_s, 2.0, 0.1);
}

// The aggregator's three strategies over 100 calls to the weather original, 4 users each.
TEST(dotnet_counters_test, outbound_calls_one_at_a_time_are_sequential) {
    const dotnet_figures f = figures_of("aggregator_sequential");
    ASSERT_TRUE(f.outbound_started && f.outbound_in_flight && f.inbound_in_flight);
    const auto found = diagnose_dotnet(f, {20, 6, 4, 1360, 1790}, "GET /");
    EXPECT_EQ(found.front().what, finding::kind::sequential_calls) << lines(found);
    EXPECT_NE(found.front().text.find("at most 4 in flight for 4 requests in flight (1.0 per request)"),
              std::string::npos)
        << lines(found);
    // 100 calls per request, as the load asked (the window may hold a part of a request more or less).
    const double calls = *f.outbound_started / 20;
    EXPECT_GT(calls, 95);
    EXPECT_LT(calls, 105);
    EXPECT_FALSE(has(found, finding::kind::allocation_churn)) << lines(found); // ~5 KiB per call is HttpClient's
}

TEST(dotnet_counters_test, every_call_at_once_floods_the_downstream) {
    const auto found = diagnose_dotnet(figures_of("aggregator_all"), {448, 6, 4, 53.7, 100}, "GET /");
    EXPECT_EQ(found.front().what, finding::kind::flooding) << lines(found);
    EXPECT_FALSE(has(found, finding::kind::sequential_calls));
}

TEST(dotnet_counters_test, calls_in_bounded_batches_are_a_note_not_a_problem) {
    const auto found = diagnose_dotnet(figures_of("aggregator_bounded"), {156, 6, 4, 157.7, 200}, "GET /");
    EXPECT_TRUE(has(found, finding::kind::downstream_bound)) << lines(found);
    EXPECT_TRUE(std::none_of(found.begin(), found.end(), [](const finding& x) { return x.problem; })) << lines(found);
}

TEST(dotnet_counters_test, churn_is_judged_per_request_and_per_gc_share) {
    dotnet_figures f;
    f.seconds = 10;
    f.cpu_percent = 95;
    f.queue_mean = 0;
    f.allocated_bytes = 10'000.0 * 200'000; // 200 kB for each of 10,000 requests
    f.gc_paused_ms = 100;
    auto found = diagnose_dotnet(f, {10'000, 10, 64, 5, 9}, "POST /quote");
    ASSERT_TRUE(has(found, finding::kind::allocation_churn)) << lines(found);
    EXPECT_NE(found.front().text.find("200 kB allocated per request"), std::string::npos) << lines(found);

    f.allocated_bytes = 10'000.0 * 2'000; // lean: 2 kB a request
    EXPECT_FALSE(has(diagnose_dotnet(f, {10'000, 10, 64, 5, 9}, "POST /quote"), finding::kind::allocation_churn));
    f.gc_paused_ms = 2'000; // but a fifth of the time paused
    EXPECT_TRUE(has(diagnose_dotnet(f, {10'000, 10, 64, 5, 9}, "POST /quote"), finding::kind::allocation_churn));
}

// The figures the freight originals gave under the lab's quick step load (240 to 480 users, 7 s): the write-up's
// churn variant allocates ~6 kB a request, its lean fix ~0.5 kB.
TEST(dotnet_counters_test, the_freight_churn_is_churn_and_its_fix_is_not) {
    dotnet_figures churn;
    churn.seconds = 7.1;
    churn.cpu_percent = 77.7;
    churn.queue_mean = 152;
    churn.queue_held = 1;
    churn.queue_readings = 7;
    churn.allocated_bytes = 373'950'624;
    churn.gc_paused_ms = 102.7;
    churn.gc_collections = 50;
    churn.exceptions = 4'839;
    const auto found = diagnose_dotnet(churn, {62'869, 7, 480, 38.15, 68.68}, "POST /freight/quote");
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found.front().what, finding::kind::allocation_churn) << lines(found); // the cause before the queue
    EXPECT_NE(found.front().text.find("5.95 kB allocated per request"), std::string::npos) << lines(found);
    EXPECT_NE(found.front().text.find("4,839 exceptions thrown"), std::string::npos) << lines(found);
    EXPECT_FALSE(has(found, finding::kind::thread_pool_starvation)) << lines(found); // the CPU is busy: not starved

    dotnet_figures lean = churn;
    lean.allocated_bytes = 119'042'080;
    lean.gc_paused_ms = 25.1;
    lean.exceptions = 0;
    EXPECT_FALSE(has(diagnose_dotnet(lean, {242'975, 7, 480, 9.87, 16.91}, "POST /freight/quote"),
                     finding::kind::allocation_churn));
}

// The seven-line avatar loaded without keep-alive (ab's shape): ~10 kB a request, most of it Kestrel's for each new
// connection, which is not the handler's churn; the same bytes over kept connections would be.
TEST(dotnet_counters_test, a_new_connection_per_request_is_not_the_handlers_churn) {
    dotnet_figures f;
    f.seconds = 10;
    f.cpu_percent = 90;
    f.allocated_bytes = 100'000.0 * 10'200;
    f.gc_paused_ms = 270;
    load_window closing{100'000, 10, 10, 1.29, 3, 100'000};
    EXPECT_FALSE(has(diagnose_dotnet(f, closing, "GET /"), finding::kind::allocation_churn));
    load_window kept = closing;
    kept.connections = 10;
    EXPECT_TRUE(has(diagnose_dotnet(f, kept, "GET /"), finding::kind::allocation_churn));
}

// The avatar original under ab's shape (10,000 requests, 10 connections, no keep-alive) is done in 1.5 s: its
// counters' session has one reading with a request in flight, and the session's first readings (CPU 0 %, for no
// interval yet; a queue of 4 as Kestrel starts) say nothing of starvation. A queue seen once is not a queue that stays.
TEST(dotnet_counters_test, one_reading_of_a_queue_at_a_sessions_start_is_not_starvation) {
    const dotnet_figures f = figures_of("avatar_closing");
    EXPECT_EQ(f.queue_readings, 1U);
    EXPECT_FALSE(f.cpu_percent && *f.cpu_percent < 1) << *f.cpu_percent; // the first CPU reading is not a reading
    const auto found = diagnose_dotnet(f, {10'000, 1.5, 10, 1.38, 2.69, 10'000}, "GET /");
    EXPECT_FALSE(has(found, finding::kind::thread_pool_starvation)) << lines(found);
    // The same queue held over two readings at an idle CPU is.
    dotnet_figures held = f;
    held.queue_readings = 2;
    held.cpu_percent = 3;
    EXPECT_TRUE(has(diagnose_dotnet(held, {10'000, 1.5, 10, 1.38, 2.69, 10'000}, "GET /"),
                    finding::kind::thread_pool_starvation));
}

TEST(dotnet_counters_test, a_session_without_the_counters_the_rules_read_says_so) {
    const auto found = diagnose_dotnet(dotnet_figures{}, {100, 5, 4, 1, 2}, "GET /x");
    ASSERT_EQ(found.size(), 1U);
    EXPECT_FALSE(found.front().problem);
    EXPECT_NE(found.front().text.find("nothing to read"), std::string::npos) << found.front().text;
}

} // namespace
} // namespace hotpath::lab
