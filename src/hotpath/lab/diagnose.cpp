// `hotpath lab diagnose URL`: scrape, watch or load, scrape again, diagnose what changed.
#include <hotpath/lab/diagnose.hpp>

#include <hotpath/lab/diagnose_window.hpp>
#include <hotpath/lab/diagnosis.hpp>
#include <hotpath/lab/otel_metrics.hpp>
#include <hotpath/lab/services.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/metrics/prometheus_reader.hpp>
#include <hotpath/probe/probe.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

namespace hotpath::lab {

namespace {

using namespace std::chrono_literals;
using namespace diagnose_detail;

// The service's URL: any host (services live in containers and on other machines), http:// or https://.
result<http::url, problem> parse_service_url(const std::string& text) {
    auto u = http::parse_url(text);
    if (!u) {
        return problem{u.error().code, u.error().message + " (e.g. http://127.0.0.1:5060)"};
    }
    return std::move(*u);
}

// An overloaded hotpath service refuses the report's request too (503 at its in-flight or connection limit):
// asked again every 50 ms, since a slot frees as soon as one handler ends, for scrape_timeout in all. The problem's
// code says how it failed: errc::overloaded (503 throughout), errc::unexpected_status or errc::invalid_json (not
// hotpath), else the request's own (the service is down).
result<route_report, problem> scrape(const std::string& base, const net::tls_client_options& tls) {
    const std::string report_url = base + "/debug/routes";
    const auto until = std::chrono::steady_clock::now() + scrape_timeout;
    constexpr std::size_t most = 64 * 1024 * 1024;
    auto got = probe::fetch(report_url, scrape_timeout, most, tls);
    while (got && got->status == 503 && std::chrono::steady_clock::now() < until && !interrupted()) {
        std::this_thread::sleep_for(50ms);
        got = probe::fetch(report_url, scrape_timeout, most, tls);
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
        lo.ignore_retry_after = true; // the load keeps its pressure: an overloaded service's 503s are the evidence
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

    // The report is at the service's root, on the URL's scheme.
    const std::string base = (service->tls() ? "https://" : "http://") + service->authority();
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
    const auto page_before = scrape_metrics(base + "/metrics", o.load_with.tls);
    auto before = scrape(base, o.load_with.tls);
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

    auto after = scrape(base, o.load_with.tls);
    if (!after) {
        return scrape_failed(after.error(), base, "it stopped answering:", err);
    }
    const auto page_after = page_before ? scrape_metrics(base + "/metrics", o.load_with.tls)
                                        : result<metrics::scrape, problem>(page_before.error());
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
