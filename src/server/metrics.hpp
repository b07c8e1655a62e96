// The server's metrics: what each loop records per route (requests by status class, a duration histogram), and
// the Prometheus exposition of all loops' figures that app.metrics() serves.
#pragma once

#include "core/counter.hpp"
#include "metrics/duration_buckets.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace hotpath {

class request;
class response;

// One route's figures on one loop: written by that loop only, read by a scrape on any loop.
struct route_metrics {
    explicit route_metrics(std::span<const std::uint64_t> bounds_ns) : duration(bounds_ns) {}
    counter by_class[6]; // index = status / 100
    metrics::duration_buckets duration;
};

// A loop's route figures, by route index: a handler id of the app, then the requests no route took.
struct route_table_metrics {
    enum extra : std::uint32_t { no_route, method_not_allowed, server_options, extra_count };

    void init(std::size_t handlers, std::span<const std::uint64_t> bounds_ns);
    std::uint32_t index_of(extra e) const noexcept { return static_cast<std::uint32_t>(handlers_ + e); }
    route_metrics& at(std::uint32_t index) noexcept { return *routes_[index]; }
    const route_metrics& at(std::uint32_t index) const noexcept { return *routes_[index]; }
    std::size_t size() const noexcept { return routes_.size(); }
    std::size_t handlers() const noexcept { return handlers_; }

private:
    std::size_t handlers_ = 0;
    std::vector<std::unique_ptr<route_metrics>> routes_;
};

// The handler behind app.metrics(): the text of every loop's figures, summed, as Prometheus reads it.
void write_metrics(request& req, response& res);

} // namespace hotpath
