// The metrics of a run as every output names them (docs/load-out.md): a Prometheus scrape, Prometheus remote-write
// and OTLP are each a sink that describe() walks, so that the three say the same things in the same words.
#pragma once

#include <hotpath/load/live.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/metrics/prometheus.hpp>

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotpath::load_out {

// What describe() says of the run besides its live figures.
struct run_view {
    // Labels on every series: the user's --tag NAME=VALUE, then the run's own (generator, segment).
    std::vector<std::pair<std::string, std::string>> tags;
    // The plan's level now: virtual users (closed model) or requests/s (open); and which.
    double target = 0;
    bool open_model = false;
};

// The labels of a run: `tags` given by the user, `generator` (this host and process, so that generators writing
// to one place stay apart) and `segment` when the plan is split.
std::vector<std::pair<std::string, std::string>> run_tags(const load::plan& p,
                                                          std::vector<std::pair<std::string, std::string>> tags);

// The level `p` asks for `elapsed` into the run (0 before it): this run's part of it with --segment.
double target_at(const load::plan& p, std::chrono::nanoseconds elapsed);

class metric_sink {
public:
    virtual ~metric_sink() = default;
    // A family of metrics: its Prometheus name (with its unit and _total, as exposition names them), its
    // OpenTelemetry name and unit (UCUM: "s", "By", "{request}"), its help and its type. The values that follow
    // belong to it.
    virtual void family(std::string_view name, std::string_view otel_name, std::string_view unit, std::string_view help,
                        metrics::metric_type type) = 0;
    virtual void value(std::span<const metrics::label> labels, double v) = 0;
    // Counts per bucket of load::live_bounds_s (not cumulative; one more than the bounds: +Inf), and their sum.
    virtual void histogram(std::span<const metrics::label> labels, std::span<const std::uint64_t> counts,
                           double sum_seconds) = 0;
};

void describe(const load::live_snapshot& s, const run_view& run, metric_sink& sink);

// The Prometheus text exposition of the same (a scrape endpoint's body).
std::string prometheus_text(const load::live_snapshot& s, const run_view& run);

} // namespace hotpath::load_out
