// What a load run does: target, request, model (closed or open), stages, limits and thresholds.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/core/units.hpp>
#include <hotpath/http/url.hpp>
#include <hotpath/load/segment.hpp>
#include <hotpath/net/tls_options.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::load {

using clock = std::chrono::steady_clock;

// One stage of a profile: for `duration`, the arrival rate (open model, requests/s) or the number of
// virtual users (closed model, connections) goes linearly from `from` to `to`.
struct stage {
    enum class kind : std::uint8_t { rate, vus } what = kind::rate;
    double from = 0;
    double to = 0;
    std::chrono::nanoseconds duration{};
};

// "rate=1/s:5s, rate=2/s:10s" (NBomber) or "vus=0..240:60s, vus=240:60s" (k6). Rates take /s or /m.
// All stages must be of one kind.
result<std::vector<stage>, problem> parse_stages(std::string_view text);

// Closed model: a virtual user's pause between a response and its next request (k6's sleep()), fixed (min == max)
// or drawn uniformly from [min, max] for each pause. Zero: none.
struct think_time {
    std::chrono::nanoseconds min{};
    std::chrono::nanoseconds max{};
    bool any() const noexcept { return max.count() > 0; }
};

// "100ms" (fixed) or "50ms..200ms" (uniform in the range); durations as --duration takes them.
result<think_time, problem> parse_think_time(std::string_view text);
// The text parse_think_time reads back into the same pause.
std::string think_time_text(const think_time& t);

// A pass/fail condition on the final report: p50..p99.9 / mean / max latency, error rate, throughput.
struct threshold {
    enum class metric : std::uint8_t { percentile, mean, max, errors, rps, dropped } what = metric::percentile;
    double percentile = 0; // for metric::percentile
    bool less = true;      // "<" (or "<="), else ">" (or ">=")
    double limit = 0;      // ns for latencies, a fraction (0..1) for errors and dropped, requests/s for rps
    std::string text;      // as written, for the report
};

// "p95<150ms", "p99.9<1s", "mean<20ms", "max<2s", "errors<8%", "rps>1000", "dropped<1%" (open model: the share
// of planned sends never sent, all connections busy until the end; k6's dropped iterations).
result<threshold, problem> parse_threshold(std::string_view text);

// A check on each response to a request; a failed check counts as an error of class `check`.
struct check {
    enum class kind : std::uint8_t { status, body_contains } what = kind::status;
    std::vector<unsigned> statuses; // kind::status: the response's status must be one of these
    std::string text;               // kind::body_contains: the body must contain this (first 64 KiB searched)
};

// One named request of a scenario. path_and_query, header values and body may hold {{column}} placeholders
// filled from the feed (CSV) row of each send.
struct request_spec {
    std::string name = "default";
    std::string method = "GET";
    std::string path_and_query = "/";
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    double weight = 1;                       // relative share of sends
    std::vector<unsigned> expected_statuses; // besides 1xx-3xx, statuses that count as success
    std::vector<check> checks;
    std::optional<think_time> think; // the pause after this request's response, in place of the plan's
};

// Values for placeholders, one row per send, taken in order (wrapping around), rows split between workers.
struct feed {
    std::string source; // the CSV file as a scenario names it (relative to the scenario's folder); "" if none
    std::vector<std::string> columns;
    std::vector<std::vector<std::string>> rows;
};

struct plan {
    http::url to; // where requests go; to.target is the plain run's request-target
    // For an https:// target: verification, client certificate, lowest version, SNI, resumption. Each connection
    // handshakes before its first request is sent; the handshake is timed apart (results::tls), not in latency.
    net::tls_client_options tls;
    // The client context made of `tls`, once: by make_plan (so that a file that cannot be used is told before the
    // run), used by run() for every connection, whose sessions then resume on any worker's connections. Null for
    // http://, or in a plan built by hand: run() then makes one. Shared by the plan's copies (their runs resume each
    // other's sessions); made again only by setting it to null, after a change of `tls`.
    std::shared_ptr<net::tls_context> tls_context;
    std::string method = "GET";
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    // A scenario's requests; empty for a plain run, which sends `method`, `to.target`, `headers`
    // and `body` (see requests_or_default()).
    std::vector<request_spec> scenario;
    feed data;

    unsigned threads = 0;       // worker threads, one event loop each; 0: one per core (resolve_threads)
    unsigned connections = 50;  // closed model: virtual users; open model: connections opened at start
    std::uint64_t requests = 0; // > 0: stop after exactly this many responses (ab -n)
    std::chrono::nanoseconds duration = std::chrono::seconds{10};
    std::chrono::nanoseconds warmup{}; // results of this first period are left out of the report
    std::chrono::nanoseconds timeout = std::chrono::seconds{10};
    bool keep_alive = true;
    // Keep trying to connect for the whole run when nothing connects at first (a target still starting). Without
    // it, a run where no connection opened within connect_grace of the start and attempts failed stops there.
    bool keep_trying = false;
    static constexpr std::chrono::seconds connect_grace{2};
    // Socket I/O of the workers' loops: io_uring where available (automatic), only io_uring, or epoll.
    enum class io_choice : std::uint8_t { automatic, uring, epoll } io = io_choice::automatic;
    unsigned pipeline = 1;
    // The protocol: HTTP/1.1, or HTTP/2 (over https:// agreed through ALPN, over http:// with prior knowledge: h2c),
    // or over https:// whichever each connection's ALPN agrees on (h2 preferred, as browsers and k6 do).
    enum class http_version : std::uint8_t { http1_1, h2, automatic } http = http_version::http1_1;
    unsigned streams = 1; // HTTP/2: requests in flight per connection, each on its stream (h2load's -m)

    double rate = 0;              // > 0: open model at this many requests/s
    unsigned max_connections = 0; // open model: cap on connections (0: `connections`, the -c a user gave)
    std::vector<stage> stages;    // replace duration/rate/connections when present

    // Closed model: each user's pause after a response before its next request (--think-time).
    think_time think;
    // Closed model: a 429 or 503 with Retry-After holds the user (its connection: every stream of it) that got it
    // for the time asked, capped at the run's end, as a client that honours it would (--ignore-retry-after: false).
    // The open model counts such answers but keeps its schedule: its arrivals are the load asked for.
    bool honour_retry_after = true;

    std::vector<unsigned> expected_statuses; // answered statuses counted as success besides 1xx–3xx
    std::vector<threshold> thresholds;
    // --segment: the part of the plan this run sends, when a plan is split over many generators (the whole by
    // default). The plan's users, requests and arrivals are the whole's; the workers take this segment's of them.
    segment part;
    // When the run begins (load/start.hpp): at this wall-clock time (--start-at), or once released (--paused);
    // at once otherwise.
    std::optional<std::chrono::system_clock::time_point> start_at;
    bool paused = false;

    bool h2() const noexcept { return http == http_version::h2; }
    bool may_h2() const noexcept { return http != http_version::http1_1; }
    bool open_model() const noexcept {
        return rate > 0 || (!stages.empty() && stages.front().what == stage::kind::rate);
    }
    // Open model: the most connections it opens, --max-connections or else -c.
    unsigned open_connections() const noexcept { return max_connections > 0 ? max_connections : connections; }
    // Total planned time: the stages' sum, else duration (warm-up included).
    std::chrono::nanoseconds total_time() const noexcept;
    // The arrival rate (open) or virtual users (closed) at `elapsed` into the run. A time before the start is
    // taken as the start and one past the end as the end: the level is always one the stages pass through.
    double level_at(std::chrono::nanoseconds elapsed) const noexcept;
    // The highest level of the run: the most virtual users a closed-model plan ever asks for.
    double max_level() const noexcept;
    // Open model: when the `k`-th arrival (k = 0, 1, ...) is due, from the start: the time at which the integral
    // of the rate reaches k (so a ramp from 0 sends as many requests as the area under it, as k6's
    // ramping-arrival-rate does). nullopt when the plan's stages end before that.
    std::optional<std::chrono::nanoseconds> arrival_time(double k) const noexcept;
    // Open model: arrivals planned in the whole run (the integral of the rate); 0 for the closed model.
    double planned_arrivals() const noexcept;
};

// The threads a plan runs on: `p.threads`, or one per core when it is 0.
unsigned resolve_threads(const plan& p) noexcept;

// The scenario's requests, or the one request the plain flags describe.
std::vector<request_spec> requests_or_default(const plan& p);

// The HTTP/1.1 request bytes for a plan (Host, Content-Length, Connection: close without keep-alive).
std::string build_request(const plan& p);
// The same for one request of a scenario, with placeholders left as they are.
std::string build_request(const plan& p, const request_spec& r);
// The same request's HTTP/2 fields (RFC 9113 §8.3): :method, :scheme, :authority (a Host header's value if given),
// :path, then the headers with names in lower case, less those HTTP/2 forbids (Connection, Keep-Alive,
// Proxy-Connection, Transfer-Encoding, Upgrade; TE but "trailers"); User-Agent and Content-Length as over HTTP/1.1.
std::vector<std::pair<std::string, std::string>> h2_request_fields(const plan& p, const request_spec& r);

} // namespace hotpath::load
