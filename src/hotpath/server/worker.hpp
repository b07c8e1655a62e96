// One loop's share of the server: the loop, its listener, its connections and its counters.
#pragma once

#include <hotpath/net/listener.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/stack_sampler.hpp>
#include <hotpath/net/timer.hpp>
#include <hotpath/net/tls.hpp>
#include <hotpath/net/transport.hpp>
#include <hotpath/server/metrics.hpp>
#include <hotpath/server/request_state.hpp>
#include <hotpath/server/server.hpp>
#include <hotpath/server/stats.hpp>

#include <atomic>
#include <memory>
#include <vector>

namespace hotpath {

class access_log;
class access_ring;
class app;
class server_connection;

// Public fields are set by the server before the loop runs and read by the loop's connections; the connection list
// is the worker's own.
struct worker {
    worker(unsigned index, const app& r, const server_options& o, std::atomic<std::size_t>& open)
        : loop(index), routes(r), options(o), open_connections(open), states(o.limits, loop, stats), drain_timer(loop) {
    }

    net::loop loop;
    const app& routes;
    const server_options& options;
    std::unique_ptr<net::listener> listener;
    loop_stats stats;
    route_table_metrics route_stats; // per route of `routes`, then the unrouted
    // What the watchdog names when the loop stalls: the handler id whose code ran last on the loop (from its
    // dispatch until it returns or first suspends, then from each end of its waits: see time_attribution) in the
    // low half, or no_handler; the number of the loop's turn when it was set (turn_stats::turns) in the high half,
    // so that a value left from an earlier turn names nothing.
    static constexpr std::uint32_t no_handler = ~std::uint32_t{0};
    std::atomic<std::uint64_t> running_handler{no_handler};
    // running_handler's value for `handler` in the loop's running turn.
    std::uint64_t running_now(std::uint32_t handler) const noexcept {
        return loop.stats().turns.load(std::memory_order_relaxed) << 32 | handler;
    }
    // Written by the watchdog's thread only (see server.cpp): stalls seen and their lengths.
    counter stalls;
    net::stack_sampler sampler; // the loop's thread, for a stall line's backtrace
    std::unique_ptr<metrics::duration_buckets> stall_lengths;
    const std::vector<std::unique_ptr<worker>>* all = nullptr; // every loop's worker, for a metrics scrape
    // With server_options.access_log: the server's log, and this loop's ring in it.
    const access_log* log = nullptr;
    access_ring* log_ring = nullptr;
    std::atomic<std::size_t>& open_connections; // across all workers, for limits.max_connections
    // What connections with a request in flight borrow (trimmed on the tick); an idle one holds none.
    request_state_pool states;

    // Handlers started and not finished on this loop, for limits.max_requests_in_flight.
    std::size_t handlers_running = 0;
    // The server's: when stop() was called, the drain's deadline (steady_clock nanoseconds; 0 before). Read at each
    // dispatch, so that a loop whose handlers block its thread stops running them once the drain time is up.
    const std::atomic<std::int64_t>* drain_deadline_ns = nullptr;

    // What this loop's connections get their transports from: sockets on the loop's backend, unless a test gives
    // an in-memory pair (tests/support/memory_transport.hpp); with server_options.tls, TLS sessions over them
    // (`tls`, this loop's own, so that a reload swaps its context on the loop's thread).
    net::transport_factory* transports = &net::socket_transports();
    std::unique_ptr<net::tls_transports> tls;
    std::size_t handshakes = 0; // TLS handshakes in progress on this loop, for limits.max_tls_handshakes

    bool draining = false;
    net::timer drain_timer; // fires at the drain's deadline; declared after loop: destroyed first

    // A new connection, on the loop's thread: the socket `fd` (-1 with a factory that needs none) is admitted, or
    // refused, against limits.max_connections across all loops, then served with a transport from `transports`.
    // Returns the connection, or nullptr when it was closed at once (far over the limit, or draining).
    server_connection* accept(int fd);
    // Graceful shutdown, on the loop's thread: idle connections close now, busy ones after their response, and
    // what still runs at limits.drain_timeout is cut. The loop stops once no connection is left.
    void begin_drain();
    // Once a second: each connection's timeouts, and the pool of request states trimmed.
    void on_tick(net::clock::time_point now);
    // Destroys every connection at once (a server stopped without draining, before its loop goes).
    void close_all() noexcept;
    std::size_t connection_count() const noexcept { return connection_count_; }

private:
    friend class server_connection;
    // Called by a connection when it is made and when it is destroyed; the last one gone while draining stops
    // the loop.
    void link(server_connection& c) noexcept;
    void unlink(server_connection& c) noexcept;

    // Intrusive list of this loop's connections.
    server_connection* first_ = nullptr;
    std::size_t connection_count_ = 0;
};

} // namespace hotpath
