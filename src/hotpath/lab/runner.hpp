// Runs the lab's plan: per case, its services as children, each variant loaded in-process, the services' own
// reports scraped and diagnosed; then the verdict and result files (report.hpp).
#pragma once

#include <hotpath/lab/cases.hpp>
#include <hotpath/lab/diagnosis.hpp>
#include <hotpath/lab/dotnet_counters.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/load/results.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace hotpath::lab {

// One variant's run: the plan sent, what the load measured, and what its service said of itself.
struct variant_outcome {
    std::string name;
    bool original = false; // the write-up's own service on Kestrel (original_name(variant)), not hotpath's
    load::plan plan;
    load::results results;
    std::string routes_json;  // GET /debug/routes of the loaded service after the load, as it answered
    std::string scrape_error; // why there is no report ("" when there is one): a blocked service may not answer
    std::vector<finding> diagnosis;
    std::optional<dotnet_figures> dotnet; // an original's runtime counters over its load, when they were read
};

// A service every variant of a case used (the downstream), scraped at the end of the case.
struct shared_outcome {
    std::string name;
    std::string routes_json;
    std::string scrape_error;
    std::vector<finding> diagnosis;
};

struct case_outcome {
    case_spec spec;
    bool https = false; // every service served over HTTPS (lab --tls)
    std::vector<variant_outcome> variants;
    std::vector<shared_outcome> shared;
};

// Runs the cases of `o`: progress lines on `progress`, the verdict on `out`, files under o.out_dir. Blocks
// SIGINT/SIGTERM in the calling thread (call it from main's thread before any other thread starts); on either,
// the children are stopped and it returns 130. Returns 0 when every case ran, 1 when one could not (a service
// did not start, a file could not be written), 2 for a bad case name.
int run_lab(const lab_options& o, std::FILE* out, std::FILE* progress);

} // namespace hotpath::lab
