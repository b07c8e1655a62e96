// Per-route figures on each loop, and their exposition: every loop's counters summed at the scrape (each loop is
// the only writer of its own; a scrape reads them with relaxed loads, no lock), then the process's own.
#include <hotpath/server/metrics.hpp>

#include <hotpath/core/build_info.hpp>
#include <hotpath/metrics/prometheus.hpp>
#include <hotpath/server/access_log.hpp>
#include <hotpath/server/app.hpp>
#include <hotpath/server/worker.hpp>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

namespace hotpath {

route_metrics::~route_metrics() {
    delete sketch.load(std::memory_order_acquire);
}

void route_metrics::record(unsigned status_class, const request_time_parts& parts,
                           const time_attribution& waits) noexcept {
    by_class[status_class].add();
    const std::uint64_t total = parts.total_ns();
    duration.record_ns(total);
    queue_ns.add(parts.queue_ns);
    app_ns.add(parts.app_ns);
    downstream_ns.add(parts.downstream_ns);
    wait_ns.add(parts.wait_ns);
    write_ns.add(parts.write_ns);
    if (waits.calls != 0) {
        downstream_calls.add(waits.calls);
        downstream_call_ns.add(waits.call_ns);
        if (waits.max_calls_in_flight > max_calls_in_flight.get()) {
            max_calls_in_flight.value.store(waits.max_calls_in_flight, std::memory_order_relaxed);
        }
    }
    if (waits.allocated.allocations != 0) {
        allocations.add(waits.allocated.allocations);
        allocated_bytes.add(waits.allocated.bytes);
    }
    metrics::latency_sketch* k = sketch.load(std::memory_order_relaxed); // this loop is the only writer
    if (k == nullptr) {
        k = new (std::nothrow) metrics::latency_sketch();
        if (k == nullptr) {
            return; // no quantiles for this route on this loop, the rest is counted
        }
        sketch.store(k, std::memory_order_release);
    }
    k->record_ns(total);
}

void route_table_metrics::init(std::size_t handlers, std::span<const std::uint64_t> bounds_ns) {
    handlers_ = handlers;
    routes_.clear();
    for (std::size_t i = 0; i < handlers + extra_count; ++i) {
        routes_.push_back(std::make_unique<route_metrics>(bounds_ns));
    }
}

namespace {

constexpr std::array<std::string_view, 6> class_names{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx"};

struct process_figures {
    double cpu_seconds = 0;
    double resident_bytes = 0;
    double open_fds = 0;
};

process_figures read_process() {
    process_figures p;
    if (std::FILE* f = std::fopen("/proc/self/stat", "r")) {
        // Fields 14 and 15 (utime, stime) in clock ticks; the command name (field 2) may hold spaces, so skip
        // past its closing parenthesis first.
        char line[1024];
        const std::size_t n = std::fread(line, 1, sizeof(line) - 1, f);
        line[n] = '\0';
        std::fclose(f);
        const char* rest = std::strrchr(line, ')');
        unsigned long utime = 0;
        unsigned long stime = 0;
        if (rest != nullptr &&
            std::sscanf(rest + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2) {
            p.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
        }
    }
    if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
        unsigned long size = 0;
        unsigned long resident = 0;
        if (std::fscanf(f, "%lu %lu", &size, &resident) == 2) {
            p.resident_bytes = static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
        }
        std::fclose(f);
    }
    if (DIR* d = ::opendir("/proc/self/fd")) {
        int count = 0;
        while (const dirent* e = ::readdir(d)) {
            if (e->d_name[0] != '.') {
                ++count;
            }
        }
        ::closedir(d);
        p.open_fds = count - 1; // less the one opendir holds
    }
    return p;
}

// Sums one route's counter over every loop.
template <typename Field>
std::uint64_t sum_route(const std::vector<std::unique_ptr<worker>>& loops, std::size_t route, Field field) {
    std::uint64_t n = 0;
    for (const auto& w : loops) {
        n += (w->route_stats.at(static_cast<std::uint32_t>(route)).*field).get();
    }
    return n;
}

// Where the routes' time went (request_time_parts), their downstream calls and, when counted, allocations.
template <typename Labels>
void write_time_parts(metrics::prometheus_writer& out, const std::vector<std::unique_ptr<worker>>& loops,
                      std::size_t routes, const Labels& route_labels) {
    struct part {
        std::string_view name;
        counter route_metrics::*field;
    };
    constexpr std::array<part, 5> parts{{{"queue", &route_metrics::queue_ns},
                                         {"app", &route_metrics::app_ns},
                                         {"downstream", &route_metrics::downstream_ns},
                                         {"wait", &route_metrics::wait_ns},
                                         {"write", &route_metrics::write_ns}}};
    const auto answered = [&](std::size_t i) {
        std::uint64_t n = 0;
        for (const auto& w : loops) {
            for (const auto& c : w->route_stats.at(static_cast<std::uint32_t>(i)).by_class) {
                n += c.get();
            }
        }
        return n;
    };
    out.family("hotpath_http_request_time_seconds_total",
               "Where the requests' time went, by route and part: queue (read, not yet dispatched), app (in the "
               "handler), downstream (awaiting client calls), wait (awaiting timers), write (made into bytes)",
               metrics::metric_type::counter);
    for (std::size_t i = 0; i < routes; ++i) {
        if (answered(i) == 0) {
            continue;
        }
        std::string_view method;
        std::string_view pattern;
        route_labels(i, method, pattern);
        for (const part& p : parts) {
            out.sample("hotpath_http_request_time_seconds_total",
                       {{"method", method}, {"route", pattern}, {"part", p.name}},
                       static_cast<double>(sum_route(loops, i, p.field)) / 1e9);
        }
    }
    // One family after the other: a family's samples must not be interleaved with another's.
    const auto per_route = [&](std::string_view name, std::string_view help, metrics::metric_type type,
                               const auto& value_of, const auto& include) {
        out.family(name, help, type);
        for (std::size_t i = 0; i < routes; ++i) {
            if (!include(i)) {
                continue;
            }
            std::string_view method;
            std::string_view pattern;
            route_labels(i, method, pattern);
            out.sample(name, {{"method", method}, {"route", pattern}}, value_of(i));
        }
    };
    const auto made_calls = [&](std::size_t i) { return sum_route(loops, i, &route_metrics::downstream_calls) != 0; };
    per_route(
        "hotpath_http_request_downstream_calls_total", "Client calls made by the requests of a route",
        metrics::metric_type::counter,
        [&](std::size_t i) { return sum_route(loops, i, &route_metrics::downstream_calls); }, made_calls);
    per_route(
        "hotpath_http_request_downstream_concurrency_max",
        "The most client calls one request of the route had in flight at once", metrics::metric_type::gauge,
        [&](std::size_t i) {
            std::uint64_t most = 0;
            for (const auto& w : loops) {
                most = std::max(most, w->route_stats.at(static_cast<std::uint32_t>(i)).max_calls_in_flight.get());
            }
            return most;
        },
        made_calls);
    if (!alloc::counting()) {
        return;
    }
    const auto was_answered = [&](std::size_t i) { return answered(i) != 0; };
    per_route(
        "hotpath_http_request_allocations_total",
        "Heap allocations on the loop by a route's requests while not waiting (allocation counter builds)",
        metrics::metric_type::counter, [&](std::size_t i) { return sum_route(loops, i, &route_metrics::allocations); },
        was_answered);
    per_route(
        "hotpath_http_request_allocated_bytes_total", "Bytes those allocations asked for",
        metrics::metric_type::counter,
        [&](std::size_t i) { return sum_route(loops, i, &route_metrics::allocated_bytes); }, was_answered);
}

} // namespace

route_label label_of(const app& routes, std::size_t index) noexcept {
    const auto& keys = routes.route_keys();
    if (index < keys.size()) {
        return {keys[index].method, keys[index].pattern};
    }
    switch (static_cast<std::uint32_t>(index - keys.size())) {
    case route_table_metrics::no_route:
        return {"", "(no route)"};
    case route_table_metrics::method_not_allowed:
        return {"", "(method not allowed)"};
    default:
        return {"OPTIONS", "*"};
    }
}

void write_metrics(request& req, response& res) {
    const worker& here = *req.worker_;
    const auto& loops = *here.all;
    const app& routes = here.routes;
    const route_table_metrics& table = here.route_stats;
    std::string& text = res.body(); // written in place: no copy of a text that grows with the routes
    text.clear();
    metrics::prometheus_writer out(text);

    const auto route_labels = [&](std::size_t i, std::string_view& method, std::string_view& pattern) {
        const route_label l = label_of(routes, i);
        method = l.method;
        pattern = l.pattern;
    };

    out.family("hotpath_http_requests_total",
               "Requests answered, by method and route pattern (never the raw path) "
               "and status class",
               metrics::metric_type::counter);
    std::uint64_t finished = 0;
    for (std::size_t i = 0; i < table.size(); ++i) {
        std::string_view method;
        std::string_view pattern;
        route_labels(i, method, pattern);
        for (std::size_t c = 1; c < class_names.size(); ++c) {
            std::uint64_t n = 0;
            for (const auto& w : loops) {
                n += w->route_stats.at(static_cast<std::uint32_t>(i)).by_class[c].get();
            }
            finished += n;
            if (n != 0) {
                out.sample("hotpath_http_requests_total",
                           {{"method", method}, {"route", pattern}, {"code", class_names[c]}}, n);
            }
        }
    }

    out.family("hotpath_http_request_duration_seconds",
               "Time from the loop reading a request to its response being ready to write, by route",
               metrics::metric_type::histogram);
    const auto bounds_ns = table.at(0).duration.bounds_ns();
    std::vector<double> bounds_s(bounds_ns.size());
    for (std::size_t b = 0; b < bounds_ns.size(); ++b) {
        bounds_s[b] = static_cast<double>(bounds_ns[b]) / 1e9;
    }
    std::vector<std::uint64_t> counts(bounds_ns.size() + 1);
    for (std::size_t i = 0; i < table.size(); ++i) {
        std::fill(counts.begin(), counts.end(), 0);
        std::uint64_t sum_ns = 0;
        std::uint64_t total = 0;
        for (const auto& w : loops) {
            const auto& d = w->route_stats.at(static_cast<std::uint32_t>(i)).duration;
            for (std::size_t b = 0; b < counts.size(); ++b) {
                counts[b] += d.count_in(b);
                total += d.count_in(b);
            }
            sum_ns += d.sum_ns();
        }
        if (total == 0) {
            continue;
        }
        std::string_view method;
        std::string_view pattern;
        route_labels(i, method, pattern);
        out.histogram("hotpath_http_request_duration_seconds", {{"method", method}, {"route", pattern}}, bounds_s,
                      counts, static_cast<double>(sum_ns) / 1e9);
    }

    write_time_parts(out, loops, table.size(), route_labels);

    std::uint64_t dispatched = 0;
    std::uint64_t accepted = 0;
    std::uint64_t closed = 0;
    std::uint64_t rejected = 0;
    std::uint64_t bad = 0;
    std::uint64_t exceptions = 0;
    std::uint64_t refused_in_flight = 0;
    std::uint64_t refused_connections = 0;
    std::uint64_t refused_draining = 0;
    std::uint64_t pauses = 0;
    std::uint64_t header_timeouts = 0;
    std::uint64_t body_timeouts = 0;
    std::uint64_t response_timeouts = 0;
    std::uint64_t idle_timeouts = 0;
    std::uint64_t received = 0;
    std::uint64_t sent = 0;
    std::uint64_t tls[5] = {}; // handshakes, resumed, failures, timeouts, refused
    std::uint64_t h2[8] = {};  // connections, streams, resets, refused, cut: resets, control, frames; fields
    std::uint64_t abandoned = 0;
    for (const auto& w : loops) {
        const loop_stats& s = w->stats;
        dispatched += s.requests.get();
        accepted += s.connections_accepted.get();
        closed += s.connections_closed.get();
        rejected += s.connections_rejected.get();
        bad += s.bad_requests.get();
        exceptions += s.handler_exceptions.get();
        refused_in_flight += s.refused_in_flight.get();
        refused_connections += s.refused_connections.get();
        refused_draining += s.refused_draining.get();
        pauses += s.accept_pauses.get();
        header_timeouts += s.header_timeouts.get();
        body_timeouts += s.body_timeouts.get();
        response_timeouts += s.response_timeouts.get();
        idle_timeouts += s.idle_timeouts.get();
        received += s.bytes_received.get();
        sent += s.bytes_sent.get();
        tls[0] += s.tls_handshakes.get();
        tls[1] += s.tls_resumed.get();
        tls[2] += s.tls_failures.get();
        tls[3] += s.tls_timeouts.get();
        tls[4] += s.tls_refused.get();
        abandoned += s.requests_abandoned.get();
        h2[0] += s.h2_connections.get();
        h2[1] += s.h2_streams.get();
        h2[2] += s.h2_resets.get();
        h2[3] += s.h2_refused.get();
        h2[4] += s.h2_cut_resets.get();
        h2[5] += s.h2_cut_control.get();
        h2[6] += s.h2_cut_frames.get();
        h2[7] += s.h2_cut_fields.get();
    }
    // Read at slightly different moments per counter: never below zero.
    const std::uint64_t in_flight = dispatched > finished + abandoned ? dispatched - finished - abandoned : 0;
    out.single("hotpath_http_requests_in_flight", "Requests dispatched and not yet answered",
               metrics::metric_type::gauge, in_flight);
    out.single("hotpath_http_connections_accepted_total", "Connections accepted", metrics::metric_type::counter,
               accepted);
    out.single("hotpath_http_connections_closed_total", "Connections closed", metrics::metric_type::counter, closed);
    out.single("hotpath_http_connections_rejected_total",
               "Connections closed at once, far over the connection limit (or while draining)",
               metrics::metric_type::counter, rejected);
    out.family("hotpath_http_overload_responses_total",
               "Requests answered 503 with Retry-After at once, by the limit they met (requests in flight on their "
               "loop, connections, or a stop's drain time spent)",
               metrics::metric_type::counter);
    out.sample("hotpath_http_overload_responses_total", {{"limit", "requests_in_flight"}}, refused_in_flight);
    out.sample("hotpath_http_overload_responses_total", {{"limit", "connections"}}, refused_connections);
    out.sample("hotpath_http_overload_responses_total", {{"limit", "drain_timeout"}}, refused_draining);
    out.single("hotpath_http_connections", "Connections open now", metrics::metric_type::gauge,
               accepted > closed ? accepted - closed : 0);
    out.single("hotpath_http_bad_requests_total", "Malformed requests or requests over a limit, answered and closed",
               metrics::metric_type::counter, bad);
    out.single("hotpath_http_handler_exceptions_total", "Exceptions escaping handlers, answered 500",
               metrics::metric_type::counter, exceptions);
    out.family("hotpath_http_timeouts_total",
               "Slow clients cut off, by what was slow (idle: keep-alive connections closed when idle, not a fault)",
               metrics::metric_type::counter);
    out.sample("hotpath_http_timeouts_total", {{"kind", "headers"}}, header_timeouts);
    out.sample("hotpath_http_timeouts_total", {{"kind", "body"}}, body_timeouts);
    out.sample("hotpath_http_timeouts_total", {{"kind", "response"}}, response_timeouts);
    out.sample("hotpath_http_timeouts_total", {{"kind", "idle"}}, idle_timeouts);
    out.single("hotpath_http_received_bytes_total", "Request bytes received, framing included",
               metrics::metric_type::counter, received);
    out.single("hotpath_http_sent_bytes_total", "Response bytes written", metrics::metric_type::counter, sent);
    if (here.log != nullptr) {
        out.single("hotpath_access_log_lines_total", "Access log lines written", metrics::metric_type::counter,
                   here.log->written());
        out.single("hotpath_access_log_dropped_total", "Access log lines dropped: the writer fell behind",
                   metrics::metric_type::counter, here.log->dropped());
    }
    if (here.tls != nullptr) {
        out.family("hotpath_tls_handshakes_total",
                   "TLS handshakes by how they ended: full or resumed (done), failed (a protocol error or a refused "
                   "certificate), timeout (past the handshake timeout), refused (closed at once over the handshakes in "
                   "progress allowed per loop)",
                   metrics::metric_type::counter);
        out.sample("hotpath_tls_handshakes_total", {{"result", "full"}}, tls[0] - std::min(tls[0], tls[1]));
        out.sample("hotpath_tls_handshakes_total", {{"result", "resumed"}}, tls[1]);
        out.sample("hotpath_tls_handshakes_total", {{"result", "failed"}}, tls[2]);
        out.sample("hotpath_tls_handshakes_total", {{"result", "timeout"}}, tls[3]);
        out.sample("hotpath_tls_handshakes_total", {{"result", "refused"}}, tls[4]);
    }
    out.family("hotpath_http_connections_by_protocol_total",
               "Connections accepted by the protocol they spoke: h2 (prior knowledge or ALPN), else http/1.1",
               metrics::metric_type::counter);
    out.sample("hotpath_http_connections_by_protocol_total", {{"protocol", "http/1.1"}},
               accepted - std::min(accepted, h2[0]));
    out.sample("hotpath_http_connections_by_protocol_total", {{"protocol", "h2"}}, h2[0]);
    out.family("hotpath_http_requests_by_protocol_total", "Requests dispatched, by protocol",
               metrics::metric_type::counter);
    out.sample("hotpath_http_requests_by_protocol_total", {{"protocol", "http/1.1"}},
               dispatched - std::min(dispatched, h2[1]));
    out.sample("hotpath_http_requests_by_protocol_total", {{"protocol", "h2"}}, h2[1]);
    out.single("hotpath_http_requests_abandoned_total",
               "Requests whose handler was abandoned unanswered: the client went away, or reset its stream",
               metrics::metric_type::counter, abandoned);
    out.single("hotpath_http2_streams_reset_total", "HTTP/2 streams the client reset before their response was whole",
               metrics::metric_type::counter, h2[2]);
    out.family("hotpath_http2_refusals_total",
               "HTTP/2 streams or connections the server refused to bound what a client costs, by the limit met: "
               "body_budget (a connection's request bodies over limits.max_body_bytes: the stream is reset with "
               "REFUSED_STREAM, which a client may retry); and connections cut off with a GOAWAY: stream_resets "
               "(streams ended before their response: rapid reset, MadeYouReset), control_frames (floods of "
               "frames that carry no request), frame_limits (nghttp2's: CONTINUATIONs, acknowledgements unread), "
               "header_fields (a header block far past the header limits: HPACK bombs)",
               metrics::metric_type::counter);
    out.sample("hotpath_http2_refusals_total", {{"limit", "body_budget"}}, h2[3]);
    out.sample("hotpath_http2_refusals_total", {{"limit", "stream_resets"}}, h2[4]);
    out.sample("hotpath_http2_refusals_total", {{"limit", "control_frames"}}, h2[5]);
    out.sample("hotpath_http2_refusals_total", {{"limit", "frame_limits"}}, h2[6]);
    out.sample("hotpath_http2_refusals_total", {{"limit", "header_fields"}}, h2[7]);
    out.single("hotpath_http_accept_pauses_total", "Accepting paused, out of descriptors or kernel memory",
               metrics::metric_type::counter, pauses);

    out.family("hotpath_loop_turns_total", "Event loop turns", metrics::metric_type::counter);
    for (const auto& w : loops) {
        const std::string index = std::to_string(w->loop.index());
        out.sample("hotpath_loop_turns_total", {{"loop", index}},
                   w->loop.stats().turns.load(std::memory_order_relaxed));
    }
    out.family("hotpath_loop_busy_seconds_total", "Time event loops spent working, sleep excluded",
               metrics::metric_type::counter);
    for (const auto& w : loops) {
        const std::string index = std::to_string(w->loop.index());
        out.sample("hotpath_loop_busy_seconds_total", {{"loop", index}},
                   static_cast<double>(w->loop.stats().busy_ns.load(std::memory_order_relaxed)) / 1e9);
    }

    out.family("hotpath_loop_tick_lag_seconds", "How late the latest once-a-second tick of each loop ran",
               metrics::metric_type::gauge);
    for (const auto& w : loops) {
        out.sample("hotpath_loop_tick_lag_seconds", {{"loop", std::to_string(w->loop.index())}},
                   static_cast<double>(w->loop.stats().tick_lag_ns.load(std::memory_order_relaxed)) / 1e9);
    }
    out.family("hotpath_loop_stalls_total",
               "Turns of an event loop that worked longer than the stall threshold (a handler blocking its thread)",
               metrics::metric_type::counter);
    for (const auto& w : loops) {
        out.sample("hotpath_loop_stalls_total", {{"loop", std::to_string(w->loop.index())}}, w->stalls.get());
    }
    out.family("hotpath_loop_stall_seconds", "How long each stall lasted", metrics::metric_type::histogram);
    for (const auto& w : loops) {
        const auto& d = *w->stall_lengths;
        std::vector<std::uint64_t> stall_counts(d.bounds_ns().size() + 1);
        for (std::size_t b = 0; b < stall_counts.size(); ++b) {
            stall_counts[b] = d.count_in(b);
        }
        out.histogram("hotpath_loop_stall_seconds", {{"loop", std::to_string(w->loop.index())}}, bounds_s, stall_counts,
                      static_cast<double>(d.sum_ns()) / 1e9);
    }

    metrics::write_sources(out, routes.exposed()); // a client's calls, for one (app.expose)

    const process_figures p = read_process();
    out.single("process_cpu_seconds_total", "User and system CPU time of the process", metrics::metric_type::counter,
               p.cpu_seconds);
    out.single("process_resident_memory_bytes", "Resident memory of the process", metrics::metric_type::gauge,
               p.resident_bytes);
    out.single("process_open_fds", "Open file descriptors of the process", metrics::metric_type::gauge, p.open_fds);
    out.family("hotpath_build_info", "The hotpath version serving, and the git commit it was built from",
               metrics::metric_type::gauge);
    out.sample("hotpath_build_info", {{"version", build_version()}, {"commit", build_commit()}}, std::uint64_t{1});

    res.content_type("text/plain; version=0.0.4; charset=utf-8");
}

} // namespace hotpath
