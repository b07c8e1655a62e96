// Bucket arithmetic of the latency sketch: the log-linear index and its inverse.
#include <hotpath/metrics/latency_sketch.hpp>

#include <algorithm>
#include <cmath>

namespace hotpath::metrics {

namespace {

constexpr std::uint64_t base_index =
    detail::log_linear_index(latency_sketch::lowest_ns, latency_sketch::sub_bucket_bits);

} // namespace

std::size_t latency_sketch::bucket_of(std::uint64_t value_ns) noexcept {
    const std::uint64_t v = std::clamp(value_ns, lowest_ns, highest_ns);
    return static_cast<std::size_t>(detail::log_linear_index(v, sub_bucket_bits) - base_index);
}

// Index i holds the values v with v >> shift == m, m in [2^bits, 2^(bits+1)), where i + base = (shift << bits) + m.
std::uint64_t latency_sketch::bucket_middle_ns(std::size_t index) noexcept {
    const std::uint64_t i = index + base_index;
    const std::uint64_t shift = (i >> sub_bucket_bits) - 1;
    const std::uint64_t m = (i & ((std::uint64_t{1} << sub_bucket_bits) - 1)) + (std::uint64_t{1} << sub_bucket_bits);
    return (m << shift) + ((std::uint64_t{1} << shift) >> 1);
}

void latency_sketch::add_to(std::span<std::uint64_t> into) const noexcept {
    for (std::size_t i = 0; i < bucket_count && i < into.size(); ++i) {
        into[i] += counts_[i].get();
    }
}

std::uint64_t latency_sketch::value_at(std::span<const std::uint64_t> counts, double quantile) noexcept {
    std::uint64_t total = 0;
    for (const std::uint64_t c : counts) {
        total += c;
    }
    if (total == 0) {
        return 0;
    }
    // The smallest bucket holding the ceil(q * total)-th value (at least the first).
    const auto rank = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(std::clamp(quantile, 0.0, 1.0) * static_cast<double>(total))));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        seen += counts[i];
        if (seen >= rank) {
            return bucket_middle_ns(i);
        }
    }
    return bucket_middle_ns(counts.size() - 1);
}

} // namespace hotpath::metrics
