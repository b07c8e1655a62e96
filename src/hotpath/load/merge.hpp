// Reading "hotpath-load/1" JSON documents back (from_json) and merging runs made from several machines.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/load/report.hpp>
#include <hotpath/load/results.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace hotpath::load {

// A run read back from its JSON document. `p` holds what the report shows (target, method, model, threads,
// connections, rate, pipeline, keep-alive, stages, planned and warm-up time, thresholds); headers, body,
// timeout and limits are not in the document and keep their defaults. Each outcome points into p.thresholds:
// the struct moves (a vector's move keeps its elements in place) but does not copy. ~60 KB: keep few on the stack.
struct loaded_report {
    plan p;
    results r;
    std::vector<threshold_outcome> outcomes;
    // With --segment: the parts of the plan merged so far, as ranges [from, to) side by side, in order (one range
    // once they touch: p.part is then that range, the whole plan's at [0, 1)).
    std::vector<std::pair<fraction, fraction>> covered;
    std::vector<fraction> sequence; // ... and the boundaries of all the plan's parts
};

// Parses a document written by to_json(); to_json() of the result gives back the same bytes. Threshold outcomes
// are evaluated again from the exact state (the document's "actual" and "pass" are derived fields). Any other
// schema, malformed JSON, a missing field, a field of the wrong kind, an inconsistent histogram or a histogram
// layout other than this build's gives an error with a one-line message naming the field. Never throws on bad input
// (only std::bad_alloc).
result<loaded_report, problem> from_json(std::string_view text);

// Adds `part` to `into` as runs made at the same time from several machines: counts and histograms add, the
// per-second series add second by second, `measured` is the longest of the two (so throughput is total responses
// over the longest window), threads add, the other plan fields stay `into`'s, and the thresholds (`into`'s, or
// `part`'s when `into` has none) are judged again on the merged run: one verdict for the whole. A scenario's
// per-request figures add by position. Refuses (`into` unchanged, errc::invalid_value and one line) to mix the open
// and the closed model, whose latencies measure different things, scenarios whose requests differ in name at the
// same position, or runs whose thresholds differ.
result<void, problem> merge_into(loaded_report& into, const loaded_report& part);

// `hotpath load merge FILE...`: reads each file, merges them in order, and sets `out_json` to the merged document
// (to_json, no trailing newline), `report_text` to its console report (print_report) and `judged`, if given, to the
// merged run's verdict on its thresholds. On failure returns an error whose one line names the file. Setup code:
// reads files, allocates.
result<void, problem> merge_files(const std::vector<std::string>& paths, std::string& out_json,
                                  std::string& report_text, verdict* judged = nullptr);

} // namespace hotpath::load
