// The lab's outputs: the console verdict per case and DIR/<case>/result.json (schema hotpath-lab/1, docs/lab.md).
#pragma once

#include <hotpath/core/result.hpp>

#include <hotpath/lab/runner.hpp>

#include <cstdio>
#include <optional>
#include <string>

namespace hotpath::lab {

// The case's headline figure (headline in cases.hpp) from its outcome; nullopt when a variant it names is missing
// or a p95's denominator is 0. A throughput whose denominator had no success at all gives a lower bound: the
// numerator's figure over one success in the denominator's measured window (result.json says "lower_bound").
std::optional<double> headline_value(const case_outcome& c);
// The same for any headline over the case's variants (e.g. original_headline(c.spec.judged_by)).
std::optional<double> headline_value(const case_outcome& c, const headline& h);
// The headline over the variants' originals on Kestrel (original_name of its numerator and denominator).
headline original_headline(const headline& h);

// One screen: the variants side by side (p50/p95/p99, requests/s, errors), the headline next to the write-up's,
// and the diagnosis lines.
void print_verdict(std::FILE* out, const case_outcome& c);

// The result document of one case, one JSON object (docs/lab.md).
std::string result_json(const case_outcome& c, const lab_options& o);

// Writes result_json() to `path`, creating its folder; a one-line problem when it cannot.
result<void, problem> write_result(const case_outcome& c, const lab_options& o, const std::string& path);

} // namespace hotpath::lab
