// `hotpath lab compare OLD NEW`: two lab runs side by side, per case and variant, with each figure's change and
// whether it is larger than this machine's run-to-run noise; a console table and a self-contained HTML page.
#pragma once

#include <hotpath/core/result.hpp>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hotpath::lab {

// The figures of one variant of a result.json (schema hotpath-lab/1, docs/lab.md).
struct variant_figures {
    double rps = 0;
    double p50_ms = 0, p95_ms = 0, p99_ms = 0;
    double errors = 0;
    double requests = 0;
};

// One case of one side: its variants by name (in the file's order) and its headline.
struct case_figures {
    std::vector<std::pair<std::string, variant_figures>> variants;
    std::string headline_label; // "sequential/bounded p95"
    std::optional<double> headline;
};

// One side: its cases by name.
struct lab_side {
    std::string source; // as given
    std::map<std::string, case_figures> cases;
};

// Reads a result.json, or a folder of DIR/<case>/result.json (a lab --out folder). A one-line problem when it is
// neither, or a file is not a hotpath-lab/1 document.
result<lab_side, problem> read_lab_side(const std::string& path);

// One figure, old and new.
struct figure_change {
    std::string name;      // "rps", "p50", "p95", "p99", "errors", "headline"
    bool higher_is_better; // rps; latencies and errors: lower
    bool judged;           // false for the headline: a ratio with no better direction in general
    double old_value = 0, new_value = 0;
    std::optional<double> change; // (new - old) / old; nullopt when old is 0
    // "within noise", "faster", "slower", "more errors", "fewer errors", "changed", "" (unchanged zero)
    std::string verdict;
};

struct variant_change {
    std::string case_name;
    std::string variant; // "" for the case's headline row
    std::string label;   // the headline's label ("sequential/bounded p95"), on its row
    std::vector<figure_change> figures;
};

struct comparison {
    std::vector<variant_change> rows;
    std::vector<std::string> only_old; // "case/variant" (or "case") present on one side only
    std::vector<std::string> only_new;
    double noise = 0.15;
};

// Differences under `noise` (a share: 0.15 = 15 %) are not meaningful from one run on a shared, noisy machine.
comparison compare(const lab_side& old_side, const lab_side& new_side, double noise = 0.15);

void print_comparison(std::FILE* out, const comparison& c, const lab_side& old_side, const lab_side& new_side);

// One HTML page, no external URL: the table with an inline-SVG bar pair per figure; light and dark by
// prefers-color-scheme.
std::string comparison_html(const comparison& c, const lab_side& old_side, const lab_side& new_side);

// `hotpath lab compare OLD NEW [--html FILE]`: 0 compared (differences are not failures); 1 the HTML file could
// not be written; 2 a side is not a result file or folder (one line on `err`).
int run_compare(const std::string& old_path, const std::string& new_path, const std::string& html_path, std::FILE* out,
                std::FILE* err);

} // namespace hotpath::lab
