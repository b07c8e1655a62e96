// Reports of a load run: the console summary, the versioned JSON document (docs/load-json.md), thresholds.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/core/units.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/load/results.hpp>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::load {

struct threshold_outcome {
    const threshold* rule = nullptr;
    double actual = 0; // same unit as rule->limit
    bool pass = false;
};

std::vector<threshold_outcome> evaluate(const plan& p, const results& r);

// How a run ended, for the exit code: every threshold held; a threshold failed; or no request succeeded at all
// (the target was down, refused every connection, or answered only errors), which no threshold can excuse.
enum class verdict : std::uint8_t { passed, threshold_failed, nothing_succeeded };
verdict judge(const results& r, const std::vector<threshold_outcome>& outcomes) noexcept;

// The protocol the plan speaks, as the reports name it: http/1.1, h2, h2c, or auto (ALPN decides per connection).
std::string_view protocol_name(const plan& p) noexcept;

// The run's first line, printed as it starts: "hotpath load URL: closed model, 50 connections, 2 threads".
void print_header(std::FILE* out, const plan& p);

// The console report (wrk/oha-like) after the header: totals, rates, latency summary and percentiles with a
// distribution plot, statuses, errors by class, connections, transfer, open-model figures, thresholds, and a
// line saying so when nothing succeeded.
void print_report(std::FILE* out, const plan& p, const results& r, const std::vector<threshold_outcome>& outcomes);

// The JSON document, schema "hotpath-load/1" (docs/load-json.md): everything in the report plus the full
// histograms with their exact sums, so runs merge exactly. One line, no trailing newline; the same inputs always
// give the same bytes. Read back with from_json() and merged with merge_files() (load/merge.hpp).
std::string to_json(const plan& p, const results& r, const std::vector<threshold_outcome>& outcomes);

} // namespace hotpath::load
