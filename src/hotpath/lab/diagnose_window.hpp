// The parts of `hotpath lab diagnose` (lab/diagnose.hpp) that every source of evidence shares (the window's load or
// watch, the findings' lines, a metrics page's scrape), and the sources other than a hotpath route report, each in a
// file of its own: a .NET process's runtime counters (diagnose_dotnet.cpp), any service's OpenTelemetry metrics
// (diagnose_metrics.cpp), and what the load alone can see (diagnose_outside.cpp). Internal to the lab.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/lab/diagnose.hpp>
#include <hotpath/lab/diagnosis.hpp>
#include <hotpath/load/results.hpp>
#include <hotpath/metrics/prometheus_reader.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::load {
struct plan;
} // namespace hotpath::load

namespace hotpath::lab::diagnose_detail {

// How long a scrape (a report, a metrics page) may take.
inline constexpr std::chrono::seconds scrape_timeout{5};

// "1.20ms": a duration in nanoseconds as the lines write it.
std::string ms_text(std::uint64_t ns);

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
                  const std::string& base, load_seen& seen, std::FILE* out, std::FILE* err);

// Prints the findings; `failed`/`sent` add the load's own failure when most requests got no answer; `problem` is set
// when any line is one.
void print_findings(const std::vector<finding>& findings, std::uint64_t failed, std::uint64_t sent, bool& problem,
                    std::FILE* out);

// What a source other than a hotpath report ends with: its findings, one `lacking evidence` line for each piece
// of evidence it did not have, the note of a watch without load, and the verdict (`healthy_verdict` when no line is a
// problem).
void print_diagnosis(const std::vector<finding>& findings, const std::vector<std::string>& lacking,
                     const load_seen& seen, bool loading, std::string_view healthy_verdict, std::FILE* out);

// One page of metrics: errc::unexpected_status (not 200) or errc::invalid_value (not Prometheus text) for a URL that
// answers with something else, else the request's own failure.
result<metrics::scrape, problem> scrape_metrics(const std::string& url, const net::tls_client_options& tls);

// `--dotnet PID`: the process's runtime counters over the window (dotnet-counters) instead of a route report.
int diagnose_dotnet_process(const diagnose_options& o, const load::plan& plan, bool loading,
                            std::chrono::nanoseconds length, const std::string& base, std::FILE* out, std::FILE* err);

// `--metrics URL`: any service's OpenTelemetry metrics, scraped before, every second during, and after the window.
int diagnose_metrics(const diagnose_options& o, const load::plan& plan, bool loading, std::chrono::nanoseconds length,
                     const std::string& base, std::FILE* out, std::FILE* err);

// A service that reports nothing lab diagnose reads, loaded: what the load, requests timed alone and Server-Timing
// show; `why_not` says why its report could not be read.
int diagnose_outside(const diagnose_options& o, const load::plan& plan, std::chrono::nanoseconds length,
                     const std::string& base, const problem& why_not, std::FILE* out, std::FILE* err);

} // namespace hotpath::lab::diagnose_detail
