// OpenTelemetry's metrics as Prometheus scrapes them, summarised over a window and judged. Each metric is looked for
// under the names exporters give it (see `server_duration` below); labels under both their Prometheus form
// (http_route) and the dotted one a UTF-8 scrape keeps (http.route).
#include <hotpath/lab/otel_metrics.hpp>

#include <hotpath/core/units.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <map>
#include <string_view>
#include <utility>

namespace hotpath::lab {

namespace {

using metrics::scrape;
using metrics::scraped_sample;

// A metric's names as exporters write it, and the factor that turns its unit into seconds (1 for counts and bytes).
struct metric_name {
    std::string_view base;
    double to_seconds = 1;
};

// The stable HTTP conventions in seconds (with the unit's suffix, as OpenTelemetry's .NET and Prometheus' own
// exporters write it, or without it), then the older ones in milliseconds (`http.server.duration`).
constexpr std::array<metric_name, 6> server_duration{{{"http_server_request_duration_seconds"},
                                                      {"http_server_request_duration"},
                                                      {"http.server.request.duration"},
                                                      {"http_server_duration_milliseconds", 1e-3},
                                                      {"http_server_duration", 1e-3},
                                                      {"http.server.duration", 1e-3}}};
constexpr std::array<metric_name, 6> client_duration{{{"http_client_request_duration_seconds"},
                                                      {"http_client_request_duration"},
                                                      {"http.client.request.duration"},
                                                      {"http_client_duration_milliseconds", 1e-3},
                                                      {"http_client_duration", 1e-3},
                                                      {"http.client.duration", 1e-3}}};

std::string_view label(const scraped_sample& s, std::initializer_list<std::string_view> names) {
    for (const std::string_view n : names) {
        if (const std::string_view v = s.label(n); !v.empty()) {
            return v;
        }
    }
    return {};
}

bool is(const scraped_sample& s, std::string_view base, std::string_view suffix) {
    return s.name.size() == base.size() + suffix.size() && s.name.starts_with(base) && s.name.ends_with(suffix);
}

// One histogram series: its labels less `le`, its cumulative buckets by upper bound, its sum and count.
struct histogram_series {
    std::vector<std::pair<std::string, std::string>> labels;
    std::map<double, double> buckets;
    double sum = 0;
    double count = 0;
};

std::vector<std::pair<std::string, std::string>> without_le(const scraped_sample& s) {
    auto labels = s.labels;
    std::erase_if(labels, [](const auto& l) { return l.first == "le"; });
    return labels;
}

// The series of histogram `base` in a scrape, times scaled to seconds.
std::vector<histogram_series> histograms(const scrape& page, const metric_name& name) {
    std::vector<histogram_series> out;
    auto series_of = [&](const scraped_sample& s) -> histogram_series& {
        auto labels = without_le(s);
        auto it = std::find_if(out.begin(), out.end(), [&](const auto& h) { return h.labels == labels; });
        if (it == out.end()) {
            out.push_back({std::move(labels), {}, 0, 0});
            it = std::prev(out.end());
        }
        return *it;
    };
    for (const scraped_sample& s : page.samples) {
        if (is(s, name.base, "_bucket")) {
            const std::string_view le = s.label("le");
            if (const auto bound = metrics::parse_prometheus_number(le)) {
                series_of(s).buckets[*bound * name.to_seconds] = s.value;
            }
        } else if (is(s, name.base, "_sum")) {
            series_of(s).sum = s.value * name.to_seconds;
        } else if (is(s, name.base, "_count")) {
            series_of(s).count = s.value;
        }
    }
    return out;
}

// The first of `names` that the scrape holds a histogram of.
std::optional<metric_name> present(const scrape& page, std::span<const metric_name> names) {
    for (const metric_name& n : names) {
        for (const scraped_sample& s : page.samples) {
            if (is(s, n.base, "_count")) {
                return n;
            }
        }
    }
    return std::nullopt;
}

// after - before, series by series (a series born in the window counts from zero; one that went away, or whose
// counts fell (a restart), counts from zero too).
std::vector<histogram_series> difference(const std::vector<histogram_series>& before,
                                         const std::vector<histogram_series>& after) {
    std::vector<histogram_series> out;
    for (const histogram_series& a : after) {
        histogram_series d = a;
        const auto b = std::find_if(before.begin(), before.end(), [&](const auto& h) { return h.labels == a.labels; });
        if (b != before.end() && b->count <= a.count) {
            d.sum -= b->sum;
            d.count -= b->count;
            for (auto& [bound, n] : d.buckets) {
                if (const auto it = b->buckets.find(bound); it != b->buckets.end()) {
                    n -= it->second;
                }
            }
        }
        if (d.count > 0) {
            out.push_back(std::move(d));
        }
    }
    return out;
}

// The q-quantile of cumulative buckets, interpolated within its bucket as Prometheus' histogram_quantile does (the
// last finite bound where it falls in +Inf).
std::optional<double> quantile(const std::map<double, double>& buckets, double q) {
    if (buckets.empty()) {
        return std::nullopt;
    }
    const double total = std::prev(buckets.end())->second;
    if (total <= 0) {
        return std::nullopt;
    }
    const double rank = q * total;
    double lower = 0;
    double below = 0;
    for (const auto& [bound, n] : buckets) {
        if (n >= rank) {
            if (std::isinf(bound)) {
                return lower;
            }
            return n > below ? lower + (bound - lower) * (rank - below) / (n - below) : bound;
        }
        lower = bound;
        below = n;
    }
    return lower;
}

void add_buckets(std::map<double, double>& into, const std::map<double, double>& from) {
    for (const auto& [bound, n] : from) {
        into[bound] += n;
    }
}

// A counter's total over its series (e.g. cpu.mode=user and system), the first of `names` present.
std::optional<double> counter_total(const scrape& page, std::initializer_list<std::string_view> names) {
    for (const std::string_view n : names) {
        std::optional<double> total;
        for (const scraped_sample& s : page.samples) {
            if (s.name == n) {
                total = total.value_or(0) + s.value;
            }
        }
        if (total) {
            return total;
        }
    }
    return std::nullopt;
}

std::optional<double> counter_delta(const scrape& before, const scrape& after,
                                    std::initializer_list<std::string_view> names) {
    const auto b = counter_total(before, names);
    const auto a = counter_total(after, names);
    if (!a) {
        return std::nullopt;
    }
    return b && *b <= *a ? *a - *b : *a;
}

// A level's readings: one per scrape taken during the window (the after scrape when none was), its series added up.
std::vector<double> readings(std::span<const scrape> during, const scrape& after,
                             std::initializer_list<std::string_view> names) {
    std::vector<double> out;
    auto one = [&](const scrape& page) {
        if (const auto v = counter_total(page, names)) {
            out.push_back(*v);
        }
    };
    for (const scrape& page : during) {
        one(page);
    }
    if (during.empty()) {
        one(after);
    }
    return out;
}

std::optional<double> mean_of(const std::vector<double>& v) {
    if (v.empty()) {
        return std::nullopt;
    }
    double total = 0;
    for (const double x : v) {
        total += x;
    }
    return total / static_cast<double>(v.size());
}

std::optional<double> max_of(const std::vector<double>& v) {
    return v.empty() ? std::nullopt : std::optional<double>(*std::max_element(v.begin(), v.end()));
}

std::string seconds_text(double s) {
    return duration_text(s * 1000);
}

std::string count_text(double n) {
    return thousands(static_cast<std::uint64_t>(std::llround(std::max(n, 0.0))));
}

} // namespace

std::vector<otel_figures::host> downstream_hosts(const scrape& before, const scrape& after) {
    // OpenTelemetry's client histogram, by server.address and server.port; else hotpath's own client's, by
    // downstream (host:port).
    constexpr std::array<metric_name, 1> hotpath_client{{{"hotpath_client_call_duration_seconds"}}};
    const auto otel = present(after, client_duration);
    const auto name = otel ? otel : present(after, hotpath_client);
    std::vector<otel_figures::host> hosts;
    if (!name) {
        return hosts;
    }
    std::map<std::string, std::map<double, double>> buckets;
    for (const histogram_series& h : difference(histograms(before, *name), histograms(after, *name))) {
        const scraped_sample view{"", h.labels, 0};
        std::string host(label(view, {"downstream"}));
        if (otel) {
            const std::string_view address = label(view, {"server_address", "server.address", "net_peer_name"});
            const std::string_view port = label(view, {"server_port", "server.port", "net_peer_port"});
            host = port.empty() ? std::string(address) : fmt::format("{}:{}", address, port);
        }
        const std::string_view status =
            label(view, {"http_response_status_code", "http.response.status_code", "http_status_code"});
        const bool failed =
            !label(view, {"error_type", "error.type"}).empty() || (status.size() == 3 && status.front() == '5');
        auto it = std::find_if(hosts.begin(), hosts.end(), [&](const auto& x) { return x.address == host; });
        if (it == hosts.end()) {
            hosts.push_back({host, 0, 0, 0, {}, {}});
            it = std::prev(hosts.end());
        }
        it->calls += h.count;
        it->seconds += h.sum;
        it->failures += failed ? h.count : 0;
        add_buckets(buckets[host], h.buckets);
    }
    for (auto& x : hosts) {
        x.p50_s = quantile(buckets[x.address], 0.5);
        x.p95_s = quantile(buckets[x.address], 0.95);
    }
    std::stable_sort(hosts.begin(), hosts.end(), [](const auto& a, const auto& b) { return a.calls > b.calls; });
    return hosts;
}

std::string hosts_text(const std::vector<otel_figures::host>& hosts) {
    double calls = 0;
    for (const auto& h : hosts) {
        calls += h.calls;
    }
    if (hosts.empty() || calls <= 0) {
        return {};
    }
    const auto& top = hosts.front();
    return fmt::format("{} to {} (mean {}, p95 {})",
                       hosts.size() == 1 ? std::string("the calls went")
                                         : fmt::format("{} % of the calls went", percent(top.calls / calls)),
                       top.address, seconds_text(top.seconds / std::max(top.calls, 1.0)),
                       seconds_text(top.p95_s.value_or(0)));
}

otel_figures summarize_otel(const scrape& before, std::span<const scrape> during, const scrape& after, double seconds) {
    otel_figures f;
    f.seconds = seconds;
    if (const auto name = present(after, server_duration)) {
        f.server_metrics = true;
        std::map<std::pair<std::string, std::string>, std::map<double, double>> buckets;
        for (const histogram_series& h : difference(histograms(before, *name), histograms(after, *name))) {
            const scraped_sample view{"", h.labels, 0};
            const std::string method(label(view, {"http_request_method", "http.request.method", "http_method"}));
            const std::string route(label(view, {"http_route", "http.route"}));
            const std::string_view status =
                label(view, {"http_response_status_code", "http.response.status_code", "http_status_code"});
            auto it = std::find_if(f.routes.begin(), f.routes.end(),
                                   [&](const auto& r) { return r.method == method && r.route == route; });
            if (it == f.routes.end()) {
                f.routes.push_back({method, route, 0, 0, 0, {}, {}});
                it = std::prev(f.routes.end());
            }
            it->requests += h.count;
            it->seconds += h.sum;
            if (status.size() == 3 && status.front() == '5') {
                it->server_errors += h.count;
            }
            add_buckets(buckets[{method, route}], h.buckets);
        }
        for (auto& r : f.routes) {
            const auto& b = buckets[{r.method, r.route}];
            r.p50_s = quantile(b, 0.5);
            r.p95_s = quantile(b, 0.95);
        }
        std::stable_sort(f.routes.begin(), f.routes.end(),
                         [](const auto& a, const auto& b) { return a.requests > b.requests; });
    }
    f.hosts = downstream_hosts(before, after);
    f.client_metrics = present(after, client_duration).has_value();
    const auto in_flight = readings(during, after, {"http_server_active_requests", "http.server.active_requests"});
    f.in_flight_mean = mean_of(in_flight);
    f.in_flight_max = max_of(in_flight);
    f.cpu_seconds = counter_delta(before, after,
                                  {"dotnet_process_cpu_time_seconds_total", "process_cpu_time_seconds_total",
                                   "process_cpu_time_total", "process_cpu_seconds_total"});

    // .NET's runtime meter (System.Runtime, .NET 9 and later), or OpenTelemetry.Instrumentation.Runtime's names.
    const auto queue = readings(during, after,
                                {"dotnet_thread_pool_queue_length", "dotnet_thread_pool_queue_length_total",
                                 "process_runtime_dotnet_thread_pool_queue_length"});
    // The pool's threads from before the window to after it: a starved pool grows by a thread or two a second.
    const std::initializer_list<std::string_view> thread_count{"dotnet_thread_pool_thread_count",
                                                               "dotnet_thread_pool_thread_count_total",
                                                               "process_runtime_dotnet_thread_pool_threads_count"};
    std::vector<double> threads;
    for (const scrape* page : {&before, &after}) {
        if (const auto n = counter_total(*page, thread_count)) {
            threads.push_back(*n);
        }
    }
    f.queue_mean = mean_of(queue);
    f.queue_max = max_of(queue);
    f.queue_readings = queue.size();
    f.queue_held = static_cast<std::size_t>(std::count_if(queue.begin(), queue.end(), [](double q) { return q >= 1; }));
    if (threads.size() == 2) {
        f.threads_first = threads.front();
        f.threads_last = threads.back();
    }
    f.allocated_bytes = counter_delta(
        before, after,
        {"dotnet_gc_heap_total_allocated_bytes_total", "process_runtime_dotnet_gc_allocations_size_bytes_total"});
    f.gc_paused_s = counter_delta(
        before, after, {"dotnet_gc_pause_time_seconds_total", "process_runtime_dotnet_gc_duration_seconds_total"});
    if (!queue.empty() || f.allocated_bytes) {
        f.runtime = "dotnet";
    }

    // Node's runtime instrumentation (nodejs.eventloop.*): the delay histogram counts the monitor's own interval
    // (10 ms by default, its minimum); what the loop adds is the rest.
    const auto utilization =
        readings(during, after, {"nodejs_eventloop_utilization", "nodejs_eventloop_utilization_ratio"});
    f.loop_utilization = mean_of(utilization);
    auto excess = [](const scrape& page) -> std::optional<double> {
        const auto p99 = counter_total(page, {"nodejs_eventloop_delay_p99_seconds", "nodejs_eventloop_delay_p99"});
        const auto least = counter_total(page, {"nodejs_eventloop_delay_min_seconds", "nodejs_eventloop_delay_min"});
        return p99 ? std::optional<double>(std::max(*p99 - least.value_or(0), 0.0)) : std::nullopt;
    };
    for (const scrape& page : during) {
        if (const auto e = excess(page)) {
            f.loop_delay_p99_s = std::max(f.loop_delay_p99_s.value_or(0), *e);
        }
    }
    if (during.empty()) {
        f.loop_delay_p99_s = excess(after);
    }
    if (f.loop_utilization || f.loop_delay_p99_s) {
        f.runtime = "nodejs";
    }
    return f;
}

std::vector<finding> diagnose_otel(const otel_figures& f, const load_window& load, const std::string& name,
                                   const diagnosis_limits& limits) {
    std::vector<finding> causes;
    std::vector<finding> symptoms;
    std::vector<finding> notes;
    auto add = [](std::vector<finding>& to, finding::kind k, bool problem, const otel_figures::route* r,
                  std::string text) {
        to.push_back({k, problem, r != nullptr ? r->method : "", r != nullptr ? r->route : "", std::move(text)});
    };
    if (!f.server_metrics) {
        add(notes, finding::kind::healthy, false, nullptr,
            fmt::format(
                "nothing to judge {} by: the metrics hold no http.server.request.duration histogram (the "
                "OpenTelemetry HTTP server metric, with http.route); expose it (and http.client.request.duration "
                "for the calls it makes, and the runtime's metrics) for the rules to read",
                name));
        return notes;
    }
    double requests = 0;
    double server_seconds = 0;
    for (const auto& r : f.routes) {
        requests += r.requests;
        server_seconds += r.seconds;
    }
    const otel_figures::route* busiest = f.routes.empty() ? nullptr : &f.routes.front();
    const std::string where =
        busiest != nullptr && !busiest->route.empty() ? fmt::format("{} {}", busiest->method, busiest->route) : name;
    const bool enough = requests >= static_cast<double>(limits.min_requests);

    // Errors, route by route.
    for (const auto& r : f.routes) {
        if (r.requests >= static_cast<double>(limits.min_requests) &&
            r.server_errors >= limits.error_share * r.requests) {
            add(causes, finding::kind::server_errors, true, &r,
                fmt::format("{} of {} answers of {} {} were 5xx ({} %)", count_text(r.server_errors),
                            count_text(r.requests), r.method, r.route.empty() ? "(no route)" : r.route,
                            percent(r.server_errors / r.requests)));
        }
    }

    // The runtime: a starved .NET thread pool, a Node event loop held.
    const double cores_used = f.cpu_seconds && f.seconds > 0 ? *f.cpu_seconds / f.seconds : -1;
    // Starvation: requests wait for a pool thread while the CPU idles. The queue's readings say so where the scrapes
    // during the window got through; where they did not (the page itself waits for a thread), requests that wait
    // before ASP.NET Core's measure starts, a pool that grew, and an idle CPU say it together.
    const bool queue_stays =
        f.queue_mean && *f.queue_mean >= limits.dotnet_queue_mean && f.queue_held >= 2 &&
        static_cast<double>(f.queue_held) >= limits.dotnet_queue_held * static_cast<double>(f.queue_readings);
    const double server_mean_ms =
        busiest != nullptr && busiest->requests > 0 ? busiest->seconds / busiest->requests * 1000 : 0;
    const bool waits_outside = load.mean_ms > 0 && server_mean_ms > 0 && load.mean_ms >= 2 * server_mean_ms &&
                               load.mean_ms - server_mean_ms >= limits.queue_mean_ms;
    const bool pool_grew = f.threads_first && f.threads_last && *f.threads_last > *f.threads_first;
    // A pool that cannot grow fast enough (a thread in seconds on a busy machine) may hold its size through the
    // window, and Kestrel hands its reads to the pool through a queue or two of its own, so the pool's queue may
    // read empty however many requests wait. Then the sign is that the requests inside the service's measure (their
    // time added up over the window: Little's law) were as many as the pool's threads, no more: each held one.
    // Awaited handlers are not bounded so: many more are inside than threads.
    const double window_s = load.seconds > 0 ? load.seconds : f.seconds;
    const double inside = window_s > 0 ? server_seconds / window_s : 0;
    const bool pool_full = f.threads_last && *f.threads_last > 0 &&
                           inside >= limits.pool_full_share * *f.threads_last && inside <= *f.threads_last + 1;
    const bool idle = cores_used >= 0 && cores_used < limits.starved_cpu_percent / 100.0;
    bool starved = false;
    if (f.runtime == "dotnet" && idle && (queue_stays || (waits_outside && (pool_grew || pool_full)))) {
        starved = true;
        add(causes, finding::kind::thread_pool_starvation, true, busiest,
            fmt::format(
                "thread-pool starvation on {}: {}the pool {} while the process used {:.2f} of a core{}: "
                "requests wait for a thread that a blocking call holds, not for the CPU; await the I/O "
                "instead of blocking on it",
                where,
                queue_stays ? fmt::format("{:.0f} work items waited for a thread on average (at most {:.0f}, "
                                          "queued in {} of {} readings), ",
                                          *f.queue_mean, f.queue_max.value_or(0), f.queue_held, f.queue_readings)
                            : std::string(),
                pool_grew
                    ? fmt::format("grew from {:.0f} to {:.0f} threads ({:+.1f} a second)", *f.threads_first,
                                  *f.threads_last, (*f.threads_last - *f.threads_first) / std::max(f.seconds, 1.0))
                    : fmt::format(
                          "held {:.0f} threads{}", f.threads_last.value_or(0),
                          pool_full
                              ? fmt::format(", as many as the {:.1f} requests inside ASP.NET Core's measure on average",
                                            inside)
                              : std::string()),
                cores_used,
                waits_outside ? fmt::format(", and {} % of a request's time passed before ASP.NET Core's "
                                            "measure began (its mean {} against the load's {})",
                                            percent((load.mean_ms - server_mean_ms) / load.mean_ms),
                                            seconds_text(server_mean_ms / 1000), seconds_text(load.mean_ms / 1000))
                              : std::string()));
    }
    if (f.loop_delay_p99_s && *f.loop_delay_p99_s >= limits.loop_delay_s) {
        const bool busy = f.loop_utilization && *f.loop_utilization >= limits.loop_utilization;
        add(causes, finding::kind::blocked_loop, true, busiest,
            fmt::format("the event loop is held: its delay's p99 {}{} under the load of {}{}: the handler {} on the "
                        "loop (a synchronous call: crypto, zlib, fs, JSON of a large body), and every request waits "
                        "behind it; {}",
                        seconds_text(*f.loop_delay_p99_s),
                        f.loop_utilization ? fmt::format(", {} % of the loop's time busy", percent(*f.loop_utilization))
                                           : std::string(),
                        where,
                        busiest != nullptr && busiest->requests > 0
                            ? fmt::format(", whose handler takes {} a request",
                                          seconds_text(busiest->seconds / busiest->requests))
                            : std::string(),
                        busy ? "computes" : "blocks in a system call more than it computes",
                        busy ? "move the work off the loop (a worker thread)"
                             : "use the asynchronous API of what it calls"));
    }

    // Outbound calls: how many per request, and how many in flight per request in flight: by Little's law, the
    // outbound time summed over the inbound time summed.
    double calls = 0;
    double call_seconds = 0;
    double failures = 0;
    for (const auto& h : f.hosts) {
        calls += h.calls;
        call_seconds += h.seconds;
        failures += h.failures;
    }
    if (enough && calls > 0 && server_seconds > 0) {
        const double per_request = calls / requests;
        const double in_flight = call_seconds / server_seconds;
        const double share = std::min(in_flight, 1.0);
        const otel_figures::host& top = f.hosts.front();
        const double mean_call = call_seconds / calls;
        const double mean_request = server_seconds / requests;
        const std::string hosts = f.hosts.size() == 1 ? top.address
                                                      : fmt::format("{} and {} other host{}", top.address,
                                                                    f.hosts.size() - 1, f.hosts.size() == 2 ? "" : "s");
        const std::string figures = fmt::format(
            "{:.1f} outbound calls per request to {} (mean {}, p95 {}), {:.1f} in flight per request in "
            "flight",
            per_request, hosts, seconds_text(mean_call), seconds_text(top.p95_s.value_or(mean_call)), in_flight);
        if (per_request >= limits.min_calls && in_flight <= limits.sequential_in_flight) {
            const double saving = (per_request - 1) * mean_call;
            const std::string text = fmt::format(
                "{} on {}: the calls are awaited one after another ({} % of the request's time); started together "
                "they would take about one call's time, saving up to {} of its mean {}",
                figures, where, percent(share), seconds_text(std::min(saving, mean_request)),
                seconds_text(mean_request));
            if (per_request >= limits.chain_calls) {
                add(causes, finding::kind::sequential_calls, true, busiest,
                    text + "; start them together, with a bound");
            } else {
                add(notes, finding::kind::sequential_calls, false, busiest,
                    text + " (if the second needs the first's answer, this is a chain, not a fault)");
            }
        } else if (per_request >= limits.flood_calls && in_flight >= 0.5 * per_request) {
            add(causes, finding::kind::flooding, true, busiest,
                fmt::format("{} on {}: every call of a request in flight at once: fast alone, but each request floods "
                            "the downstream; bound them",
                            figures, where));
        } else if (share >= limits.downstream_share) {
            const char* how = per_request < limits.min_calls   ? ": {} is the bottleneck"
                              : in_flight >= 0.5 * per_request ? " (the calls run together: the slowest sets the pace)"
                                                               : " (bounded concurrency)";
            add(notes, finding::kind::downstream_bound, false, busiest,
                fmt::format("{} on {}: {} % of the request's time is the downstream's{}", figures, where,
                            percent(share), fmt::format(fmt::runtime(how), top.address)));
        }
        if (failures > 0) {
            add(causes, finding::kind::server_errors, true, busiest,
                fmt::format("{} of {} outbound calls of {} failed", count_text(failures), count_text(calls), where));
        }
    }

    // Allocation churn where the runtime counts bytes (.NET).
    if (enough && f.allocated_bytes && f.seconds > 0) {
        const double per_request = *f.allocated_bytes / requests;
        const double own =
            per_request - (calls / requests) * limits.allocated_bytes_per_call -
            std::min(static_cast<double>(load.connections) / requests, 1.0) * limits.allocated_bytes_per_connection;
        const double rate = *f.allocated_bytes / f.seconds;
        const double gc_share = f.gc_paused_s ? *f.gc_paused_s / f.seconds : 0;
        if ((own >= limits.allocated_bytes_per_request && rate >= limits.allocated_bytes_per_second) ||
            gc_share >= limits.gc_pause_share) {
            add(causes, finding::kind::allocation_churn, true, busiest,
                fmt::format("{} allocated per request on {} ({}/s), {:.1f} % of the time paused for garbage "
                            "collection: allocation churn; allocate less per request",
                            format_size(static_cast<std::uint64_t>(per_request)), where,
                            format_size(static_cast<std::uint64_t>(rate)), gc_share * 100));
        }
    }

    // Time outside the service's own measure: the load's mean against the server's.
    if (!starved && enough && busiest != nullptr && load.mean_ms > 0 && busiest->requests > 0) {
        const double server_ms = busiest->seconds / busiest->requests * 1000;
        if (load.mean_ms >= 2 * server_ms && load.mean_ms - server_ms >= limits.queue_mean_ms) {
            add(symptoms, finding::kind::queueing, true, busiest,
                fmt::format("{} % of {}'s time is spent before the service's own measure starts (its mean {} against "
                            "the load's {}): requests wait to be read (the server is saturated, or its loop or pool "
                            "is held){}",
                            percent((load.mean_ms - server_ms) / load.mean_ms), where, seconds_text(server_ms / 1000),
                            seconds_text(load.mean_ms / 1000),
                            f.runtime == "dotnet" && f.threads_last
                                ? fmt::format("; the .NET pool held {:.0f} threads ({:.0f} before) for {:.1f} requests "
                                              "inside on average, its queue a work item or more in {} of {} "
                                              "readings, at {:.2f} of a core",
                                              *f.threads_last, f.threads_first.value_or(0), inside, f.queue_held,
                                              f.queue_readings, std::max(cores_used, 0.0))
                                : std::string()));
        }
    }

    std::vector<finding> out = std::move(causes);
    out.insert(out.end(), std::make_move_iterator(symptoms.begin()), std::make_move_iterator(symptoms.end()));
    if (out.empty() && notes.empty()) {
        add(notes, finding::kind::healthy, false, busiest,
            busiest != nullptr
                ? fmt::format("nothing wrong in {}'s metrics: {} requests on {}, mean {}, p95 {}{}", name,
                              count_text(requests), where,
                              seconds_text(busiest->seconds / std::max(busiest->requests, 1.0)),
                              seconds_text(busiest->p95_s.value_or(0)),
                              cores_used >= 0 ? fmt::format(", {:.2f} of a core", cores_used) : std::string())
                : fmt::format("nothing wrong in {}'s metrics: no request was measured in the window", name));
    }
    out.insert(out.end(), std::make_move_iterator(notes.begin()), std::make_move_iterator(notes.end()));
    return out;
}

std::vector<std::string> otel_lacking(const otel_figures& f) {
    std::vector<std::string> out;
    if (!f.server_metrics) {
        out.emplace_back("no http.server.request.duration: nothing per request judged");
        return out;
    }
    if (!f.routes.empty() && f.routes.front().route.empty()) {
        out.emplace_back("no http.route on the server's histogram: the findings name the load's target, not a route");
    }
    if (!f.client_metrics) {
        out.emplace_back("no http.client.request.duration (no outbound call measured: none made, or the client is not "
                         "instrumented): outbound calls not judged");
    }
    if (f.runtime.empty()) {
        out.emplace_back(
            "no runtime metrics (dotnet.thread_pool.queue.length, nodejs.eventloop.delay.p99): thread-pool "
            "starvation and a held event loop not judged");
    }
    if (!f.cpu_seconds) {
        out.emplace_back("no process CPU time (process.cpu.time): computing and waiting not told apart");
    }
    if (!f.in_flight_mean) {
        out.emplace_back("no http.server.active_requests");
    }
    return out;
}

} // namespace hotpath::lab
