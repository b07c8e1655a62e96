// Latency quantiles of a route, cheap enough to keep per route per loop: log-linear buckets with 16 to each power
// of two, written by one loop, read by any thread, summed at the read.
#pragma once

#include <hotpath/core/counter.hpp>
#include <hotpath/metrics/histogram.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace hotpath::metrics {

// Values from 1 µs to 100 s (outside: clamped to the ends) in buckets 1/16 of their power of two wide, so the
// middle of a bucket, which value_at() reports, is within 1/32 (3.2 %) of any value recorded into it; ~3.4 KiB.
// The load generator's histogram (metrics/histogram.hpp) is finer and exactly mergeable but 8 times larger and
// single-threaded; this one is for a live page read while its loop writes.
class latency_sketch {
public:
    static constexpr unsigned sub_bucket_bits = 4;
    static constexpr std::uint64_t lowest_ns = 1'000;
    static constexpr std::uint64_t highest_ns = 100'000'000'000;
    static constexpr std::size_t bucket_count = detail::log_linear_index(highest_ns, sub_bucket_bits) -
                                                detail::log_linear_index(lowest_ns, sub_bucket_bits) + 1;

    // By the owning loop only: two relaxed accesses.
    void record_ns(std::uint64_t value_ns) noexcept { counts_[bucket_of(value_ns)].add(); }
    // Adds this sketch's counts into `into` (bucket_count long); any thread.
    void add_to(std::span<std::uint64_t> into) const noexcept;

    // The value below which `quantile` (0..1) of the counts (bucket_count long, e.g. summed with add_to) lie,
    // as the middle of its bucket; 0 when empty.
    static std::uint64_t value_at(std::span<const std::uint64_t> counts, double quantile) noexcept;
    static std::size_t bucket_of(std::uint64_t value_ns) noexcept;
    static std::uint64_t bucket_middle_ns(std::size_t index) noexcept;

private:
    counter counts_[bucket_count];
};

} // namespace hotpath::metrics
