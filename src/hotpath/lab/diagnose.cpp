// `hotpath lab diagnose URL`: scrape, watch or load, scrape again, diagnose what changed.
#include <hotpath/lab/diagnose.hpp>

#include <hotpath/lab/diagnosis.hpp>
#include <hotpath/lab/dotnet_collector.hpp>
#include <hotpath/lab/from_outside.hpp>
#include <hotpath/lab/otel_metrics.hpp>
#include <hotpath/lab/services.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/load/report.hpp>
#include <hotpath/load/runner.hpp>
#include <hotpath/metrics/prometheus_reader.hpp>
#include <hotpath/probe/probe.hpp>

#include <fmt/core.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

namespace hotpath::lab {

namespace {

using namespace std::chrono_literals;

constexpr std::chrono::seconds scrape_timeout{5};

// The service's URL: any host (services live in containers and on other machines), http:// until TLS lands.
result<http::url, problem> parse_service_url(const std::string& text) {
    auto u = http::parse_request_url(text);
    if (!u) {
        return problem{u.error().code, u.error().message + " (e.g. http://127.0.0.1:5060)"};
    }
    return std::move(*u);
}

// An overloaded hotpath service refuses the report's request too (503 at its in-flight or connection limit):
// asked again every 50 ms, since a slot frees as soon as one handler ends, for scrape_timeout in all. The problem's
// code says how it failed: errc::overloaded (503 throughout), errc::unexpected_status or errc::invalid_json (not
// hotpath), else the request's own (the service is down).
result<route_report, problem> scrape(const std::string& base) {
    const std::string report_url = base + "/debug/routes";
    const auto until = std::chrono::steady_clock::now() + scrape_timeout;
    auto got = probe::fetch(report_url, scrape_timeout);
    while (got && got->status == 503 && std::chrono::steady_clock::now() < until && !interrupted()) {
        std::this_thread::sleep_for(50ms);
        got = probe::fetch(report_url, scrape_timeout);
    }
    if (!got) {
        return std::move(got).error();
    }
    if (got->status == 503) {
        return problem{errc::overloaded,
                       fmt::format("GET /debug/routes answered 503 for {} s: the service is over its limits, even for "
                                   "its report",
                                   scrape_timeout.count())};
    }
    if (got->status != 200) {
        return problem{errc::unexpected_status, fmt::format("GET /debug/routes answered {}", got->status)};
    }
    auto parsed = parse_route_report(got->body);
    if (!parsed) {
        return problem{errc::invalid_json,
                       "GET /debug/routes is not a hotpath route report: " + parsed.error().message};
    }
    return std::move(*parsed);
}

// The one line and exit code of a scrape that failed: 1 for a service down or overloaded, 3 for one that is not
// hotpath (not bad usage: the service is another kind, and the line says what reads any service). `down_words` says how
// it is down ("nothing answers at", before; "it stopped answering:", after).
int scrape_failed(const problem& failed, const std::string& base, std::string_view down_words, std::FILE* err) {
    if (failed.code == errc::overloaded) {
        fmt::print(err, "hotpath: lab diagnose: {}: {}\n", base, failed.message);
        return 1;
    }
    if (failed.code == errc::unexpected_status || failed.code == errc::invalid_json) {
        fmt::print(err,
                   "hotpath: lab diagnose: {} is not a hotpath service ({}); lab diagnose reads hotpath's own route "
                   "report, a .NET service's runtime counters with --dotnet PID, or any service's OpenTelemetry "
                   "metrics with --metrics URL (its Prometheus page): for any HTTP service, `hotpath load URL` "
                   "measures it and `hotpath probe URL` times one request phase by phase\n",
                   base, failed.message);
        return 3;
    }
    fmt::print(err, "hotpath: lab diagnose: {} {}: {}\n", down_words, base, failed.message);
    return 1;
}

// Waits `length`, or until SIGINT/SIGTERM; false when interrupted.
bool watch(std::chrono::nanoseconds length) {
    const auto until = std::chrono::steady_clock::now() + length;
    while (std::chrono::steady_clock::now() < until) {
        if (interrupted()) {
            return false;
        }
        std::this_thread::sleep_for(
            std::min<std::chrono::nanoseconds>(100ms, until - std::chrono::steady_clock::now()));
    }
    return !interrupted();
}

std::string ms_text(std::uint64_t ns) {
    return format_duration_ns(static_cast<double>(ns));
}

// What the window's load saw, for the findings' lines (all zero when the tool only watched).
struct load_seen {
    std::string how; // "under the lab's load", "under the load it had"
    std::uint64_t client_p95_ns = 0;
    std::uint64_t failed_requests = 0;
    std::uint64_t sent_requests = 0;
    std::optional<load::results> results;
};

// Loads the service with `plan` for the window, printing the load's line, or watches it for `length`; 0, or the
// exit code to end with (1 the load could not run, 130 interrupted).
int load_or_watch(const diagnose_options& o, const load::plan& plan, bool loading, std::chrono::nanoseconds length,
                  const std::string& base, load_seen& seen, std::FILE* out, std::FILE* err) {
    if (!loading) {
        fmt::print(out, "hotpath lab diagnose: watching {} for {} (no load sent: give --load to send some)\n", base,
                   o.duration);
        std::fflush(out);
        if (!watch(length)) {
            fmt::print(err, "hotpath: lab diagnose interrupted\n");
            return 130;
        }
        seen.how = "under the load it had";
        return 0;
    }
    std::string what = plan.to.text();
    for (std::size_t i = 0; i < o.paths.size(); ++i) {
        what = (i == 0 ? base : what + ",") + o.paths[i];
    }
    fmt::print(out, "hotpath lab diagnose: loading {} for {} ({} connections{})\n", what, o.duration, plan.connections,
               o.load_with.rate ? fmt::format(", {}/s", *o.load_with.rate) : std::string());
    std::fflush(out);
    int stopped_by = 0;
    auto r = load::run(plan, load::progress_mode::none, err, &stopped_by);
    note_signal(stopped_by);
    if (interrupted()) {
        fmt::print(err, "hotpath: lab diagnose interrupted\n");
        return 130;
    }
    if (!r) {
        fmt::print(err, "hotpath: lab diagnose: the load could not run: {}\n", r.error().message);
        return 1;
    }
    const double seconds = std::chrono::duration<double>(r->measured).count();
    fmt::print(out,
               "load (as its client saw it): {} responses, {:.0f}/s, client p50 {} p95 {} p99 {}, {} errors, {} "
               "answered 503\n",
               thousands(r->responses), seconds > 0 ? static_cast<double>(r->responses) / seconds : 0.0,
               ms_text(r->latency.value_at_percentile(50)), ms_text(r->latency.value_at_percentile(95)),
               ms_text(r->latency.value_at_percentile(99)), thousands(r->error_total()), thousands(r->statuses[503]));
    seen.client_p95_ns = r->latency.value_at_percentile(95);
    seen.failed_requests = r->error_total();
    seen.sent_requests = r->responses + r->error_total();
    seen.how = "under the lab's load";
    seen.results = std::move(*r);
    return 0;
}

// Prints the findings and the verdict; `failed`/`sent` add the load's own failure when most requests got no answer.
void print_findings(const std::vector<finding>& findings, std::uint64_t failed, std::uint64_t sent, bool& problem,
                    std::FILE* out) {
    for (const finding& f : findings) {
        problem = problem || f.problem;
        fmt::print(out, "  {:<8} {:<17} {}\n", f.problem ? "problem" : "note", to_string(f.what), f.text);
    }
    if (sent > 0 && 2 * failed > sent) {
        // Most requests never got an answer at all: whatever the service says, the load did not reach it.
        problem = true;
        fmt::print(out, "  {:<8} {:<17} {} of {} requests of the load failed (no response: see the load line)\n",
                   "problem", "failed_requests", thousands(failed), thousands(sent));
    }
}

// `--dotnet PID`: a .NET service has no route report; its runtime's counters over the window stand in for one,
// read with dotnet-counters while the window lasts.
int diagnose_dotnet_process(const diagnose_options& o, const load::plan& plan, bool loading,
                            std::chrono::nanoseconds length, const std::string& base, std::FILE* out, std::FILE* err) {
    const pid_t pid = static_cast<pid_t>(*o.dotnet_pid);
    if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH)) {
        fmt::print(err, "hotpath: lab diagnose: --dotnet {}: no such process\n", pid);
        return 2;
    }
    const auto tool = find_dotnet_counters(o.dotnet_counters, {default_peers_folder()});
    if (!tool) {
        fmt::print(err,
                   "hotpath: lab diagnose: dotnet-counters not found{}: install it with `dotnet tool install "
                   "dotnet-counters --tool-path DIR` and give --dotnet-counters DIR/dotnet-counters (or put it on "
                   "the PATH; scripts/build-peers.sh installs one in build/peers/tools)\n",
                   o.dotnet_counters.empty() ? "" : fmt::format(" at '{}'", o.dotnet_counters));
        return 2;
    }
    auto collector = dotnet_collector::start(*tool, pid, length + std::chrono::seconds{1});
    if (!collector) {
        fmt::print(err, "hotpath: lab diagnose: {}\n", collector.error().message);
        return 1;
    }
    fmt::print(out, "hotpath lab diagnose: reading the .NET runtime counters of process {} with {}\n", pid, *tool);
    load_seen seen;
    if (const int stopped = load_or_watch(o, plan, loading, length, base, seen, out, err); stopped != 0) {
        return stopped;
    }
    auto read = (*collector)->finish();
    if (!read) {
        fmt::print(err, "hotpath: lab diagnose: {}\n", read.error().message);
        return 1;
    }
    const dotnet_figures f = summarize(*read);
    const load_window window = seen.results ? load_window_of(plan, *seen.results) : load_window{};
    auto figure = [](const std::optional<double>& v, const char* format) {
        return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
    };
    fmt::print(out,
               "runtime (as .NET counted it, {:.0f} s with load): CPU {} %, thread-pool threads {} -> {}, queued work "
               "items {} on average, {} allocated, {} outbound HTTP calls\n",
               f.seconds, figure(f.cpu_percent, "{:.0f}"), figure(f.threads_first, "{:.0f}"),
               figure(f.threads_last, "{:.0f}"), figure(f.queue_mean, "{:.1f}"),
               f.allocated_bytes ? format_size(static_cast<std::uint64_t>(*f.allocated_bytes)) : std::string("-"),
               figure(f.outbound_started, "{:.0f}"));
    fmt::print(out, "diagnosis of the {} {} (process {}{}):\n", o.duration, seen.how, pid,
               read->process.empty() ? "" : ", " + read->process);
    const std::string name = target_name(plan);
    bool problem = false;
    print_findings(diagnose_dotnet(f, window, name), seen.failed_requests, seen.sent_requests, problem, out);
    if (!loading) {
        fmt::print(out, "  (no load sent: the rules that count per request need --load)\n");
    }
    fmt::print(out, "{}\n", problem ? "verdict: see the problems above" : "verdict: nothing wrong");
    std::fflush(out);
    return 0;
}

// One page of metrics: errc::unexpected_status (not 200) or errc::invalid_value (not Prometheus text) for a URL that
// answers with something else, else the request's own failure.
result<metrics::scrape, problem> scrape_metrics(const std::string& url) {
    auto got = probe::fetch(url, scrape_timeout);
    if (!got) {
        return std::move(got).error();
    }
    if (got->status != 200) {
        return problem{errc::unexpected_status, fmt::format("GET {} answered {}", url, got->status)};
    }
    auto page = metrics::read_prometheus_text(got->body);
    if (!page) {
        return problem{errc::invalid_value, fmt::format("{} is not Prometheus text: {}", url, page.error().message)};
    }
    return std::move(*page);
}

// `--metrics URL`: any service's OpenTelemetry metrics stand in for a route report: scraped before the window, every
// second during it (for the levels: requests in flight, the thread pool's queue, the event loop), and after.
int diagnose_metrics(const diagnose_options& o, const load::plan& plan, bool loading, std::chrono::nanoseconds length,
                     const std::string& base, std::FILE* out, std::FILE* err) {
    const auto url = http::parse_request_url(o.metrics_url);
    if (!url) {
        fmt::print(err, "hotpath: lab diagnose: --metrics '{}': {}\n", o.metrics_url, url.error().message);
        return 2;
    }
    auto failed = [&](const problem& p, std::string_view when) {
        if (p.code == errc::unexpected_status || p.code == errc::invalid_value) {
            fmt::print(err,
                       "hotpath: lab diagnose: {} (--metrics takes a page of Prometheus text, as OpenTelemetry's "
                       "Prometheus exporter serves it)\n",
                       p.message);
            return 3;
        }
        fmt::print(err, "hotpath: lab diagnose: {} {}: {}\n", when, o.metrics_url, p.message);
        return 1;
    };
    auto before = scrape_metrics(o.metrics_url);
    if (!before) {
        return failed(before.error(), "nothing answers at");
    }
    fmt::print(out, "hotpath lab diagnose: reading the OpenTelemetry metrics at {} ({} samples)\n", o.metrics_url,
               thousands(before->samples.size()));
    const auto started = std::chrono::steady_clock::now();
    std::vector<metrics::scrape> during;
    std::size_t during_failed = 0;
    std::mutex during_lock;
    {
        std::jthread scraper([&](std::stop_token stop) {
            auto next = std::chrono::steady_clock::now() + 1s;
            while (!stop.stop_requested()) {
                if (std::chrono::steady_clock::now() < next) {
                    std::this_thread::sleep_for(50ms);
                    continue;
                }
                next += 1s;
                auto page = scrape_metrics(o.metrics_url);
                const std::lock_guard hold(during_lock);
                if (page) {
                    during.push_back(std::move(*page));
                } else {
                    ++during_failed; // the page itself may wait behind what is wrong (a starved pool)
                }
            }
        });
        load_seen seen_in;
        if (const int stopped = load_or_watch(o, plan, loading, length, base, seen_in, out, err); stopped != 0) {
            return stopped;
        }
        scraper.request_stop();
        scraper.join();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        auto after = scrape_metrics(o.metrics_url);
        if (!after) {
            return failed(after.error(), "it stopped answering:");
        }
        otel_figures f = summarize_otel(*before, during, *after, seconds);
        // The window's own scrapes of the page are this tool's traffic, not the service's: left out.
        const std::string metrics_path = url->target.substr(0, url->target.find('?'));
        std::erase_if(f.routes, [&](const otel_figures::route& r) { return r.route == metrics_path; });
        const load_window window = seen_in.results ? load_window_of(plan, *seen_in.results) : load_window{};
        double requests = 0;
        double calls = 0;
        for (const auto& r : f.routes) {
            requests += r.requests;
        }
        for (const auto& h : f.hosts) {
            calls += h.calls;
        }
        fmt::print(
            out,
            "metrics (as the service counted them, {:.0f} s, {} scrapes during{}): {} requests on {} route{}, {} "
            "outbound calls to {} host{}{}{}\n",
            seconds, during.size(),
            during_failed > 0 ? fmt::format(", {} more that got no page in {} s", during_failed, scrape_timeout.count())
                              : std::string(),
            thousands(static_cast<std::uint64_t>(requests)), f.routes.size(), f.routes.size() == 1 ? "" : "s",
            thousands(static_cast<std::uint64_t>(calls)), f.hosts.size(), f.hosts.size() == 1 ? "" : "s",
            f.runtime.empty() ? "" : ", runtime " + f.runtime,
            f.cpu_seconds ? fmt::format(", {:.2f} CPU-seconds", *f.cpu_seconds) : std::string());
        fmt::print(out, "diagnosis of the {} {}:\n", o.duration, seen_in.how);
        bool problem = false;
        print_findings(diagnose_otel(f, window, target_name(plan)), seen_in.failed_requests, seen_in.sent_requests,
                       problem, out);
        for (const std::string& l : otel_lacking(f)) {
            fmt::print(out, "  {:<8} {:<17} {}\n", "lacking", "evidence", l);
        }
        if (!loading) {
            fmt::print(out, "  (no load sent: the rules that count per request need --load)\n");
        }
        fmt::print(out, "{}\n", problem ? "verdict: see the problems above" : "verdict: nothing wrong");
        std::fflush(out);
    }
    return 0;
}

// The median of `values`, or nothing.
std::optional<double> median(std::vector<double> values) {
    if (values.empty()) {
        return std::nullopt;
    }
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

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
    for (auto& [name, values] : timing_during) {
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
    bool problem = false;
    print_findings(diagnose_from_outside(view, target_name(plan)), seen.failed_requests, seen.sent_requests, problem,
                   out);
    for (const std::string& l : outside_lacking(view)) {
        fmt::print(out, "  {:<8} {:<17} {}\n", "lacking", "evidence", l);
    }
    fmt::print(out, "{}\n",
               problem ? "verdict: see the problems above" : "verdict: nothing wrong that the load can see");
    std::fflush(out);
    return 0;
}

} // namespace

int run_diagnose(const diagnose_options& o, std::FILE* out, std::FILE* err) {
    block_stop_signals();
    const auto service = parse_service_url(o.url);
    if (!service) {
        fmt::print(err, "hotpath: lab diagnose: {}\n", service.error().message);
        return 2;
    }
    const auto length = parse_duration(o.duration);
    if (!length || length->count() <= 0) {
        fmt::print(err, "hotpath: lab diagnose: bad --duration '{}' (e.g. 10s)\n", o.duration);
        return 2;
    }
    const bool loading = o.load || o.load_with.connections || o.load_with.rate || !o.paths.empty();
    load::plan plan;
    if (loading) {
        load::load_options lo = o.load_with;
        if (!lo.connections && !lo.rate) {
            lo.connections = 10; // --load alone: a closed model of 10 connections
        }
        lo.url = o.url;
        lo.duration = o.duration;
        auto planned = load::make_plan(lo);
        if (!planned) {
            fmt::print(err, "hotpath: lab diagnose: {}\n", planned.error().message);
            return 2;
        }
        plan = std::move(*planned);
        for (const std::string& p : o.paths) { // a scenario of one GET per path, equally weighted
            if (p.empty() || p.front() != '/') {
                fmt::print(err, "hotpath: lab diagnose: --path '{}' must start with /\n", p);
                return 2;
            }
            load::request_spec r;
            r.name = p;
            r.path_and_query = p;
            plan.scenario.push_back(std::move(r));
        }
    }

    const std::string base = "http://" + service->authority(); // the report is at the service's root
    if (o.dotnet_pid && !o.metrics_url.empty()) {
        fmt::print(err, "hotpath: lab diagnose: --dotnet and --metrics are two ways to read a service: give one\n");
        return 2;
    }
    if (o.dotnet_pid) {
        return diagnose_dotnet_process(o, plan, loading, *length, base, out, err);
    }
    if (!o.metrics_url.empty()) {
        return diagnose_metrics(o, plan, loading, *length, base, out, err);
    }
    // The service's metrics page, where it has one: its client's calls by downstream host name the hosts the
    // downstream findings are about (the route report counts calls per route, not where they went). Read before the
    // report and after it, so that its requests fall outside the window.
    const auto page_before = scrape_metrics(base + "/metrics");
    auto before = scrape(base);
    if (!before) {
        // Another kind of service, loaded: what the load and Server-Timing show, and what they cannot.
        const bool other_kind =
            before.error().code == errc::unexpected_status || before.error().code == errc::invalid_json;
        if (other_kind && loading) {
            return diagnose_outside(o, plan, *length, base, before.error(), out, err);
        }
        return scrape_failed(before.error(), base, "nothing answers at", err);
    }

    load_seen seen;
    if (const int stopped = load_or_watch(o, plan, loading, *length, base, seen, out, err); stopped != 0) {
        return stopped;
    }
    const std::string& how = seen.how;
    const std::uint64_t client_p95_ns = seen.client_p95_ns;
    const std::uint64_t failed_requests = seen.failed_requests;
    const std::uint64_t sent_requests = seen.sent_requests;

    auto after = scrape(base);
    if (!after) {
        return scrape_failed(after.error(), base, "it stopped answering:", err);
    }
    const auto page_after =
        page_before ? scrape_metrics(base + "/metrics") : result<metrics::scrape, problem>(page_before.error());
    route_report window = difference(*before, *after);
    // The window's own scrape of the report is this tool's traffic, not the service's: left out of it.
    std::erase_if(window.routes,
                  [](const route_figures& r) { return r.method == "GET" && r.route == "/debug/routes"; });
    std::uint64_t answered = 0;
    for (const auto& r : window.routes) {
        answered += r.requests;
    }
    if (answered > 0) {
        fmt::print(out,
                   "diagnosis of the {} {} ({} answers; counts, shares and stalls of the window, percentiles since "
                   "the service started):\n",
                   o.duration, how, thousands(answered));
    } else {
        window = *after;
        fmt::print(out, "nothing was answered in the {}: diagnosis of everything since the service started:\n",
                   o.duration);
    }
    std::vector<finding> findings = diagnose(window);
    if (page_before) {
        if (page_after) {
            const std::string hosts = hosts_text(downstream_hosts(*page_before, *page_after));
            for (finding& f : findings) {
                const bool downstream = f.what == finding::kind::sequential_calls ||
                                        f.what == finding::kind::flooding || f.what == finding::kind::downstream_bound;
                if (downstream && !hosts.empty()) {
                    f.text += "; " + hosts;
                }
            }
        }
    }
    bool problem = false;
    if (findings.empty()) {
        fmt::print(out, "  no route has answered enough requests to judge (give --load to send some)\n");
    }
    print_findings(findings, failed_requests, sent_requests, problem, out);
    // The client's time and the server's apart, for the route the load went to most.
    const route_figures* busiest = nullptr;
    for (const auto& r : window.routes) {
        busiest = busiest == nullptr || r.requests > busiest->requests ? &r : busiest;
    }
    if (client_p95_ns > 0 && busiest != nullptr && busiest->requests > 0) {
        fmt::print(out,
                   "  client p95 {}, server p95 {} ({} {}): the rest is the network, the kernel and the load's own "
                   "wait for a connection\n",
                   ms_text(client_p95_ns), format_duration_ns(busiest->p95_ms * 1e6), busiest->method, busiest->route);
    }
    fmt::print(out, "{}\n",
               problem            ? "verdict: see the problems above"
               : findings.empty() ? "verdict: nothing to judge"
                                  : "verdict: nothing wrong");
    std::fflush(out);
    return 0;
}

} // namespace hotpath::lab
