// A service seen from outside: a request alone takes its own time; under load, what it takes more is waiting (a
// queue before a saturated or held server) unless the service's own Server-Timing grew as much (the handler itself
// slows: contention, a downstream).
#include <hotpath/lab/from_outside.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace hotpath::lab {

namespace {

// The Server-Timing metric that holds most of the request (the longest during the load, else alone).
const outside_view::timing* longest(const outside_view& v) {
    const outside_view::timing* best = nullptr;
    auto value = [](const outside_view::timing& t) { return t.during_ms.value_or(t.alone_ms.value_or(0)); };
    for (const auto& t : v.server_timing) {
        if (best == nullptr || value(t) > value(*best)) {
            best = &t;
        }
    }
    return best;
}

} // namespace

std::vector<finding> diagnose_from_outside(const outside_view& v, const std::string& name,
                                           const diagnosis_limits& limits) {
    std::vector<finding> out;
    const double requests = static_cast<double>(v.load.requests);
    if (v.load.requests >= limits.min_requests &&
        static_cast<double>(v.server_errors) >= limits.error_share * requests) {
        out.push_back(
            {finding::kind::server_errors, true, "", "",
             fmt::format("{} of {} answers of {} were 5xx ({} %)", thousands(v.server_errors),
                         thousands(v.load.requests), name, percent(static_cast<double>(v.server_errors) / requests))});
    }
    const outside_view::timing* own = longest(v);
    const double loaded_ms = v.load.mean_ms;
    if (v.load.requests >= limits.min_requests && v.alone_ms && loaded_ms >= limits.slowdown * *v.alone_ms &&
        loaded_ms - *v.alone_ms >= limits.queue_mean_ms) {
        const double rate = v.load.seconds > 0 ? requests / v.load.seconds : 0;
        std::string why = "requests wait their turn: the service is saturated (or its threads or loop are held)";
        std::string evidence;
        if (own != nullptr && own->during_ms && own->alone_ms) {
            const bool grew = *own->during_ms >= limits.slowdown * std::max(*own->alone_ms, 0.001) &&
                              *own->during_ms >= 0.5 * loaded_ms;
            evidence = fmt::format("; its Server-Timing '{}' reads {} under load against {} alone", own->name,
                                   duration_text(*own->during_ms), duration_text(*own->alone_ms));
            if (grew) {
                why = "the server's own time grew with the load: its work slows when shared (a lock, a pool, a "
                      "downstream), it does not only queue";
            } else {
                why = fmt::format("{} % of the time under load is outside the server's own measure: requests wait "
                                  "before it starts (the service is saturated, or its threads or loop are held)",
                                  percent(std::max(loaded_ms - *own->during_ms, 0.0) / loaded_ms));
            }
        }
        out.push_back({finding::kind::queueing, true, "", "",
                       fmt::format("{} takes {} on average under {:.0f} connections ({:.0f}/s) against {} for a "
                                   "request alone ({:.0f}x){}: {}",
                                   name, duration_text(loaded_ms), v.load.concurrency, rate, duration_text(*v.alone_ms),
                                   loaded_ms / *v.alone_ms, evidence, why)});
    }
    if (out.empty()) {
        out.push_back(
            {finding::kind::healthy, false, "", "",
             v.alone_ms
                 ? fmt::format("nothing the load can see on {}: {} on average under load, {} alone{}", name,
                               duration_text(loaded_ms), duration_text(*v.alone_ms),
                               own != nullptr && own->during_ms
                                   ? fmt::format(" (Server-Timing '{}' {})", own->name, duration_text(*own->during_ms))
                                   : std::string())
                 : fmt::format("nothing the load can see on {}: {} on average", name, duration_text(loaded_ms))});
    }
    return out;
}

std::vector<std::string> outside_lacking(const outside_view& v) {
    std::vector<std::string> out;
    out.emplace_back("no report of the service's own (a hotpath route report, --metrics URL of OpenTelemetry metrics, "
                     "--dotnet PID): its time per route, its downstream calls and its runtime not judged");
    if (v.server_timing.empty()) {
        out.emplace_back("no Server-Timing field: the server's own time not told from the wait before it");
    }
    return out;
}

} // namespace hotpath::lab
