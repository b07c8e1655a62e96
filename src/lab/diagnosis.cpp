// The diagnosis rules over a parsed /debug/routes report.
#include "lab/diagnosis.hpp"

#include "load/report.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace hotpath::lab {

namespace {

double number(const boost::json::value* v) {
    if (v == nullptr) {
        return 0;
    }
    if (v->is_double()) {
        return v->get_double();
    }
    if (v->is_int64()) {
        return static_cast<double>(v->get_int64());
    }
    if (v->is_uint64()) {
        return static_cast<double>(v->get_uint64());
    }
    return 0;
}

const boost::json::value* at(const boost::json::object& o, std::string_view key) {
    return o.if_contains(key);
}

const boost::json::object* object_at(const boost::json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v != nullptr ? v->if_object() : nullptr;
}

int percent(double share) {
    return static_cast<int>(std::lround(share * 100));
}

// "850us", "1.02s": as the load reports write durations.
std::string duration(double ms) {
    return load::format_duration_ns(ms * 1e6);
}

std::string name_of(const route_figures& r) {
    return r.method + " " + r.route;
}

} // namespace

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
    case finding::kind::allocation_churn:
        return "allocation_churn";
    case finding::kind::healthy:
        return "healthy";
    }
    return "healthy";
}

std::optional<route_report> parse_route_report(std::string_view json, std::string& why) {
    boost::system::error_code ec;
    const boost::json::value doc = boost::json::parse(json, ec);
    if (ec || !doc.is_object()) {
        why = "not a JSON object";
        return std::nullopt;
    }
    const auto* routes = doc.as_object().if_contains("routes");
    if (routes == nullptr || !routes->is_array()) {
        why = "no \"routes\" array";
        return std::nullopt;
    }
    route_report out;
    for (const auto& item : routes->get_array()) {
        if (!item.is_object()) {
            why = "a route is not an object";
            return std::nullopt;
        }
        const auto& o = item.get_object();
        route_figures r;
        if (const auto* m = at(o, "method"); m != nullptr && m->is_string()) {
            r.method = m->get_string();
        }
        if (const auto* p = at(o, "route"); p != nullptr && p->is_string()) {
            r.route = p->get_string();
        }
        r.requests = static_cast<std::uint64_t>(number(at(o, "requests")));
        if (const auto* s = object_at(o, "status")) {
            r.status_5xx = static_cast<std::uint64_t>(number(at(*s, "5xx")));
            r.status_4xx = static_cast<std::uint64_t>(number(at(*s, "4xx")));
        }
        if (const auto* l = object_at(o, "latency_ms")) {
            r.p50_ms = number(at(*l, "p50"));
            r.p95_ms = number(at(*l, "p95"));
            r.p99_ms = number(at(*l, "p99"));
            r.mean_ms = number(at(*l, "mean"));
        }
        if (const auto* s = object_at(o, "share")) {
            r.queue = number(at(*s, "queue"));
            r.app = number(at(*s, "app"));
            r.downstream = number(at(*s, "downstream"));
            r.wait = number(at(*s, "wait"));
            r.write = number(at(*s, "write"));
        }
        if (const auto* m = object_at(o, "mean_ms")) {
            r.queue_mean_ms = number(at(*m, "queue"));
        }
        if (const auto* d = object_at(o, "downstream")) {
            r.calls_per_request = number(at(*d, "calls_per_request"));
            r.mean_concurrency = number(at(*d, "mean_concurrency"));
            r.max_concurrency = static_cast<std::uint64_t>(number(at(*d, "max_concurrency")));
        }
        if (const auto* a = at(o, "allocations_per_request"); a != nullptr && !a->is_null()) {
            r.allocations_per_request = number(a);
        }
        out.routes.push_back(std::move(r));
    }
    return out;
}

std::vector<finding> diagnose(const route_report& report, const diagnosis_limits& limits) {
    std::vector<finding> problems;
    std::vector<finding> notes;
    for (const route_figures& r : report.routes) {
        if (r.requests < limits.min_requests) {
            continue;
        }
        const std::string name = name_of(r);
        auto add = [&](finding::kind k, bool problem, std::string text) {
            (problem ? problems : notes).push_back({k, problem, r.method, r.route, std::move(text)});
        };
        bool any = false;
        if (r.downstream >= limits.downstream_share && r.calls_per_request >= limits.min_calls) {
            const double calls = r.calls_per_request;
            if (r.max_concurrency <= 1) {
                add(finding::kind::sequential_calls, true,
                    fmt::format("{} % of {} is downstream, {:.0f} calls per request, at most 1 call in flight: calls "
                                "awaited one after another (p95 {})",
                                percent(r.downstream), name, calls, duration(r.p95_ms)));
            } else if (static_cast<double>(r.max_concurrency) >= calls) {
                add(finding::kind::flooding, true,
                    fmt::format("{} % of {} is downstream, all {:.0f} calls of a request in flight at once (at most "
                                "{}): fast alone, but each request floods the downstream",
                                percent(r.downstream), name, calls, r.max_concurrency));
            } else {
                add(finding::kind::downstream_bound, false,
                    fmt::format("{} % of {} is downstream, {:.0f} calls per request, at most {} in flight: bounded "
                                "concurrency (p95 {})",
                                percent(r.downstream), name, calls, r.max_concurrency, duration(r.p95_ms)));
            }
            any = true;
        }
        if (r.queue >= limits.queue_share && r.queue_mean_ms >= limits.queue_mean_ms) {
            add(finding::kind::queueing, true,
                fmt::format("{} % of {} waits before its handler runs ({} on average): the server is saturated "
                            "(p95 {})",
                            percent(r.queue), name, duration(r.queue_mean_ms), duration(r.p95_ms)));
            any = true;
        }
        if (static_cast<double>(r.status_5xx) >= limits.error_share * static_cast<double>(r.requests)) {
            add(finding::kind::server_errors, true,
                fmt::format("{} of {} answers of {} are 5xx", r.status_5xx, r.requests, name));
            any = true;
        }
        if (r.allocations_per_request && *r.allocations_per_request >= limits.allocations_per_request) {
            add(finding::kind::allocation_churn, true,
                fmt::format("{:.0f} allocations per request on {}", *r.allocations_per_request, name));
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
                fmt::format("nothing wrong on {}: {} requests, p95 {}, most of the time in {} ({} %)", name, r.requests,
                            duration(r.p95_ms), most.first, percent(most.second)));
        }
    }
    problems.insert(problems.end(), std::make_move_iterator(notes.begin()), std::make_move_iterator(notes.end()));
    return problems;
}

} // namespace hotpath::lab
