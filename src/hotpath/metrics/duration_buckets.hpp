// A latency histogram as Prometheus exposes one: counts per bucket between fixed upper bounds, written by one loop
// and read by any thread (relaxed atomics), with the bounds chosen once so that each latency objective is one.
#pragma once

#include <hotpath/core/counter.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace hotpath::metrics {

// Upper bounds in nanoseconds, ascending, without duplicates: Prometheus's usual latency buckets from 100 us to
// 10 s, with each of `objectives` added as a bound of its own, so that the share of requests within an
// objective is a bucket's count, exact, not an interpolation.
std::vector<std::uint64_t> latency_bounds_ns(std::span<const std::chrono::nanoseconds> objectives = {});

class duration_buckets {
public:
    // `bounds_ns` must outlive this (a server's bounds, shared by its routes and loops).
    explicit duration_buckets(std::span<const std::uint64_t> bounds_ns)
        : bounds_(bounds_ns), counts_(new counter[bounds_ns.size() + 1]) {}

    // One observation; by the owning loop only. A binary search over the bounds, then two relaxed increments.
    void record_ns(std::uint64_t value_ns) noexcept {
        const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), value_ns) - bounds_.begin();
        counts_[static_cast<std::size_t>(at)].add();
        sum_ns_.add(value_ns);
    }

    std::span<const std::uint64_t> bounds_ns() const noexcept { return bounds_; }
    // Observations in bucket i alone (i == bounds_ns().size(): above the last bound).
    std::uint64_t count_in(std::size_t i) const noexcept { return counts_[i].get(); }
    std::uint64_t sum_ns() const noexcept { return sum_ns_.get(); }

private:
    std::span<const std::uint64_t> bounds_;
    std::unique_ptr<counter[]> counts_;
    counter sum_ns_;
};

} // namespace hotpath::metrics
