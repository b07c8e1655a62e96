// Reports of a load run: the console summary, the versioned JSON document (docs/load-json.md), thresholds.
#pragma once

#include "core/result.hpp"
#include "load/plan.hpp"
#include "load/results.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace hotpath::load {

struct threshold_outcome {
    const threshold* rule = nullptr;
    double actual = 0; // same unit as rule->limit
    bool pass = false;
};

std::vector<threshold_outcome> evaluate(const plan& p, const results& r);

// The console report (wrk/oha-like): totals, rates, latency summary and percentiles with a distribution
// plot, statuses, errors by class, transfer, open-model figures, thresholds.
void print_report(std::FILE* out, const plan& p, const results& r, const std::vector<threshold_outcome>& outcomes);

// The JSON document, schema "hotpath-load/1" (docs/load-json.md): everything in the report plus the full
// histograms with their exact sums, so runs merge exactly. One line, no trailing newline; the same inputs always
// give the same bytes. Read back with from_json() and merged with merge_files() (load/merge.hpp).
std::string to_json(const plan& p, const results& r, const std::vector<threshold_outcome>& outcomes);

// "1.23ms", "850us", "2.5s".
std::string format_duration_ns(double ns);

} // namespace hotpath::load
