// The client's metrics (internal): per downstream (host:port) and per loop, written by that loop only; a scrape
// or client::stats() sums them over loops (and over clients sharing a page).
#pragma once

#include <hotpath/client/client.hpp>
#include <hotpath/core/counter.hpp>
#include <hotpath/metrics/duration_buckets.hpp>
#include <hotpath/metrics/gauge.hpp>
#include <hotpath/metrics/source.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/tls.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace hotpath::client_detail {

// What a call ended with, besides a response: the label values of hotpath_client_calls_total{outcome}.
enum class call_error : std::uint8_t {
    refused,
    reset,
    closed,
    connect_timeout,
    timeout,
    cancelled,
    malformed_response,
    response_too_large,
    resolve_failed,
    other,     // a system error the client does not name (e.g. network unreachable)
    abandoned, // the awaiting coroutine was destroyed before the call ended (no result was returned)
    count
};
constexpr std::array<std::string_view, static_cast<std::size_t>(call_error::count)> call_error_names{
    "refused",
    "reset",
    "closed",
    "connect_timeout",
    "timeout",
    "cancelled",
    "malformed_response",
    "response_too_large",
    "resolve_failed",
    "other",
    "abandoned"};
static_assert(!call_error_names.back().empty(), "a name for every call_error");
call_error kind_of(std::error_code e) noexcept;

// The calls of one route (client::route) to one downstream on one loop.
struct call_metrics {
    explicit call_metrics(std::span<const std::uint64_t> bounds_ns) : duration(bounds_ns) {}
    counter by_class[6]; // responses, index = status / 100
    counter by_error[static_cast<std::size_t>(call_error::count)];
    metrics::duration_buckets duration; // every call, whatever its outcome
};

// One downstream (host, port) on one loop: its host_pool writes these. Made when the pool is made; the calls of
// a route get their call_metrics on the route's first call from this loop (see host_pool::route_metrics).
struct downstream_metrics {
    explicit downstream_metrics(std::string n) : name(std::move(n)) {}
    const std::string name; // "host:port", an IPv6 literal in brackets
    // By client_route id; null until that route's first call here. Grows under shared_state::mutex.
    std::vector<std::unique_ptr<call_metrics>> routes;
    counter connections_opened;    // connects that succeeded
    counter connect_failures;      // connects that failed (refused, timed out, unresolved)
    counter reused;                // requests sent on a pooled connection
    counter retries;               // idempotent requests retried after a stale pooled connection failed
    counter not_retried;           // other requests that failed so: returned as errors, maybe processed
    counter closed_idle;           // pooled connections closed by the idle timeout
    counter closed_lifetime;       // connections retired by connection_lifetime
    counter closed_by_peer;        // pooled connections the peer closed while idle, found before use
    counter waited_for_connection; // calls that queued because the host was at its connection limit
    metrics::gauge open;           // connections open or opening
    metrics::gauge idle;           // of which idle in the pool
    metrics::gauge waiters;        // calls queued for a connection now
    metrics::gauge in_flight;      // calls started and not ended
};

// One loop's downstreams, in the order the loop first called them.
struct loop_metrics {
    std::vector<std::unique_ptr<downstream_metrics>> downstreams; // grows under shared_state::mutex
};

// What a client shares with its loops: the options, whether it still exists, and every loop's metrics. It is the
// client's metrics::source too, so a page that exposes it keeps the figures readable after the client is gone.
// The client's TLS context (made once, on first use), or the error that prevents it.
struct shared_state;
result<std::shared_ptr<net::tls_context>> tls_context_of(shared_state& s);

struct shared_state final : metrics::source {
    explicit shared_state(client_options o);
    client_options options;
    std::atomic<bool> closed{false};
    const std::vector<std::uint64_t> bounds_ns; // the server's latency buckets (metrics::latency_bounds_ns())
    // Guards what grows: `loops` (once per loop), a loop's downstreams (once per host), a downstream's routes
    // (once per route) and `route_names`; a reader of their shape (a scrape, stats()) holds it too. Never taken
    // per call once a loop has called a route of a host.
    mutable std::mutex mutex;
    std::deque<loop_metrics> loops;
    // Route names by client_route id - 1 (id 0: unnamed calls); the last possible id is the overflow, "(other)".
    std::vector<std::string> route_names;
    // https://: the context of options.tls, made on the first call to an https URL (under `mutex`), or why it could
    // not be (a CA or certificate file that cannot be used: every https call then fails with it).
    std::shared_ptr<net::tls_context> tls;
    std::error_code tls_error;
    bool tls_made = false;
};

// A registered route's label: "" for unnamed calls, "(other)" past client_route::max_named.
std::string_view route_name(const shared_state& s, std::size_t id);

// Every figure of some clients summed over their loops, by downstream, then by route name.
struct client_totals {
    struct route_sum {
        std::string name;
        std::uint64_t by_class[6] = {};
        std::uint64_t by_error[static_cast<std::size_t>(call_error::count)] = {};
        std::vector<std::uint64_t> buckets; // per bucket alone, one more than the bounds
        std::uint64_t sum_ns = 0;
    };
    struct downstream_sum {
        std::string name;
        std::vector<route_sum> routes;
        std::uint64_t connections_opened = 0, connect_failures = 0, reused = 0, retries = 0, not_retried = 0,
                      closed_idle = 0, closed_lifetime = 0, closed_by_peer = 0, waited_for_connection = 0, open = 0,
                      idle = 0, waiters = 0, in_flight = 0;
    };
    std::vector<downstream_sum> downstreams;
    std::span<const std::uint64_t> bounds_ns; // of the first client (every client has the same)

    void add(const shared_state& s); // takes s.mutex while reading
};

// The client families of a Prometheus page (the writer of shared_state's metrics::source).
void write_client_metrics(metrics::prometheus_writer& out, std::span<const metrics::source* const> group);

class host_pool;

// Counts one call while it lives: in flight from construction, then its outcome (a response's status class, or
// an error's kind) and its duration when destroyed; abandoned when destroyed without an outcome. Allocates
// nothing once the pool has served the route (host_pool::route_metrics allocates on a route's first call).
class call_meter {
public:
    call_meter(host_pool& pool, client_route route, net::clock::time_point start);
    ~call_meter();
    call_meter(const call_meter&) = delete;
    call_meter& operator=(const call_meter&) = delete;

    void responded(unsigned status) noexcept;
    void failed(std::error_code e) noexcept;

private:
    downstream_metrics& downstream_;
    call_metrics& calls_;
    net::clock::time_point start_;
    bool ended_ = false;
};

} // namespace hotpath::client_detail
