// `hotpath lab diagnose URL --metrics URL`: any service's OpenTelemetry metrics over the window.
#include <hotpath/lab/diagnose_window.hpp>

#include <hotpath/http/url.hpp>
#include <hotpath/lab/otel_metrics.hpp>
#include <hotpath/load/plan.hpp>

#include <fmt/core.h>

#include <mutex>
#include <stop_token>
#include <thread>

namespace hotpath::lab::diagnose_detail {

using namespace std::chrono_literals;

// `--metrics URL`: any service's OpenTelemetry metrics stand in for a route report: scraped before the window, every
// second during it (for the levels: requests in flight, the thread pool's queue, the event loop), and after.
int diagnose_metrics(const diagnose_options& o, const load::plan& plan, bool loading, std::chrono::nanoseconds length,
                     const std::string& base, std::FILE* out, std::FILE* err) {
    const auto url = http::parse_url(o.metrics_url);
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
    auto before = scrape_metrics(o.metrics_url, o.load_with.tls);
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
                auto page = scrape_metrics(o.metrics_url, o.load_with.tls);
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
        auto after = scrape_metrics(o.metrics_url, o.load_with.tls);
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
        print_diagnosis(diagnose_otel(f, window, target_name(plan)), otel_lacking(f), seen_in, loading,
                        "verdict: nothing wrong", out);
    }
    return 0;
}

} // namespace hotpath::lab::diagnose_detail
