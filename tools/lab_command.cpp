// `hotpath lab [CASE] [--quick] [--out DIR]`: the case studies replayed end to end (src/hotpath/lab/); `lab diagnose
// URL` reads any running hotpath service; `lab compare OLD NEW` sets two runs side by side.
#include "command.hpp"
#include "help.hpp"

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
    return [o, diagnose, compare]() -> int {
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
