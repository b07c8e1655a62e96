// What GET /debug/routes (app.debug_routes) says of a service: one type, written by the server and read back by
// whoever diagnoses it (hotpath lab), with its JSON writer and reader side by side (docs/lab.md lists the fields).
#pragma once

#include <hotpath/core/result.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath {

// How many of a route's stalls one thing held its loop's thread in (net/thread_activity.hpp): "computes", "lock",
// a system call's name ("clock_nanosleep", "read"), "system_call" (one not named) or "unknown".
struct stall_wait {
    std::string waiting;
    std::uint64_t stalls = 0;

    friend bool operator==(const stall_wait&, const stall_wait&) = default;
};

// One route's figures, every loop's summed, since the server started.
struct route_figures {
    std::string method; // "GET", or "ANY" for app.any
    std::string route;  // the pattern, "/users/{id}"; "(no route)" for the requests no route matched
    std::uint64_t requests = 0;
    std::uint64_t status_1xx = 0, status_2xx = 0, status_3xx = 0, status_4xx = 0, status_5xx = 0;
    double mean_ms = 0, p50_ms = 0, p95_ms = 0, p99_ms = 0;
    // Shares of the route's time, each in [0, 1], and the mean time per request of each part.
    double queue = 0, app = 0, downstream = 0, wait = 0, write = 0;
    double queue_mean_ms = 0, app_mean_ms = 0, downstream_mean_ms = 0, wait_mean_ms = 0, write_mean_ms = 0;
    // Its handlers' downstream calls: per request, the mean number in flight while any was, the most at once.
    double calls_per_request = 0;
    double mean_concurrency = 0;
    std::uint64_t max_concurrency = 0;
    // Absent in a build without the allocation counter (core/alloc_count.hpp).
    std::optional<double> allocations_per_request;
    std::optional<double> allocated_bytes_per_request;
    // Stalls of the loop the watchdog named this route for (its handler ran last in the long turn).
    std::uint64_t stalls = 0;
    double stall_held_ms = 0;    // their summed length
    double stall_longest_ms = 0; // the longest
    // What their thread did, as the watchdog measured it (absent from the reports of servers older than the measure):
    // its CPU time over the wall time measured (from each stall's first notice to its end), in [0, 1], with that
    // wall time; and the stalls by what held the thread, the most first.
    std::optional<double> stall_cpu_share;
    double stall_measured_ms = 0;
    std::vector<stall_wait> stall_waiting;

    friend bool operator==(const route_figures&, const route_figures&) = default;
};

// The server's own figures beside its routes (absent from the reports of servers older than them).
struct server_figures {
    bool present = false;
    double stall_threshold_ms = 0;
    std::uint64_t stalls = 0;                          // every stall, named or not
    std::uint64_t max_requests_in_flight_per_loop = 0; // 0: no limit
    std::uint64_t max_connections = 0;                 // 0: no limit
    // Requests answered 503 at once by a limit (also counted in their route's 5xx).
    std::uint64_t refused_in_flight = 0, refused_connections = 0, refused_draining = 0;

    friend bool operator==(const server_figures&, const server_figures&) = default;
};

struct route_report {
    std::uint64_t loops = 0;
    bool allocations_counted = false;
    std::vector<route_figures> routes; // those with a request or a stall
    server_figures server;

    friend bool operator==(const route_report&, const route_report&) = default;
};

// The report as JSON, as GET /debug/routes answers it.
std::string to_json(const route_report& report);
// Reads the JSON of GET /debug/routes; what to_json() writes reads back equal. Lenient as a reader of older
// servers must be (a missing figure is 0, a missing "server" object leaves server.present false); refused, with
// errc::invalid_value and one line, when it is not such a report at all: not JSON, not an object, no "routes"
// array, a route that is not an object.
result<route_report, problem> parse_route_report(std::string_view json);

} // namespace hotpath
