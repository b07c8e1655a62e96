// The diagnosis of a service that reports nothing the other rules read (no route report, no runtime counters, no
// OpenTelemetry metrics): from what the load sees, requests timed alone before it and during it, and the service's
// Server-Timing field where it sends one (ASP.NET Core, Go and Rails services often do). Pure functions: no I/O
// (lab/diagnose.cpp measures).
#pragma once

#include <hotpath/lab/diagnosis.hpp>
#include <hotpath/lab/dotnet_counters.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotpath::lab {

struct outside_view {
    load_window load;                // what the load saw
    std::uint64_t server_errors = 0; // its 5xx answers
    std::optional<double> alone_ms;  // the median of requests sent one at a time before the load
    std::optional<double> during_ms; // ... and while it ran, on a connection of their own
    // The Server-Timing metrics the service sent, by name: their medians alone and during the load (milliseconds).
    struct timing {
        std::string name;
        std::optional<double> alone_ms;
        std::optional<double> during_ms;
    };
    std::vector<timing> server_timing;
};

// The findings the view supports (errors, a queue the load waits in, the server's own time where Server-Timing
// gives it), or one `healthy`; `name` names the loaded target ("GET /x").
std::vector<finding> diagnose_from_outside(const outside_view& view, const std::string& name,
                                           const diagnosis_limits& limits = {});

// What the view could not show, one clause each.
std::vector<std::string> outside_lacking(const outside_view& view);

} // namespace hotpath::lab
