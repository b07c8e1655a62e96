// `hotpath load URL [options]` and `hotpath load merge FILES`: options to a plan (load/options.hpp), a run, reports.
#include "command.hpp"

#include <hotpath/load/merge.hpp>
#include <hotpath/load/options.hpp>
#include <hotpath/load/report.hpp>
#include <hotpath/load/runner.hpp>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <unistd.h>

namespace hotpath::cli {
namespace {

// The options as CLI11 fills them; given() tells which the command line named.
struct load_flags {
    load::load_options o;
    unsigned connections = 50;
    std::string duration;
    std::uint64_t requests = 0;
    unsigned threads = 0;
    std::string method;
    std::string body;
    std::string body_file;
    std::string timeout;
    unsigned pipeline = 1;
    unsigned streams = 1;
    std::string http;
    double rate = 0;
    unsigned max_connections = 0;
    std::string stages;
    std::string warmup;
    std::string json;
    std::string io = "auto";
    bool quiet = false;
    tls_flags tls;

    void add_to(CLI::App& cmd) {
        tls.add_to(cmd);
        cmd.add_option("url", o.url, "Target, http[s]://host[:port]/path (required unless --scenario gives it)");
        cmd.add_option("-c,--connections", connections, "Connections (closed model: virtual users)")
            ->default_str("50")
            ->check(CLI::Range(1u, 100000u));
        cmd.add_option("-d,-z,--duration", duration, "Run time, e.g. 10s, 2m (default 10s, or until -n is done)");
        cmd.add_option("-n,--requests", requests, "Stop after exactly this many requests (like ab -n)")
            ->check(not_negative());
        cmd.add_option("-t,--threads", threads, "Worker threads, one event loop each; 0: one per core")
            ->default_str("0")
            ->check(CLI::Range(0u, 1024u));
        cmd.add_option("-m,--method", method, "Request method")->default_str("GET");
        one_value_each(cmd.add_option("-H,--header", o.headers, "A request header, \"Name: value\" (repeatable)"));
        cmd.add_option("-b,--body", body, "Request body");
        cmd.add_option("--body-file", body_file, "Read the request body from a file");
        cmd.add_option("--timeout", timeout, "Per-request timeout")->default_str("10s");
        cmd.add_flag("--no-keepalive", o.no_keepalive, "A new connection per request (like ab without -k)");
        cmd.add_flag("--keep-trying", o.keep_trying,
                     "Keep connecting for the whole run when nothing connects at first (a target still starting); "
                     "without it, a run that opened no connection in its first 2 s stops there");
        cmd.add_option("--pipeline", pipeline, "Requests sent back to back per connection (closed model)")
            ->default_str("1")
            ->check(CLI::Range(1u, 1024u));
        cmd.add_flag("--h2", o.h2,
                     "HTTP/2: over https:// agreed through ALPN (h2 only offered), over http:// with prior knowledge");
        cmd.add_flag("--h2c", o.h2c, "HTTP/2 over plain TCP with prior knowledge (http:// only)");
        cmd.add_option("--http", http,
                       "1.1, 2 (as --h2), or auto: over https:// each connection speaks what ALPN agrees, h2 first")
            ->default_str("1.1");
        cmd.add_option("--streams", streams,
                       "HTTP/2: requests in flight per connection, each on its own stream (h2load's -m)")
            ->default_str("1")
            ->check(CLI::Range(1u, 1000u));
        cmd.add_option("-R,--rate", rate,
                       "Open model: requests per second (> 0), latency measured from the scheduled send");
        cmd.add_option("--max-connections", max_connections,
                       "Open model: most connections to open (default -c); sends that find all busy are reported "
                       "late")
            ->check(CLI::Range(1u, 1000000u));
        cmd.add_option(
            "--stages", stages,
            "Load profile: \"rate=1/s:5s, rate=2/s:10s\" (open) or \"vus=0..240:60s, vus=240:60s\" (closed); "
            "sets the run's length (not with -d or --rate)");
        cmd.add_option("--warmup", warmup, "Leave this first period out of the results, e.g. 5s");
        one_value_each(cmd.add_option("--threshold", o.thresholds,
                                      "Pass/fail: p95<150ms, errors<8%, rps>1000 (repeatable; exit 3 on failure)"));
        one_value_each(
            cmd.add_option("--expect-status", o.expect_status, "A status that counts as success (repeatable), e.g. 404")
                ->check(CLI::Range(100u, 599u)));
        cmd.add_option("--json", json,
                       "Also write the results as JSON (schema hotpath-load/1) to this file; - for standard output "
                       "(the report then goes to standard error)");
        cmd.add_flag("-q,--quiet", quiet, "No progress display");
        cmd.add_option("--io", io, "Socket I/O: io_uring where available (auto), uring, or epoll")
            ->default_str("auto")
            ->check(CLI::IsMember({"auto", "uring", "epoll"}));
        cmd.add_option("--scenario", o.scenario,
                       "A scenario file (TOML, docs/scenarios.md): weighted requests, checks, a CSV feed, the load; "
                       "options given here override it")
            ->check(CLI::ExistingFile);
    }

    // The options the command line named, copied into `o`.
    void collect(const CLI::App& cmd) {
        auto given = [&](const char* name) { return cmd.count(name) > 0; };
        o.tls = tls.apply();
        if (given("--connections")) {
            o.connections = connections;
        }
        if (given("--duration")) {
            o.duration = duration;
        }
        if (given("--requests")) {
            o.requests = requests;
        }
        if (given("--threads")) {
            o.threads = threads;
        }
        if (given("--method")) {
            o.method = method;
        }
        if (given("--body")) {
            o.body = body;
        }
        if (given("--body-file")) {
            o.body_file = body_file;
        }
        if (given("--timeout")) {
            o.timeout = timeout;
        }
        if (given("--pipeline")) {
            o.pipeline = pipeline;
        }
        if (given("--streams")) {
            o.streams = streams;
        }
        if (given("--http")) {
            o.http = http;
        }
        if (given("--rate")) {
            o.rate = rate;
        }
        if (given("--max-connections")) {
            o.max_connections = max_connections;
        }
        if (given("--stages")) {
            o.stages = stages;
        }
        if (given("--warmup")) {
            o.warmup = warmup;
        }
        if (given("--io")) {
            o.io = io == "uring"   ? load::plan::io_choice::uring
                   : io == "epoll" ? load::plan::io_choice::epoll
                                   : load::plan::io_choice::automatic;
        }
    }
};

int run_load(load_flags& flags, const CLI::App& cmd) {
    using namespace hotpath::load;
    flags.collect(cmd);
    auto planned = make_plan(flags.o);
    if (!planned) {
        fmt::print(stderr, "hotpath: {}\n", planned.error().message);
        return 2;
    }
    plan p = std::move(*planned);
    // An open-model run whose connections cannot carry its rate leaves sends unsent: the exit code says so unless
    // the user set their own bound (k6's dropped iterations, made a default threshold).
    if (p.open_model() && std::none_of(p.thresholds.begin(), p.thresholds.end(),
                                       [](const threshold& t) { return t.what == threshold::metric::dropped; })) {
        auto dropped = parse_threshold("dropped<1%");
        dropped->text = "dropped<1% (default)";
        p.thresholds.push_back(std::move(*dropped));
    }
    const bool json_out = flags.json == "-";
    std::FILE* const report_out = json_out ? stderr : stdout;
    const progress_mode mode = flags.quiet                    ? progress_mode::none
                               : ::isatty(STDERR_FILENO) != 0 ? progress_mode::terminal
                                                              : progress_mode::lines;
    print_header(report_out, p);
    std::fflush(report_out);
    int stopped_by = 0;
    auto outcome = run(p, mode, stderr, &stopped_by);
    if (!outcome) {
        fmt::print(stderr, "hotpath: {}\n", outcome.error().message);
        return 1;
    }
    const auto checks = evaluate(p, *outcome);
    print_report(report_out, p, *outcome, checks);
    if (json_out) {
        fmt::print(stdout, "{}\n", to_json(p, *outcome, checks));
        std::fflush(stdout);
    } else if (!flags.json.empty()) {
        std::ofstream out(flags.json, std::ios::binary);
        out << to_json(p, *outcome, checks) << "\n";
        if (!out) {
            fmt::print(stderr, "hotpath: cannot write {}\n", flags.json);
            return 1;
        }
    }
    if (stopped_by != 0) {
        return 128 + stopped_by; // cut short: 130 for Ctrl-C, as a shell reports it
    }
    switch (judge(*outcome, checks)) {
    case verdict::passed:
        return 0;
    case verdict::threshold_failed:
        return 3;
    case verdict::nothing_succeeded:
        return 4;
    }
    return 1;
}

// Merges the --json files of simultaneous runs: merged JSON on stdout, the report on stderr.
int run_merge(const std::vector<std::string>& paths) {
    std::string json;
    std::string report;
    if (auto merged = hotpath::load::merge_files(paths, json, report); !merged) {
        fmt::print(stderr, "hotpath: {}\n", merged.error().message);
        return 1;
    }
    fmt::print(stdout, "{}\n", json);
    fmt::print(stderr, "{}", report);
    return 0;
}

runner define_load(CLI::App& cmd) {
    auto flags = std::make_shared<load_flags>();
    auto paths = std::make_shared<std::vector<std::string>>();
    when_chosen(cmd, [flags](CLI::App& c) { flags->add_to(c); });
    auto* merge = cmd.add_subcommand("merge", "Merge the --json files of runs made at the same time from several "
                                              "machines (docs/load-json.md): merged JSON to stdout, report to stderr");
    merge->add_option("files", *paths, "hotpath-load/1 JSON files")->required()->check(CLI::ExistingFile);
    return [flags, paths, merge, &cmd]() -> int {
        if (merge->parsed()) {
            if (!flags->o.url.empty()) {
                fmt::print(stderr, "hotpath: load merge takes files, not a URL (see hotpath load merge --help)\n");
                return 2;
            }
            return run_merge(*paths);
        }
        return run_load(*flags, cmd);
    };
}

const registration load_registration{
    {"load", "Load an HTTP server: closed or open model, stages, thresholds, reports", define_load,
     "0 every threshold held, 1 the target's name did not resolve or a file could not be written, 2 bad usage, 3 a "
     "threshold failed (an open-model run that never sent 1 % of its plan, too, unless --threshold dropped<...), 4 no "
     "request succeeded (the target is down or answered only errors), 130 interrupted (Ctrl-C; 143 SIGTERM)"}};

} // namespace
} // namespace hotpath::cli
