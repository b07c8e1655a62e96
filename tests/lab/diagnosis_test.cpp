// The lab's diagnosis rules on synthetic /debug/routes reports, with route names no case uses.
#include "lab/diagnosis.hpp"

#include <gtest/gtest.h>

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
    std::string why;
    const auto parsed = parse_route_report(json, why);
    EXPECT_TRUE(parsed.has_value()) << why;
    return parsed ? diagnose(*parsed) : std::vector<finding>{};
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

TEST(diagnosis_test, bounded_concurrency_is_a_note_not_a_problem) {
    const auto f = diagnose_text(report("/quote", 40, 0.8, 0.1, 0.0, 30, 6));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].what, finding::kind::downstream_bound);
    EXPECT_FALSE(f[0].problem);
}

TEST(diagnosis_test, one_downstream_call_per_request_is_not_sequential) {
    const auto f = diagnose_text(report("/proxy", 40, 0.95, 0.03, 0.0, 1, 1));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].what, finding::kind::healthy);
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
    std::string why;
    auto r = parse_route_report(report("/tiny", 5000, 0.0, 0.1, 0.8, 0, 0), why);
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
    std::string why;
    auto a = parse_route_report(report("/fine", 100, 0.0, 0.9, 0.0, 0, 0), why);
    auto b = parse_route_report(report("/slow", 100, 0.9, 0.05, 0.0, 10, 1), why);
    ASSERT_TRUE(a && b);
    a->routes.push_back(b->routes.front());
    const auto f = diagnose(*a);
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].route, "/slow");
    EXPECT_EQ(f[1].route, "/fine");
}

TEST(diagnosis_test, not_a_report_is_refused_with_a_reason) {
    std::string why;
    EXPECT_FALSE(parse_route_report("[1,2]", why).has_value());
    EXPECT_FALSE(why.empty());
    EXPECT_FALSE(parse_route_report(R"({"loops":1})", why).has_value());
    EXPECT_FALSE(parse_route_report("{not json", why).has_value());
}

} // namespace
} // namespace hotpath::lab
