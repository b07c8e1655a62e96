// Reports of `hotpath probe`: one request as a timeline (like httpstat), several as min/median/p95/max per phase,
// and the JSON document (schema hotpath-probe/1).
#pragma once

#include <hotpath/probe/probe.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace hotpath::probe {

// Order statistics of a set of values (nanoseconds or milliseconds, as given). The median of an even count is the
// mean of the two middle values; p95 is the nearest rank (the smallest value with at least 95 % at or below it).
struct stats {
    std::size_t count = 0;
    double min = 0;
    double median = 0;
    double p95 = 0;
    double max = 0;
};

// Sorts `values` and summarises them; all zero for none.
stats summarize(std::vector<double> values);

// The five phases of a successful request, each its own length in nanoseconds: resolve (name resolution), connect,
// send (the request written), wait (to the first response byte), receive (to the last).
struct phase_lengths {
    double resolve = 0;
    double connect = 0;
    double tls = 0; // https://: the TLS handshake (curl's appconnect less connect)
    double send = 0;
    double wait = 0;
    double receive = 0;
};
phase_lengths phases_of(const sample& s) noexcept;

// How a run ended, for the exit code: a response came back (whatever its status); no request got one (the target
// is down, timed out or answered something other than HTTP); or the name did not resolve.
enum class verdict : std::uint8_t { answered, nothing_answered, unresolved };
verdict judge(const std::vector<sample>& samples) noexcept;

// A short name of a failure's class: "refused", "timeout", "connect_timeout", "reset", "closed",
// "malformed_response", "resolve_failed", a TLS class ("tls_" and its net::tls_errc_name: "tls_unknown_issuer"), or
// "system" for another error of the system; "" for a success.
std::string failure_class(const sample& s);

// The console report of successful runs: a single request as a timeline of its phases with the status, sizes and
// Server-Timing; several as a table of min/median/p95/max per phase and per Server-Timing metric, with the failed
// requests counted by class.
void print_report(std::FILE* out, const plan& p, const std::vector<sample>& samples);

// One line naming what went wrong when no request got a response: the first failure's message, with how many
// failed when there were several.
std::string failure_line(const std::vector<sample>& samples);

// The JSON document, schema "hotpath-probe/1": the run, every sample (readings and phases in microseconds,
// Server-Timing in milliseconds as the header gives it) and the summary of the successful ones. One line.
std::string to_json(const plan& p, const std::vector<sample>& samples);

} // namespace hotpath::probe
