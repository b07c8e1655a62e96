// Building a load plan from what a user typed, and the one set of checks every plan passes before it runs.
#include <hotpath/load/options.hpp>

#include <hotpath/http/response.hpp>
#include <hotpath/load/scenario.hpp>
#include <hotpath/load/start.hpp>
#include <hotpath/net/tls.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

namespace hotpath::load {
namespace {

// The knobs a reason may name, as each source writes them.
struct knob_names {
    std::string_view rate, stages, pipeline, no_keepalive, warmup, max_connections, connections, expect_status, threads,
        streams, h2, http_auto, think_time, duration;
};

constexpr knob_names flag_names{
    "--rate",          "--stages", "--pipeline", "--no-keepalive",        "--warmup",    "--max-connections", "-c",
    "--expect-status", "-t",       "--streams",  "--h2, --h2c or --http", "--http auto", "--think-time",      "-d"};
constexpr knob_names scenario_names{"load.rate",
                                    "load.stages",
                                    "load.pipeline",
                                    "load.keep_alive = false",
                                    "load.warmup",
                                    "load.max_connections",
                                    "load.connections",
                                    "load.expect_status",
                                    "load.threads",
                                    "load.streams",
                                    "load.http",
                                    "load.http = \"auto\"",
                                    "load.think_time (or a request's)",
                                    "load.duration"};

std::string str(std::string_view s) {
    return std::string(s);
}

bool status_in_range(unsigned s) noexcept {
    return s >= 100 && s <= 599;
}

// Thread-per-core: more loops than any machine has cores only costs memory and rings.
constexpr unsigned max_threads = 1024;
// Streams per HTTP/2 connection: servers allow 100 (Kestrel, h2o) or 128 (nginx); h2load takes any.
constexpr unsigned max_streams = 1000;

} // namespace

std::string validate(const plan& p, plan_source source) {
    const knob_names& n = source == plan_source::flags ? flag_names : scenario_names;
    if (!std::isfinite(p.rate) || p.rate < 0) {
        return str(n.rate) + " must be a number of requests per second > 0";
    }
    for (const auto& s : p.stages) {
        if (!std::isfinite(s.from) || !std::isfinite(s.to) || s.from < 0 || s.to < 0 || s.duration.count() <= 0) {
            return str(n.stages) + ": a stage's levels are numbers >= 0 and its duration is > 0";
        }
    }
    if (p.rate > 0 && !p.stages.empty()) {
        return str(n.rate) + " and " + str(n.stages) + " do not mix: rate stages set the rate";
    }
    if (p.connections == 0) {
        return str(n.connections) + " must be at least 1";
    }
    if (p.threads > max_threads) {
        return str(n.threads) + " must be at most " + std::to_string(max_threads);
    }
    if (p.open_model() && p.pipeline > 1) {
        return str(n.pipeline) + " works with the closed model only (not with " + str(n.rate) + " or rate stages)";
    }
    if (p.pipeline > 1 && !p.keep_alive) {
        return str(n.pipeline) + " and " + str(n.no_keepalive) +
               " do not mix: the server closes each connection after one response";
    }
    if (p.streams == 0 || p.streams > max_streams) {
        return str(n.streams) + " must be from 1 to " + std::to_string(max_streams);
    }
    if (p.http == plan::http_version::automatic && !p.to.tls()) {
        return str(n.http_auto) + " agrees on the protocol through ALPN, over https:// only; over http:// HTTP/2 is " +
               "spoken with prior knowledge (h2c)";
    }
    if (p.streams > 1 && !p.may_h2()) {
        return str(n.streams) + " needs HTTP/2 (" + str(n.h2) + "): HTTP/1.1 has one request in flight per " +
               "connection (or " + str(n.pipeline) + ")";
    }
    if (p.may_h2() && p.pipeline > 1) {
        return str(n.pipeline) + " is HTTP/1.1's; with HTTP/2 several requests are in flight with " + str(n.streams);
    }
    if (p.may_h2() && !p.keep_alive) {
        return str(n.no_keepalive) + " is HTTP/1.1's: an HTTP/2 connection carries many requests";
    }
    if (p.max_connections > 0 && !p.open_model()) {
        return str(n.max_connections) + " applies to the open model (" + str(n.rate) + " or rate stages); in the " +
               "closed model " + str(n.connections) + " is the number of connections";
    }
    if (p.max_connections > 0 && p.max_connections < p.connections) {
        return str(n.max_connections) + " must be at least " + str(n.connections) + " (" +
               std::to_string(p.connections) + ")";
    }
    bool thinks = p.think.any();
    for (const auto& r : p.scenario) {
        thinks = thinks || (r.think && r.think->any());
    }
    if (thinks && p.open_model()) {
        return str(n.think_time) + " is a user's pause between its requests, in the closed model; the open model's " +
               "arrivals are its schedule (" + str(n.rate) + ")";
    }
    if (thinks && (p.pipeline > 1 || p.streams > 1)) {
        return str(n.think_time) + " pauses a user that has one request at a time: not with " + str(n.pipeline) +
               " or " + str(n.streams) + " above 1";
    }
    // A run's end is its start plus its length on the steady clock: a length near 292 years would overflow that
    // clock's nanoseconds; a year is longer than any soak.
    constexpr std::chrono::nanoseconds longest = std::chrono::hours{24 * 366};
    if (p.stages.empty() && p.duration > longest) {
        return str(n.duration) + " must be at most 366 days";
    }
    std::chrono::nanoseconds staged{};
    for (const auto& s : p.stages) {
        if (s.duration > longest - staged) {
            return str(n.stages) + ": the stages' durations must add up to 366 days at most";
        }
        staged += s.duration;
    }
    if (p.warmup >= p.total_time()) {
        return str(n.warmup) + " must be shorter than the run (the stages' sum, else the duration)";
    }
    auto bad_status = [&](const std::vector<unsigned>& statuses) {
        return std::find_if_not(statuses.begin(), statuses.end(), status_in_range) != statuses.end();
    };
    if (bad_status(p.expected_statuses)) {
        return str(n.expect_status) + " takes statuses from 100 to 599";
    }
    for (const auto& r : p.scenario) {
        if (bad_status(r.expected_statuses)) {
            return "request '" + r.name + "': expect_status holds statuses from 100 to 599";
        }
        for (const auto& c : r.checks) {
            if (bad_status(c.statuses)) {
                return "request '" + r.name + "': check_status holds statuses from 100 to 599";
            }
        }
    }
    return {};
}

result<plan, problem> make_plan(const load_options& o) {
    const auto refuse = [](std::string message) { return problem{errc::invalid_value, std::move(message)}; };
    plan p;
    const bool scenario = !o.scenario.empty();
    if (scenario) {
        if (o.method || !o.headers.empty() || o.body || o.body_file) {
            return refuse(std::string(o.method             ? "--method"
                                      : !o.headers.empty() ? "--header"
                                      : o.body             ? "--body"
                                                           : "--body-file") +
                          " does not apply with --scenario; set it per [[request]]");
        }
        if (auto loaded = load_scenario_file(o.scenario, p); !loaded) {
            return refuse(std::move(loaded).error().message);
        }
    }
    if (o.url.empty() && !scenario) {
        return refuse("a URL is required (see hotpath load --help)");
    }
    if (!o.url.empty()) {
        auto to = http::parse_url(o.url);
        if (!to) {
            return refuse(std::move(to).error().message);
        }
        if (scenario && to->target != "/") {
            return refuse("with --scenario, the URL sets host and port only");
        }
        const std::string path = std::exchange(p.to.target, "/");
        p.to = std::move(*to);
        if (scenario) {
            p.to.target = path; // the scenario's
        }
    }
    if (!scenario) {
        p.method = o.method.value_or("GET");
        if (!http::is_token(p.method)) {
            return refuse("bad method '" + p.method + "'");
        }
        for (const auto& h : o.headers) {
            const auto colon = h.find(':');
            if (colon == std::string::npos || colon == 0 || !http::is_token(h.substr(0, colon)) ||
                h.find_first_of("\r\n") != std::string::npos) {
                return refuse("a header is \"Name: value\"; got '" + h + "'");
            }
            const auto value = h.find_first_not_of(' ', colon + 1);
            p.headers.emplace_back(h.substr(0, colon), value == std::string::npos ? "" : h.substr(value));
        }
        if (o.body && o.body_file) {
            return refuse("--body and --body-file do not mix");
        }
        p.body = o.body.value_or("");
        if (o.body_file) {
            std::ifstream in(*o.body_file, std::ios::binary);
            if (!in) {
                return refuse("cannot read --body-file " + *o.body_file);
            }
            p.body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }
    }

    // What was typed, checked against itself: options that would silently override one another.
    if (o.rate && !(*o.rate > 0 && std::isfinite(*o.rate))) {
        return refuse("--rate must be a number of requests per second > 0 (leave it out for the closed model)");
    }
    if (o.stages && o.rate) {
        return refuse("--stages and --rate do not mix: rate stages set the rate (e.g. --stages \"rate=100/s:30s\")");
    }
    if (o.stages && o.duration) {
        return refuse("--stages and --duration do not mix: the stages set the run's length");
    }
    if (o.requests && *o.requests == 0) {
        return refuse("-n must be at least 1");
    }
    if (o.connections) {
        p.connections = *o.connections;
    }
    if (o.threads) {
        p.threads = *o.threads;
    }
    if (o.no_keepalive) {
        p.keep_alive = false;
    }
    if (o.keep_trying) {
        p.keep_trying = true;
    }
    if (o.pipeline) {
        p.pipeline = *o.pipeline;
    }
    if (o.think_time) {
        auto think = parse_think_time(*o.think_time);
        if (!think) {
            return refuse("--think-time: " + std::move(think).error().message);
        }
        p.think = *think;
    }
    if (o.ignore_retry_after) {
        p.honour_retry_after = false;
    }
    if (o.io) {
        p.io = *o.io;
    }
    if (o.http) {
        if (*o.http != "1.1" && *o.http != "2" && *o.http != "auto") {
            return refuse("--http is 1.1, 2 or auto, not '" + *o.http + "'");
        }
        p.http = *o.http == "1.1" ? plan::http_version::http1_1
                 : *o.http == "2" ? plan::http_version::h2
                                  : plan::http_version::automatic;
    }
    if (o.h2 || o.h2c) {
        p.http = plan::http_version::h2;
    }
    if (o.streams) {
        p.streams = *o.streams;
    }
    if (o.max_connections) {
        p.max_connections = *o.max_connections;
    }
    if (!o.expect_status.empty()) {
        p.expected_statuses = o.expect_status;
    }
    // A model option replaces the scenario's whole model.
    if (!scenario || o.rate || o.stages || o.duration || o.requests) {
        p.rate = o.rate.value_or(0);
        p.requests = o.requests.value_or(0);
        p.stages.clear();
        p.duration = std::chrono::seconds{10};
        if (o.duration) {
            const auto d = parse_duration(*o.duration);
            if (!d || d->count() <= 0) {
                return refuse("bad --duration '" + *o.duration + "' (e.g. 10s, 2m)");
            }
            p.duration = *d;
        } else if (p.requests > 0) {
            p.duration = std::chrono::hours{24 * 365}; // until the count is done
        }
        if (o.stages) {
            auto st = parse_stages(*o.stages);
            if (!st) {
                return refuse(std::move(st).error().message);
            }
            p.stages = std::move(*st);
        }
    }
    if (o.connections && !p.stages.empty() && p.stages.front().what == stage::kind::vus) {
        return refuse("-c and vus stages do not mix: the stages set the virtual users");
    }
    if (o.timeout) {
        const auto timeout = parse_duration(*o.timeout);
        if (!timeout || timeout->count() <= 0) {
            return refuse("bad --timeout '" + *o.timeout + "'");
        }
        p.timeout = *timeout;
    }
    if (o.warmup) {
        const auto w = parse_duration(*o.warmup);
        if (!w) {
            return refuse("bad --warmup '" + *o.warmup + "'");
        }
        p.warmup = *w;
    }
    if (!o.thresholds.empty()) {
        p.thresholds.clear();
        for (const auto& t : o.thresholds) {
            auto th = parse_threshold(t);
            if (!th) {
                return refuse(std::move(th).error().message);
            }
            p.thresholds.push_back(*th);
        }
    }
    if (o.segment || o.segment_sequence) {
        auto part = segment::parse(o.segment.value_or(""), o.segment_sequence.value_or(""));
        if (!part) {
            return refuse(std::move(part).error().message);
        }
        p.part = std::move(*part);
    }
    if (o.start_at && o.paused) {
        return refuse("--start-at and --paused are two ways to begin: give one (a paused run begins when released)");
    }
    if (o.start_at) {
        auto at = parse_start_time(*o.start_at);
        if (!at) {
            return refuse(std::move(at).error().message);
        }
        // A generator that comes up late would run apart from the others it was to start with; one a day or more
        // ahead is a typo more likely than a plan.
        const auto now = wall_clock::now();
        if (*at < now - std::chrono::seconds{1}) {
            return refuse(fmt::format("--start-at {} was {:.1f} s ago: a run that starts late would not run together "
                                      "with the others; give a time to come",
                                      wall_clock_text(*at), std::chrono::duration<double>(now - *at).count()));
        }
        if (*at > now + std::chrono::hours{24}) {
            return refuse(fmt::format("--start-at {} is more than a day ahead", wall_clock_text(*at)));
        }
        p.start_at = *at;
    }
    p.paused = o.paused;
    if (std::string why = validate(p, plan_source::flags); !why.empty()) {
        return refuse(std::move(why));
    }
    if (o.h2c && p.to.tls()) {
        return refuse("--h2c is HTTP/2 over plain TCP (http://); over https:// use --h2, agreed through ALPN");
    }
    p.tls = o.tls;
    if (p.h2()) {
        p.tls.alpn = {"h2"}; // only h2 offered: a server that does not agree fails the attempt
    } else if (p.may_h2()) {
        p.tls.alpn = {"h2", "http/1.1"}; // each connection speaks what its server agrees to, h2 first
    }
    if (p.to.tls()) {
        // The files are read now, so that a bad one is told before the run; the run uses this context.
        auto made = net::tls_context::client(p.tls);
        if (!made) {
            return refuse(std::move(made).error().message);
        }
        p.tls_context = std::move(*made);
    }
    // A thread without a connection of its own would never send its share of -n (wrk needs connections >=
    // threads; here the threads shrink instead).
    p.threads = resolve_threads(p);
    double most_connections = p.connections;
    if (p.open_model()) {
        most_connections = std::max(p.max_connections, p.connections);
    } else if (!p.stages.empty()) {
        most_connections = std::round(p.max_level());
    }
    // A segment holds its part of them: in the closed model, at least one user, or its share of -n would wait
    // forever for a connection to send on.
    const auto whole_users = static_cast<std::uint64_t>(most_connections);
    most_connections = static_cast<double>(p.part.count_below(whole_users));
    if (!p.part.whole() && !p.open_model() && most_connections < 1) {
        return refuse("--segment " + p.part.text() + " holds none of the plan's " + std::to_string(whole_users) +
                      " users: a plan split in N needs N users or more");
    }
    if (!p.part.whole() && p.requests > 0 && p.part.count_below(p.requests) == 0) {
        return refuse("--segment " + p.part.text() + " holds none of the plan's " + std::to_string(p.requests) +
                      " requests (-n): a plan split in N needs N requests or more");
    }
    p.threads = std::min(p.threads, static_cast<unsigned>(std::max(1.0, most_connections)));
    return p;
}

} // namespace hotpath::load
