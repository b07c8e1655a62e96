// Histogram layout, precision, percentiles, exact statistics, exact merging and the coordinated-omission case.
#include <hotpath/metrics/histogram.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace hotpath::metrics {
namespace {

constexpr std::uint64_t us = 1'000;
constexpr std::uint64_t ms = 1'000'000;
constexpr std::uint64_t s = 1'000'000'000;
// The worst relative excess of a bucket's highest value over a value recorded into it.
constexpr double max_relative_error = 1.0 / 128;

// Histograms are ~27 KB: the tests keep them on the heap.
std::unique_ptr<histogram> make_histogram() {
    return std::make_unique<histogram>();
}

// Log-uniform values from 100 ns to 200 s: every octave, both clamping sides, fixed seed.
std::vector<std::uint64_t> random_values(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> log_value(std::log(100.0), std::log(200.0 * s));
    std::vector<std::uint64_t> values(n);
    for (auto& v : values) {
        v = static_cast<std::uint64_t>(std::exp(log_value(rng)));
    }
    return values;
}

void expect_same(const histogram& a, const histogram& b) {
    EXPECT_TRUE(a.counts() == b.counts());
    EXPECT_EQ(a.count(), b.count());
    EXPECT_EQ(a.clamped(), b.clamped());
    EXPECT_EQ(a.min_ns(), b.min_ns());
    EXPECT_EQ(a.max_ns(), b.max_ns());
    EXPECT_EQ(a.sum_ns(), b.sum_ns());
    EXPECT_EQ(a.sum_squares_ns(), b.sum_squares_ns());
    EXPECT_EQ(a.mean_ns(), b.mean_ns());
    EXPECT_EQ(a.stddev_ns(), b.stddev_ns());
    for (int tenth = 0; tenth <= 1000; ++tenth) {
        EXPECT_EQ(a.value_at_percentile(tenth / 10.0), b.value_at_percentile(tenth / 10.0)) << tenth / 10.0;
    }
    for (const double p : {99.99, 99.999, 99.9999}) {
        EXPECT_EQ(a.value_at_percentile(p), b.value_at_percentile(p)) << p;
    }
}

TEST(histogram_layout, bucket_count_spans_one_microsecond_to_one_hundred_seconds) {
    EXPECT_EQ(histogram::bucket_count, 3393u);
    EXPECT_EQ(histogram::bucket_of(histogram::lowest_ns), 0u);
    EXPECT_EQ(histogram::bucket_of(histogram::highest_ns), histogram::bucket_count - 1);
    EXPECT_LE(histogram::bucket_lowest_ns(histogram::bucket_count - 1), histogram::highest_ns);
    EXPECT_GE(histogram::bucket_highest_ns(histogram::bucket_count - 1), histogram::highest_ns);
    EXPECT_EQ(histogram::bucket_lowest_ns(0), 0u);
    EXPECT_GE(histogram::bucket_highest_ns(0), histogram::lowest_ns);
}

TEST(histogram_layout, every_bucket_boundary_round_trips) {
    for (std::size_t i = 0; i < histogram::bucket_count; ++i) {
        const std::uint64_t low = histogram::bucket_lowest_ns(i);
        const std::uint64_t high = histogram::bucket_highest_ns(i);
        ASSERT_LE(low, high) << i;
        ASSERT_EQ(histogram::bucket_of(low), i) << i;
        ASSERT_EQ(histogram::bucket_of(high), i) << i;
        if (i + 1 < histogram::bucket_count) {
            ASSERT_EQ(high + 1, histogram::bucket_lowest_ns(i + 1)) << i;
        }
        if (i > 0) {
            // Widths are powers of two, and never more than 1/128 of the bucket's lowest value.
            const std::uint64_t width = high - low + 1;
            ASSERT_EQ(width & (width - 1), 0u) << i;
            ASSERT_LE(width * 128, low) << i;
        }
    }
}

TEST(histogram_precision, relative_error_is_below_one_128th_from_1us_to_100s) {
    // Every 1.001x step, plus each power of two: the start of an octave is where the error peaks.
    std::vector<std::uint64_t> samples;
    for (double x = histogram::lowest_ns; x <= static_cast<double>(histogram::highest_ns); x *= 1.001) {
        samples.push_back(static_cast<std::uint64_t>(x));
    }
    for (std::uint64_t p = 1024; p <= histogram::highest_ns; p *= 2) {
        samples.push_back(p);
    }
    double worst = 0;
    for (const std::uint64_t v : samples) {
        // Alone, a value is reported exactly: the bucket's highest value is clamped to [min, max].
        histogram single;
        single.record_ns(v);
        ASSERT_EQ(single.value_at_percentile(50), v);
        // With a larger value beside it, the median is the bucket's highest equivalent value, unclamped.
        histogram pair;
        pair.record_ns(v);
        pair.record_ns(histogram::highest_ns);
        const std::uint64_t reported = pair.value_at_percentile(50);
        ASSERT_GE(reported, v);
        const double error = static_cast<double>(reported - v) / static_cast<double>(v);
        ASSERT_LT(error, max_relative_error) << v;
        worst = std::max(worst, error);
    }
    EXPECT_GT(worst, 0.00781); // the bound is tight: (2^29 - 1) / 2^36 at 2^36 ns
    RecordProperty("worst_relative_error", std::to_string(worst));
}

TEST(histogram_precision, values_below_1us_land_in_the_lowest_bucket) {
    histogram h;
    h.record_ns(0);
    h.record_ns(1);
    h.record_ns(999);
    EXPECT_EQ(h.count(), 3u);
    EXPECT_EQ(h.clamped(), 0u);
    EXPECT_EQ(h.counts()[0], 3u);
    EXPECT_EQ(h.min_ns(), 0u);
    EXPECT_EQ(h.max_ns(), 999u);
    EXPECT_EQ(h.value_at_percentile(0), 0u);
    EXPECT_EQ(h.value_at_percentile(50), 999u); // bucket 0's highest value, clamped to max
    EXPECT_EQ(h.value_at_percentile(100), 999u);
    EXPECT_DOUBLE_EQ(h.mean_ns(), 1000.0 / 3);
}

TEST(histogram_precision, values_above_100s_are_clamped_and_counted) {
    histogram h;
    h.record_ns(histogram::highest_ns); // in range
    h.record_ns(histogram::highest_ns + 1);
    h.record_ns(200 * s, 2);
    h.record_ns(~std::uint64_t{0});
    EXPECT_EQ(h.count(), 5u);
    EXPECT_EQ(h.clamped(), 4u);
    EXPECT_EQ(h.counts()[histogram::bucket_count - 1], 5u);
    EXPECT_EQ(h.min_ns(), histogram::highest_ns);
    EXPECT_EQ(h.max_ns(), ~std::uint64_t{0}); // exact, not clamped
    EXPECT_EQ(h.value_at_percentile(100), ~std::uint64_t{0});
    EXPECT_EQ(h.value_at_percentile(80), histogram::bucket_highest_ns(histogram::bucket_count - 1));
    const double expected_sum = 100.0 * s + (100.0 * s + 1) + 400.0 * s + 18446744073709551615.0;
    EXPECT_DOUBLE_EQ(h.sum_ns(), expected_sum);
}

TEST(histogram_percentiles, uniform_1_to_10000us) {
    histogram h;
    for (std::uint64_t k = 1; k <= 10'000; ++k) {
        h.record_ns(k * us);
    }
    EXPECT_NEAR(static_cast<double>(h.value_at_percentile(50)), 5000.0 * us, 5000.0 * us * 0.01);
    EXPECT_NEAR(static_cast<double>(h.value_at_percentile(99)), 9900.0 * us, 9900.0 * us * 0.01);
    EXPECT_NEAR(static_cast<double>(h.value_at_percentile(99.9)), 9990.0 * us, 9990.0 * us * 0.01);
    EXPECT_EQ(h.value_at_percentile(0), 1 * us);
    EXPECT_EQ(h.value_at_percentile(100), 10'000 * us);
    // Every tenth of a percent: rank 10 j out of 10000 is the value 10 j µs, reported at most 1/128 above.
    for (std::uint64_t j = 1; j <= 1000; ++j) {
        const std::uint64_t exact = 10 * j * us;
        const std::uint64_t reported = h.value_at_percentile(static_cast<double>(j) / 10);
        ASSERT_GE(reported, exact) << j;
        ASSERT_LT(static_cast<double>(reported - exact), static_cast<double>(exact) * max_relative_error) << j;
    }
}

TEST(histogram_percentiles, rank_is_ceil_of_percentile_times_count) {
    // 100 values 1..100 ms fall in distinct buckets, so an off-by-one rank would report the neighbour.
    histogram h;
    for (std::uint64_t k = 1; k <= 100; ++k) {
        h.record_ns(k * ms);
    }
    for (std::uint64_t p = 1; p <= 100; ++p) {
        const std::uint64_t expected = std::min(histogram::bucket_highest_ns(histogram::bucket_of(p * ms)), 100 * ms);
        EXPECT_EQ(h.value_at_percentile(static_cast<double>(p)), expected) << p;
        if (p < 100) {
            // Just above p %, the rank moves to the next value.
            EXPECT_EQ(histogram::bucket_of(h.value_at_percentile(static_cast<double>(p) + 0.5)),
                      histogram::bucket_of((p + 1) * ms))
                << p;
        }
    }
    EXPECT_EQ(h.value_at_percentile(-1), 1 * ms);
    EXPECT_EQ(h.value_at_percentile(0.001), histogram::bucket_highest_ns(histogram::bucket_of(1 * ms)));
    EXPECT_EQ(h.value_at_percentile(101), 100 * ms);
}

TEST(histogram_percentiles, empty_histogram_reports_zeros) {
    histogram h;
    EXPECT_EQ(h.count(), 0u);
    EXPECT_EQ(h.min_ns(), 0u);
    EXPECT_EQ(h.max_ns(), 0u);
    EXPECT_EQ(h.mean_ns(), 0.0);
    EXPECT_EQ(h.stddev_ns(), 0.0);
    EXPECT_EQ(h.value_at_percentile(0), 0u);
    EXPECT_EQ(h.value_at_percentile(50), 0u);
    EXPECT_EQ(h.value_at_percentile(100), 0u);
    h.record_ns(5 * ms, 0); // a zero count records nothing
    EXPECT_EQ(h.count(), 0u);
    EXPECT_EQ(h.min_ns(), 0u);
}

TEST(histogram_statistics, min_max_mean_stddev_match_a_direct_computation) {
    const auto values = random_values(20'000, 1);
    auto h = make_histogram();
    for (const auto v : values) {
        h->record_ns(v);
    }
    long double sum = 0;
    for (const auto v : values) {
        sum += static_cast<long double>(v);
    }
    const long double mean = sum / static_cast<long double>(values.size());
    long double squares = 0;
    for (const auto v : values) {
        squares += (static_cast<long double>(v) - mean) * (static_cast<long double>(v) - mean);
    }
    const auto stddev = static_cast<double>(std::sqrt(squares / static_cast<long double>(values.size())));
    EXPECT_EQ(h->count(), values.size());
    EXPECT_EQ(h->min_ns(), *std::min_element(values.begin(), values.end()));
    EXPECT_EQ(h->max_ns(), *std::max_element(values.begin(), values.end()));
    EXPECT_NEAR(h->mean_ns(), static_cast<double>(mean), static_cast<double>(mean) * 1e-13);
    EXPECT_NEAR(h->stddev_ns(), stddev, stddev * 1e-12);
}

TEST(histogram_statistics, stddev_has_no_cancellation_at_100s) {
    // Σv² ≈ 2e25 ns²: a double formula loses the variance of 1 ns² entirely.
    histogram h;
    h.record_ns(100 * s, 1000);
    h.record_ns(100 * s + 2, 1000);
    EXPECT_DOUBLE_EQ(h.mean_ns(), 100.0 * s + 1);
    EXPECT_DOUBLE_EQ(h.stddev_ns(), 1.0);
}

TEST(histogram_statistics, a_count_equals_that_many_records) {
    histogram once;
    histogram many;
    once.record_ns(123 * us, 7);
    once.record_ns(4 * ms, 3);
    for (int i = 0; i < 7; ++i) {
        many.record(std::chrono::microseconds(123));
    }
    for (int i = 0; i < 3; ++i) {
        many.record(std::chrono::milliseconds(4));
    }
    expect_same(once, many);
}

TEST(histogram_merge, is_exact_whatever_the_split) {
    const auto values = random_values(30'000, 2);
    auto all = make_histogram();
    std::array<std::unique_ptr<histogram>, 3> parts{make_histogram(), make_histogram(), make_histogram()};
    std::mt19937_64 rng(3);
    for (const auto v : values) {
        all->record_ns(v);
        parts[rng() % 3]->record_ns(v);
    }
    EXPECT_GT(all->clamped(), 0u);
    EXPECT_LT(all->min_ns(), histogram::lowest_ns);
    // Merge in two different orders: both give the histogram that recorded everything.
    auto forward = make_histogram();
    for (const auto& p : parts) {
        forward->merge(*p);
    }
    expect_same(*forward, *all);
    auto backward = make_histogram();
    backward->merge(*parts[2]);
    parts[1]->merge(*parts[0]);
    backward->merge(*parts[1]);
    expect_same(*backward, *all);
}

TEST(histogram_merge, with_empty_is_identity) {
    const auto values = random_values(1000, 4);
    auto h = make_histogram();
    for (const auto v : values) {
        h->record_ns(v);
    }
    auto copy = std::make_unique<histogram>(*h);
    const histogram empty;
    copy->merge(empty);
    expect_same(*copy, *h);
    auto into_empty = make_histogram();
    into_empty->merge(*h);
    expect_same(*into_empty, *h);
}

TEST(histogram_restore, round_trips_serialised_state) {
    const auto values = random_values(5000, 5);
    auto h = make_histogram();
    for (const auto v : values) {
        h->record_ns(v % ms); // keeps both sums below 2^53, where doubles carry them exactly
    }
    ASSERT_LT(h->sum_squares_ns(), 0x1p53);
    auto restored = make_histogram();
    restored->record_ns(42); // restore() replaces everything
    restored->restore(h->counts(), h->min_ns(), h->max_ns(), h->sum_ns(), h->sum_squares_ns(), h->clamped());
    expect_same(*restored, *h);

    const histogram empty;
    restored->restore(empty.counts(), 0, 0, 0, 0, 0);
    expect_same(*restored, empty);
    restored->record_ns(7 * ms); // the minimum is not stuck at the restored 0
    EXPECT_EQ(restored->min_ns(), 7 * ms);
}

TEST(histogram_reset, returns_to_empty) {
    auto h = make_histogram();
    for (const auto v : random_values(1000, 6)) {
        h->record_ns(v);
    }
    h->reset();
    const histogram empty;
    expect_same(*h, empty);
    h->record_ns(3 * ms);
    EXPECT_EQ(h->min_ns(), 3 * ms);
    EXPECT_EQ(h->max_ns(), 3 * ms);
    EXPECT_EQ(h->count(), 1u);
}

// HdrHistogram_c's canonical case: 10,000 responses of 1 ms at 100 req/s, then one 100 s stall.
TEST(histogram_coordinated_omission, scheduled_time_recording_shows_the_stall) {
    constexpr std::uint64_t interval = 10 * ms; // 100 req/s
    histogram uncorrected;
    histogram corrected;
    for (int i = 0; i < 10'000; ++i) {
        uncorrected.record_ns(1 * ms);
        corrected.record_ns(1 * ms);
    }
    uncorrected.record_ns(100 * s);
    // A fixed-rate load generator measures from each request's scheduled send time (wrk2): the requests due
    // during the stall waited 100 s, 99.99 s, ... 10 ms.
    for (std::uint64_t latency = 100 * s; latency >= interval; latency -= interval) {
        corrected.record_ns(latency);
    }
    ASSERT_EQ(corrected.count(), 20'000u);

    const auto near = [](std::uint64_t reported, std::uint64_t expected) {
        return static_cast<double>(reported) >= static_cast<double>(expected) &&
               static_cast<double>(reported) <= static_cast<double>(expected) * (1 + max_relative_error);
    };
    EXPECT_TRUE(near(uncorrected.value_at_percentile(30), 1 * ms));
    EXPECT_TRUE(near(uncorrected.value_at_percentile(99), 1 * ms));
    EXPECT_TRUE(near(uncorrected.value_at_percentile(99.99), 1 * ms));
    EXPECT_EQ(uncorrected.value_at_percentile(99.999), 100 * s);
    EXPECT_EQ(uncorrected.value_at_percentile(100), 100 * s);

    // Half of the time the server was stalled: the median sits exactly on the boundary, and any rank past it
    // is a stalled request.
    EXPECT_TRUE(near(corrected.value_at_percentile(50), 1 * ms));
    EXPECT_TRUE(near(corrected.value_at_percentile(50.01), 20 * ms));
    EXPECT_TRUE(near(corrected.value_at_percentile(75), 50 * s));
    EXPECT_TRUE(near(corrected.value_at_percentile(90), 80 * s));
    EXPECT_TRUE(near(corrected.value_at_percentile(99), 98 * s));
    EXPECT_EQ(corrected.value_at_percentile(100), 100 * s);
    EXPECT_GT(corrected.mean_ns(), 25.0 * s);
    EXPECT_LT(uncorrected.mean_ns(), 12.0 * ms);
}

} // namespace
} // namespace hotpath::metrics
