// The diagnosis of a service of any stack from the OpenTelemetry metrics it exposes for Prometheus: the HTTP server
// and client duration histograms (`http.server.request.duration`, `http.client.request.duration`), requests in flight,
// and the runtime's own where it reports them (.NET's thread pool and GC, Node's event loop, the process's CPU time).
// Names as exporters write them: dots turned to underscores, with or without the unit's suffix, the older semantic
// conventions' millisecond histograms (`http.server.duration`) too. Pure functions over scrapes already read
// (metrics/prometheus_reader); `hotpath lab diagnose URL --metrics URL` scrapes.
#pragma once

#include <hotpath/lab/diagnosis.hpp>
#include <hotpath/lab/dotnet_counters.hpp>
#include <hotpath/metrics/prometheus_reader.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hotpath::lab {

// What the metrics say of the window between two scrapes, `before` and `after`, with the scrapes taken during it for
// the levels (requests in flight, the thread pool's queue, the event loop): counts and time sums are the
// differences, percentiles those of the differences of the buckets. Each figure is absent when nothing reported it.
struct otel_figures {
    double seconds = 0; // the window's length, as the caller measured it
    // Inbound requests by method and route (http.server.request.duration).
    struct route {
        std::string method;
        std::string route; // the route's template where the service names it ("/inventory/:sku"), else empty
        double requests = 0;
        double seconds = 0; // their time, added up
        double server_errors = 0;
        std::optional<double> p50_s;
        std::optional<double> p95_s;
    };
    std::vector<route> routes; // most requests first
    // Outbound calls by the host they went to (http.client.request.duration).
    struct host {
        std::string address; // "127.0.0.1:5091"
        double calls = 0;
        double seconds = 0;
        double failures = 0; // an error.type, or a 5xx
        std::optional<double> p50_s;
        std::optional<double> p95_s;
    };
    std::vector<host> hosts;              // most calls first
    bool server_metrics = false;          // the service exposes http.server.request.duration
    bool client_metrics = false;          // ... and http.client.request.duration
    std::optional<double> in_flight_mean; // http.server.active_requests, over the scrapes during the window
    std::optional<double> in_flight_max;
    std::optional<double> cpu_seconds; // the process's CPU time in the window
    std::string runtime;               // "dotnet", "nodejs", or empty
    // .NET (dotnet.thread_pool.*, dotnet.gc.*).
    std::optional<double> queue_mean;
    std::optional<double> queue_max;
    std::size_t queue_held = 0; // readings with a work item or more queued
    std::size_t queue_readings = 0;
    std::optional<double> threads_first;
    std::optional<double> threads_last;
    std::optional<double> allocated_bytes;
    std::optional<double> gc_paused_s;
    // Node (nodejs.eventloop.*): the event loop's utilization (0..1) on average, and its delay's p99 at most, less
    // the delay's minimum (the monitor's own interval, 10 ms by default): what the loop's turns added.
    std::optional<double> loop_utilization;
    std::optional<double> loop_delay_p99_s;
};
// The downstream hosts' calls in the window, most calls first: from OpenTelemetry's http.client.request.duration, or
// from hotpath's own client (hotpath_client_call_duration_seconds, by downstream) on a hotpath service's page.
std::vector<otel_figures::host> downstream_hosts(const metrics::scrape& before, const metrics::scrape& after);

// "the calls went to 127.0.0.1:5301 (mean 6.17ms, p95 9.82ms)", or "87 % of the calls went to ..." with several
// hosts; empty with none.
std::string hosts_text(const std::vector<otel_figures::host>& hosts);

otel_figures summarize_otel(const metrics::scrape& before, std::span<const metrics::scrape> during,
                            const metrics::scrape& after, double seconds);

// The findings the metrics support, causes before symptoms, problems before notes; one `healthy` finding when none.
// Without the server's duration histogram there is nothing per request to judge: one finding says what the service
// would need to expose. `name` names the loaded target ("GET /inventory/SKU-1").
std::vector<finding> diagnose_otel(const otel_figures& figures, const load_window& load, const std::string& name,
                                   const diagnosis_limits& limits = {});

// What the rules could not judge for want of a metric, one clause each ("no runtime metrics: thread-pool starvation,
// a blocked event loop and allocation churn not judged"); empty when nothing was missing.
std::vector<std::string> otel_lacking(const otel_figures& figures);

} // namespace hotpath::lab
