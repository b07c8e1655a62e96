// The `hotpath` command line: parses options and wires the library's pieces together; no logic of its own.
#include "apps/apps.hpp"
#include "http/response.hpp"
#include "load/merge.hpp"
#include "load/plan.hpp"
#include "load/report.hpp"
#include "load/runner.hpp"
#include "load/scenario.hpp"
#include "server/server.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

// CLI11 turns "-1" into a 64-bit unsigned number by wrapping it around: such options check the text first.
const CLI::Validator not_negative(
    [](std::string& text) {
        return !text.empty() && text.front() == '-' ? std::string("must not be negative") : std::string();
    },
    "", "not negative");

// Thread-per-core: more loops than any machine has cores only costs memory and rings.
constexpr unsigned max_threads = 1024;

struct serve_flags {
    hotpath::server_options options;
    unsigned headers_timeout_s = 30;
    unsigned keep_alive_timeout_s = 130;
    unsigned drain_timeout_ms = 30'000;
    std::string io = "auto";

    void add_to(CLI::App& cmd) {
        cmd.add_option("--address", options.address, "Address to listen on")->capture_default_str();
        cmd.add_option("--threads", options.threads, "Event loops, one thread each; 0: one per core")
            ->capture_default_str()
            ->check(CLI::Range(0u, max_threads));
        cmd.add_option("--max-connections", options.limits.max_connections, "Open connections allowed; 0: no limit")
            ->capture_default_str()
            ->check(not_negative);
        cmd.add_option("--max-body-bytes", options.limits.max_body_bytes, "Largest request body (413 above)")
            ->capture_default_str()
            ->check(not_negative);
        cmd.add_option("--headers-timeout", headers_timeout_s, "Seconds to receive a request head (408 after)")
            ->capture_default_str()
            ->check(CLI::Range(1u, 3600u));
        cmd.add_option("--keepalive-timeout", keep_alive_timeout_s, "Seconds an idle keep-alive connection is kept")
            ->capture_default_str()
            ->check(CLI::Range(1u, 86400u));
        cmd.add_option("--min-body-rate", options.limits.min_body_bytes_per_second,
                       "Bytes/s a request body must keep up after a 5 s grace (408 below); 0: no limit")
            ->capture_default_str()
            ->check(not_negative);
        cmd.add_option("--min-response-rate", options.limits.min_response_bytes_per_second,
                       "Bytes/s a client must read responses at after a 5 s grace (closed below); 0: no limit")
            ->capture_default_str()
            ->check(not_negative);
        cmd.add_option("--io", io, "Socket I/O: io_uring where available (auto), uring, or epoll")
            ->capture_default_str()
            ->check(CLI::IsMember({"auto", "uring", "epoll"}));
        cmd.add_option("--drain-timeout", drain_timeout_ms,
                       "Milliseconds in-flight requests get to finish on SIGINT/SIGTERM")
            ->capture_default_str();
    }

    void apply() {
        options.limits.request_headers_timeout = std::chrono::seconds{headers_timeout_s};
        options.limits.keep_alive_timeout = std::chrono::seconds{keep_alive_timeout_s};
        options.limits.drain_timeout = std::chrono::milliseconds{drain_timeout_ms};
        options.io = io == "uring"   ? hotpath::io_backend::uring
                     : io == "epoll" ? hotpath::io_backend::epoll
                                     : hotpath::io_backend::automatic;
    }
};

// Serves `routes` until SIGINT/SIGTERM; prints where it listens, then a one-line summary.
int serve(std::string_view name, const hotpath::app& routes, serve_flags& flags) {
    flags.apply();
    hotpath::server srv(routes, flags.options);
    hotpath::server::block_stop_signals();
    if (auto started = srv.start(); !started) {
        fmt::print(stderr, "hotpath: cannot listen on {}:{}: {}\n", flags.options.address, flags.options.port,
                   started.error().message());
        return 1;
    }
    fmt::print("hotpath: serving {} on http://{}:{} with {} event loop{} on {} (Ctrl-C stops)\n", name,
               flags.options.address, srv.port(), srv.threads(), srv.threads() == 1 ? "" : "s",
               srv.io() == hotpath::io_backend::uring ? "io_uring" : "epoll");
    std::fflush(stdout);
    srv.wait_for_stop_signal();
    const auto s = srv.stats();
    fmt::print("hotpath: stopped after {} requests on {} connections ({} malformed, {} handler errors)\n", s.requests,
               s.connections_accepted, s.bad_requests, s.handler_exceptions);
    if (s.accept_pauses != 0) {
        fmt::print("hotpath: accepting paused {} times: out of file descriptors (raise ulimit -n)\n", s.accept_pauses);
    }
    return 0;
}

// Raw `hotpath load` flags as typed; turned into a load::plan (with one-line errors) by make_plan.
struct load_flags {
    std::string url;
    unsigned connections = 50;
    std::string duration;
    std::uint64_t requests = 0;
    unsigned threads = 1; // one per core, set by add_to (reading the core count costs system calls)
    std::string method = "GET";
    std::vector<std::string> headers;
    std::string body;
    std::string body_file;
    std::string timeout = "10s";
    bool no_keepalive = false;
    unsigned pipeline = 1;
    double rate = 0;
    unsigned max_connections = 0;
    std::string stages;
    std::string warmup;
    std::vector<std::string> thresholds;
    std::vector<unsigned> expect_status;
    std::string json;
    std::string scenario;
    bool quiet = false;

    void add_to(CLI::App& cmd) {
        threads = std::max(1u, std::thread::hardware_concurrency());
        cmd.add_option("url", url, "Target, http://host[:port]/path (required unless merging)");
        cmd.add_option("-c,--connections", connections, "Connections (closed model: virtual users)")
            ->capture_default_str()
            ->check(CLI::Range(1u, 100000u));
        cmd.add_option("-d,--duration", duration, "Run time, e.g. 10s, 2m (default 10s, or until -n is done)");
        cmd.add_option("-n,--requests", requests, "Stop after exactly this many requests (like ab -n)")
            ->check(not_negative);
        cmd.add_option("-t,--threads", threads, "Worker threads, one event loop each")
            ->capture_default_str()
            ->check(CLI::Range(1u, max_threads));
        cmd.add_option("-m,--method", method, "Request method")->capture_default_str();
        cmd.add_option("-H,--header", headers, "A request header, \"Name: value\" (repeatable)");
        cmd.add_option("-b,--body", body, "Request body");
        cmd.add_option("--body-file", body_file, "Read the request body from a file");
        cmd.add_option("--timeout", timeout, "Per-request timeout")->capture_default_str();
        cmd.add_flag("--no-keepalive", no_keepalive, "A new connection per request (like ab without -k)");
        cmd.add_option("--pipeline", pipeline, "Requests sent back to back per connection (closed model)")
            ->capture_default_str()
            ->check(CLI::Range(1u, 1024u));
        cmd.add_option("--rate", rate, "Open model: requests per second, latency measured from the scheduled send");
        cmd.add_option("--max-connections", max_connections, "Open model: most connections to open (default 10 x -c)");
        cmd.add_option(
            "--stages", stages,
            "Load profile: \"rate=1/s:5s, rate=2/s:10s\" (open) or \"vus=0..240:60s, vus=240:60s\" (closed)");
        cmd.add_option("--warmup", warmup, "Leave this first period out of the results, e.g. 5s");
        cmd.add_option("--threshold", thresholds,
                       "Pass/fail: p95<150ms, errors<8%, rps>1000 (repeatable; exit 3 on failure)");
        cmd.add_option("--expect-status", expect_status, "A status that counts as success (repeatable), e.g. 404");
        cmd.add_option("--json", json, "Also write the results as JSON (schema hotpath-load/1) to this file");
        cmd.add_flag("-q,--quiet", quiet, "No progress display");
        cmd.add_option("--scenario", scenario,
                       "A scenario file (TOML, docs/scenarios.md): weighted requests, checks, a CSV feed, the load; "
                       "flags given here override it")
            ->check(CLI::ExistingFile);
    }
};

// Builds the plan, or returns false with a one-line reason. With --scenario the file comes first and only
// the flags actually given override it (docs/scenarios.md); a model flag replaces the file's whole model.
bool make_plan(const load_flags& f, const CLI::App& cmd, hotpath::load::plan& p, std::string& why) {
    using namespace hotpath::load;
    const bool scenario = !f.scenario.empty();
    auto given = [&](const char* name) { return !scenario || cmd.count(name) > 0; };
    if (scenario) {
        for (const char* name : {"--method", "--header", "--body", "--body-file"}) {
            if (cmd.count(name) > 0) {
                why = std::string(name) + " does not apply with --scenario; set it per [[request]]";
                return false;
            }
        }
        if (!load_scenario_file(f.scenario, p, why)) {
            return false;
        }
    }
    if (f.url.empty() && !scenario) {
        why = "a URL is required (see hotpath load --help)";
        return false;
    }
    if (!f.url.empty()) {
        auto to = parse_url(f.url, why);
        if (!to) {
            return false;
        }
        if (scenario && to->path_and_query != "/") {
            why = "with --scenario, the URL sets host and port only";
            return false;
        }
        p.to.host = to->host;
        p.to.port = to->port;
        if (!scenario) {
            p.to.path_and_query = to->path_and_query;
        }
    }
    if (!scenario) {
        p.method = f.method;
        if (!hotpath::http::is_token(p.method)) {
            why = "bad method '" + f.method + "'";
            return false;
        }
        for (const auto& h : f.headers) {
            const auto colon = h.find(':');
            if (colon == std::string::npos || colon == 0 || !hotpath::http::is_token(h.substr(0, colon)) ||
                h.find_first_of("\r\n") != std::string::npos) {
                why = "a header is \"Name: value\"; got '" + h + "'";
                return false;
            }
            const auto value = h.find_first_not_of(' ', colon + 1);
            p.headers.emplace_back(h.substr(0, colon), value == std::string::npos ? "" : h.substr(value));
        }
        p.body = f.body;
        if (!f.body_file.empty()) {
            std::ifstream in(f.body_file, std::ios::binary);
            if (!in) {
                why = "cannot read --body-file " + f.body_file;
                return false;
            }
            p.body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }
    }
    if (given("--threads")) {
        p.threads = f.threads;
    }
    if (given("--connections")) {
        p.connections = f.connections;
    }
    if (given("--no-keepalive")) {
        p.keep_alive = !f.no_keepalive;
    }
    if (given("--pipeline")) {
        p.pipeline = f.pipeline;
    }
    if (given("--max-connections")) {
        p.max_connections = f.max_connections;
    }
    if (given("--expect-status")) {
        p.expected_statuses = f.expect_status;
    }
    const bool model_given =
        cmd.count("--rate") + cmd.count("--stages") + cmd.count("--duration") + cmd.count("--requests") > 0;
    if (!scenario || model_given) {
        p.rate = f.rate;
        p.requests = f.requests;
        p.stages.clear();
        p.duration = std::chrono::seconds{10};
        if (!f.duration.empty()) {
            const auto d = parse_duration(f.duration);
            if (!d || d->count() <= 0) {
                why = "bad --duration '" + f.duration + "' (e.g. 10s, 2m)";
                return false;
            }
            p.duration = *d;
        } else if (f.requests > 0) {
            p.duration = std::chrono::hours{24 * 365};
        }
        if (!f.stages.empty()) {
            auto st = parse_stages(f.stages, why);
            if (!st) {
                return false;
            }
            p.stages = std::move(*st);
        }
    }
    if (given("--timeout")) {
        const auto timeout = parse_duration(f.timeout);
        if (!timeout || timeout->count() <= 0) {
            why = "bad --timeout '" + f.timeout + "'";
            return false;
        }
        p.timeout = *timeout;
    }
    if (given("--warmup") && !f.warmup.empty()) {
        const auto w = parse_duration(f.warmup);
        if (!w) {
            why = "bad --warmup '" + f.warmup + "'";
            return false;
        }
        p.warmup = *w;
    }
    if (given("--threshold")) {
        p.thresholds.clear();
        for (const auto& t : f.thresholds) {
            auto th = parse_threshold(t, why);
            if (!th) {
                return false;
            }
            p.thresholds.push_back(*th);
        }
    }
    // Cross checks, whatever the source.
    if (p.rate < 0) {
        why = "--rate must be positive";
        return false;
    }
    if (p.rate > 0 && !p.stages.empty() && p.stages.front().what == stage::kind::vus) {
        why = "--rate and vus stages do not mix";
        return false;
    }
    if (p.open_model() && p.pipeline > 1) {
        why = "--pipeline works with the closed model only (not with --rate or rate stages)";
        return false;
    }
    if (p.warmup >= p.total_time()) {
        why = "--warmup must be shorter than the run";
        return false;
    }
    // A fixed number of virtual users: a thread without one would never send its share of -n (like wrk, which
    // needs connections >= threads; here the threads shrink instead).
    if (!p.open_model() && p.stages.empty()) {
        p.threads = std::min(p.threads, std::max(1u, p.connections));
    }
    return true;
}

int run_load(const load_flags& flags, const CLI::App& cmd) {
    using namespace hotpath::load;
    plan p;
    std::string why;
    if (!make_plan(flags, cmd, p, why)) {
        fmt::print(stderr, "hotpath: {}\n", why);
        return 2;
    }
    const progress_mode mode = flags.quiet                    ? progress_mode::none
                               : ::isatty(STDERR_FILENO) != 0 ? progress_mode::terminal
                                                              : progress_mode::lines;
    auto outcome = run(p, mode, stderr, why);
    if (!outcome) {
        fmt::print(stderr, "hotpath: {}\n", why);
        return 1;
    }
    const auto checks = evaluate(p, *outcome);
    print_report(stdout, p, *outcome, checks);
    if (!flags.json.empty()) {
        std::ofstream out(flags.json, std::ios::binary);
        out << to_json(p, *outcome, checks) << "\n";
        if (!out) {
            fmt::print(stderr, "hotpath: cannot write {}\n", flags.json);
            return 1;
        }
    }
    for (const auto& c : checks) {
        if (!c.pass) {
            return 3;
        }
    }
    return 0;
}

// Merges the --json files of simultaneous runs: merged JSON on stdout, the report on stderr.
int run_merge(const std::vector<std::string>& paths) {
    std::string json;
    std::string report;
    std::string why;
    if (!hotpath::load::merge_files(paths, json, report, why).has_value()) {
        fmt::print(stderr, "hotpath: {}\n", why);
        return 1;
    }
    fmt::print(stdout, "{}\n", json);
    fmt::print(stderr, "{}", report);
    return 0;
}

// Adds a subcommand's options only once the command line names it (CLI11 runs the callback before parsing
// the subcommand's own arguments, `--help` included): a start builds the few dozen options it uses, not all.
void when_chosen(CLI::App* cmd, std::function<void(CLI::App&)> add_options) {
    cmd->preparse_callback([cmd, add = std::move(add_options)](std::size_t) { add(*cmd); });
}

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"hotpath: build fast HTTP APIs, load them, and find where the time goes."};
    cli.require_subcommand(1);
    auto* serve_cmd = cli.add_subcommand("serve", "Run one of the demo services");
    serve_cmd->require_subcommand(1);

    serve_flags platform_flags;
    auto* platform = serve_cmd->add_subcommand("platform", "TechEmpower tests: GET /plaintext and GET /json");
    when_chosen(platform, [&](CLI::App& cmd) {
        platform_flags.options.port = 8080;
        cmd.add_option("--port,-p", platform_flags.options.port, "Port; 0 picks a free one")->capture_default_str();
        platform_flags.add_to(cmd);
    });

    serve_flags avatar_flags;
    unsigned avatar_n = 0;
    auto* avatar = serve_cmd->add_subcommand("avatar", "Case 5: GET / redirects to a random Renard-{k}.png");
    when_chosen(avatar, [&](CLI::App& cmd) {
        avatar_flags.options.port = 5001;
        cmd.add_option("port", avatar_flags.options.port, "Port; 0 picks a free one")->capture_default_str();
        cmd.add_option("n", avatar_n, "Largest k: k is uniform in 0..N")->capture_default_str();
        avatar_flags.add_to(cmd);
    });

    load_flags load_options;
    auto* load = cli.add_subcommand("load", "Load an HTTP server: closed or open model, stages, thresholds, reports");
    when_chosen(load, [&](CLI::App& cmd) { load_options.add_to(cmd); });
    std::vector<std::string> merge_paths;
    auto* merge =
        load->add_subcommand("merge", "Merge the --json files of runs made at the same time from several "
                                      "machines (docs/load-json.md): merged JSON to stdout, report to stderr");
    merge->add_option("files", merge_paths, "hotpath-load/1 JSON files")->required()->check(CLI::ExistingFile);

    serve_flags weather_flags;
    std::string weather_delay = "10ms";
    auto* weather =
        serve_cmd->add_subcommand("weather", "Case 1 downstream: GET /weatherForecast (async wait, 5 forecasts)");
    when_chosen(weather, [&](CLI::App& cmd) {
        weather_flags.options.port = 5176;
        cmd.add_option("--port,-p", weather_flags.options.port, "Port; 0 picks a free one")->capture_default_str();
        cmd.add_option("--delay", weather_delay, "Asynchronous wait per request (a cache or database call)")
            ->capture_default_str();
        weather_flags.add_to(cmd);
    });

    serve_flags aggregator_flags;
    hotpath::apps::aggregator_options aggregator_options;
    std::string aggregator_strategy = "sequential";
    std::string aggregator_timeout = "10s";
    std::string aggregator_lifetime = "5m";
    auto* aggregator = serve_cmd->add_subcommand(
        "aggregator", "Case 1 upstream: GET / calls the weather service N times (?strategy=&limit=&calls=)");
    when_chosen(aggregator, [&](CLI::App& cmd) {
        aggregator_flags.options.port = 5060;
        cmd.add_option("--port,-p", aggregator_flags.options.port, "Port; 0 picks a free one")->capture_default_str();
        cmd.add_option("--upstream", aggregator_options.upstream, "The weather service's base URL")
            ->capture_default_str();
        cmd.add_option("--calls", aggregator_options.calls, "Downstream calls per request")
            ->capture_default_str()
            ->check(CLI::Range(1u, 100000u));
        cmd.add_option("--strategy", aggregator_strategy, "sequential | all | bounded (a request's ?strategy= wins)")
            ->capture_default_str();
        cmd.add_option("--limit", aggregator_options.limit, "bounded: calls in flight at most")
            ->capture_default_str()
            ->check(CLI::Range(1u, 100000u));
        cmd.add_option("--timeout", aggregator_timeout, "Per downstream call; past it the answer is 504")
            ->capture_default_str();
        cmd.add_option("--upstream-connections", aggregator_options.client.max_connections_per_host,
                       "Pooled connections to the upstream per loop")
            ->capture_default_str()
            ->check(CLI::Range(std::size_t{1}, std::size_t{65535}));
        cmd.add_option("--connection-lifetime", aggregator_lifetime,
                       "Pooled connections are retired after this (PooledConnectionLifetime)")
            ->capture_default_str();
        aggregator_flags.add_to(cmd);
    });

    try {
        cli.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        return cli.exit(CLI::CallForHelp());
    } catch (const CLI::CallForAllHelp&) {
        return cli.exit(CLI::CallForAllHelp());
    } catch (const CLI::ParseError& e) {
        const std::string what = e.what();
        fmt::print(stderr, "hotpath: {} (see hotpath --help)\n", what);
        return 2;
    }

    if (merge->parsed()) {
        if (!load_options.url.empty()) {
            fmt::print(stderr, "hotpath: load merge takes files, not a URL (see hotpath load merge --help)\n");
            return 2;
        }
        return run_merge(merge_paths);
    }
    if (load->parsed()) {
        return run_load(load_options, *load);
    }
    hotpath::app routes;
    if (platform->parsed()) {
        hotpath::apps::map_platform(routes);
        return serve("platform", routes, platform_flags);
    }
    if (weather->parsed()) {
        const auto delay = hotpath::load::parse_duration(weather_delay);
        if (!delay) {
            fmt::print(stderr, "hotpath: bad --delay '{}' (e.g. 10ms)\n", weather_delay);
            return 2;
        }
        hotpath::apps::map_weather(routes, *delay);
        return serve("weather", routes, weather_flags);
    }
    if (aggregator->parsed()) {
        const auto timeout = hotpath::load::parse_duration(aggregator_timeout);
        const auto lifetime = hotpath::load::parse_duration(aggregator_lifetime);
        if (!hotpath::apps::parse_fan_out(aggregator_strategy, aggregator_options.strategy)) {
            fmt::print(stderr, "hotpath: bad --strategy '{}' (sequential, all or bounded)\n", aggregator_strategy);
            return 2;
        }
        if (!timeout || timeout->count() <= 0) {
            fmt::print(stderr, "hotpath: bad --timeout '{}' (e.g. 10s)\n", aggregator_timeout);
            return 2;
        }
        if (!lifetime) {
            fmt::print(stderr, "hotpath: bad --connection-lifetime '{}' (e.g. 5m)\n", aggregator_lifetime);
            return 2;
        }
        if (hotpath::client::check_url(aggregator_options.upstream)) {
            fmt::print(stderr, "hotpath: bad --upstream '{}' (e.g. http://127.0.0.1:5176)\n",
                       aggregator_options.upstream);
            return 2;
        }
        while (!aggregator_options.upstream.empty() && aggregator_options.upstream.back() == '/') {
            aggregator_options.upstream.pop_back();
        }
        aggregator_options.timeout = *timeout;
        aggregator_options.client.connection_lifetime = *lifetime;
        hotpath::apps::map_aggregator(routes, aggregator_options);
        return serve("aggregator", routes, aggregator_flags);
    }
    if (avatar->parsed()) {
        hotpath::apps::map_avatar(routes, avatar_n);
        return serve("avatar", routes, avatar_flags);
    }
    return 2;
}
