// `hotpath lab capacity URL`: any HTTP endpoint's capacity from the outside (docs/capacity.md). A closed-model step
// load over users doubling from one, each step held until it is steady; the Universal Scalability Law fitted to the
// steps (lab/capacity_fit.hpp) and the shape it names, in words, on the terminal and as JSON.
#pragma once

#include <hotpath/lab/capacity_fit.hpp>
#include <hotpath/load/options.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace hotpath::lab {

struct capacity_options {
    load::load_options load_with; // the URL, method, fields, body, timeout, protocol, TLS of every step's requests
    unsigned max_users = 1024;    // the last step at most
    unsigned min_steps = 6;       // steps before a plateau may end the run (1, 2, 4, 8, 16, 32 users)
    std::string step = "3s";      // each step's measured window at least
    std::string max_step = "12s"; // ... and at most, held longer while unsteady or short of min_requests
    std::string warmup = "1s";    // each step's warm-up, left out
    unsigned min_requests = 100;  // answered in a step's window at least, unless max_step passes
    double max_errors = 0.01;     // a step past this share of failed requests is the last
    std::string max_latency;      // a step whose mean latency passes this is the last ("" none)
    std::string json_path; // the result as JSON here ("" none; "-" standard output, the steps' lines then on err)
    std::string html_path; // the result as a page here, its charts drawn (lab/html_report.hpp; "" none)
};

// What the run found: its steps in order, the fit, the verdict, and why the steps stopped.
struct capacity_result {
    std::string url;
    std::vector<capacity_step> steps;
    std::vector<bool> fitted; // per step: taken into the fit (answered, within the error limit, Little's law holds)
    std::optional<capacity_recheck> recheck; // the first step that queued, measured again at the end
    std::optional<usl_fit> fit;
    capacity_verdict verdict;
    std::string stopped; // "throughput stopped growing", "errors past 1%", "latency past 2s", "max users"
};

// The result as the JSON document `hotpath-capacity/1` (docs/capacity.md).
std::string capacity_json(const capacity_result& r);

// Runs the steps, printing each as it ends and the verdict on `out` (on `err` when the JSON goes to standard output).
// Exit codes: 0 a verdict printed; 1 nothing answers at the URL, or no step could run; 2 bad usage (one line on `err`);
// 130 interrupted. Blocks SIGINT/SIGTERM in the calling thread (call from main's thread before any other thread
// starts).
int run_capacity(const capacity_options& o, std::FILE* out, std::FILE* err);

} // namespace hotpath::lab
