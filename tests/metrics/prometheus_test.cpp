// The Prometheus text writer: families, escaping, number formats and cumulative histogram buckets.
#include <hotpath/metrics/duration_buckets.hpp>
#include <hotpath/metrics/prometheus.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace hotpath::metrics {
namespace {

TEST(prometheus_test, a_family_then_samples_with_escaped_label_values) {
    std::string text;
    prometheus_writer out(text);
    out.family("x_total", "Lines\nand a back\\slash", metric_type::counter);
    out.sample("x_total", {{"route", "/a\"b\\c\nd"}, {"code", "2xx"}}, std::uint64_t{42});
    out.sample("x_total", {}, 0.5);
    EXPECT_EQ(text, "# HELP x_total Lines\\nand a back\\\\slash\n"
                    "# TYPE x_total counter\n"
                    "x_total{route=\"/a\\\"b\\\\c\\nd\",code=\"2xx\"} 42\n"
                    "x_total 0.5\n");
}

TEST(prometheus_test, special_numbers_are_written_as_the_format_names_them) {
    std::string text;
    prometheus_writer out(text);
    out.sample("g", {}, std::numeric_limits<double>::infinity());
    out.sample("g", {}, -std::numeric_limits<double>::infinity());
    out.sample("g", {}, std::nan(""));
    out.sample("g", {}, std::uint64_t{18446744073709551615ull});
    EXPECT_EQ(text, "g +Inf\ng -Inf\ng NaN\ng 18446744073709551615\n");
}

TEST(prometheus_test, histogram_buckets_are_cumulative_and_end_with_inf_sum_count) {
    std::string text;
    prometheus_writer out(text);
    const std::vector<double> bounds{0.1, 0.5};
    const std::vector<std::uint64_t> counts{3, 0, 2}; // 3 <= 0.1, none in (0.1, 0.5], 2 above
    out.histogram("d_seconds", {{"route", "/r"}}, bounds, counts, 7.25);
    EXPECT_EQ(text, "d_seconds_bucket{route=\"/r\",le=\"0.1\"} 3\n"
                    "d_seconds_bucket{route=\"/r\",le=\"0.5\"} 3\n"
                    "d_seconds_bucket{route=\"/r\",le=\"+Inf\"} 5\n"
                    "d_seconds_sum{route=\"/r\"} 7.25\n"
                    "d_seconds_count{route=\"/r\"} 5\n");
}

// Bounds in fixed notation, as client libraries write them: a query naming le="0.0001" finds the bucket.
TEST(prometheus_test, bucket_bounds_are_written_in_fixed_notation) {
    std::string text;
    prometheus_writer out(text);
    const std::vector<double> bounds{0.0001, 0.00025, 0.0005, 2.5, 10};
    const std::vector<std::uint64_t> counts{1, 0, 0, 0, 0, 0};
    out.histogram("d_seconds", {}, bounds, counts, 0.5);
    for (const char* le : {"le=\"0.0001\"", "le=\"0.00025\"", "le=\"0.0005\"", "le=\"2.5\"", "le=\"10\""}) {
        EXPECT_NE(text.find(le), std::string::npos) << le << "\n" << text;
    }
    EXPECT_EQ(text.find("e-0"), std::string::npos) << "no bound in exponent notation\n" << text;
}

TEST(duration_buckets_test, objectives_become_bounds_and_values_land_at_or_under_their_bound) {
    using namespace std::chrono_literals;
    const std::vector<std::chrono::nanoseconds> objectives{150ms, 10ms, 0ns};
    const auto bounds = latency_bounds_ns(objectives);
    ASSERT_TRUE(std::is_sorted(bounds.begin(), bounds.end()));
    EXPECT_EQ(std::adjacent_find(bounds.begin(), bounds.end()), bounds.end()) << "no duplicate (10 ms was one)";
    EXPECT_NE(std::find(bounds.begin(), bounds.end(), 150'000'000u), bounds.end());
    EXPECT_EQ(bounds.front(), 100'000u);
    duration_buckets d(bounds);
    d.record_ns(150'000'000);       // exactly at the objective: within it (le is <=)
    d.record_ns(150'000'001);       // just over
    d.record_ns(50);                // under the first bound
    d.record_ns(3'600'000'000'000); // an hour: above the last bound
    const auto at = static_cast<std::size_t>(std::find(bounds.begin(), bounds.end(), 150'000'000u) - bounds.begin());
    EXPECT_EQ(d.count_in(at), 1u);
    EXPECT_EQ(d.count_in(at + 1), 1u);
    EXPECT_EQ(d.count_in(0), 1u);
    EXPECT_EQ(d.count_in(bounds.size()), 1u);
    EXPECT_EQ(d.sum_ns(), 150'000'000u + 150'000'001u + 50u + 3'600'000'000'000u);
}

} // namespace
} // namespace hotpath::metrics
