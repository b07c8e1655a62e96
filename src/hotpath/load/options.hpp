// `hotpath load` as typed: the options a user gave, turned into a checked plan. Every check of a plan lives here.
#pragma once

#include <hotpath/load/plan.hpp>
#include <hotpath/net/tls_options.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotpath::load {

// The options as given on a command line: an empty optional (or vector) was not given. Texts are as typed
// ("10s", "rate=1/s:5s"); make_plan parses them.
struct load_options {
    std::string url;      // "" when not given (a scenario's url then holds)
    std::string scenario; // a scenario file (docs/scenarios.md), "" if none
    std::optional<unsigned> connections;
    std::optional<std::string> duration;
    std::optional<std::uint64_t> requests;
    std::optional<unsigned> threads; // 0: one per core
    std::optional<std::string> method;
    std::vector<std::string> headers; // "Name: value"
    std::optional<std::string> body;
    std::optional<std::string> body_file;
    std::optional<std::string> timeout;
    bool no_keepalive = false;
    bool keep_trying = false; // --keep-trying: connect failures at the start do not end the run
    std::optional<unsigned> pipeline;
    std::optional<std::string> think_time; // --think-time 500ms | 1s..3s
    bool ignore_retry_after = false;       // --ignore-retry-after
    bool h2 = false;                 // --h2: HTTP/2, through ALPN over https://, with prior knowledge over http://
    bool h2c = false;                // --h2c: HTTP/2 with prior knowledge, http:// only
    std::optional<std::string> http; // --http 1.1|2|auto
    std::optional<unsigned> streams;
    std::optional<double> rate;
    std::optional<unsigned> max_connections;
    std::optional<std::string> stages;
    std::optional<std::string> warmup;
    std::vector<std::string> thresholds;
    std::optional<std::string> segment;          // --segment A:B or I/N
    std::optional<std::string> segment_sequence; // --segment-sequence 0,1/4,...,1
    std::optional<std::string> start_at;         // --start-at TIME (load/start.hpp)
    bool paused = false;                         // --paused: begins when released (SIGUSR1, the control endpoint)
    std::vector<unsigned> expect_status;
    std::optional<plan::io_choice> io;
    net::tls_client_options tls; // -k, --cacert, --cert/--key, --tls-min, --sni, --no-tls-resume
};

// Who wrote the plan, so that a reason names what that writer typed: a flag (--rate) or a scenario key
// (load.rate).
enum class plan_source : std::uint8_t { flags, scenario };

// Checks a whole plan: conflicting knobs (a rate with stages, pipelining in the open model or without
// keep-alive, --max-connections in the closed model or below -c), values out of range (a rate or a level that
// is not a finite number >= 0, statuses outside 100-599), a warm-up as long as the run. Returns "" when the plan
// can run, else one line naming the knobs as `source` writes them.
std::string validate(const plan& p, plan_source source);

// The plan `o` describes: the scenario file first (if any), then the options given, which override it (a model
// option replaces the file's whole model: docs/scenarios.md); reads --body-file; resolves the thread count
// (one per core unless given; never more threads than connections in a fixed-size run); then validate(); for an
// https:// target, makes the run's TLS context (plan::tls_context). Fails with errc::invalid_value and a one-line
// reason for bad or conflicting options (bad usage) and for files that cannot be read or used.
result<plan, problem> make_plan(const load_options& o);

} // namespace hotpath::load
