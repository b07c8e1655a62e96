// The latency sketch behind /debug/routes: every value reported within 1/32 of the values its bucket holds, the
// ends clamped, quantiles by rank.
#include <hotpath/metrics/latency_sketch.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace hotpath::metrics {
namespace {

TEST(latency_sketch_test, a_bucket_reports_within_a_thirty_second_of_its_values) {
    for (std::uint64_t v = latency_sketch::lowest_ns; v <= latency_sketch::highest_ns; v += v / 97 + 1) {
        const std::size_t i = latency_sketch::bucket_of(v);
        ASSERT_LT(i, latency_sketch::bucket_count);
        const auto middle = static_cast<double>(latency_sketch::bucket_middle_ns(i));
        ASSERT_LE(std::abs(middle - static_cast<double>(v)) / static_cast<double>(v), 1.0 / 32 + 1e-9) << v;
    }
}

TEST(latency_sketch_test, buckets_are_ordered_and_the_ends_clamp) {
    EXPECT_EQ(latency_sketch::bucket_of(0), 0u);
    EXPECT_EQ(latency_sketch::bucket_of(latency_sketch::lowest_ns), 0u);
    EXPECT_EQ(latency_sketch::bucket_of(~std::uint64_t{0}), latency_sketch::bucket_count - 1);
    EXPECT_EQ(latency_sketch::bucket_of(latency_sketch::highest_ns), latency_sketch::bucket_count - 1);
    for (std::size_t i = 1; i < latency_sketch::bucket_count; ++i) {
        ASSERT_LT(latency_sketch::bucket_middle_ns(i - 1), latency_sketch::bucket_middle_ns(i));
        ASSERT_EQ(latency_sketch::bucket_of(latency_sketch::bucket_middle_ns(i)), i);
    }
}

TEST(latency_sketch_test, quantiles_by_rank_over_summed_sketches) {
    latency_sketch a;
    latency_sketch b;
    for (std::uint64_t ms = 1; ms <= 100; ++ms) {
        (ms % 2 == 0 ? a : b).record_ns(ms * 1'000'000); // 1 .. 100 ms, split over two loops
    }
    std::vector<std::uint64_t> counts(latency_sketch::bucket_count);
    EXPECT_EQ(latency_sketch::value_at(counts, 0.5), 0u); // empty
    a.add_to(counts);
    b.add_to(counts);
    const auto near = [](std::uint64_t got, double want_ms) {
        return std::abs(static_cast<double>(got) / 1e6 - want_ms) / want_ms <= 1.0 / 32;
    };
    EXPECT_TRUE(near(latency_sketch::value_at(counts, 0.50), 50));
    EXPECT_TRUE(near(latency_sketch::value_at(counts, 0.95), 95));
    EXPECT_TRUE(near(latency_sketch::value_at(counts, 0.99), 99));
    EXPECT_TRUE(near(latency_sketch::value_at(counts, 1.0), 100));
    EXPECT_TRUE(near(latency_sketch::value_at(counts, 0.0), 1));
}

} // namespace
} // namespace hotpath::metrics
