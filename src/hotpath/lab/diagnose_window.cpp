// The window every source of lab diagnose shares: the load or the watch, the findings' lines, a metrics page's
// scrape.
#include <hotpath/lab/diagnose_window.hpp>

#include <hotpath/core/units.hpp>
#include <hotpath/lab/services.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/load/report.hpp>
#include <hotpath/load/runner.hpp>
#include <hotpath/probe/probe.hpp>

#include <fmt/core.h>

#include <thread>

namespace hotpath::lab::diagnose_detail {

namespace {

using namespace std::chrono_literals;

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

} // namespace

std::string ms_text(std::uint64_t ns) {
    return format_duration_ns(static_cast<double>(ns));
}

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
    auto r = run_load(plan, load::progress_mode::none, err);
    if (!r && r.error().code == errc::cancelled) {
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

void print_diagnosis(const std::vector<finding>& findings, const std::vector<std::string>& lacking,
                     const load_seen& seen, bool loading, std::string_view healthy_verdict, std::FILE* out) {
    bool problem = false;
    print_findings(findings, seen.failed_requests, seen.sent_requests, problem, out);
    for (const std::string& l : lacking) {
        fmt::print(out, "  {:<8} {:<17} {}\n", "lacking", "evidence", l);
    }
    if (!loading) {
        fmt::print(out, "  (no load sent: the rules that count per request need --load)\n");
    }
    fmt::print(out, "{}\n", problem ? std::string_view("verdict: see the problems above") : healthy_verdict);
    std::fflush(out);
}

// One page of metrics: errc::unexpected_status (not 200) or errc::invalid_value (not Prometheus text) for a URL that
// answers with something else, else the request's own failure.
result<metrics::scrape, problem> scrape_metrics(const std::string& url, const net::tls_client_options& tls) {
    auto got = probe::fetch(url, scrape_timeout, 64 * 1024 * 1024, tls);
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

} // namespace hotpath::lab::diagnose_detail
