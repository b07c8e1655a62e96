// `hotpath lab [CASE] [--quick] [--out DIR]`: the case studies replayed end to end (src/hotpath/lab/); `lab diagnose
// URL` reads any running hotpath service; `lab compare OLD NEW` sets two runs side by side.
#include "command.hpp"
#include "help.hpp"

#include <hotpath/lab/capacity.hpp>
#include <hotpath/lab/cases.hpp>
#include <hotpath/lab/compare.hpp>
#include <hotpath/lab/diagnose.hpp>
#include <hotpath/lab/runner.hpp>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <limits>
#include <memory>

namespace hotpath::cli {
namespace {

struct lab_command_options {
    lab::lab_options run;
    lab::diagnose_options diagnose;
    tls_flags diagnose_tls; // https://: for the load and every scrape
    std::string compare_old, compare_new, compare_html;
    lab::capacity_options capacity;
    tls_flags capacity_tls;
    std::string capacity_method, capacity_body, capacity_body_file, capacity_timeout, capacity_http;
    std::string which; // the case named on the command line; none: list the cases
};

// `hotpath lab` with no case: what there is and how to start, rather than the full five cases at once (sync-io
// alone holds 4,000 users for minutes).
int list_cases(const lab::lab_options& run) {
    lab::lab_options all = run;
    all.which = "all";
    auto cases = lab::plan_cases(all);
    if (!cases) {
        fmt::print(stderr, "hotpath: {}\n", cases.error().message);
        return 1;
    }
    fmt::print("The write-ups' five cases (docs/lab.md), each run beside its .NET original:\n\n");
    for (const auto& c : *cases) {
        fmt::print("{}", aligned(c.name, c.title, 13));
    }
    fmt::print("\nStart with every case scaled down (under 3 minutes on 2 cores):\n"
               "  hotpath lab all --quick\n"
               "then one case at full size, e.g.:\n"
               "  hotpath lab fanout\n"
               "Results go to lab-results/ (--out): a result.json per case and report.html.\n");
    return 0;
}

runner define_lab(CLI::App& cmd) {
    auto o = std::make_shared<lab_command_options>();
    // Subcommands are words the positional case never takes: CLI11 matches a subcommand's name first.
    CLI::App* diagnose = cmd.add_subcommand(
        "diagnose",
        "Diagnose a running service (hotpath, .NET, or any with OpenTelemetry metrics): watch it, or --load it");
    CLI::App* compare = cmd.add_subcommand("compare", "Compare two lab runs (result.json files or --out folders)");
    CLI::App* capacity = cmd.add_subcommand(
        "capacity", "Any HTTP endpoint's capacity: a step load over users, the Universal Scalability Law fitted, the "
                    "shape named (docs/capacity.md)");
    when_chosen(cmd, [o](CLI::App& c) {
        std::vector<std::string> choices = lab::case_names();
        choices.emplace_back("all");
        c.add_option("case", o->which,
                     "Which case: fanout, freight, platform, sync-io, redirect or all; none: list them")
            ->check(CLI::IsMember(choices));
        c.add_flag("--quick", o->run.quick,
                   "Scaled-down profiles: the whole of `lab all --quick` takes under 3 minutes on 2 cores");
        c.add_option("--out", o->run.out_dir, "Folder of the result files (DIR/<case>/result.json, DIR/report.html)")
            ->capture_default_str();
        c.add_option("--peers", o->run.peers_dir,
                     "Folder of the .NET originals (scripts/build-peers.sh; default: ../peers beside this program)");
        c.add_flag("!--no-originals", o->run.originals, "Run hotpath's side alone, without the .NET originals");
        c.add_flag("--tls", o->run.tls,
                   "Every service over HTTPS, the originals on Kestrel too, with one throw-away certificate made for "
                   "the run");
    });
    when_chosen(*diagnose, [o](CLI::App& c) {
        auto& d = o->diagnose;
        c.add_option("url", d.url, "The service: http[s]://HOST:PORT[/path] (the path is what --load sends)")
            ->required();
        o->diagnose_tls.add_to(c);
        c.add_option("-d,--duration", d.duration, "How long to watch, or to load")->capture_default_str();
        c.add_flag("--load", d.load, "Send load for --duration (closed model, 10 connections unless -c or --rate)");
        c.add_option("-c,--connections", d.load_with.connections, "Load: connections (implies --load)")
            ->check(not_negative());
        c.add_option("--rate", d.load_with.rate, "Load: requests per second, open model (implies --load)");
        c.add_option("--timeout", d.load_with.timeout, "Load: per-request timeout (e.g. 5s)");
        one_value_each(
            c.add_option("--path", d.paths, "Load: a path to send, repeatable: sent evenly (implies --load)"));
        c.add_option("--dotnet", d.dotnet_pid,
                     "A .NET service's process id: read its runtime's counters (thread pool, GC, HttpClient, "
                     "Kestrel) with dotnet-counters instead of a hotpath report")
            ->check(CLI::Range(1, std::numeric_limits<int>::max()));
        c.add_option("--dotnet-counters", d.dotnet_counters,
                     "Path of dotnet-counters (default: build/peers/tools, then the PATH, then ~/.dotnet/tools)");
        c.add_option("--metrics", d.metrics_url,
                     "A service of any stack: its OpenTelemetry metrics in Prometheus text at this URL (e.g. "
                     "http://HOST:9464/metrics), read before, during and after the window instead of a hotpath report");
    });
    when_chosen(*compare, [o](CLI::App& c) {
        c.add_option("old", o->compare_old, "The earlier run: a result.json or a lab --out folder")->required();
        c.add_option("new", o->compare_new, "The later run: a result.json or a lab --out folder")->required();
        c.add_option("--html", o->compare_html,
                     "Also write a self-contained comparison page to this file; - for standard output (the "
                     "comparison's text then "
                     "goes to standard error)");
    });
    when_chosen(*capacity, [o](CLI::App& c) {
        auto& k = o->capacity;
        c.add_option("url", k.load_with.url, "The endpoint: http[s]://HOST:PORT/path (unless --scenario gives it)");
        o->capacity_tls.add_to(c);
        c.add_option("-m,--method", o->capacity_method, "Request method")->default_str("GET");
        one_value_each(c.add_option("-H,--header", k.load_with.headers, "A request header, \"Name: value\""));
        c.add_option("-b,--body", o->capacity_body, "Request body");
        c.add_option("--body-file", o->capacity_body_file, "Read the request body from a file")
            ->check(CLI::ExistingFile);
        c.add_option("--scenario", k.load_with.scenario,
                     "A scenario file (docs/scenarios.md) for every step's requests")
            ->check(CLI::ExistingFile);
        one_value_each(c.add_option("--expect-status", k.load_with.expect_status,
                                    "A status that counts as success (repeatable), e.g. 404"));
        c.add_option("--timeout", o->capacity_timeout, "Per-request timeout")->default_str("10s");
        c.add_flag("--h2", k.load_with.h2, "HTTP/2 by ALPN over TLS (https:// only)");
        c.add_flag("--h2c", k.load_with.h2c, "HTTP/2 over plain TCP with prior knowledge (http:// only)");
        c.add_option("--http", o->capacity_http, "1.1, 2, or auto (ALPN over https://)");
        c.add_option("--max-users", k.max_users, "The last step's users at most")
            ->capture_default_str()
            ->check(CLI::Range(1u, 100000u));
        c.add_option("--min-steps", k.min_steps, "Steps before a plateau may end the run")
            ->capture_default_str()
            ->check(CLI::Range(1u, 20u));
        c.add_option("--step", k.step, "Each step's measured window at least")->capture_default_str();
        c.add_option("--max-step", k.max_step, "... and at most, held longer while unsteady or short of requests")
            ->capture_default_str();
        c.add_option("--warmup", k.warmup, "Each step's warm-up, left out")->capture_default_str();
        c.add_option("--min-requests", k.min_requests, "Answers a step's window needs, unless --max-step passes")
            ->capture_default_str();
        c.add_option("--max-errors", k.max_errors, "A step past this share of failed requests is the last (0.01: 1%)")
            ->capture_default_str();
        c.add_option("--max-latency", k.max_latency, "A step whose mean latency passes this is the last, e.g. 2s");
        c.add_option("--json", k.json_path,
                     "Write the result (hotpath-capacity/1) to this file; - for standard output");
        c.add_option("--html", k.html_path,
                     "Write a self-contained page of the result, throughput and latency plotted against users");
    });
    return [o, diagnose, compare, capacity]() -> int {
        if (capacity->parsed()) {
            auto& lw = o->capacity.load_with;
            lw.tls = o->capacity_tls.apply();
            auto given = [&](const char* name) { return capacity->count(name) > 0; };
            if (given("--method")) {
                lw.method = o->capacity_method;
            }
            if (given("--body")) {
                lw.body = o->capacity_body;
            }
            if (given("--body-file")) {
                lw.body_file = o->capacity_body_file;
            }
            if (given("--timeout")) {
                lw.timeout = o->capacity_timeout;
            }
            if (given("--http")) {
                lw.http = o->capacity_http;
            }
            return lab::run_capacity(o->capacity, stdout, stderr);
        }
        if (diagnose->parsed()) {
            o->diagnose.load_with.tls = o->diagnose_tls.apply();
            return lab::run_diagnose(o->diagnose, stdout, stderr);
        }
        if (compare->parsed()) {
            return lab::run_compare(o->compare_old, o->compare_new, o->compare_html, stdout, stderr);
        }
        if (o->which.empty()) {
            return list_cases(o->run);
        }
        o->run.which = o->which;
        return lab::run_lab(o->run, stdout, stderr);
    };
}

const registration lab_registration{
    {"lab", "Replay the case studies: start the services, load them, diagnose, compare with the write-ups", define_lab,
     "0 done, 1 a case could not run (a service failed to start, a file could not be written), 2 bad usage, 3 "
     "not a hotpath service (diagnose), 130 interrupted (Ctrl-C)"}};

} // namespace
} // namespace hotpath::cli
