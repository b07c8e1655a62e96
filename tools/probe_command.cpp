// `hotpath probe URL [options]`: options to a probe plan (probe/probe.hpp), its requests, a report or JSON.
#include "command.hpp"

#include <hotpath/probe/probe.hpp>
#include <hotpath/probe/report.hpp>

#include <hotpath/core/units.hpp>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <memory>

namespace hotpath::cli {
namespace {

struct probe_flags {
    probe::probe_options o;
    std::string method;
    std::string body;
    bool json = false;
    tls_flags tls;

    void add_to(CLI::App& cmd) {
        cmd.add_option("url", o.url, "Target, http[s]://host[:port]/path")->required();
        tls.add_to(cmd);
        cmd.add_option("-n,--requests", o.requests, "Requests, one after another; several give min/median/p95/max")
            ->default_str("1")
            ->check(not_negative())
            ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000}));
        cmd.add_option("-X,-m,--method", method, "Request method (default GET, or POST with -d, as curl)");
        one_value_each(
            cmd.add_option("-H,--header", o.headers,
                           "A request header, \"Name: value\" (repeatable; replaces a default of that name)"));
        cmd.add_option("-d,--data,--body", body, "Request body");
        cmd.add_option("--timeout", o.timeout, "Per request, every phase included (e.g. 10s, 500ms)")
            ->default_str("10s");
        cmd.add_flag("--keep-alive", o.keep_alive,
                     "One connection for all requests (resolve and connect are then 0 after the first) instead of a "
                     "new one each, as curl makes");
        cmd.add_flag("--json", json, "Print one JSON document (schema hotpath-probe/1) instead of the report");
    }
};

int run_probe(probe_flags& flags, const CLI::App& cmd) {
    if (cmd.count("--method") > 0) {
        flags.o.method = flags.method;
    }
    if (cmd.count("--data") > 0) {
        flags.o.body = flags.body;
        // `-d 2s` typed as for `hotpath load`: here -d is curl's, the body. Sent as asked, but said.
        if (parse_duration(flags.body) && flags.body.find_first_not_of("0123456789. ") != std::string::npos) {
            fmt::print(stderr,
                       "hotpath: warning: -d is the request body here, as curl's: '{}' goes as a {} body; for more "
                       "requests give -n N (a duration is hotpath load's -d)\n",
                       flags.body, cmd.count("--method") > 0 ? flags.method : "POST");
        }
    }
    flags.o.tls = flags.tls.apply();
    auto planned = probe::make_plan(flags.o);
    if (!planned) {
        fmt::print(stderr, "hotpath: {}\n", planned.error().message);
        return 2;
    }
    const probe::plan p = std::move(*planned);
    const auto samples = probe::run(p);
    const auto outcome = probe::judge(samples);
    if (flags.json) {
        fmt::print(stdout, "{}\n", probe::to_json(p, samples));
    } else if (outcome == probe::verdict::answered) {
        probe::print_report(stdout, p, samples);
    }
    std::fflush(stdout);
    switch (outcome) {
    case probe::verdict::answered:
        return 0;
    case probe::verdict::unresolved: // as hotpath load: 1 when the target cannot be resolved
        fmt::print(stderr, "hotpath: {}\n", probe::failure_line(samples));
        return 1;
    case probe::verdict::nothing_answered: // as hotpath load: 4 when no request succeeded at all
        fmt::print(stderr, "hotpath: {}\n", probe::failure_line(samples));
        return 4;
    }
    return 1;
}

runner define_probe(CLI::App& cmd) {
    auto flags = std::make_shared<probe_flags>();
    when_chosen(cmd, [flags](CLI::App& c) { flags->add_to(c); });
    return [flags, &cmd]() -> int { return run_probe(*flags, cmd); };
}

const registration probe_registration{
    {"probe",
     "Time one request phase by phase (resolve, connect, first byte, total) with its Server-Timing, or -n "
     "of them as min/median/p95/max",
     define_probe,
     "0 a response came back (whatever its status), 1 the name did not resolve, 2 bad usage, 4 no response (refused, "
     "timed out, reset, closed, or not HTTP)"}};

} // namespace
} // namespace hotpath::cli
