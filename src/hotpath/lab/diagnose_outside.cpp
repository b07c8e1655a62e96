// `hotpath lab diagnose URL --load` of a service that reports nothing it reads: the load, requests timed alone,
// Server-Timing.
#include <hotpath/lab/diagnose_window.hpp>

#include <hotpath/lab/from_outside.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/probe/probe.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <stop_token>
#include <thread>

namespace hotpath::lab::diagnose_detail {

namespace {

using namespace std::chrono_literals;

// The median of `values`, or nothing.
std::optional<double> median(std::vector<double> values) {
    if (values.empty()) {
        return std::nullopt;
    }
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

} // namespace

// A service that reports nothing lab diagnose reads, loaded: requests timed alone before the load and one at a time
// during it (each from its connection's start to its last byte, so that connecting is left out as the load's kept
// connections leave it out), the Server-Timing field of each, and the load's own figures.
int diagnose_outside(const diagnose_options& o, const load::plan& plan, std::chrono::nanoseconds length,
                     const std::string& base, const problem& why_not, std::FILE* out, std::FILE* err) {
    fmt::print(out,
               "hotpath lab diagnose: {} reports nothing lab diagnose reads ({}): diagnosing from the load, requests "
               "timed alone, and the service's Server-Timing\n",
               base, why_not.message);
    probe::probe_options po;
    po.url = plan.scenario.empty() ? plan.to.text() : base + plan.scenario.front().path_and_query;
    po.requests = 5;
    po.keep_alive = true;
    po.timeout = "5s";
    auto probing = probe::make_plan(po);
    if (!probing) {
        fmt::print(err, "hotpath: lab diagnose: {}\n", probing.error().message);
        return 2;
    }
    struct timed {
        double ms = 0;
        std::vector<probe::server_timing_entry> server_timing;
    };
    auto timed_of = [](const std::vector<probe::sample>& samples, std::vector<timed>& into) {
        for (const probe::sample& s : samples) {
            if (s.ok() && s.status < 500) {
                into.push_back(
                    {std::chrono::duration<double, std::milli>(s.done - s.connected).count(), s.server_timing});
            }
        }
    };
    std::vector<timed> alone;
    timed_of(probe::run(*probing), alone);
    std::vector<timed> during;
    std::mutex during_lock;
    load_seen seen;
    {
        probe::plan one = *probing;
        one.requests = 1;
        std::jthread prober([&](std::stop_token stop) {
            while (!stop.stop_requested()) {
                std::vector<timed> got;
                timed_of(probe::run(one), got);
                {
                    const std::lock_guard hold(during_lock);
                    during.insert(during.end(), got.begin(), got.end());
                }
                for (int i = 0; i < 5 && !stop.stop_requested(); ++i) {
                    std::this_thread::sleep_for(100ms);
                }
            }
        });
        if (const int stopped = load_or_watch(o, plan, true, length, base, seen, out, err); stopped != 0) {
            return stopped;
        }
    }
    outside_view view;
    if (seen.results) {
        view.load = load_window_of(plan, *seen.results);
        for (unsigned status = 500; status < 600; ++status) {
            view.server_errors += seen.results->statuses[status];
        }
    }
    auto medians = [](const std::vector<timed>& t, std::map<std::string, std::vector<double>>& by_name) {
        std::vector<double> all;
        for (const timed& x : t) {
            all.push_back(x.ms);
            for (const auto& e : x.server_timing) {
                if (e.duration_ms) {
                    by_name[e.name].push_back(*e.duration_ms);
                }
            }
        }
        return median(std::move(all));
    };
    std::map<std::string, std::vector<double>> timing_alone;
    std::map<std::string, std::vector<double>> timing_during;
    view.alone_ms = medians(alone, timing_alone);
    view.during_ms = medians(during, timing_during);
    for (auto& [name, values] : timing_alone) {
        view.server_timing.push_back({name, median(values), std::nullopt});
    }
    for (auto& [timing_name, values] : timing_during) {
        const std::string& name = timing_name; // a lambda cannot capture a structured binding in clang 14
        auto it = std::find_if(view.server_timing.begin(), view.server_timing.end(),
                               [&](const auto& t) { return t.name == name; });
        if (it == view.server_timing.end()) {
            view.server_timing.push_back({name, std::nullopt, std::nullopt});
            it = std::prev(view.server_timing.end());
        }
        it->during_ms = median(values);
    }
    fmt::print(
        out, "seen from outside: a request alone {} (median of {}), {} during the load (median of {}){}\n",
        view.alone_ms ? ms_text(static_cast<std::uint64_t>(*view.alone_ms * 1e6)) : std::string("-"), alone.size(),
        view.during_ms ? ms_text(static_cast<std::uint64_t>(*view.during_ms * 1e6)) : std::string("-"), during.size(),
        view.server_timing.empty() ? ", no Server-Timing field" : fmt::format(", Server-Timing metrics: {}", [&] {
            std::string names;
            for (const auto& t : view.server_timing) {
                names += (names.empty() ? "" : ", ") + t.name;
            }
            return names;
        }()));
    fmt::print(out, "diagnosis of the {} {}:\n", o.duration, seen.how);
    print_diagnosis(diagnose_from_outside(view, target_name(plan)), outside_lacking(view), seen, true,
                    "verdict: nothing wrong that the load can see", out);
    return 0;
}

} // namespace hotpath::lab::diagnose_detail
