// GET /debug/routes: per route, every loop's figures summed into what a person asks first: how slow (p50, p95,
// p99), where the time went (queue, app, downstream, wait, write), how the downstream calls were made (how many
// per request, how many at once), how much it allocates, and how long the stall watchdog saw it hold its loop; then
// the server's own figures a diagnosis needs beside them (its limits and what they refused, every stall).
#include "core/alloc_count.hpp"
#include "server/app.hpp"
#include "server/json.hpp"
#include "server/metrics.hpp"
#include "server/worker.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

namespace hotpath {

namespace {

constexpr std::array<std::string_view, 6> class_names{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx"};

// One route's figures, summed over the loops.
struct route_sums {
    std::uint64_t by_class[6] = {};
    std::uint64_t requests = 0;
    std::uint64_t queue_ns = 0, app_ns = 0, downstream_ns = 0, wait_ns = 0, write_ns = 0;
    std::uint64_t calls = 0, call_ns = 0, max_in_flight = 0;
    std::uint64_t allocations = 0, allocated_bytes = 0;
    std::uint64_t stalls = 0, stall_ns = 0, longest_stall_ns = 0;
    std::vector<std::uint64_t> latency = std::vector<std::uint64_t>(metrics::latency_sketch::bucket_count);
};

route_sums sum_loops(const std::vector<std::unique_ptr<worker>>& loops, std::uint32_t route) {
    route_sums t;
    for (const auto& w : loops) {
        const route_metrics& m = w->route_stats.at(route);
        for (std::size_t c = 0; c < 6; ++c) {
            t.by_class[c] += m.by_class[c].get();
            t.requests += m.by_class[c].get();
        }
        t.queue_ns += m.queue_ns.get();
        t.app_ns += m.app_ns.get();
        t.downstream_ns += m.downstream_ns.get();
        t.wait_ns += m.wait_ns.get();
        t.write_ns += m.write_ns.get();
        t.calls += m.downstream_calls.get();
        t.call_ns += m.downstream_call_ns.get();
        t.max_in_flight = std::max(t.max_in_flight, m.max_calls_in_flight.get());
        t.allocations += m.allocations.get();
        t.allocated_bytes += m.allocated_bytes.get();
        t.stalls += m.stalls.get();
        t.stall_ns += m.stall_ns.get();
        t.longest_stall_ns = std::max(t.longest_stall_ns, m.longest_stall_ns.get());
        if (const metrics::latency_sketch* k = m.sketch.load(std::memory_order_acquire)) {
            k->add_to(t.latency);
        }
    }
    return t;
}

double ms(double ns) {
    return ns / 1e6;
}

boost::json::object describe(std::string_view method, std::string_view pattern, const route_sums& t) {
    boost::json::object r;
    r["method"] = method;
    r["route"] = pattern;
    r["requests"] = t.requests;
    boost::json::object status;
    for (std::size_t c = 1; c < 6; ++c) {
        if (t.by_class[c] != 0) {
            status[class_names[c]] = t.by_class[c];
        }
    }
    r["status"] = std::move(status);
    const auto n = static_cast<double>(std::max<std::uint64_t>(t.requests, 1)); // a stalled route may have none yet
    const double total = static_cast<double>(t.queue_ns + t.app_ns + t.downstream_ns + t.wait_ns + t.write_ns);
    r["latency_ms"] = {{"mean", ms(total / n)},
                       {"p50", ms(static_cast<double>(metrics::latency_sketch::value_at(t.latency, 0.50)))},
                       {"p95", ms(static_cast<double>(metrics::latency_sketch::value_at(t.latency, 0.95)))},
                       {"p99", ms(static_cast<double>(metrics::latency_sketch::value_at(t.latency, 0.99)))}};
    const std::array<std::pair<std::string_view, std::uint64_t>, 5> parts{{{"queue", t.queue_ns},
                                                                           {"app", t.app_ns},
                                                                           {"downstream", t.downstream_ns},
                                                                           {"wait", t.wait_ns},
                                                                           {"write", t.write_ns}}};
    boost::json::object mean;
    boost::json::object share;
    for (const auto& [name, ns] : parts) {
        mean[name] = ms(static_cast<double>(ns) / n);
        share[name] = total > 0 ? static_cast<double>(ns) / total : 0.0;
    }
    r["mean_ms"] = std::move(mean);
    r["share"] = std::move(share);
    // Mean concurrency: the calls' own lengths over the time any was in flight (1 for calls awaited one by one).
    r["downstream"] = {{"calls_per_request", static_cast<double>(t.calls) / n},
                       {"mean_concurrency", t.downstream_ns > 0
                                                ? static_cast<double>(t.call_ns) / static_cast<double>(t.downstream_ns)
                                                : 0.0},
                       {"max_concurrency", t.max_in_flight}};
    if (alloc::counting()) {
        r["allocations_per_request"] = static_cast<double>(t.allocations) / n;
        r["allocated_bytes_per_request"] = static_cast<double>(t.allocated_bytes) / n;
    } else {
        r["allocations_per_request"] = nullptr; // not counted: a build without the allocation counter
        r["allocated_bytes_per_request"] = nullptr;
    }
    // The watchdog names the handler whose code ran last in a long turn: the one that blocked, or the last of a
    // turn of many short ones (a diagnosis weighs this against the route's own app time).
    r["stalls"] = {{"count", t.stalls},
                   {"held_ms", ms(static_cast<double>(t.stall_ns))},
                   {"longest_ms", ms(static_cast<double>(t.longest_stall_ns))}};
    return r;
}

} // namespace

void write_route_report(request& req, response& res) {
    const worker& here = *req.worker_;
    const auto& loops = *here.all;
    const route_table_metrics& table = here.route_stats;

    boost::json::array routes;
    for (std::size_t i = 0; i < table.size(); ++i) {
        const route_sums t = sum_loops(loops, static_cast<std::uint32_t>(i));
        if (t.requests == 0 && t.stalls == 0) {
            continue;
        }
        const route_label l = label_of(here.routes, i);
        routes.push_back(describe(l.method, l.pattern, t));
    }
    boost::json::object report;
    report["loops"] = loops.size();
    report["allocations_counted"] = alloc::counting();
    report["routes"] = std::move(routes);

    // The server's side: what its limits refused (each answered 503 with Retry-After, counted in its route's 5xx
    // too) and every stall, named or not. Counters since the server started, like the routes'.
    std::uint64_t stalls = 0, refused_in_flight = 0, refused_connections = 0, refused_draining = 0;
    for (const auto& w : loops) {
        stalls += w->stalls.get();
        refused_in_flight += w->stats.refused_in_flight.get();
        refused_connections += w->stats.refused_connections.get();
        refused_draining += w->stats.refused_draining.get();
    }
    const auto& limits = here.options.limits;
    report["server"] = {
        {"stall_threshold_ms", here.options.stall_threshold.count()},
        {"stalls", stalls},
        {"max_requests_in_flight_per_loop", limits.max_requests_in_flight},
        {"max_connections", limits.max_connections},
        {"overload_responses",
         {{"requests_in_flight", refused_in_flight},
          {"connections", refused_connections},
          {"drain_timeout", refused_draining}}},
    };
    res.json(report);
}

} // namespace hotpath
