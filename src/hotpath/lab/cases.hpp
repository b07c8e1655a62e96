// The lab's plan: which cases run, their services, their variants and load profiles, and the write-ups' figures.
// Only data and its checks: runner.hpp runs it, report.hpp shows it.
#pragma once

#include <hotpath/core/result.hpp>

#include <hotpath/load/options.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotpath::lab {

// `hotpath lab [CASE] [--quick] [--out DIR]` as typed.
struct lab_options {
    std::string which = "all"; // a case's name or "all"
    bool quick = false;
    std::string out_dir = "lab-results";
    // The write-ups' own services on Kestrel (peers/dotnet, published by scripts/build-peers.sh): each case also
    // loads them where they are built. "" looks next to this executable (<its folder>/../peers).
    std::string peers_dir;
    bool originals = true; // --no-originals: hotpath's side alone
    // --tls: every service over HTTPS, hotpath's and the originals, with one throw-away certificate made for the run
    // (lab/certificates.hpp); the load and every scrape trust its CA alone.
    bool tls = false;
};

// A write-up's own service for a variant or a shared service: the program <peers>/<program>/<program> with its
// arguments ("{port}" is the port the lab chose, "{scheme}" http or https, "{upstream}" the URL of the case's first
// shared original, "{dir}" the case's folder), ready once GET `ready_path` answers anything (pick a path it answers at
// once).
struct original_spec {
    std::string program;
    std::vector<std::string> args;
    std::string ready_path = "/";
};

// The name of a variant's run on its original: "sequential (Kestrel)".
std::string original_name(const std::string& variant);

// One loaded variant of a case: its own service (serve arguments; "{upstream}" is replaced by the URL of the
// case's first shared service, "{dir}" by the case's folder) and the load sent to it (the url holds only the
// path and query; load.scenario may name a file in "{dir}", then the url sets only host and port).
struct variant_spec {
    std::string name;
    std::vector<std::string> serve; // e.g. {"aggregator", "--upstream", "{upstream}"}; empty: load a shared one
    std::string path_and_query = "/";
    load::load_options load; // everything but the url
    // Where it is set and the original is built, the same load is sent to it too, as original_name(name).
    std::optional<original_spec> original;
};

// A file the lab writes into the case's folder before the setup commands run (e.g. a load scenario).
struct case_file {
    std::string name; // relative to the case's folder
    std::string text;
};

// The figure a case is judged by: a ratio of one latency percentile or throughput between two variants, or one
// variant's figure alone (denominator empty), next to the write-up's. success_rps counts only successful answers
// (1xx-3xx or expected statuses) per second: a server that times out or refuses everything scores 0.
struct headline {
    enum class metric : std::uint8_t { p95, rps, success_rps } what = metric::p95;
    std::string numerator;   // a variant's name
    std::string denominator; // a variant's name, or "" for the numerator's own figure
    double write_up = 0;     // the write-up's ratio, or its own figure (requests/s)
    std::string write_up_text;
};

struct case_spec {
    std::string name;
    std::string title;                            // one line: what the case shows
    std::vector<std::vector<std::string>> shared; // services every variant uses (serve arguments)
    std::vector<original_spec> shared_originals;  // the same for the variants' originals
    std::vector<variant_spec> variants;
    headline judged_by;
    // When either is set, the case gets a fresh folder ("{dir}" in arguments), removed when the case ends: `files`
    // are written into it, then each `setup` command (`hotpath` arguments, e.g. {"freight", "init", "--db",
    // "{dir}/freight.sqlite"}) runs in order, before any service starts; one failing fails the case.
    std::vector<case_file> files;
    std::vector<std::vector<std::string>> setup;
    // The verdict shows each variant's heap allocations per request (from its /debug/routes; "not counted" in a
    // build without the allocation counter).
    bool show_allocations = false;
};

// The cases `which` names ("all": every case, in CASES.md's order: fanout, freight, platform, sync-io, redirect),
// scaled down with `quick`. errc::invalid_value with a one-line reason when `which` is not a case.
result<std::vector<case_spec>, problem> plan_cases(const lab_options& o);

// The case names in CASES.md's order, for usage lines.
std::vector<std::string> case_names();

} // namespace hotpath::lab
