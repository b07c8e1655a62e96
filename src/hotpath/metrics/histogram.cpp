// Log-linear bucket arithmetic, recording, exact merging and percentile queries for metrics::histogram.
#include <hotpath/metrics/histogram.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hotpath::metrics {
namespace {

constexpr std::uint64_t first_raw_index = detail::log_linear_index(histogram::lowest_ns, histogram::sub_bucket_bits);
constexpr std::uint64_t sub_bucket_mask = (std::uint64_t{1} << histogram::sub_bucket_bits) - 1;

// Lowest value and width of a bucket of the unbounded layout (inverse of detail::log_linear_index): raw index
// (shift << bits) + m, with m in [2^bits, 2^(bits+1)), holds [m << shift, (m + 1) << shift).
struct raw_bucket {
    std::uint64_t lowest_ns;
    std::uint64_t width_ns;
};

constexpr raw_bucket raw_bucket_at(std::size_t index) noexcept {
    const std::uint64_t raw = first_raw_index + index;
    const auto shift = static_cast<unsigned>(raw >> histogram::sub_bucket_bits) - 1;
    const std::uint64_t mantissa = (raw & sub_bucket_mask) | (sub_bucket_mask + 1);
    return {mantissa << shift, std::uint64_t{1} << shift};
}

static_assert(raw_bucket_at(0).lowest_ns <= histogram::lowest_ns);
static_assert(raw_bucket_at(histogram::bucket_count - 1).lowest_ns <= histogram::highest_ns);
static_assert(raw_bucket_at(histogram::bucket_count).lowest_ns > histogram::highest_ns);

} // namespace

std::size_t histogram::bucket_of(std::uint64_t value_ns) noexcept {
    const std::uint64_t clamped = std::clamp(value_ns, lowest_ns, highest_ns);
    return static_cast<std::size_t>(detail::log_linear_index(clamped, sub_bucket_bits) - first_raw_index);
}

std::uint64_t histogram::bucket_lowest_ns(std::size_t index) noexcept {
    return index == 0 ? 0 : raw_bucket_at(index).lowest_ns;
}

std::uint64_t histogram::bucket_highest_ns(std::size_t index) noexcept {
    const raw_bucket bucket = raw_bucket_at(index);
    return bucket.lowest_ns + bucket.width_ns - 1;
}

void histogram::record_ns(std::uint64_t value_ns, std::uint64_t count) noexcept {
    if (count == 0) {
        return;
    }
    counts_[bucket_of(value_ns)] += count;
    total_ += count;
    clamped_ += value_ns > highest_ns ? count : 0;
    min_ = std::min(min_, value_ns);
    max_ = std::max(max_, value_ns);
    // value_ns * count < 2^128, and the sum stays below total_ * max_ < 2^128 while total_ does not wrap.
    sum_ += static_cast<uint128>(value_ns) * count;
    // value_ns² < 2^128 always; only a huge count or a long run can overflow, and then the sum saturates.
    const uint128 square = static_cast<uint128>(value_ns) * value_ns;
    uint128 weighted = 0;
    if (__builtin_mul_overflow(square, static_cast<uint128>(count), &weighted) ||
        __builtin_add_overflow(sum_squares_, weighted, &sum_squares_)) {
        sum_squares_ = ~uint128{0};
    }
}

void histogram::merge(const histogram& other) noexcept {
    for (std::size_t i = 0; i < bucket_count; ++i) {
        counts_[i] += other.counts_[i];
    }
    total_ += other.total_;
    clamped_ += other.clamped_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
    sum_ += other.sum_;
    // Saturating addition of non-negative numbers is associative, so merge order never matters.
    if (__builtin_add_overflow(sum_squares_, other.sum_squares_, &sum_squares_)) {
        sum_squares_ = ~uint128{0};
    }
}

void histogram::reset() noexcept {
    *this = histogram{};
}

std::uint64_t histogram::count() const noexcept {
    return total_;
}

std::uint64_t histogram::clamped() const noexcept {
    return clamped_;
}

std::uint64_t histogram::min_ns() const noexcept {
    return total_ == 0 ? 0 : min_;
}

std::uint64_t histogram::max_ns() const noexcept {
    return max_;
}

double histogram::mean_ns() const noexcept {
    return total_ == 0 ? 0 : static_cast<double>(sum_) / static_cast<double>(total_);
}

double histogram::stddev_ns() const noexcept {
    if (total_ == 0) {
        return 0;
    }
    if (sum_squares_ == ~uint128{0}) {
        return std::numeric_limits<double>::quiet_NaN();
    }
    // n * variance = sum_squares - sum² / n. With sum = q n + r (r < n), sum² / n = q² n + 2 q r + r² / n, so
    // the integer part below is exact and non-negative (Cauchy-Schwarz), with no cancellation left for doubles.
    const uint128 n = total_;
    const uint128 q = sum_ / n;
    const uint128 r = sum_ % n;
    const uint128 whole = sum_squares_ - q * q * n - 2 * q * r;
    const double fraction = static_cast<double>(r) / static_cast<double>(total_);
    const double variance = static_cast<double>(whole) / static_cast<double>(total_) - fraction * fraction;
    return std::sqrt(std::max(variance, 0.0));
}

std::uint64_t histogram::value_at_percentile(double percentile) const noexcept {
    if (total_ == 0) {
        return 0;
    }
    if (!(percentile > 0)) {
        return min_;
    }
    if (percentile >= 100) {
        return max_;
    }
    // The rank is ceil(percentile / 100 * total). Products like 7 / 100 * 100 come out a hair above the integer
    // they denote, so a result within 1e-12 (relative) of an integer is taken as that integer.
    const double scaled = percentile * static_cast<double>(total_) / 100;
    const double nearest = std::round(scaled);
    const double rank = std::abs(scaled - nearest) <= scaled * 1e-12 ? nearest : std::ceil(scaled);
    // Compared as doubles first: a total near 2^64 rounds up, and converting 2^64 back would be undefined.
    const std::uint64_t target =
        rank >= static_cast<double>(total_) ? total_ : std::max(static_cast<std::uint64_t>(rank), std::uint64_t{1});

    std::uint64_t cumulative = 0;
    std::size_t index = bucket_of(min_);
    for (; index < bucket_count - 1; ++index) {
        cumulative += counts_[index];
        if (cumulative >= target) {
            break;
        }
    }
    return std::clamp(bucket_highest_ns(index), min_, max_);
}

void histogram::restore(const std::array<std::uint64_t, bucket_count>& counts, std::uint64_t min_ns,
                        std::uint64_t max_ns, double sum_ns, double sum_squares_ns, std::uint64_t clamped) noexcept {
    // Out-of-range doubles are clamped: converting them to an integer would be undefined.
    const auto to_uint128 = [](double value) {
        if (!(value > 0)) {
            return uint128{0};
        }
        return value >= 0x1p128 ? ~uint128{0} : static_cast<uint128>(value);
    };
    restore(counts, min_ns, max_ns, to_wide(to_uint128(sum_ns)), to_wide(to_uint128(sum_squares_ns)), clamped);
}

void histogram::restore(const std::array<std::uint64_t, bucket_count>& counts, std::uint64_t min_ns,
                        std::uint64_t max_ns, wide_sum sum_ns, wide_sum sum_squares_ns,
                        std::uint64_t clamped) noexcept {
    counts_ = counts;
    total_ = 0;
    for (const std::uint64_t c : counts_) {
        total_ += c;
    }
    clamped_ = clamped;
    min_ = total_ == 0 ? ~std::uint64_t{0} : min_ns;
    max_ = total_ == 0 ? 0 : max_ns;
    sum_ = from_wide(sum_ns);
    sum_squares_ = from_wide(sum_squares_ns);
}

} // namespace hotpath::metrics
