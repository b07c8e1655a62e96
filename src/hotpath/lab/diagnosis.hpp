// What a service's GET /debug/routes says, parsed, and the rules that name a bottleneck from it with its evidence.
// Pure functions: no I/O, nothing keyed on a route's or a case's name, so `hotpath lab` and a later
// `hotpath lab diagnose URL` read any hotpath service the same way.
#pragma once

#include <hotpath/server/route_report.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::lab {

// The report's types (route_report, route_figures, server_figures) and its reader are the server's own:
// server/route_report.hpp, next to the writer.

// What changed between two reports of the same service, `before` then `after`: counts and time sums over the
// window (requests, statuses, time shares and means, calls, allocations, stalls and refusals); the percentiles,
// the most calls in flight and the longest stall stay `after`'s (since the service started: a histogram's
// quantiles cannot be subtracted). Routes with neither a request nor a stall in the window are left out.
route_report difference(const route_report& before, const route_report& after);

// One thing the rules saw on one route.
struct finding {
    enum class kind : std::uint8_t {
        sequential_calls,       // downstream-bound, calls awaited one after another
        flooding,               // every call of a request in flight at once
        downstream_bound,       // downstream-bound with bounded concurrency: the fix, not a fault
        queueing,               // time spent waiting for a loop or a slot before the handler ran
        server_errors,          // 5xx answers
        client_errors,          // mostly 4xx answers: the requests are refused (a wrong path, method or body), so the
                                // figures are those of refusing, not of the work asked for
        allocation_churn,       // many heap allocations per request
        blocked_loop,           // the route's handler held its loop: stalls named for it and backed by its own app time
        thread_pool_starvation, // .NET: work items queue for the thread pool while its threads wait (blocking calls)
        busy_loop,              // stalls named for a route whose own handler time cannot explain them (a turn of many
                                // short requests, such as a burst of 503s): a note, not the route's fault
        overload,               // the server's limits answered 503 at once (requests in flight, connections, drain)
        healthy,                // nothing wrong
    } what = kind::healthy;
    bool problem = false; // false for a neutral observation (downstream_bound, healthy)
    std::string method;   // empty for a finding on the whole server (overload, stalls outside handlers)
    std::string route;
    std::string text; // one line with the evidence: "92 % of GET / is downstream, at most 1 call in flight: ..."
    // The request time its fix would save over the window (ms, all the route's requests), where the rule can tell:
    // the problems are ranked by it, the largest lever first. 0: not estimated (errors, floods, churn, symptoms).
    double saved_ms = 0;
};
std::string_view to_string(finding::kind k) noexcept;

// 1234567 -> "1,234,567": counts as the findings write them.
std::string thousands(std::uint64_t n);
// 0.914 -> 91: a share as the findings write it, in whole percent.
int percent(double share);
// 1.2 -> "1.20ms", 1020 -> "1.02s": a time in milliseconds as the findings (and the load's reports) write it.
std::string duration_text(double ms);

// The thresholds the rules use, in one place with their reasons.
struct diagnosis_limits {
    std::uint64_t min_requests = 5;       // fewer requests are too little evidence (a health check, a scrape)
    double downstream_share = 0.5;        // most of a route's time in downstream calls: the calls are the cost
    double min_calls = 2;                 // a single call per request cannot be awaited "one after another"
    double chain_calls = 3;               // fewer calls in a row may be a chain (a token, then the data): a note
    double queue_share = 0.2;             // a fifth of the time before the handler runs: the server is saturated,
    double queue_mean_ms = 1;             // if that wait is long enough to matter (a 20 us handler's share is noise)
    double error_share = 0.01;            // 1 % of answers are 5xx
    double client_error_share = 0.5;      // most answers are 4xx: what was measured is the refusal
    double allocations_per_request = 100; // far above a lean handler's handful
    // A route held its loop when the watchdog named it and its handlers' own time on the loop covers at least this
    // share of the stalls' length: the watchdog names the last handler of a long turn, and a turn of thousands of
    // quick 503s names one too, though no handler in it blocked.
    double stall_backed_by_app = 0.5;
    double overload_share = 0.01; // 1 % of the answers refused by a limit
    // .NET's counters (lab/dotnet_counters): a thread-pool queue of a work item or more on average while the CPU is
    // mostly idle is starvation (Microsoft's documented signature; a busy CPU queues work too, for a different reason).
    double dotnet_queue_mean = 1;
    double dotnet_queue_held = 0.5; // ... in at least half the readings: a burst queues for a moment on any pool
    double starved_cpu_percent = 50;
    double pool_full_share = 0.75;     // .NET: a pool as full as requests in its measure on average, per thread
    double sequential_in_flight = 1.5; // the most outbound calls in flight per inbound request in flight: one at a time
    // All of a request's calls at once floods the downstream when they are many (the fan-out write-up's 100); a few
    // started together (a token and a profile, 8 prices) is the fix for calls one after another, not a flood.
    double flood_calls = 20;
    // Seen from outside (lab/from_outside): a mean under load four times a request's alone is a queue, not noise.
    double slowdown = 4;
    // Churn in .NET: past a lean ASP.NET Core handler's ~0.5 kB per request (the freight original's lean variant; its
    // churn variant allocates ~6 kB), less ~4.5 kB that each HttpClient call allocates of its own (the aggregator),
    // at a rate past the runtime's own background; or a twentieth of the time paused for garbage collection.
    double allocated_bytes_per_request = 4'000;
    double allocated_bytes_per_call = 8'000;
    double allocated_bytes_per_connection = 8'000; // Kestrel's per connection (the avatar without keep-alive: ~10 kB)
    double allocated_bytes_per_second = 10e6;
    double gc_pause_share = 0.05;
    // A Node event loop held (OpenTelemetry's nodejs.eventloop.delay.p99 past its minimum): turns of 50 ms, the web's
    // "long task"; a loop merely busy with many short turns adds a few ms. Busy (utilization) it computes, idle it
    // blocks.
    double loop_delay_s = 0.05;
    double loop_utilization = 0.9;
};

// The findings for every route with enough requests (or a stall), then the server's (overload, stalls outside
// handlers), problems first, ranked by the time their fix would save (finding::saved_ms; those it cannot tell in
// their order after); a route with none gets one `healthy` finding. Deterministic: the same report always gives
// the same lines.
std::vector<finding> diagnose(const route_report& report, const diagnosis_limits& limits = {});

// For a service that could not answer its report (every loop held): the stall watchdog's lines in its output
// ("hotpath: loop 0 stalled 2001 ms in one turn, in the handler of GET /x: ..."), one blocked_loop finding per
// route they name, with how many lines and the longest stall, and what held the thread where the lines say it (a
// newer server's: computing, a blocking system call, a lock) with the fix that matches; empty when the output names
// none. The watchdog names the handler whose code ran last in a long turn: without the route's own figures this is
// its word alone, and the text says so.
std::vector<finding> diagnose_stall_lines(std::string_view output);

} // namespace hotpath::lab
