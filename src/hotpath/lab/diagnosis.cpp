// The diagnosis rules over a parsed /debug/routes report.
#include <hotpath/lab/diagnosis.hpp>

#include <hotpath/load/report.hpp>
#include <hotpath/server/stall_event.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>

namespace hotpath::lab {

int percent(double share) {
    return static_cast<int>(std::lround(share * 100));
}

std::string duration_text(double ms) {
    return format_duration_ns(ms * 1e6);
}

namespace {

std::string name_of(const route_figures& r) {
    return r.method + " " + r.route;
}

std::uint64_t minus(std::uint64_t after, std::uint64_t before) {
    return after > before ? after - before : 0; // a restarted service: its counters began again
}

// What held a loop's thread in its stalls, as the watchdog judged it (net/thread_activity.hpp), in the words that
// follow "... held its loop ...": the evidence and the fix that matches it. `thread` says how much of the time the
// thread was on its CPU (", its thread on the CPU 3 % of that time", or ", its thread" unmeasured); `in` how many
// of the stalls were so (" (in 27 of 28 stalls)", or empty for all). Empty when nothing told it ("unknown", or no
// measure: an older server), where the rule keeps its older words.
std::string cause_words(std::string_view waiting, const std::string& thread, const std::string& in) {
    if (waiting == "computes") {
        return fmt::format("{}: it computes{}; move the work off the loop (the blocking pool)", thread, in);
    }
    if (waiting == "lock") {
        return fmt::format("{}, waiting on a lock (futex) held elsewhere{}: shrink the critical section, or do not "
                           "share the lock across loops",
                           thread, in);
    }
    if (waiting == "system_call") {
        return fmt::format("{}, waiting in a blocking system call{}: make the I/O asynchronous (or move it to the "
                           "blocking pool)",
                           thread, in);
    }
    if (waiting.empty() || waiting == "unknown") {
        return {};
    }
    return fmt::format("{}, waiting in {}{}: a blocking system call; make the I/O asynchronous (or move it to the "
                       "blocking pool)",
                       thread, waiting, in);
}

// The route's stalls' cause words (cause_words), from its report figures: the thing that held the most of them.
std::string stall_cause_of(const route_figures& r) {
    if (r.stall_waiting.empty()) {
        return {};
    }
    std::uint64_t measured = 0;
    for (const stall_wait& w : r.stall_waiting) {
        measured += w.stalls;
    }
    const auto top = std::max_element(r.stall_waiting.begin(), r.stall_waiting.end(),
                                      [](const stall_wait& a, const stall_wait& b) { return a.stalls < b.stalls; });
    const std::string thread =
        r.stall_cpu_share ? fmt::format(", its thread on the CPU {} % of that time", percent(*r.stall_cpu_share))
                          : std::string(", its thread");
    const std::string in = top->stalls < measured
                               ? fmt::format(" (in {} of {} stalls)", thousands(top->stalls), thousands(measured))
                               : std::string();
    return cause_words(top->waiting, thread, in);
}

} // namespace

std::string thousands(std::uint64_t n) {
    std::string digits = std::to_string(n);
    for (auto i = static_cast<std::ptrdiff_t>(digits.size()) - 3; i > 0; i -= 3) {
        digits.insert(static_cast<std::size_t>(i), 1, ',');
    }
    return digits;
}

std::string_view to_string(finding::kind k) noexcept {
    switch (k) {
    case finding::kind::sequential_calls:
        return "sequential_calls";
    case finding::kind::flooding:
        return "flooding";
    case finding::kind::downstream_bound:
        return "downstream_bound";
    case finding::kind::queueing:
        return "queueing";
    case finding::kind::server_errors:
        return "server_errors";
    case finding::kind::client_errors:
        return "client_errors";
    case finding::kind::allocation_churn:
        return "allocation_churn";
    case finding::kind::blocked_loop:
        return "blocked_loop";
    case finding::kind::thread_pool_starvation:
        return "thread_pool_starvation";
    case finding::kind::busy_loop:
        return "busy_loop";
    case finding::kind::overload:
        return "overload";
    case finding::kind::healthy:
        return "healthy";
    }
    return "healthy";
}

route_report difference(const route_report& before, const route_report& after) {
    route_report out;
    out.loops = after.loops;
    out.allocations_counted = after.allocations_counted;
    out.server = after.server;
    out.server.stalls = minus(after.server.stalls, before.server.stalls);
    out.server.refused_in_flight = minus(after.server.refused_in_flight, before.server.refused_in_flight);
    out.server.refused_connections = minus(after.server.refused_connections, before.server.refused_connections);
    out.server.refused_draining = minus(after.server.refused_draining, before.server.refused_draining);
    for (const route_figures& a : after.routes) {
        const auto same = std::find_if(before.routes.begin(), before.routes.end(), [&](const route_figures& b) {
            return b.method == a.method && b.route == a.route;
        });
        const route_figures zero;
        const route_figures& b = same != before.routes.end() ? *same : zero;
        route_figures d = a; // percentiles, the most calls in flight, the longest stall: since the start
        d.requests = minus(a.requests, b.requests);
        d.stalls = minus(a.stalls, b.stalls);
        if (d.requests == 0 && d.stalls == 0) {
            continue;
        }
        d.status_1xx = minus(a.status_1xx, b.status_1xx);
        d.status_2xx = minus(a.status_2xx, b.status_2xx);
        d.status_3xx = minus(a.status_3xx, b.status_3xx);
        d.status_4xx = minus(a.status_4xx, b.status_4xx);
        d.status_5xx = minus(a.status_5xx, b.status_5xx);
        d.stall_held_ms = std::max(0.0, a.stall_held_ms - b.stall_held_ms);
        // The thread's CPU time over the stalls, rebuilt from each side's share of the time measured.
        d.stall_measured_ms = std::max(0.0, a.stall_measured_ms - b.stall_measured_ms);
        d.stall_cpu_share.reset();
        if (a.stall_cpu_share && d.stall_measured_ms > 0) {
            const double cpu_ms =
                *a.stall_cpu_share * a.stall_measured_ms - b.stall_cpu_share.value_or(0) * b.stall_measured_ms;
            d.stall_cpu_share = std::clamp(cpu_ms / d.stall_measured_ms, 0.0, 1.0);
        }
        d.stall_waiting.clear();
        for (const stall_wait& w : a.stall_waiting) {
            const auto earlier = std::find_if(b.stall_waiting.begin(), b.stall_waiting.end(),
                                              [&](const stall_wait& x) { return x.waiting == w.waiting; });
            const std::uint64_t n = minus(w.stalls, earlier != b.stall_waiting.end() ? earlier->stalls : 0);
            if (n > 0) {
                d.stall_waiting.push_back({w.waiting, n});
            }
        }
        std::stable_sort(d.stall_waiting.begin(), d.stall_waiting.end(),
                         [](const stall_wait& x, const stall_wait& y) { return x.stalls > y.stalls; });
        // Sums rebuilt from the means and shares of each side, then divided again over the window.
        const auto an = static_cast<double>(a.requests);
        const auto bn = static_cast<double>(b.requests);
        const auto n = static_cast<double>(d.requests);
        const double total = std::max(0.0, a.mean_ms * an - b.mean_ms * bn);
        auto part = [&](double route_figures::*share) {
            return std::max(0.0, a.*share * a.mean_ms * an - b.*share * b.mean_ms * bn);
        };
        const double queue = part(&route_figures::queue);
        const double app = part(&route_figures::app);
        const double downstream = part(&route_figures::downstream);
        const double wait = part(&route_figures::wait);
        const double write = part(&route_figures::write);
        d.queue = total > 0 ? queue / total : 0;
        d.app = total > 0 ? app / total : 0;
        d.downstream = total > 0 ? downstream / total : 0;
        d.wait = total > 0 ? wait / total : 0;
        d.write = total > 0 ? write / total : 0;
        d.mean_ms = n > 0 ? total / n : 0;
        d.queue_mean_ms = n > 0 ? queue / n : 0;
        d.app_mean_ms = n > 0 ? app / n : 0;
        d.downstream_mean_ms = n > 0 ? downstream / n : 0;
        d.wait_mean_ms = n > 0 ? wait / n : 0;
        d.write_mean_ms = n > 0 ? write / n : 0;
        d.calls_per_request = n > 0 ? std::max(0.0, a.calls_per_request * an - b.calls_per_request * bn) / n : 0;
        const auto per_request = [&](const std::optional<double> route_figures::*figure) -> std::optional<double> {
            if (!(a.*figure)) {
                return std::nullopt;
            }
            const double before_sum = (b.*figure).value_or(0) * bn;
            return n > 0 ? std::max(0.0, *(a.*figure) * an - before_sum) / n : 0;
        };
        d.allocations_per_request = per_request(&route_figures::allocations_per_request);
        d.allocated_bytes_per_request = per_request(&route_figures::allocated_bytes_per_request);
        out.routes.push_back(std::move(d));
    }
    return out;
}

std::vector<finding> diagnose(const route_report& report, const diagnosis_limits& limits) {
    std::vector<finding> problems;
    std::vector<finding> notes;
    std::uint64_t named_stalls = 0;
    std::uint64_t answers = 0;
    for (const route_figures& r : report.routes) {
        named_stalls += r.stalls;
        answers += r.requests;
    }
    for (const route_figures& r : report.routes) {
        if (r.requests < limits.min_requests && r.stalls == 0) {
            continue;
        }
        const std::string name = name_of(r);
        auto add = [&](finding::kind k, bool problem, std::string text, double saved_ms = 0) {
            (problem ? problems : notes).push_back({k, problem, r.method, r.route, std::move(text), saved_ms});
        };
        bool any = false;
        if (r.stalls > 0) {
            // The watchdog's name alone is no evidence: its handlers' own time on the loop must cover the stalls.
            const double app_total_ms = r.app_mean_ms * static_cast<double>(r.requests);
            const std::string held =
                fmt::format("{} held its loop {} in {} stall{} (longest {})", name, duration_text(r.stall_held_ms),
                            thousands(r.stalls), r.stalls == 1 ? "" : "s", duration_text(r.stall_longest_ms));
            if (const std::string cause = stall_cause_of(r);
                !cause.empty() && app_total_ms >= limits.stall_backed_by_app * r.stall_held_ms) {
                // What held the thread, measured: computing, a blocking system call, a lock; each with its fix.
                add(finding::kind::blocked_loop, true, held + cause, r.stall_held_ms);
            } else if (app_total_ms >= limits.stall_backed_by_app * r.stall_held_ms) {
                add(finding::kind::blocked_loop, true,
                    fmt::format("{}{}; its handler ran {} per request on the loop ({} % of its time): it blocks its "
                                "thread or computes too long, and every request on that loop waits",
                                held,
                                r.stall_cpu_share ? fmt::format(", its thread on the CPU {} % of that time",
                                                                percent(*r.stall_cpu_share))
                                                  : std::string(),
                                duration_text(r.app_mean_ms), percent(r.app)),
                    r.stall_held_ms);
            } else {
                add(finding::kind::busy_loop, false,
                    fmt::format("the stall watchdog named {} for {} stall{} ({}), but its handlers ran only {} on the "
                                "loop in all: long turns of many short requests (such as a burst of 503s), not a "
                                "handler of its own that blocks",
                                name, thousands(r.stalls), r.stalls == 1 ? "" : "s", duration_text(r.stall_held_ms),
                                duration_text(app_total_ms)));
            }
            any = true;
        }
        if (r.requests < limits.min_requests) {
            continue;
        }
        if (r.downstream >= limits.downstream_share && r.calls_per_request > 0 &&
            r.calls_per_request < limits.min_calls) {
            // One call per request that takes most of the time: nothing to fix here; the downstream is the cost.
            add(finding::kind::downstream_bound, false,
                fmt::format("{} % of {} is its downstream call ({} of {} per request): the downstream is the "
                            "bottleneck, look there (server p95 {})",
                            percent(r.downstream), name, duration_text(r.downstream_mean_ms), duration_text(r.mean_ms),
                            duration_text(r.p95_ms)));
            any = true;
        }
        if (r.downstream >= limits.downstream_share && r.calls_per_request >= limits.min_calls) {
            const double calls = r.calls_per_request;
            if (r.max_concurrency <= 1) {
                // Calls in a row may be a chain (a token, then the data): what running them together would save, if
                // they are independent, is the downstream time less one call's.
                const double saved = r.downstream_mean_ms * (1 - 1 / calls);
                const bool few = calls < limits.chain_calls;
                add(finding::kind::sequential_calls, !few,
                    fmt::format("{} % of {} is downstream, {:.0f} calls per request, at most 1 call in flight: calls "
                                "awaited one after another{}; if independent, running them together would save about "
                                "{} of its {} (server p95 {})",
                                percent(r.downstream), name, calls,
                                few ? " (a chain, where each needs the last's answer, cannot be run together)" : "",
                                duration_text(saved), duration_text(r.mean_ms), duration_text(r.p95_ms)),
                    few ? 0 : saved * static_cast<double>(r.requests));
            } else if (static_cast<double>(r.max_concurrency) >= calls && calls >= limits.flood_calls) {
                add(finding::kind::flooding, true,
                    fmt::format("{} % of {} is downstream, all {:.0f} calls of a request in flight at once (at most "
                                "{}): fast alone, but each request floods the downstream",
                                percent(r.downstream), name, calls, r.max_concurrency));
            } else {
                add(finding::kind::downstream_bound, false,
                    fmt::format("{} % of {} is downstream, {:.0f} calls per request, at most {} in flight: {} (server "
                                "p95 {})",
                                percent(r.downstream), name, calls, r.max_concurrency,
                                static_cast<double>(r.max_concurrency) >= calls
                                    ? "the calls run together, the slowest sets the pace"
                                    : "bounded concurrency",
                                duration_text(r.p95_ms)));
            }
            any = true;
        }
        if (r.queue >= limits.queue_share && r.queue_mean_ms >= limits.queue_mean_ms) {
            add(finding::kind::queueing, true,
                fmt::format("{} % of {} waits before its handler runs ({} on average): the server is saturated "
                            "(server p95 {})",
                            percent(r.queue), name, duration_text(r.queue_mean_ms), duration_text(r.p95_ms)));
            any = true;
        }
        if (static_cast<double>(r.status_5xx) >= limits.error_share * static_cast<double>(r.requests)) {
            const std::uint64_t refused =
                report.server.refused_in_flight + report.server.refused_connections + report.server.refused_draining;
            add(finding::kind::server_errors, true,
                fmt::format("{} of {} answers of {} are 5xx{}", thousands(r.status_5xx), thousands(r.requests), name,
                            refused > 0 ? fmt::format(" ({} answered 503 by the server's limits in all: see overload)",
                                                      thousands(refused))
                                        : std::string()));
            any = true;
        }
        if (static_cast<double>(r.status_4xx) >= limits.client_error_share * static_cast<double>(r.requests)) {
            const std::string share = r.status_4xx == r.requests
                                          ? fmt::format("all {}", thousands(r.requests))
                                          : fmt::format("{} of {}", thousands(r.status_4xx), thousands(r.requests));
            add(finding::kind::client_errors, true,
                r.route == "(no route)"
                    ? fmt::format("{} answers matched no route (404): is the path one the service has?", share)
                    : fmt::format("{} answers of {} are 4xx: the requests are refused (their method, path or "
                                  "body?), so these figures are of refusing them, not of the work",
                                  share, name));
            any = true;
        }
        if (r.allocations_per_request && *r.allocations_per_request >= limits.allocations_per_request) {
            // Per downstream call too, where there are calls: what a reader can act on (the client's share).
            add(finding::kind::allocation_churn, true,
                fmt::format("{:.0f} allocations per request on {}{}", *r.allocations_per_request, name,
                            r.calls_per_request >= 1
                                ? fmt::format(" ({:.0f} per downstream call, {:.0f} calls per request)",
                                              *r.allocations_per_request / r.calls_per_request, r.calls_per_request)
                                : std::string()));
            any = true;
        }
        if (!any) {
            const std::array<std::pair<const char*, double>, 5> parts{{{"queue", r.queue},
                                                                       {"app", r.app},
                                                                       {"downstream", r.downstream},
                                                                       {"wait", r.wait},
                                                                       {"write", r.write}}};
            const auto most = *std::max_element(parts.begin(), parts.end(),
                                                [](const auto& a, const auto& b) { return a.second < b.second; });
            add(finding::kind::healthy, false,
                fmt::format("nothing wrong on {}: {} requests, server p95 {}, most of the time in {} ({} %){}", name,
                            r.requests, duration_text(r.p95_ms), most.first, percent(most.second),
                            report.allocations_counted ? ""
                                                       : "; allocations not counted in this build (the profile "
                                                         "preset, or hotpath::alloc_counter, counts them)"));
        }
    }

    // The server's own figures: its limits' refusals, and stalls no route was named for.
    const server_figures& sv = report.server;
    const auto share_of = [&](std::uint64_t n) {
        return answers > 0 && static_cast<double>(n) >= limits.overload_share * static_cast<double>(answers);
    };
    const auto refused_by_route = [&] {
        std::string by;
        for (const route_figures& r : report.routes) {
            if (r.status_5xx > 0) {
                by += fmt::format("{}{} {}", by.empty() ? "" : ", ", name_of(r), thousands(r.status_5xx));
            }
        }
        return by.empty() ? std::string() : " (5xx by route: " + by + ")";
    };
    if (sv.refused_in_flight > 0 && share_of(sv.refused_in_flight)) {
        const std::string limit = sv.max_requests_in_flight_per_loop > 0
                                      ? fmt::format("{} per loop, {} loop{}", sv.max_requests_in_flight_per_loop,
                                                    report.loops, report.loops == 1 ? "" : "s")
                                      : std::string("its limit");
        problems.push_back(
            {finding::kind::overload, true, "", "",
             fmt::format("requests in flight at the limit ({}): {} of {} answers were 503 from the "
                         "in-flight limit{}: more arrive than the handlers finish",
                         limit, thousands(sv.refused_in_flight), thousands(answers), refused_by_route())});
    }
    if (sv.refused_connections > 0 && share_of(sv.refused_connections)) {
        problems.push_back({finding::kind::overload, true, "", "",
                            fmt::format("connections at the limit ({}): {} of {} answers were 503 from the "
                                        "connection limit{}",
                                        sv.max_connections, thousands(sv.refused_connections), thousands(answers),
                                        refused_by_route())});
    }
    if (sv.refused_draining > 0) {
        problems.push_back({finding::kind::overload, true, "", "",
                            fmt::format("{} answers were 503 after a stop's drain time was spent: handlers blocked "
                                        "their loop while it stopped",
                                        thousands(sv.refused_draining))});
    }
    if (sv.stalls > named_stalls) {
        notes.push_back({finding::kind::busy_loop, false, "", "",
                         fmt::format("{} stall{} of a loop outside any handler (the loop's own work, or a handler "
                                     "resumed by an awaitable of its own): longer than {} in one turn",
                                     thousands(sv.stalls - named_stalls), sv.stalls - named_stalls == 1 ? "" : "s",
                                     duration_text(sv.stall_threshold_ms))});
    }
    // The largest lever first: the problems whose fix saves most request time in the window, then the others in
    // their order (causes before the symptoms they lead to). With two levers or more, each says what it is worth.
    std::stable_sort(problems.begin(), problems.end(),
                     [](const finding& a, const finding& b) { return a.saved_ms > b.saved_ms; });
    const auto levers =
        std::count_if(problems.begin(), problems.end(), [](const finding& f) { return f.saved_ms > 0; });
    if (levers >= 2) {
        double total_ms = 0;
        for (const route_figures& r : report.routes) {
            total_ms += r.mean_ms * static_cast<double>(r.requests);
        }
        for (finding& f : problems) {
            if (f.saved_ms > 0) {
                f.text +=
                    fmt::format(" [worth about {} of the window's {} of request time{}]", duration_text(f.saved_ms),
                                duration_text(total_ms), &f == &problems.front() ? ": the largest lever" : "");
            }
        }
    }
    problems.insert(problems.end(), std::make_move_iterator(notes.begin()), std::make_move_iterator(notes.end()));
    return problems;
}

std::vector<finding> diagnose_stall_lines(std::string_view output) {
    struct named {
        std::string method, route;
        std::uint64_t lines = 0;
        double longest_ms = 0;
        std::uint64_t loops = 0; // a bit per loop index below 64
        // What held the thread, by the lines that say (newer servers'): the thing most lines name, and the CPU
        // share of the longest such line.
        std::vector<std::pair<std::string, std::uint64_t>> waiting{};
        double longest_measured_ms = -1;
        std::optional<int> cpu_percent{};
    };
    std::vector<named> seen;
    for (std::size_t at = 0; at < output.size();) {
        auto end = output.find('\n', at);
        if (end == std::string_view::npos) {
            end = output.size();
        }
        const auto e = parse_stall_line(output.substr(at, end - at));
        at = end + 1;
        if (!e || e->route.empty()) {
            continue; // another line, or a stall outside any handler
        }
        auto it = std::find_if(seen.begin(), seen.end(),
                               [&](const named& n) { return n.method == e->method && n.route == e->route; });
        if (it == seen.end()) {
            seen.push_back({e->method, e->route});
            it = seen.end() - 1;
        }
        ++it->lines;
        it->longest_ms = std::max(it->longest_ms, static_cast<double>(e->length.count()));
        if (e->loop < 64) {
            it->loops |= std::uint64_t{1} << e->loop;
        }
        if (!e->waiting.empty()) {
            auto w = std::find_if(it->waiting.begin(), it->waiting.end(),
                                  [&](const auto& x) { return x.first == e->waiting; });
            if (w == it->waiting.end()) {
                it->waiting.emplace_back(e->waiting, 0);
                w = it->waiting.end() - 1;
            }
            ++w->second;
            if (static_cast<double>(e->length.count()) > it->longest_measured_ms) {
                it->longest_measured_ms = static_cast<double>(e->length.count());
                it->cpu_percent = e->cpu_percent;
            }
        }
    }
    std::vector<finding> out;
    for (const named& n : seen) {
        const int loops = std::popcount(n.loops);
        std::string cause;
        if (!n.waiting.empty()) {
            std::uint64_t told = 0;
            for (const auto& w : n.waiting) {
                told += w.second;
            }
            const auto top = std::max_element(n.waiting.begin(), n.waiting.end(),
                                              [](const auto& a, const auto& b) { return a.second < b.second; });
            cause = cause_words(
                top->first,
                n.cpu_percent ? fmt::format(", its thread on the CPU {} % of the longest", *n.cpu_percent)
                              : std::string(", its thread"),
                top->second < told ? fmt::format(" (in {} of {} lines)", thousands(top->second), thousands(told))
                                   : std::string());
        }
        out.push_back(
            {finding::kind::blocked_loop, true, n.method, n.route,
             fmt::format("{} {} held its loop: the service did not answer its report, and its stall "
                         "watchdog named this handler in {} line{} on {} loop{} (longest stall {}){}",
                         n.method, n.route, thousands(n.lines), n.lines == 1 ? "" : "s", loops, loops == 1 ? "" : "s",
                         duration_text(n.longest_ms),
                         cause.empty() ? ": it blocks its thread, and every request on that loop waits" : cause)});
    }
    return out;
}

} // namespace hotpath::lab
