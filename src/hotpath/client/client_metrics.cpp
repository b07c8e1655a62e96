// The client's figures: a call's outcome and duration as it ends, their sums over loops, and the families
// hotpath_client_... of a Prometheus page.
#include <hotpath/client/client_metrics.hpp>

#include <hotpath/client/pool.hpp>
#include <hotpath/core/error.hpp>
#include <hotpath/metrics/prometheus.hpp>

#include <algorithm>

namespace hotpath {

namespace client_detail {

call_error kind_of(std::error_code e) noexcept {
    if (e.category() != error_category()) {
        return call_error::other;
    }
    switch (static_cast<errc>(e.value())) {
    case errc::refused:
        return call_error::refused;
    case errc::reset:
        return call_error::reset;
    case errc::closed:
        return call_error::closed;
    case errc::connect_timeout:
        return call_error::connect_timeout;
    case errc::timeout:
        return call_error::timeout;
    case errc::cancelled:
        return call_error::cancelled;
    case errc::malformed_response:
        return call_error::malformed_response;
    case errc::response_too_large:
        return call_error::response_too_large;
    case errc::resolve_failed:
        return call_error::resolve_failed;
    default:
        return call_error::other;
    }
}

shared_state::shared_state(client_options o)
    : metrics::source(&write_client_metrics), options(std::move(o)), bounds_ns(metrics::latency_bounds_ns()) {}

result<std::shared_ptr<net::tls_context>> tls_context_of(shared_state& s) {
    const std::lock_guard lock(s.mutex);
    if (!s.tls_made) {
        s.tls_made = true;
        // The protocols offered by ALPN follow the client's: h2 alone, h2 then http/1.1, or the options' own.
        net::tls_client_options tls = s.options.tls;
        if (s.options.protocol == client_protocol::http2) {
            tls.alpn = {"h2"};
        } else if (s.options.protocol == client_protocol::prefer_http2) {
            tls.alpn = {"h2", "http/1.1"};
        }
        if (auto made = net::tls_context::client(tls)) {
            s.tls = std::move(*made);
        } else {
            s.tls_error = made.error().code;
        }
    }
    if (s.tls == nullptr) {
        return s.tls_error;
    }
    return s.tls;
}

std::string_view route_name(const shared_state& s, std::size_t id) {
    if (id == 0) {
        return "";
    }
    return id <= s.route_names.size() ? std::string_view(s.route_names[id - 1]) : std::string_view("(other)");
}

void client_totals::add(const shared_state& s) {
    const std::lock_guard lock(s.mutex);
    if (bounds_ns.empty()) {
        bounds_ns = s.bounds_ns;
    }
    for (const loop_metrics& l : s.loops) {
        for (const auto& d : l.downstreams) {
            auto sum = std::find_if(downstreams.begin(), downstreams.end(),
                                    [&](const downstream_sum& x) { return x.name == d->name; });
            if (sum == downstreams.end()) {
                sum = downstreams.insert(downstreams.end(), downstream_sum{});
                sum->name = d->name;
            }
            sum->connections_opened += d->connections_opened.get();
            sum->connect_failures += d->connect_failures.get();
            sum->reused += d->reused.get();
            sum->retries += d->retries.get();
            sum->not_retried += d->not_retried.get();
            sum->closed_idle += d->closed_idle.get();
            sum->closed_lifetime += d->closed_lifetime.get();
            sum->closed_by_peer += d->closed_by_peer.get();
            sum->waited_for_connection += d->waited_for_connection.get();
            sum->open += d->open.get();
            sum->idle += d->idle.get();
            sum->waiters += d->waiters.get();
            sum->in_flight += d->in_flight.get();
            for (std::size_t id = 0; id < d->routes.size(); ++id) {
                const call_metrics* m = d->routes[id].get();
                if (m == nullptr) {
                    continue;
                }
                const std::string_view name = route_name(s, id);
                auto r = std::find_if(sum->routes.begin(), sum->routes.end(),
                                      [&](const route_sum& x) { return x.name == name; });
                if (r == sum->routes.end()) {
                    r = sum->routes.insert(sum->routes.end(), route_sum{});
                    r->name = name;
                    r->buckets.resize(s.bounds_ns.size() + 1);
                }
                for (std::size_t i = 0; i < std::size(m->by_class); ++i) {
                    r->by_class[i] += m->by_class[i].get();
                }
                for (std::size_t i = 0; i < std::size(m->by_error); ++i) {
                    r->by_error[i] += m->by_error[i].get();
                }
                for (std::size_t b = 0; b < r->buckets.size(); ++b) {
                    r->buckets[b] += m->duration.count_in(b);
                }
                r->sum_ns += m->duration.sum_ns();
            }
        }
    }
}

namespace {

constexpr std::array<std::string_view, 6> class_names{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx"};

} // namespace

void write_client_metrics(metrics::prometheus_writer& out, std::span<const metrics::source* const> group) {
    client_totals t;
    for (const metrics::source* s : group) {
        t.add(static_cast<const shared_state&>(*s));
    }
    using metrics::metric_type;

    out.family("hotpath_client_calls_total",
               "Client calls ended, by downstream (host:port), route (as the caller named it) and outcome: a "
               "response's status class or an error's kind",
               metric_type::counter);
    for (const auto& d : t.downstreams) {
        for (const auto& r : d.routes) {
            for (std::size_t c = 1; c < class_names.size(); ++c) {
                if (r.by_class[c] != 0) {
                    out.sample("hotpath_client_calls_total",
                               {{"downstream", d.name}, {"route", r.name}, {"outcome", class_names[c]}}, r.by_class[c]);
                }
            }
            for (std::size_t e = 0; e < call_error_names.size(); ++e) {
                if (r.by_error[e] != 0) {
                    out.sample("hotpath_client_calls_total",
                               {{"downstream", d.name}, {"route", r.name}, {"outcome", call_error_names[e]}},
                               r.by_error[e]);
                }
            }
        }
    }

    out.family("hotpath_client_call_duration_seconds",
               "Time from a call's start to its end (response or error), waiting for a connection included",
               metric_type::histogram);
    std::vector<double> bounds_s(t.bounds_ns.size());
    for (std::size_t b = 0; b < bounds_s.size(); ++b) {
        bounds_s[b] = static_cast<double>(t.bounds_ns[b]) / 1e9;
    }
    for (const auto& d : t.downstreams) {
        for (const auto& r : d.routes) {
            out.histogram("hotpath_client_call_duration_seconds", {{"downstream", d.name}, {"route", r.name}}, bounds_s,
                          r.buckets, static_cast<double>(r.sum_ns) / 1e9);
        }
    }

    // The families of one sample per downstream, one after the other.
    const auto per_downstream = [&](std::string_view name, std::string_view help, metric_type type,
                                    std::uint64_t client_totals::downstream_sum::*field) {
        out.family(name, help, type);
        for (const auto& d : t.downstreams) {
            out.sample(name, {{"downstream", d.name}}, d.*field);
        }
    };
    using sum = client_totals::downstream_sum;
    per_downstream("hotpath_client_calls_in_flight", "Client calls started and not yet ended", metric_type::gauge,
                   &sum::in_flight);
    per_downstream("hotpath_client_waiters", "Client calls waiting for a connection: the host is at its limit",
                   metric_type::gauge, &sum::waiters);
    per_downstream("hotpath_client_waits_total", "Client calls that waited for a connection", metric_type::counter,
                   &sum::waited_for_connection);
    out.family("hotpath_client_pool_connections",
               "Client connections open, idle in the pool or busy (in use or "
               "connecting)",
               metric_type::gauge);
    for (const auto& d : t.downstreams) {
        const std::uint64_t idle = std::min(d.idle, d.open);
        out.sample("hotpath_client_pool_connections", {{"downstream", d.name}, {"state", "idle"}}, idle);
        out.sample("hotpath_client_pool_connections", {{"downstream", d.name}, {"state", "busy"}}, d.open - idle);
    }
    per_downstream("hotpath_client_connections_opened_total", "Client connections established", metric_type::counter,
                   &sum::connections_opened);
    per_downstream("hotpath_client_connect_failures_total",
                   "Client connects that failed: refused, timed out or not resolved", metric_type::counter,
                   &sum::connect_failures);
    per_downstream("hotpath_client_connections_reused_total", "Client calls sent on a pooled connection",
                   metric_type::counter, &sum::reused);
    out.family("hotpath_client_connections_closed_total",
               "Pooled client connections closed: by the idle timeout, at the end of their lifetime, or found "
               "closed by the peer while idle",
               metric_type::counter);
    for (const auto& d : t.downstreams) {
        out.sample("hotpath_client_connections_closed_total", {{"downstream", d.name}, {"reason", "idle"}},
                   d.closed_idle);
        out.sample("hotpath_client_connections_closed_total", {{"downstream", d.name}, {"reason", "lifetime"}},
                   d.closed_lifetime);
        out.sample("hotpath_client_connections_closed_total", {{"downstream", d.name}, {"reason", "peer"}},
                   d.closed_by_peer);
    }
    per_downstream("hotpath_client_retries_total",
                   "Idempotent client calls sent again after a pooled connection failed before any response byte",
                   metric_type::counter, &sum::retries);
    per_downstream("hotpath_client_not_retried_total",
                   "Other client calls that failed so: returned as errors, maybe processed by the peer",
                   metric_type::counter, &sum::not_retried);
}

// ---- call_meter ----

call_meter::call_meter(host_pool& pool, client_route route, net::clock::time_point start)
    : downstream_(pool.metrics()), calls_(pool.route_metrics(route)), start_(start) {
    downstream_.in_flight.add();
}

call_meter::~call_meter() {
    if (!ended_) {
        calls_.by_error[static_cast<std::size_t>(call_error::abandoned)].add();
    }
    const auto took = net::clock::now() - start_;
    calls_.duration.record_ns(static_cast<std::uint64_t>(
        std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(took).count())));
    downstream_.in_flight.sub();
}

void call_meter::responded(unsigned status) noexcept {
    ended_ = true;
    calls_.by_class[std::min(status / 100, 5u)].add();
}

void call_meter::failed(std::error_code e) noexcept {
    ended_ = true;
    calls_.by_error[static_cast<std::size_t>(kind_of(e))].add();
}

} // namespace client_detail

using namespace client_detail;

client_stats client::stats() const {
    client_totals t;
    t.add(*shared_);
    client_stats s;
    const auto error = [](const client_totals::route_sum& r, call_error e) {
        return r.by_error[static_cast<std::size_t>(e)];
    };
    for (const auto& d : t.downstreams) {
        s.connections_opened += d.connections_opened;
        s.connect_failures += d.connect_failures;
        s.reused += d.reused;
        s.retries += d.retries;
        s.not_retried += d.not_retried;
        s.closed_idle += d.closed_idle;
        s.closed_lifetime += d.closed_lifetime;
        s.closed_by_peer += d.closed_by_peer;
        s.waited_for_connection += d.waited_for_connection;
        for (const auto& r : d.routes) {
            for (const auto n : r.by_class) {
                s.requests += n;
            }
            for (std::size_t e = 0; e < std::size(r.by_error); ++e) {
                if (static_cast<call_error>(e) != call_error::abandoned) {
                    s.failures += r.by_error[e];
                }
            }
            s.timeouts += error(r, call_error::timeout) + error(r, call_error::connect_timeout);
            s.cancelled += error(r, call_error::cancelled);
            s.abandoned += error(r, call_error::abandoned);
        }
    }
    return s;
}

client_route client::route(std::string_view name) {
    const std::lock_guard lock(shared_->mutex);
    auto& names = shared_->route_names;
    if (const auto it = std::find(names.begin(), names.end(), name); it != names.end()) {
        return {static_cast<std::uint16_t>(it - names.begin() + 1)};
    }
    if (names.size() == client_route::max_named) {
        return {static_cast<std::uint16_t>(client_route::max_named + 1)};
    }
    names.emplace_back(name);
    return {static_cast<std::uint16_t>(names.size())};
}

std::shared_ptr<const metrics::source> client::metrics() const noexcept {
    return shared_;
}

} // namespace hotpath
