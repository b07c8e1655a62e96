// The bucket bounds of latency histograms.
#include <hotpath/metrics/duration_buckets.hpp>

namespace hotpath::metrics {

std::vector<std::uint64_t> latency_bounds_ns(std::span<const std::chrono::nanoseconds> objectives) {
    constexpr std::uint64_t us = 1'000;
    constexpr std::uint64_t ms = 1'000'000;
    std::vector<std::uint64_t> bounds{100 * us,  250 * us,  500 * us,  1 * ms,    2500 * us, 5 * ms,
                                      10 * ms,   25 * ms,   50 * ms,   100 * ms,  250 * ms,  500 * ms,
                                      1000 * ms, 2500 * ms, 5000 * ms, 10000 * ms};
    for (const auto objective : objectives) {
        if (objective.count() > 0) {
            bounds.push_back(static_cast<std::uint64_t>(objective.count()));
        }
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    return bounds;
}

} // namespace hotpath::metrics
