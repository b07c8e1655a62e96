// GET /debug/routes: per route, every loop's figures summed into what a person asks first: how slow (p50, p95,
// p99), where the time went (queue, app, downstream, wait, write), how the downstream calls were made (how many
// per request, how many at once), how much it allocates, and how long the stall watchdog saw it hold its loop; then
// the server's own figures a diagnosis needs beside them (its limits and what they refused, every stall).
#include <hotpath/core/alloc_count.hpp>
#include <hotpath/net/thread_activity.hpp>
#include <hotpath/server/app.hpp>
#include <hotpath/server/json.hpp>
#include <hotpath/server/metrics.hpp>
#include <hotpath/server/route_report.hpp>
#include <hotpath/server/worker.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <limits>
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
    std::uint64_t stall_cpu_ns = 0, stall_measured_ns = 0;
    std::vector<std::uint64_t> stall_waiting = std::vector<std::uint64_t>(net::waiting_count());
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
        t.stall_cpu_ns += m.stall_cpu_ns.get();
        t.stall_measured_ns += m.stall_measured_ns.get();
        for (std::size_t i = 0; i < t.stall_waiting.size(); ++i) {
            t.stall_waiting[i] += m.stall_waiting[i].get();
        }
        if (const metrics::latency_sketch* k = m.sketch.load(std::memory_order_acquire)) {
            k->add_to(t.latency);
        }
    }
    return t;
}

double ms(double ns) {
    return ns / 1e6;
}

route_figures figures_of(std::string_view method, std::string_view pattern, const route_sums& t) {
    route_figures r;
    r.method = method;
    r.route = pattern;
    r.requests = t.requests;
    r.status_1xx = t.by_class[1];
    r.status_2xx = t.by_class[2];
    r.status_3xx = t.by_class[3];
    r.status_4xx = t.by_class[4];
    r.status_5xx = t.by_class[5];
    const auto n = static_cast<double>(std::max<std::uint64_t>(t.requests, 1)); // a stalled route may have none yet
    const double total = static_cast<double>(t.queue_ns + t.app_ns + t.downstream_ns + t.wait_ns + t.write_ns);
    r.mean_ms = ms(total / n);
    r.p50_ms = ms(static_cast<double>(metrics::latency_sketch::value_at(t.latency, 0.50)));
    r.p95_ms = ms(static_cast<double>(metrics::latency_sketch::value_at(t.latency, 0.95)));
    r.p99_ms = ms(static_cast<double>(metrics::latency_sketch::value_at(t.latency, 0.99)));
    const auto share = [total](std::uint64_t ns) { return total > 0 ? static_cast<double>(ns) / total : 0.0; };
    r.queue = share(t.queue_ns);
    r.app = share(t.app_ns);
    r.downstream = share(t.downstream_ns);
    r.wait = share(t.wait_ns);
    r.write = share(t.write_ns);
    r.queue_mean_ms = ms(static_cast<double>(t.queue_ns) / n);
    r.app_mean_ms = ms(static_cast<double>(t.app_ns) / n);
    r.downstream_mean_ms = ms(static_cast<double>(t.downstream_ns) / n);
    r.wait_mean_ms = ms(static_cast<double>(t.wait_ns) / n);
    r.write_mean_ms = ms(static_cast<double>(t.write_ns) / n);
    // Mean concurrency: the calls' own lengths over the time any was in flight (1 for calls awaited one by one).
    r.calls_per_request = static_cast<double>(t.calls) / n;
    r.mean_concurrency =
        t.downstream_ns > 0 ? static_cast<double>(t.call_ns) / static_cast<double>(t.downstream_ns) : 0.0;
    r.max_concurrency = t.max_in_flight;
    if (alloc::counting()) {
        r.allocations_per_request = static_cast<double>(t.allocations) / n;
        r.allocated_bytes_per_request = static_cast<double>(t.allocated_bytes) / n;
    }
    // The watchdog names the handler whose code ran last in a long turn: the one that blocked, or the last of a
    // turn of many short ones (a diagnosis weighs this against the route's own app time).
    r.stalls = t.stalls;
    r.stall_held_ms = ms(static_cast<double>(t.stall_ns));
    r.stall_longest_ms = ms(static_cast<double>(t.longest_stall_ns));
    // What held the thread in them (the watchdog's measure): computing, a system call, a lock.
    if (t.stall_measured_ns > 0) {
        r.stall_cpu_share =
            std::min(1.0, static_cast<double>(t.stall_cpu_ns) / static_cast<double>(t.stall_measured_ns));
        r.stall_measured_ms = ms(static_cast<double>(t.stall_measured_ns));
    }
    for (std::size_t i = 0; i < t.stall_waiting.size(); ++i) {
        if (t.stall_waiting[i] > 0) {
            r.stall_waiting.push_back(
                {std::string(net::waiting_name(static_cast<net::waiting_index>(i))), t.stall_waiting[i]});
        }
    }
    std::stable_sort(r.stall_waiting.begin(), r.stall_waiting.end(),
                     [](const stall_wait& a, const stall_wait& b) { return a.stalls > b.stalls; });
    return r;
}

// Readers of the JSON: a number of any JSON kind as double, 0 when absent or not a number.
double number(const boost::json::object& o, std::string_view key) {
    const boost::json::value* v = o.if_contains(key);
    if (v == nullptr) {
        return 0;
    }
    if (v->is_double()) {
        return v->get_double();
    }
    if (v->is_int64()) {
        return static_cast<double>(v->get_int64());
    }
    if (v->is_uint64()) {
        return static_cast<double>(v->get_uint64());
    }
    return 0;
}

std::uint64_t count(const boost::json::object& o, std::string_view key) {
    const boost::json::value* v = o.if_contains(key);
    if (v != nullptr && v->is_uint64()) {
        return v->get_uint64();
    }
    if (v != nullptr && v->is_int64()) {
        return v->get_int64() > 0 ? static_cast<std::uint64_t>(v->get_int64()) : 0;
    }
    const double d = number(o, key); // NaN and negatives are 0; past 2^64 (1e20, 1e300) the largest count
    return d >= 18446744073709551616.0 ? std::numeric_limits<std::uint64_t>::max()
           : d > 0                     ? static_cast<std::uint64_t>(d)
                                       : 0;
}

const boost::json::object& object_at(const boost::json::object& o, std::string_view key) {
    static const boost::json::object none;
    const boost::json::value* v = o.if_contains(key);
    return v != nullptr && v->is_object() ? v->get_object() : none;
}

std::optional<double> optional_number(const boost::json::object& o, std::string_view key) {
    const boost::json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) {
        return std::nullopt;
    }
    return number(o, key);
}

// A figure as the report writes it: 9 significant digits, which any JSON reader (Boost.JSON's fast path among
// them) reads back as exactly the double written, so that a report read and written again is the same text.
double figure(double v) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.9g", v);
    return std::strtod(text, nullptr);
}

boost::json::value optional_value(const std::optional<double>& v) {
    return v ? boost::json::value(figure(*v)) : boost::json::value(nullptr);
}

} // namespace

std::string to_json(const route_report& report) {
    boost::json::array routes;
    for (const route_figures& r : report.routes) {
        boost::json::object o;
        o["method"] = r.method;
        o["route"] = r.route;
        o["requests"] = r.requests;
        boost::json::object status;
        const std::uint64_t by_class[6] = {0, r.status_1xx, r.status_2xx, r.status_3xx, r.status_4xx, r.status_5xx};
        for (std::size_t c = 1; c < 6; ++c) {
            if (by_class[c] != 0) {
                status[class_names[c]] = by_class[c];
            }
        }
        o["status"] = std::move(status);
        o["latency_ms"] = {{"mean", figure(r.mean_ms)},
                           {"p50", figure(r.p50_ms)},
                           {"p95", figure(r.p95_ms)},
                           {"p99", figure(r.p99_ms)}};
        o["mean_ms"] = {{"queue", figure(r.queue_mean_ms)},
                        {"app", figure(r.app_mean_ms)},
                        {"downstream", figure(r.downstream_mean_ms)},
                        {"wait", figure(r.wait_mean_ms)},
                        {"write", figure(r.write_mean_ms)}};
        o["share"] = {{"queue", figure(r.queue)},
                      {"app", figure(r.app)},
                      {"downstream", figure(r.downstream)},
                      {"wait", figure(r.wait)},
                      {"write", figure(r.write)}};
        o["downstream"] = {{"calls_per_request", figure(r.calls_per_request)},
                           {"mean_concurrency", figure(r.mean_concurrency)},
                           {"max_concurrency", r.max_concurrency}};
        o["allocations_per_request"] = optional_value(r.allocations_per_request);
        o["allocated_bytes_per_request"] = optional_value(r.allocated_bytes_per_request);
        boost::json::object stalls{
            {"count", r.stalls}, {"held_ms", figure(r.stall_held_ms)}, {"longest_ms", figure(r.stall_longest_ms)}};
        if (r.stall_cpu_share) {
            stalls["cpu_share"] = figure(*r.stall_cpu_share);
        }
        if (r.stall_measured_ms != 0) {
            stalls["measured_ms"] = figure(r.stall_measured_ms);
        }
        if (!r.stall_waiting.empty()) {
            boost::json::object waiting;
            for (const stall_wait& w : r.stall_waiting) {
                waiting[w.waiting] = w.stalls;
            }
            stalls["waiting"] = std::move(waiting);
        }
        o["stalls"] = std::move(stalls);
        routes.push_back(std::move(o));
    }
    boost::json::object doc;
    doc["loops"] = report.loops;
    doc["allocations_counted"] = report.allocations_counted;
    doc["routes"] = std::move(routes);
    if (report.server.present) {
        const server_figures& f = report.server;
        doc["server"] = {
            {"stall_threshold_ms", figure(f.stall_threshold_ms)},
            {"stalls", f.stalls},
            {"max_requests_in_flight_per_loop", f.max_requests_in_flight_per_loop},
            {"max_connections", f.max_connections},
            {"overload_responses",
             {{"requests_in_flight", f.refused_in_flight},
              {"connections", f.refused_connections},
              {"drain_timeout", f.refused_draining}}},
        };
    }
    return boost::json::serialize(doc);
}

result<route_report, problem> parse_route_report(std::string_view json) {
    boost::system::error_code ec;
    const boost::json::value doc = boost::json::parse(json, ec);
    if (ec || !doc.is_object()) {
        return problem{errc::invalid_value, "not a JSON object"};
    }
    const boost::json::object& top = doc.get_object();
    const boost::json::value* routes = top.if_contains("routes");
    if (routes == nullptr || !routes->is_array()) {
        return problem{errc::invalid_value, "no \"routes\" array"};
    }
    route_report out;
    out.loops = count(top, "loops");
    if (const boost::json::value* a = top.if_contains("allocations_counted"); a != nullptr && a->is_bool()) {
        out.allocations_counted = a->get_bool();
    }
    for (const boost::json::value& item : routes->get_array()) {
        if (!item.is_object()) {
            return problem{errc::invalid_value, "a route is not an object"};
        }
        const boost::json::object& o = item.get_object();
        route_figures r;
        if (const auto* m = o.if_contains("method"); m != nullptr && m->is_string()) {
            r.method = m->get_string();
        }
        if (const auto* p = o.if_contains("route"); p != nullptr && p->is_string()) {
            r.route = p->get_string();
        }
        r.requests = count(o, "requests");
        const boost::json::object& status = object_at(o, "status");
        r.status_1xx = count(status, "1xx");
        r.status_2xx = count(status, "2xx");
        r.status_3xx = count(status, "3xx");
        r.status_4xx = count(status, "4xx");
        r.status_5xx = count(status, "5xx");
        const boost::json::object& latency = object_at(o, "latency_ms");
        r.mean_ms = number(latency, "mean");
        r.p50_ms = number(latency, "p50");
        r.p95_ms = number(latency, "p95");
        r.p99_ms = number(latency, "p99");
        const boost::json::object& mean = object_at(o, "mean_ms");
        r.queue_mean_ms = number(mean, "queue");
        r.app_mean_ms = number(mean, "app");
        r.downstream_mean_ms = number(mean, "downstream");
        r.wait_mean_ms = number(mean, "wait");
        r.write_mean_ms = number(mean, "write");
        const boost::json::object& share = object_at(o, "share");
        r.queue = number(share, "queue");
        r.app = number(share, "app");
        r.downstream = number(share, "downstream");
        r.wait = number(share, "wait");
        r.write = number(share, "write");
        const boost::json::object& calls = object_at(o, "downstream");
        r.calls_per_request = number(calls, "calls_per_request");
        r.mean_concurrency = number(calls, "mean_concurrency");
        r.max_concurrency = count(calls, "max_concurrency");
        r.allocations_per_request = optional_number(o, "allocations_per_request");
        r.allocated_bytes_per_request = optional_number(o, "allocated_bytes_per_request");
        const boost::json::object& stalls = object_at(o, "stalls");
        r.stalls = count(stalls, "count");
        r.stall_held_ms = number(stalls, "held_ms");
        r.stall_longest_ms = number(stalls, "longest_ms");
        r.stall_cpu_share = optional_number(stalls, "cpu_share");
        r.stall_measured_ms = number(stalls, "measured_ms");
        const boost::json::object& waiting = object_at(stalls, "waiting");
        for (const auto& w : waiting) {
            r.stall_waiting.push_back({std::string(w.key()), count(waiting, w.key())});
        }
        out.routes.push_back(std::move(r));
    }
    if (const auto* sv = top.if_contains("server"); sv != nullptr && sv->is_object()) {
        const boost::json::object& o = sv->get_object();
        server_figures& f = out.server;
        f.present = true;
        f.stall_threshold_ms = number(o, "stall_threshold_ms");
        f.stalls = count(o, "stalls");
        f.max_requests_in_flight_per_loop = count(o, "max_requests_in_flight_per_loop");
        f.max_connections = count(o, "max_connections");
        const boost::json::object& refused = object_at(o, "overload_responses");
        f.refused_in_flight = count(refused, "requests_in_flight");
        f.refused_connections = count(refused, "connections");
        f.refused_draining = count(refused, "drain_timeout");
    }
    return out;
}

void write_route_report(request& req, response& res) {
    const worker& here = *req.worker_;
    const auto& loops = *here.all;
    const route_table_metrics& table = here.route_stats;

    route_report report;
    report.loops = loops.size();
    report.allocations_counted = alloc::counting();
    for (std::size_t i = 0; i < table.size(); ++i) {
        const route_sums t = sum_loops(loops, static_cast<std::uint32_t>(i));
        if (t.requests == 0 && t.stalls == 0) {
            continue;
        }
        const route_label l = label_of(here.routes, i);
        report.routes.push_back(figures_of(l.method, l.pattern, t));
    }
    // The server's side: what its limits refused (each answered 503 with Retry-After, counted in its route's 5xx
    // too) and every stall, named or not. Counters since the server started, like the routes'.
    server_figures& f = report.server;
    f.present = true;
    for (const auto& w : loops) {
        f.stalls += w->stalls.get();
        f.refused_in_flight += w->stats.refused_in_flight.get();
        f.refused_connections += w->stats.refused_connections.get();
        f.refused_draining += w->stats.refused_draining.get();
    }
    const auto& limits = here.options.limits;
    f.stall_threshold_ms = static_cast<double>(here.options.stall_threshold.count());
    f.max_requests_in_flight_per_loop = limits.max_requests_in_flight;
    f.max_connections = limits.max_connections;
    res.text(to_json(report), "application/json");
}

} // namespace hotpath
