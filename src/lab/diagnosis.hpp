// What a service's GET /debug/routes says, parsed, and the rules that name a bottleneck from it with its evidence.
// Pure functions: no I/O, nothing keyed on a route's or a case's name, so `hotpath lab` and a later
// `hotpath lab diagnose URL` read any hotpath service the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::lab {

// One route of the report (src/server/route_report.cpp writes it; docs/lab.md lists the fields).
struct route_figures {
    std::string method;
    std::string route;
    std::uint64_t requests = 0;
    std::uint64_t status_5xx = 0;
    std::uint64_t status_4xx = 0;
    double p50_ms = 0, p95_ms = 0, p99_ms = 0, mean_ms = 0;
    // Shares of the route's time, each in [0, 1].
    double queue = 0, app = 0, downstream = 0, wait = 0, write = 0;
    double queue_mean_ms = 0; // mean time a request waited before its handler ran
    double calls_per_request = 0;
    double mean_concurrency = 0;
    std::uint64_t max_concurrency = 0;
    std::optional<double> allocations_per_request; // absent in a build without the allocation counter
};

struct route_report {
    std::vector<route_figures> routes;
};

// Parses the JSON of GET /debug/routes. nullopt with a one-line reason in `why` when it is not such a report.
std::optional<route_report> parse_route_report(std::string_view json, std::string& why);

// One thing the rules saw on one route.
struct finding {
    enum class kind : std::uint8_t {
        sequential_calls, // downstream-bound, calls awaited one after another
        flooding,         // every call of a request in flight at once
        downstream_bound, // downstream-bound with bounded concurrency: the fix, not a fault
        queueing,         // time spent waiting for a loop or a slot before the handler ran
        server_errors,    // 5xx answers
        allocation_churn, // many heap allocations per request
        healthy,          // nothing wrong
    } what = kind::healthy;
    bool problem = false; // false for a neutral observation (downstream_bound, healthy)
    std::string method;
    std::string route;
    std::string text; // one line with the evidence: "92 % of GET / is downstream, at most 1 call in flight: ..."
};
std::string_view to_string(finding::kind k) noexcept;

// The thresholds the rules use, in one place with their reasons.
struct diagnosis_limits {
    std::uint64_t min_requests = 5;       // fewer requests are too little evidence (a health check, a scrape)
    double downstream_share = 0.5;        // most of a route's time in downstream calls: the calls are the cost
    double min_calls = 2;                 // a single call per request cannot be awaited "one after another"
    double queue_share = 0.2;             // a fifth of the time before the handler runs: the server is saturated,
    double queue_mean_ms = 1;             // if that wait is long enough to matter (a 20 us handler's share is noise)
    double error_share = 0.01;            // 1 % of answers are 5xx
    double allocations_per_request = 100; // far above a lean handler's handful
};

// The findings for every route with enough requests, problems first; a route with none gets one `healthy`
// finding. Deterministic: the same report always gives the same lines.
std::vector<finding> diagnose(const route_report& report, const diagnosis_limits& limits = {});

} // namespace hotpath::lab
