// An HDR-style log-linear latency histogram: 1 µs to 100 s within 1 %, fixed memory, exactly mergeable.
#pragma once

#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace hotpath::metrics {

namespace detail {

// Index of `value_ns` in an unbounded log-linear layout with 2^sub_bucket_bits buckets per power of two:
// a value in [2^e, 2^(e+1)) goes to a bucket 2^(e - sub_bucket_bits) wide. Requires value_ns >= 2^sub_bucket_bits.
constexpr std::uint64_t log_linear_index(std::uint64_t value_ns, unsigned sub_bucket_bits) noexcept {
    const auto shift = static_cast<unsigned>(63 - std::countl_zero(value_ns)) - sub_bucket_bits;
    return (std::uint64_t{shift} << sub_bucket_bits) + (value_ns >> shift);
}

} // namespace detail

// Records durations in nanoseconds into log-linear buckets (as HdrHistogram with 2 significant digits):
// each power-of-two range above 1 µs is split into 2^sub_bucket_bits equal parts, so the value a bucket
// reports is at most 1/128 (< 1 %) above any value recorded into it. Values below 1 µs land in the lowest
// bucket (which spans 0 ns up to just above 1 µs); values above 100 s are clamped to the highest (and counted
// in clamped()). min, max, the sum and the sum of squares are kept exactly (128-bit integers; the sum of
// squares saturates past 2^128 ns², i.e. after ~3e16 samples of 100 s, and stddev_ns() is then NaN).
//
// Fixed size (no allocation after construction, none on record), no I/O, not thread-safe: one per worker
// thread, merged at the end. merge() is exact: merging histograms gives bit-for-bit the histogram that
// recording all their values into one would give.
class histogram {
public:
    static constexpr std::uint64_t lowest_ns = 1'000;            // 1 µs
    static constexpr std::uint64_t highest_ns = 100'000'000'000; // 100 s
    static constexpr unsigned sub_bucket_bits = 7;               // 128 sub-buckets per power of two
    static_assert(lowest_ns >= (std::uint64_t{1} << sub_bucket_bits), "every tracked value needs a log-linear bucket");
    static constexpr std::size_t bucket_count = detail::log_linear_index(highest_ns, sub_bucket_bits) -
                                                detail::log_linear_index(lowest_ns, sub_bucket_bits) + 1;

    void record(std::chrono::nanoseconds value) noexcept {
        record_ns(value.count() > 0 ? static_cast<std::uint64_t>(value.count()) : 0); // a negative duration is 0
    }
    void record_ns(std::uint64_t value_ns, std::uint64_t count = 1) noexcept;
    void merge(const histogram& other) noexcept;
    void reset() noexcept;

    std::uint64_t count() const noexcept;
    std::uint64_t clamped() const noexcept;
    std::uint64_t min_ns() const noexcept; // 0 when empty
    std::uint64_t max_ns() const noexcept; // 0 when empty
    double mean_ns() const noexcept;       // 0 when empty
    double stddev_ns() const noexcept;     // population standard deviation; 0 when empty
    // The smallest bucket value v such that at least `percentile`% of recorded values are <= v
    // (HdrHistogram's "highest equivalent value", clamped to [min, max]); 0 when empty. percentile in [0, 100].
    std::uint64_t value_at_percentile(double percentile) const noexcept;

    // Raw counts by bucket index, for serialisation; bucket_lowest_ns(i)..bucket_highest_ns(i) is its range
    // (index < bucket_count). bucket_of() clamps its argument to [lowest_ns, highest_ns].
    const std::array<std::uint64_t, bucket_count>& counts() const noexcept { return counts_; }
    static std::uint64_t bucket_lowest_ns(std::size_t index) noexcept;
    static std::uint64_t bucket_highest_ns(std::size_t index) noexcept;
    static std::size_t bucket_of(std::uint64_t value_ns) noexcept;
    // An exact unsigned 128-bit sum as two 64-bit words: the value is high * 2^64 + low.
    struct wide_sum {
        std::uint64_t high = 0;
        std::uint64_t low = 0;
        friend bool operator==(const wide_sum&, const wide_sum&) = default;
    };
    // Rebuilds a histogram from serialised state (counts, exact min/max/sum/sum of squares, clamped count).
    // The sums travel as doubles: the round trip is exact while each is below 2^53.
    void restore(const std::array<std::uint64_t, bucket_count>& counts, std::uint64_t min_ns, std::uint64_t max_ns,
                 double sum_ns, double sum_squares_ns, std::uint64_t clamped) noexcept;
    // The same with the exact sums (exact_sum_ns() and exact_sum_squares_ns() of the original): the round trip
    // is always bit-exact. The state is taken as given; a reader of untrusted input checks it first.
    void restore(const std::array<std::uint64_t, bucket_count>& counts, std::uint64_t min_ns, std::uint64_t max_ns,
                 wide_sum sum_ns, wide_sum sum_squares_ns, std::uint64_t clamped) noexcept;
    double sum_ns() const noexcept { return static_cast<double>(sum_); }
    double sum_squares_ns() const noexcept { return static_cast<double>(sum_squares_); }
    wide_sum exact_sum_ns() const noexcept { return to_wide(sum_); }
    wide_sum exact_sum_squares_ns() const noexcept { return to_wide(sum_squares_); } // ~0 in both words: saturated

private:
    // Integer sums make merge() associative; GCC and Clang provide the type on every 64-bit target.
    __extension__ using uint128 = unsigned __int128;

    static constexpr wide_sum to_wide(uint128 value) noexcept {
        return {static_cast<std::uint64_t>(value >> 64), static_cast<std::uint64_t>(value)};
    }
    static constexpr uint128 from_wide(wide_sum value) noexcept {
        return (static_cast<uint128>(value.high) << 64) | value.low;
    }

    // The fields record_ns() touches besides one count sit together, ahead of the counts.
    uint128 sum_ = 0;
    uint128 sum_squares_ = 0; // saturates at ~uint128{0}
    std::uint64_t total_ = 0;
    std::uint64_t clamped_ = 0;
    std::uint64_t min_ = ~std::uint64_t{0}; // sentinel while empty; min_ns() reports 0
    std::uint64_t max_ = 0;
    std::array<std::uint64_t, bucket_count> counts_{};
};

} // namespace hotpath::metrics
