// The server's metrics: what each loop records per route (requests by status class, a duration histogram), and
// the Prometheus exposition of all loops' figures that app.metrics() serves.
#pragma once

#include <hotpath/core/attribution.hpp>
#include <hotpath/core/counter.hpp>
#include <hotpath/metrics/duration_buckets.hpp>
#include <hotpath/metrics/latency_sketch.hpp>
#include <hotpath/net/thread_activity.hpp>

#include <atomic>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace hotpath {

class request;
class response;

// Where one request's time went, in nanoseconds, from the loop reading it to its response handed to the
// connection: the parts add up to the whole.
struct request_time_parts {
    std::uint64_t queue_ns = 0;      // read, not yet dispatched (behind other work of its loop, or its pipeline)
    std::uint64_t app_ns = 0;        // in the handler: on the loop, or awaiting what time_attribution knows not
    std::uint64_t downstream_ns = 0; // awaiting one or more client calls
    std::uint64_t wait_ns = 0;       // awaiting anything else known (timers) with no call in flight
    std::uint64_t write_ns = 0;      // the response made into bytes for the connection
    std::uint64_t total_ns() const noexcept { return queue_ns + app_ns + downstream_ns + wait_ns + write_ns; }
};

// One route's figures on one loop: written by that loop only, read by a scrape on any loop.
struct route_metrics {
    explicit route_metrics(std::span<const std::uint64_t> bounds_ns)
        : duration(bounds_ns), stall_waiting(net::waiting_count()) {}
    ~route_metrics();
    route_metrics(const route_metrics&) = delete;
    route_metrics& operator=(const route_metrics&) = delete;

    // One request answered: its status class, its time and where it went, its waits and allocations. Makes the
    // route's latency sketch on its first request (the only allocation; skipped if that fails).
    void record(unsigned status_class, const request_time_parts& parts, const time_attribution& waits) noexcept;

    counter by_class[6]; // index = status / 100
    metrics::duration_buckets duration;
    // Sums of request_time_parts over the route's requests.
    counter queue_ns, app_ns, downstream_ns, wait_ns, write_ns;
    counter downstream_calls;
    counter downstream_call_ns;           // the calls' own lengths: over downstream_ns, their mean concurrency
    counter max_calls_in_flight;          // the most calls one request had in flight at once
    counter allocations, allocated_bytes; // with the allocation counter linked in (core/alloc_count.hpp)
    // Stalls of the loop the watchdog named this route's handler for (the handler whose code ran last in the long
    // turn), their summed and longest lengths. Written by the watchdog's thread only (server.cpp), once per stall.
    counter stalls, stall_ns, longest_stall_ns;
    // What their thread did (net/thread_activity.hpp), from the same thread: its CPU time over the wall time that
    // was measured for (from each stall's first notice to its end), and the stalls by what held the thread (a
    // counter per net::waiting_index: computing, a lock, a system call by name).
    counter stall_cpu_ns, stall_measured_ns;
    std::vector<counter> stall_waiting;
    // Made on the route's first request on this loop (null before); published with release, read with acquire.
    std::atomic<metrics::latency_sketch*> sketch{nullptr};
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

class app;

// What the metrics and the route report call route `index` of a route_table_metrics: a handler's method and
// pattern, or the requests no route took ("(no route)", "(method not allowed)", "OPTIONS *"). Views into `routes`.
struct route_label {
    std::string_view method;
    std::string_view pattern;
};
route_label label_of(const app& routes, std::size_t index) noexcept;

// The handler behind app.metrics(): the text of every loop's figures, summed, as Prometheus reads it.
void write_metrics(request& req, response& res);

// The handler behind app.debug_routes(): per route, every loop's figures summed, as JSON (server/route_report.cpp).
void write_route_report(request& req, response& res);

} // namespace hotpath
