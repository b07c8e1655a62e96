// `hotpath lab diagnose URL`: the lab's diagnosis pointed at any running hotpath service on any host, either
// loaded by the lab itself (src/hotpath/load) or watched under someone else's load, its GET /debug/routes read before
// and after.
#pragma once

#include <hotpath/load/options.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace hotpath::lab {

// `hotpath lab diagnose URL [--duration D] [--load] [-c N] [--rate R] [--path P]...` as typed.
struct diagnose_options {
    std::string url;                // http://HOST:PORT[/path]: the service, and the path a load sends to
    std::string duration = "10s";   // how long to watch, or to load
    bool load = false;              // send load (also when connections or rate is given); else watch
    load::load_options load_with;   // connections, rate, timeout; the url and duration are set from the above
    std::vector<std::string> paths; // load these paths evenly (implies load); empty: the URL's path
    std::optional<int> dotnet_pid;  // a .NET service: its runtime's counters (dotnet-counters) instead of a report
    std::string dotnet_counters;    // the tool's path; empty: found (lab/dotnet_collector.hpp)
    std::string metrics_url;        // any service: its OpenTelemetry metrics in Prometheus text (lab/otel_metrics.hpp)
};

// Scrapes, waits (watching or loading), scrapes again, prints the findings of what changed in between on `out`
// (or of the whole report since the service started, when nothing was answered in between, and says which). With
// `dotnet_pid`, reads that .NET process's runtime counters over the window instead and applies the .NET rules; with
// `metrics_url`, scrapes that page of OpenTelemetry metrics before, every second during, and after the window.
// Exit codes: 0 findings printed ("nothing wrong" for a healthy service); 1 nothing answers at the URL (down,
// refused, timed out) or the load could not run; 2 bad usage; 3 the URL answers but is not a hotpath service (no
// GET /debug/routes report), or the metrics URL answers with no Prometheus text; 130 interrupted. Failures are one line
// on `err`. Blocks SIGINT/SIGTERM in the calling thread (call from main's thread before any other thread starts).
int run_diagnose(const diagnose_options& o, std::FILE* out, std::FILE* err);

} // namespace hotpath::lab
