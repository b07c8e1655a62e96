// dotnet-counters' JSON read into series, summarised over the loaded window, and the rules over those figures.
#include <hotpath/lab/dotnet_counters.hpp>

#include <hotpath/core/units.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/load/results.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace hotpath::lab {

namespace json = boost::json;

namespace {

// "2026-12-05T03:45:24.4912234+00:00" -> seconds since 1970 (UTC); nullopt when it is not that shape.
std::optional<double> parse_timestamp(std::string_view t) {
    auto number = [&](std::size_t at, std::size_t len) -> std::optional<int> {
        int v = 0;
        if (at + len > t.size()) {
            return std::nullopt;
        }
        const auto [end, ec] = std::from_chars(t.data() + at, t.data() + at + len, v);
        if (ec != std::errc{} || end != t.data() + at + len) {
            return std::nullopt;
        }
        return v;
    };
    const auto y = number(0, 4);
    const auto mo = number(5, 2);
    const auto d = number(8, 2);
    const auto h = number(11, 2);
    const auto mi = number(14, 2);
    const auto s = number(17, 2);
    if (!y || !mo || !d || !h || !mi || !s || t[4] != '-' || t[10] != 'T' || t[13] != ':') {
        return std::nullopt;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    const int yy = *y - (*mo <= 2 ? 1 : 0);
    const int era = (yy >= 0 ? yy : yy - 399) / 400;
    const int yoe = yy - era * 400;
    const int doy = (153 * (*mo + (*mo > 2 ? -3 : 9)) + 2) / 5 + *d - 1;
    const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const double days = era * 146097.0 + doe - 719468.0;
    double seconds = days * 86400.0 + *h * 3600.0 + *mi * 60.0 + *s;
    std::size_t i = 19;
    if (i < t.size() && t[i] == '.') {
        double scale = 0.1;
        for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, scale /= 10) {
            seconds += (t[i] - '0') * scale;
        }
    }
    if (i + 6 <= t.size() && (t[i] == '+' || t[i] == '-')) {
        const auto oh = number(i + 1, 2);
        const auto om = number(i + 4, 2);
        if (!oh || !om) {
            return std::nullopt;
        }
        const double offset = *oh * 3600.0 + *om * 60.0;
        seconds -= t[i] == '+' ? offset : -offset;
    }
    return seconds;
}

// "CPU Usage (%)" -> "CPU Usage"; "http.server.active_requests ({request})" -> "http.server.active_requests".
std::string_view without_unit(std::string_view name) {
    if (!name.empty() && name.back() == ')') {
        if (const auto open = name.rfind(" ("); open != std::string_view::npos) {
            return name.substr(0, open);
        }
    }
    return name;
}

// The value of `key` in "a=1,b=2"; empty when absent.
std::string_view tag(std::string_view tags, std::string_view key) {
    std::size_t at = 0;
    while (at < tags.size()) {
        std::size_t end = tags.find(',', at);
        if (end == std::string_view::npos) {
            end = tags.size();
        }
        const std::string_view pair = tags.substr(at, end - at);
        if (pair.size() > key.size() && pair.substr(0, key.size()) == key && pair[key.size()] == '=') {
            return pair.substr(key.size() + 1);
        }
        at = end + 1;
    }
    return {};
}

// The series of one counter, over every set of tags.
std::vector<const dotnet_series*> all_of(const dotnet_counters& c, std::string_view provider, std::string_view name) {
    std::vector<const dotnet_series*> out;
    for (const dotnet_series& s : c.series) {
        if (s.provider == provider && s.name == name) {
            out.push_back(&s);
        }
    }
    return out;
}

struct window {
    double from = -std::numeric_limits<double>::infinity();
    double to = std::numeric_limits<double>::infinity();
    bool holds(double t) const { return t >= from && t <= to; }
};

// A level's mean and maximum over the window, its tag sets added up reading by reading.
struct level {
    std::optional<double> mean;
    std::optional<double> max;
    std::optional<double> first;
    std::optional<double> last;
    std::optional<double> nonzero_share; // of the readings, those at 1 or more
    std::size_t readings = 0;
};
level level_of(const std::vector<const dotnet_series*>& series, const window& w) {
    std::map<long long, double> sum; // by the reading's time, rounded to 100 ms: one reading of every tag set
    for (const dotnet_series* s : series) {
        for (const dotnet_sample& x : s->samples) {
            if (w.holds(x.at_s)) {
                sum[std::llround(x.at_s * 10)] += x.value;
            }
        }
    }
    level out;
    if (sum.empty()) {
        return out;
    }
    double total = 0;
    double most = -std::numeric_limits<double>::infinity();
    double nonzero = 0;
    for (const auto& [at, v] : sum) {
        total += v;
        most = std::max(most, v);
        nonzero += v >= 1 ? 1 : 0;
    }
    out.readings = sum.size();
    out.mean = total / static_cast<double>(sum.size());
    out.nonzero_share = nonzero / static_cast<double>(sum.size());
    out.max = most;
    out.first = sum.begin()->second;
    out.last = sum.rbegin()->second;
    return out;
}

// A rate's total over the window: each reading is the count of its interval (the lab reads every second).
std::optional<double> total_of(const std::vector<const dotnet_series*>& series, const window& w) {
    std::optional<double> out;
    for (const dotnet_series* s : series) {
        for (const dotnet_sample& x : s->samples) {
            if (w.holds(x.at_s)) {
                out = out.value_or(0) + x.value;
            }
        }
    }
    return out;
}

} // namespace

result<dotnet_counters, problem> parse_dotnet_counters(std::string_view text) {
    boost::system::error_code ec;
    const json::value doc = json::parse(text, ec);
    if (ec) {
        return problem{errc::invalid_value, fmt::format("dotnet-counters' output is not JSON: {}", ec.message())};
    }
    const json::object* root = doc.if_object();
    const json::array* events = root != nullptr && root->contains("Events") ? root->at("Events").if_array() : nullptr;
    if (events == nullptr) {
        return problem{errc::invalid_value, "dotnet-counters' output has no \"Events\" array"};
    }
    dotnet_counters out;
    if (const auto* p = root->if_contains("TargetProcess"); p != nullptr && p->is_string()) {
        out.process = std::string(p->get_string());
    }
    std::map<std::string, std::size_t> index; // provider \n name \n tags -> its series
    std::optional<double> start;
    for (std::size_t i = 0; i < events->size(); ++i) {
        const json::object* e = (*events)[i].if_object();
        auto text_of = [&](const char* key) -> std::optional<std::string_view> {
            const json::value* v = e != nullptr ? e->if_contains(key) : nullptr;
            return v != nullptr && v->is_string() ? std::optional<std::string_view>(v->get_string()) : std::nullopt;
        };
        const auto timestamp = text_of("timestamp");
        const auto provider = text_of("provider");
        const auto name = text_of("name");
        const json::value* value = e != nullptr ? e->if_contains("value") : nullptr;
        if (!timestamp || !provider || !name || value == nullptr || !value->is_number()) {
            return problem{errc::invalid_value,
                           fmt::format("dotnet-counters' event {} lacks a timestamp, provider, name or value", i)};
        }
        const auto at = parse_timestamp(*timestamp);
        if (!at) {
            return problem{errc::invalid_value,
                           fmt::format("dotnet-counters' event {}: bad timestamp '{}'", i, std::string(*timestamp))};
        }
        if (!start) {
            start = *at;
        }
        const std::string tags(text_of("tags").value_or(""));
        const std::string key = fmt::format("{}\n{}\n{}", *provider, *name, tags);
        auto [it, added] = index.try_emplace(key, out.series.size());
        if (added) {
            dotnet_series s;
            s.provider = std::string(*provider);
            s.name = std::string(without_unit(*name));
            s.tags = tags;
            s.rate = text_of("counterType").value_or("") == "Rate";
            out.series.push_back(std::move(s));
        }
        out.series[it->second].samples.push_back({*at - *start, value->to_number<double>()});
    }
    return out;
}

dotnet_figures summarize(const dotnet_counters& c, double skip_s) {
    constexpr std::string_view runtime = "System.Runtime";
    constexpr std::string_view http = "System.Net.Http";
    constexpr std::string_view hosting = "Microsoft.AspNetCore.Hosting";
    constexpr std::string_view kestrel = "Microsoft.AspNetCore.Server.Kestrel";

    // The loaded window: the readings with a request or a connection in flight. Levels are averaged over those;
    // counts are added up over a reading more before and two after, since the two kinds of counters are read at
    // different moments (a meter's first reading comes an interval after the EventCounters', whose reading then holds
    // the load's first second; the EventCounters' readings come late, and the last calls of a draining request too).
    window levels;
    window totals;
    double earliest = std::numeric_limits<double>::infinity();
    double latest = -std::numeric_limits<double>::infinity();
    for (const auto& [provider, name] : {std::pair{hosting, std::string_view("http.server.active_requests")},
                                         std::pair{kestrel, std::string_view("kestrel.active_connections")}}) {
        for (const auto* s : all_of(c, provider, name)) {
            for (const dotnet_sample& x : s->samples) {
                if (x.value > 0) {
                    earliest = std::min(earliest, x.at_s);
                    latest = std::max(latest, x.at_s);
                }
            }
        }
    }
    dotnet_figures f;
    if (earliest <= latest) {
        const double from = std::min(earliest + std::max(skip_s, 0.0), latest);
        levels = {from - 0.5, latest + 0.5};
        totals = {from - (skip_s > 0 ? 0.5 : 1.5), latest + 2.5};
        f.seconds = latest - from + 1;
    } else {
        double first = std::numeric_limits<double>::infinity();
        double last = -std::numeric_limits<double>::infinity();
        for (const dotnet_series& s : c.series) {
            for (const dotnet_sample& x : s.samples) {
                first = std::min(first, x.at_s);
                last = std::max(last, x.at_s);
            }
        }
        f.seconds = first <= last ? last - first + 1 : 0;
    }
    const window& w = levels;

    // The session's first CPU reading covers no interval (it reads 0 % whatever the load): never in the window.
    f.cpu_percent = level_of(all_of(c, runtime, "CPU Usage"), {std::max(w.from, 0.5), w.to}).mean;
    const level threads = level_of(all_of(c, runtime, "ThreadPool Thread Count"), w);
    f.threads_first = threads.first;
    f.threads_last = threads.last;
    f.threads_max = threads.max;
    const level queue = level_of(all_of(c, runtime, "ThreadPool Queue Length"), w);
    f.queue_mean = queue.mean;
    f.queue_max = queue.max;
    f.queue_held = queue.nonzero_share;
    f.queue_readings = queue.readings;
    f.allocated_bytes = total_of(all_of(c, runtime, "Allocation Rate"), totals);
    f.gc_paused_ms = total_of(all_of(c, runtime, "Time paused by GC"), totals);
    for (const char* gen : {"Gen 0 GC Count", "Gen 1 GC Count", "Gen 2 GC Count"}) {
        if (const auto n = total_of(all_of(c, runtime, gen), totals)) {
            f.gc_collections = f.gc_collections.value_or(0) + *n;
        }
    }
    f.lock_contentions = total_of(all_of(c, runtime, "Monitor Lock Contention Count"), totals);
    f.exceptions = total_of(all_of(c, runtime, "Exception Count"), totals);
    f.outbound_started = total_of(all_of(c, http, "Requests Started Rate"), totals);
    f.outbound_failed = total_of(all_of(c, http, "Requests Failed Rate"), totals);
    const level outbound = level_of(all_of(c, http, "Current Requests"), w);
    f.outbound_in_flight = outbound.mean;
    f.outbound_in_flight_max = outbound.max;
    const level inbound = level_of(all_of(c, hosting, "http.server.active_requests"), w);
    f.inbound_in_flight = inbound.mean;
    f.inbound_in_flight_max = inbound.max;
    f.connections_queued = level_of(all_of(c, kestrel, "kestrel.queued_connections"), w).mean;

    // Request durations by route: a 2xx series first where a route answered several statuses.
    for (const auto* s : all_of(c, hosting, "http.server.request.duration")) {
        if (s->samples.empty()) {
            continue;
        }
        const std::string method(tag(s->tags, "http.request.method"));
        const std::string route(tag(s->tags, "http.route"));
        const std::string_view pct = tag(s->tags, "Percentile");
        const bool ok = tag(s->tags, "http.response.status_code").substr(0, 1) == "2";
        auto it = std::find_if(f.routes.begin(), f.routes.end(),
                               [&](const auto& r) { return r.method == method && r.route == route; });
        if (it == f.routes.end()) {
            f.routes.push_back({method, route, {}, {}});
            it = std::prev(f.routes.end());
        }
        if (pct != "50" && pct != "95") {
            continue;
        }
        auto& slot = pct == "50" ? it->p50_s : it->p95_s;
        if (!slot || ok) {
            slot = s->samples.back().value;
        }
    }
    return f;
}

load_window load_window_of(const load::plan& plan, const load::results& r) {
    return {r.responses,
            std::chrono::duration<double>(r.measured).count(),
            static_cast<double>(plan.connections),
            r.latency.mean_ns() / 1e6,
            static_cast<double>(r.latency.value_at_percentile(95)) / 1e6,
            r.connections_opened};
}

std::string target_name(const load::plan& p) {
    if (!p.scenario.empty()) {
        return p.scenario.front().method + " " + p.scenario.front().path_and_query;
    }
    return p.method + " " + p.to.target;
}

std::vector<finding> diagnose_dotnet(const dotnet_figures& f, const load_window& load, const std::string& name,
                                     const diagnosis_limits& limits) {
    std::vector<finding> problems;
    std::vector<finding> notes;
    auto add = [&](finding::kind k, bool problem, std::string text) {
        (problem ? problems : notes).push_back({k, problem, "", "", std::move(text)});
    };
    const double requests = static_cast<double>(load.requests);
    const bool enough = load.requests >= limits.min_requests;
    // The server's own time for the route that answered most: ASP.NET Core's p50, against the load's mean.
    std::optional<double> server_p50_ms;
    for (const auto& r : f.routes) {
        if (r.p50_s) {
            server_p50_ms = std::max(server_p50_ms.value_or(0), *r.p50_s * 1000);
        }
    }
    // The load's mean, where it had answers to average (a load whose requests all failed has none).
    const std::string load_mean =
        load.mean_ms > 0 ? fmt::format(" (the load's mean {})", duration_text(load.mean_ms)) : std::string();
    const std::string server_time =
        server_p50_ms
            ? fmt::format(", ASP.NET Core's p50 {}{}", duration_text(*server_p50_ms),
                          load.mean_ms > 0 ? fmt::format(" against the load's mean {}", duration_text(load.mean_ms))
                                           : std::string())
            : std::string();

    bool starved = false;
    // Starvation is a queue that stays (a burst queues for a moment on any pool: one reading is not a queue that
    // stays, however long) while the CPU idles.
    const bool queue_stays = f.queue_held && *f.queue_held >= limits.dotnet_queue_held &&
                             *f.queue_held * static_cast<double>(f.queue_readings) >= 2;
    if (f.queue_mean && *f.queue_mean >= limits.dotnet_queue_mean && queue_stays && f.cpu_percent &&
        *f.cpu_percent < limits.starved_cpu_percent) {
        starved = true;
        const double first = f.threads_first.value_or(0);
        const double last = f.threads_last.value_or(0);
        const std::string pool =
            last > first && f.seconds > 0
                ? fmt::format("the pool grew from {:.0f} to {:.0f} threads ({:+.1f} a second: .NET adds threads "
                              "slowly to a starved pool)",
                              first, last, (last - first) / f.seconds)
                : fmt::format("the pool held {:.0f} threads", last);
        add(finding::kind::thread_pool_starvation, true,
            fmt::format("thread-pool starvation on {}: {:.0f} work items waited for a thread on average (at most "
                        "{:.0f}, queued in {} % of the readings) while {} at {:.0f} % CPU: requests wait for a thread "
                        "that a blocking call holds, not for the CPU{}; await the I/O instead of blocking on it",
                        name, *f.queue_mean, f.queue_max.value_or(0), percent(*f.queue_held), pool, *f.cpu_percent,
                        server_time));
    }
    std::vector<finding> churn;   // a cause: listed before the queueing it leads to
    std::vector<finding> waiting; // a symptom: listed after its causes
    if (!starved && enough && server_p50_ms && load.mean_ms >= 2 * *server_p50_ms &&
        load.mean_ms - *server_p50_ms >= limits.queue_mean_ms) {
        const double outside = (load.mean_ms - *server_p50_ms) / load.mean_ms;
        waiting.push_back(
            {finding::kind::queueing, true, "", "",
             fmt::format("{} % of {}'s time is spent before ASP.NET Core's pipeline runs it{}{}: the server is "
                         "saturated",
                         percent(outside), name, server_time,
                         f.connections_queued && *f.connections_queued >= 1
                             ? fmt::format(", {:.0f} connections queued in Kestrel on average", *f.connections_queued)
                             : std::string())});
    }

    const std::optional<double> calls =
        f.outbound_started && enough ? std::optional<double>(*f.outbound_started / requests) : std::nullopt;
    // How many calls one request has in flight: the most in flight against the most requests in flight (readings
    // are moments: the means mix requests between their calls with requests in them; the peaks do not).
    const double inbound =
        f.inbound_in_flight_max && *f.inbound_in_flight_max > 0 ? *f.inbound_in_flight_max : load.concurrency;
    if (calls && *calls >= limits.min_calls && f.outbound_in_flight_max && inbound > 0) {
        const double per_request = *f.outbound_in_flight_max / inbound;
        const std::string figures = fmt::format(
            "about {:.0f} outbound HTTP calls per request, at most {:.0f} in flight for {:.0f} requests in flight "
            "({:.1f} per request)",
            *calls, *f.outbound_in_flight_max, inbound, per_request);
        if (per_request <= limits.sequential_in_flight) {
            add(finding::kind::sequential_calls, true,
                fmt::format("{} on {}: calls awaited one after another{}; start them together, with a bound", figures,
                            name, load_mean));
        } else if (*calls >= limits.flood_calls && per_request >= 0.5 * *calls) {
            add(finding::kind::flooding, true,
                fmt::format("{} on {}: every call of a request in flight at once: fast alone, but each request "
                            "floods the downstream",
                            figures, name));
        } else {
            add(finding::kind::downstream_bound, false,
                fmt::format("{} on {}: {}{}", figures, name,
                            per_request >= 0.5 * *calls ? "the calls run together, the slowest sets the pace"
                                                        : "bounded concurrency",
                            load_mean));
        }
    }
    if (f.outbound_failed && *f.outbound_failed > 0 && f.outbound_started) {
        add(finding::kind::server_errors, true,
            fmt::format("{} of {} outbound HTTP calls of {} failed", thousands(std::llround(*f.outbound_failed)),
                        thousands(std::llround(*f.outbound_started)), name));
    }

    // Churn: bytes per request past a lean handler's, less what each outbound call and each new connection allocate
    // of their own (HttpClient's and Kestrel's few KiB are not the handler's), at a rate that matters (a few requests
    // and the runtime's own allocations are not churn); or a twentieth of the time paused for collections whatever the
    // bytes.
    if (enough && f.allocated_bytes) {
        const double per_request = *f.allocated_bytes / requests;
        const double connections_per_request = static_cast<double>(load.connections) / requests;
        const double own = per_request - calls.value_or(0) * limits.allocated_bytes_per_call -
                           std::min(connections_per_request, 1.0) * limits.allocated_bytes_per_connection;
        const double rate = *f.allocated_bytes / std::max(f.seconds, 1.0);
        const double gc_share = f.gc_paused_ms && f.seconds > 0 ? *f.gc_paused_ms / (f.seconds * 1000) : 0;
        if ((own >= limits.allocated_bytes_per_request && rate >= limits.allocated_bytes_per_second) ||
            gc_share >= limits.gc_pause_share) {
            const double thrown = f.exceptions.value_or(0);
            churn.push_back(
                {finding::kind::allocation_churn, true, "", "",
                 fmt::format(
                     "{} allocated per request on {} ({}/s), {:.1f} % of the time paused for {:.0f} garbage "
                     "collections{}: allocation churn; allocate less per request (structs, pooled buffers, "
                     "no per-request queries or strings)",
                     format_size(static_cast<std::uint64_t>(per_request)), name,
                     format_size(static_cast<std::uint64_t>(rate)), gc_share * 100, f.gc_collections.value_or(0),
                     thrown >= 0.01 * requests ? fmt::format(", and {} exceptions thrown (1 in {:.0f} requests)",
                                                             thousands(std::llround(thrown)), requests / thrown)
                                               : std::string())});
        }
    }

    problems.insert(problems.end(), std::make_move_iterator(churn.begin()), std::make_move_iterator(churn.end()));
    problems.insert(problems.end(), std::make_move_iterator(waiting.begin()), std::make_move_iterator(waiting.end()));
    if (problems.empty() && notes.empty()) {
        if (!f.cpu_percent && !f.queue_mean && !f.allocated_bytes && !f.inbound_in_flight) {
            add(finding::kind::healthy, false,
                fmt::format("nothing to read in {}'s .NET counters: no System.Runtime or ASP.NET Core counters "
                            "reported in the window",
                            name));
        } else {
            add(finding::kind::healthy, false,
                fmt::format("nothing wrong in {}'s .NET counters: {:.0f} % CPU, {:.0f} thread-pool threads, {:.1f} "
                            "work items queued on average{}{}",
                            name, f.cpu_percent.value_or(0), f.threads_max.value_or(0), f.queue_mean.value_or(0),
                            enough && f.allocated_bytes
                                ? fmt::format(", {} allocated per request",
                                              format_size(static_cast<std::uint64_t>(*f.allocated_bytes / requests)))
                                : std::string(),
                            server_time));
        }
    }
    problems.insert(problems.end(), std::make_move_iterator(notes.begin()), std::make_move_iterator(notes.end()));
    return problems;
}

} // namespace hotpath::lab
