// `hotpath load URL [options]` and `hotpath load merge FILES`: options to a plan (load/options.hpp), a run, reports.
#include "command.hpp"

#include <hotpath/load/merge.hpp>
#include <hotpath/load/options.hpp>
#include <hotpath/load/report.hpp>
#include <hotpath/load/runner.hpp>
#include <hotpath/load_out/outputs.hpp>
#include <hotpath/net/address.hpp>
#include <hotpath/server/server.hpp>

#include <CLI/CLI.hpp>
#include <boost/json/value.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
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
    std::string think_time;
    std::vector<std::string> outs; // --out
    std::vector<std::string> tags; // --tag
    std::string out_interval = "5s";
    unsigned streams = 1;
    std::string http;
    double rate = 0;
    unsigned max_connections = 0;
    std::string stages;
    std::string segment;
    std::string segment_sequence;
    std::string start_at;
    std::string control;
    std::string warmup;
    std::string json;
    std::string io = "auto";
    bool quiet = false;
    bool no_thresholds = false;
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
        cmd.add_option("--think-time", think_time,
                       "Closed model: each user's pause after a response before its next request, fixed (500ms) or "
                       "uniform in a range (1s..3s)");
        cmd.add_flag("--ignore-retry-after", o.ignore_retry_after,
                     "Send again at once after a 429 or 503 with Retry-After (by default the closed model's user that "
                     "got it waits as asked)");
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
        cmd.add_option("--segment", segment,
                       "Send only this part of the plan, for one plan split over many generators: A:B (fractions, "
                       "e.g. 1/4:1/2) or I/N (the I-th of N equal parts, from 0); users, requests and arrivals are "
                       "dealt so that the parts add up to the whole exactly");
        cmd.add_option("--segment-sequence", segment_sequence,
                       "The parts' boundaries, the same for every generator of the run, e.g. 0,1/4,1/2,1 (default: "
                       "0, A, B, 1)");
        cmd.add_option("--start-at", start_at,
                       "Begin at this time, for generators that start together: RFC 3339 with its zone "
                       "(2026-12-06T16:00:00Z) or Unix seconds (date +%s)");
        cmd.add_flag("--paused", o.paused,
                     "Begin when released: SIGUSR1 (kill -USR1 PID), or POST /start to the --control endpoint");
        cmd.add_option("--control", control,
                       "Serve GET /status, POST /start and POST /stop for this run at HOST:PORT (or PORT, on "
                       "127.0.0.1; 0 picks a free port)");
        one_value_each(cmd.add_option("--threshold", o.thresholds,
                                      "Pass/fail: p95<150ms, errors<8%, rps>1000 (repeatable; exit 3 on failure)"));
        one_value_each(
            cmd.add_option("--expect-status", o.expect_status, "A status that counts as success (repeatable), e.g. 404")
                ->check(CLI::Range(100u, 599u)));
        cmd.add_option("--json", json,
                       "Also write the results as JSON (schema hotpath-load/1) to this file; - for standard output "
                       "(the report then goes to standard error)");
        one_value_each(cmd.add_option(
            "--out", outs,
            "Also send the run's metrics while it runs (repeatable; docs/load-out.md): prometheus-rw=URL "
            "(remote-write, e.g. http://127.0.0.1:9090/api/v1/write), otlp=URL (an OTLP/HTTP collector, e.g. "
            "http://127.0.0.1:4318), prometheus=[HOST:]PORT (a scrape endpoint at /metrics)"));
        one_value_each(cmd.add_option("--tag", tags,
                                      "NAME=VALUE: a label on every series --out sends, e.g. test=checkout "
                                      "(repeatable)"));
        cmd.add_option("--out-interval", out_interval, "Time between two pushes of --out")->capture_default_str();
        cmd.add_flag("-q,--quiet", quiet, "No progress display");
        cmd.add_flag("--no-thresholds", no_thresholds,
                     "Report the thresholds but leave the exit code to `hotpath load merge`, which judges them on the "
                     "merged run (for one part of a plan split with --segment)");
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
        if (given("--think-time")) {
            o.think_time = think_time;
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
        if (given("--segment")) {
            o.segment = segment;
        }
        if (given("--segment-sequence")) {
            o.segment_sequence = segment_sequence;
        }
        if (given("--start-at")) {
            o.start_at = start_at;
        }
        if (given("--io")) {
            o.io = io == "uring"   ? load::plan::io_choice::uring
                   : io == "epoll" ? load::plan::io_choice::epoll
                                   : load::plan::io_choice::automatic;
        }
    }
};

// --control: the run's phase, its release and its early end over HTTP, on one event loop of its own (what
// k6-operator's starter drives: every generator up and paused, then released together).
class control_endpoint {
public:
    control_endpoint(load::run_control& control, std::string address, std::uint16_t port)
        : routes_(make_routes(control)), server_(routes_, options_for(std::move(address), port)) {}
    result<void, problem> start() { return server_.start(); }
    std::string url() const { return server_.url(); }

private:
    static server_options options_for(std::string address, std::uint16_t port) {
        server_options o;
        o.address = std::move(address);
        o.port = port;
        o.threads = 1;
        o.stall_threshold = std::chrono::milliseconds{0};
        return o;
    }
    static app make_routes(load::run_control& control) {
        app a;
        a.get("/status", [&control](request&, response& res) {
            const auto text = [](std::optional<load::wall_clock::time_point> t) {
                return t ? boost::json::value(load::wall_clock_text(*t)) : boost::json::value(nullptr);
            };
            const auto phase = control.now();
            res.json(boost::json::object{
                {"phase", phase == load::run_control::phase::waiting   ? "waiting"
                          : phase == load::run_control::phase::running ? "running"
                                                                       : "finished"},
                {"paused", control.paused() && phase == load::run_control::phase::waiting && !control.released()},
                {"start_at", text(control.start_at())},
                {"started_at", text(control.began())}});
        });
        a.post("/start", [&control](request&, response& res) {
            if (control.release()) {
                res.json(boost::json::object{{"released", true}});
            } else {
                res.problem(http::status::conflict, control.now() != load::run_control::phase::waiting
                                                        ? "the run has begun already"
                                                    : control.paused() ? "the run is released already"
                                                                       : "the run is not paused (--paused)");
            }
        });
        a.post("/stop", [&control](request&, response& res) {
            control.stop();
            res.json(boost::json::object{{"stopping", true}});
        });
        return a;
    }

    app routes_;
    server server_;
};

// Writes `text` to `path` whole or not at all, as others may wait for the file to appear (a merge Job on a shared
// volume): into a file beside it, renamed over it once complete. A path that is not a regular file (/dev/stdout, a
// pipe) is written in place.
bool write_whole(const std::string& path, const std::string& text) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
        std::ofstream out(path, std::ios::binary);
        out << text;
        return static_cast<bool>(out.flush());
    }
    const std::string partial = path + ".partial-" + std::to_string(::getpid());
    {
        std::ofstream out(partial, std::ios::binary);
        out << text;
        if (!out.flush()) {
            std::filesystem::remove(partial, ec);
            return false;
        }
    }
    std::filesystem::rename(partial, path, ec);
    if (ec) {
        std::filesystem::remove(partial, ec);
        return false;
    }
    return true;
}

// The exit code of a run's (or a merged run's) verdict.
int exit_code_of(hotpath::load::verdict v) {
    switch (v) {
    case hotpath::load::verdict::passed:
        return 0;
    case hotpath::load::verdict::threshold_failed:
        return 3;
    case hotpath::load::verdict::nothing_succeeded:
        return 4;
    }
    return 1;
}

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
    if (p.paused) {
        // Blocked before any thread starts (the control endpoint's loop among them): the release reaches the run,
        // never SIGUSR1's default action, which ends the process.
        sigset_t release;
        sigemptyset(&release);
        sigaddset(&release, SIGUSR1);
        pthread_sigmask(SIG_BLOCK, &release, nullptr);
    }
    run_control control;
    std::unique_ptr<control_endpoint> endpoint;
    if (!flags.control.empty()) {
        const auto where = net::parse_listen_at(flags.control);
        if (!where) {
            fmt::print(stderr, "hotpath: --control {}: expected PORT, HOST:PORT or [IPv6]:PORT\n", flags.control);
            return 2;
        }
        endpoint = std::make_unique<control_endpoint>(control, where->first, where->second);
        if (auto started = endpoint->start(); !started) {
            fmt::print(stderr, "hotpath: --control: cannot listen on {}: {}\n", flags.control, started.error().message);
            return 1;
        }
        fmt::print(stderr, "hotpath load: control endpoint {} (GET /status, POST /start, POST /stop)\n",
                   endpoint->url());
    }
    load_out::output_options out_options;
    for (const auto& text : flags.outs) {
        auto spec = load_out::parse_output(text);
        if (!spec) {
            fmt::print(stderr, "hotpath: {}\n", spec.error().message);
            return 2;
        }
        out_options.specs.push_back(std::move(*spec));
    }
    for (const auto& text : flags.tags) {
        auto tag = load_out::parse_tag(text);
        if (!tag) {
            fmt::print(stderr, "hotpath: {}\n", tag.error().message);
            return 2;
        }
        out_options.tags.push_back(std::move(*tag));
    }
    if (auto whole = load_out::check(out_options); !whole) {
        fmt::print(stderr, "hotpath: {}\n", whole.error().message);
        return 2;
    }
    if (const auto every = parse_duration(flags.out_interval);
        !every || *every < std::chrono::milliseconds{100} || *every > std::chrono::hours{1}) {
        fmt::print(stderr, "hotpath: --out-interval '{}': a duration from 100ms to 1h (e.g. 5s)\n", flags.out_interval);
        return 2;
    } else {
        out_options.interval = std::chrono::duration_cast<std::chrono::milliseconds>(*every);
    }
    live_watch watch;
    std::unique_ptr<load_out::outputs> outs;
    if (!out_options.specs.empty()) {
        auto started = load_out::outputs::start(out_options, p, watch);
        if (!started) {
            fmt::print(stderr, "hotpath: {}\n", started.error().message);
            return 1;
        }
        outs = std::move(*started);
        if (const std::string url = outs->scrape_url(); !url.empty()) {
            fmt::print(stderr, "hotpath load: metrics at {} while the run lasts\n", url);
        }
    }
    if (p.paused) {
        fmt::print(stderr, "hotpath load: paused until SIGUSR1 (kill -USR1 {}){}\n", ::getpid(),
                   endpoint ? " or POST " + endpoint->url() + "/start" : std::string());
    }
    std::fflush(stderr);
    print_header(report_out, p);
    std::fflush(report_out);
    int stopped_by = 0;
    auto outcome = run(p, mode, stderr, &stopped_by, &control, outs != nullptr ? &watch : nullptr);
    if (outs != nullptr) {
        outs->finish(); // the final figures pushed before the report, which says how the pushes went
    }
    if (!outcome) {
        fmt::print(stderr, "hotpath: {}\n", outcome.error().message);
        return stopped_by != 0 ? 128 + stopped_by : 1;
    }
    const auto checks = evaluate(p, *outcome);
    print_report(report_out, p, *outcome, checks);
    if (outs != nullptr) {
        const auto lines = outs->summary();
        for (std::size_t i = 0; i < lines.size(); ++i) {
            fmt::print(report_out, "  {}{}\n", i == 0 ? "Outputs      " : "             ", lines[i]);
        }
    }
    if (flags.no_thresholds && !checks.empty()) {
        fmt::print(report_out,
                   "  Thresholds   this part's only, not its exit code (--no-thresholds): hotpath load merge "
                   "judges them on the whole run\n");
    }
    if (json_out) {
        fmt::print(stdout, "{}\n", to_json(p, *outcome, checks));
        std::fflush(stdout);
    } else if (!flags.json.empty()) {
        if (!write_whole(flags.json, to_json(p, *outcome, checks) + "\n")) {
            fmt::print(stderr, "hotpath: cannot write {}\n", flags.json);
            return 1;
        }
    }
    if (stopped_by != 0) {
        return 128 + stopped_by; // cut short: 130 for Ctrl-C, as a shell reports it
    }
    const verdict judged = judge(*outcome, checks);
    if (flags.no_thresholds && judged == verdict::threshold_failed) {
        return 0; // left to `hotpath load merge`, which judges them on the whole run
    }
    return exit_code_of(judged);
}

// Merges the --json files of simultaneous runs: merged JSON on stdout, the report on stderr.
int run_merge(const std::vector<std::string>& paths) {
    std::string json;
    std::string report;
    auto judged = hotpath::load::verdict::passed;
    if (auto merged = hotpath::load::merge_files(paths, json, report, &judged); !merged) {
        fmt::print(stderr, "hotpath: {}\n", merged.error().message);
        return 1;
    }
    fmt::print(stdout, "{}\n", json);
    fmt::print(stderr, "{}", report);
    return exit_code_of(judged);
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
