// The .NET runtime's own counters over a load's window, as `dotnet-counters collect --format json` writes them; the
// figures the rules need from them; and the rules: the evidence a .NET service gives of itself, which a hotpath
// service gives in GET /debug/routes. Pure functions: no I/O (lab/dotnet_collector runs the tool).
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/lab/diagnosis.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::load {
struct plan;
struct results;
} // namespace hotpath::load

namespace hotpath::lab {

// The providers the lab asks dotnet-counters for (its --counters): the runtime's EventCounters (the thread pool's
// thread count and queue length as levels; its meter reports them as changes), HttpClient's EventCounters (the
// outbound requests started since the process began, and those in flight), and ASP.NET Core's and Kestrel's meters
// (requests in flight, request duration by route, connections queued).
inline constexpr std::string_view dotnet_counter_providers =
    "EventCounters\\System.Runtime,EventCounters\\System.Net.Http,Microsoft.AspNetCore.Hosting,"
    "Microsoft.AspNetCore.Server.Kestrel";

// One reading of one counter, at `at_s` seconds after the session's first reading.
struct dotnet_sample {
    double at_s = 0;
    double value = 0;
};

// One counter with one set of tags: `name` without its unit ("ThreadPool Queue Length", "http.server.active_requests"),
// `rate` for a counter read as a change per interval ("Allocation Rate (B / 1 sec)").
struct dotnet_series {
    std::string provider;
    std::string name;
    std::string tags; // "http.request.method=GET,http.route=/x,Percentile=95"; empty for none
    bool rate = false;
    std::vector<dotnet_sample> samples;
};

struct dotnet_counters {
    std::string process; // the target's name, as the tool wrote it
    std::vector<dotnet_series> series;
};

// Reads dotnet-counters' JSON (`{"TargetProcess", "StartTime", "Events": [{timestamp, provider, name, tags,
// counterType, value}]}`). A problem names what was wrong; a file with no events is a valid, empty session.
result<dotnet_counters, problem> parse_dotnet_counters(std::string_view json);

// What the counters say over the loaded part of the session: from the first reading with requests or connections
// in flight to the last (the whole session when none has), less its first `skip_s` seconds (the load's warm-up,
// which the load's results leave out too). Each figure is absent when its counter never reported.
struct dotnet_figures {
    double seconds = 0;                // the loaded window's length
    std::optional<double> cpu_percent; // mean, of all the machine's cores (as .NET's "CPU Usage" counts)
    std::optional<double> threads_first;
    std::optional<double> threads_last;
    std::optional<double> threads_max;
    std::optional<double> queue_mean; // work items waiting for a thread-pool thread
    std::optional<double> queue_max;
    std::optional<double> queue_held;      // the share of readings with a work item or more queued
    std::size_t queue_readings = 0;        // of the queue, in the window
    std::optional<double> allocated_bytes; // in the window
    std::optional<double> gc_paused_ms;    // in the window
    std::optional<double> gc_collections;  // in the window, every generation
    std::optional<double> lock_contentions;
    std::optional<double> exceptions;
    std::optional<double> outbound_started; // HttpClient requests started in the window
    std::optional<double> outbound_failed;
    std::optional<double> outbound_in_flight; // mean
    std::optional<double> outbound_in_flight_max;
    std::optional<double> inbound_in_flight; // ASP.NET Core's active requests, mean
    std::optional<double> inbound_in_flight_max;
    std::optional<double> connections_queued; // Kestrel's queued connections, mean
    // ASP.NET Core's request duration by route, its last readings (seconds).
    struct route {
        std::string method;
        std::string route;
        std::optional<double> p50_s;
        std::optional<double> p95_s;
    };
    std::vector<route> routes;
};
dotnet_figures summarize(const dotnet_counters& counters, double skip_s = 0);

// What the load saw of the same service in the same window.
struct load_window {
    std::uint64_t requests = 0; // answered
    double seconds = 0;
    double concurrency = 0; // connections (closed model) or the mean in flight
    double mean_ms = 0;
    double p95_ms = 0;
    std::uint64_t connections = 0; // opened in the window: one per request without keep-alive
};

// The window as the load saw it: answers, measured seconds, connections, mean and p95, connections opened.
load_window load_window_of(const load::plan& plan, const load::results& results);

// "GET /profile/sync/42": what the findings name the loaded service by (a scenario's first request).
std::string target_name(const load::plan& plan);

// The findings the runtime's counters support, problems first; one `healthy` finding when none; one finding that
// says what was missing when the counters hold nothing the rules read. `name` names the service in the lines
// ("GET /profile/sync/1").
std::vector<finding> diagnose_dotnet(const dotnet_figures& figures, const load_window& load, const std::string& name,
                                     const diagnosis_limits& limits = {});

} // namespace hotpath::lab
