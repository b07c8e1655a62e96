// The server: one event loop per thread, each with its own listener, connections and counters.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/http/limits.hpp>
#include <hotpath/net/tls_options.hpp>
#include <hotpath/server/app.hpp>
#include <hotpath/server/stats.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hotpath {

// How sockets are read and written: io_uring (batched system calls, multishot receive) where the kernel
// allows it, else the loop's epoll backend. `uring` fails start() when io_uring is unavailable.
enum class io_backend : std::uint8_t { automatic, uring, epoll };

enum class log_line_format : std::uint8_t {
    json,   // JSON lines: time, remote, method, target, route, status, bytes, duration and its parts in ms
    common, // the Common Log Format of Apache and nginx: host ident user [time] "request line" status bytes
};

struct server_options {
    // An IPv4 or IPv6 address ("127.0.0.1", "::1", "0.0.0.0", "::"), or a host name that start() resolves to its
    // first address ("localhost"); see net::resolve_listen_address.
    std::string address = "127.0.0.1";
    std::uint16_t port = 8080; // 0: pick a free port (see server::port())
    unsigned threads = 0;      // event loops; 0: one per core
    int backlog = 4096;
    io_backend io = io_backend::automatic;
    http::limits limits;
    // Latency objectives (e.g. 150 ms): each becomes a bucket bound of the request duration histograms, so that
    // the share of requests within it is exact.
    std::vector<std::chrono::nanoseconds> latency_objectives;
    // A loop working in one turn longer than this is stalled (a handler blocking its thread): counted per loop,
    // with a histogram of their lengths in the metrics, and told in one line per loop per second at most, naming
    // the route whose handler was running. 25 ms, seastar's figure; 0 turns the watchdog off.
    std::chrono::milliseconds stall_threshold{25};
    // A stall line also tells where the loop's thread was, as program offsets (see net/stack_sampler.hpp: the
    // watchdog signals the thread once for each stall it reports).
    bool stall_backtraces = true;
    // Adds a Server-Timing field to every response (W3C Server Timing): queue, app, downstream, wait and total
    // milliseconds of the request (see request_time_parts in server/metrics.hpp), for curl and browsers to show.
    bool server_timing = false;
    // One line per request to this file (appended; "-": standard output), off when empty. Written by a thread of
    // its own from a ring per loop of access_log_records lines; when it falls behind, lines are dropped and
    // counted (hotpath_access_log_dropped_total), and no loop ever waits for it.
    std::string access_log;
    log_line_format access_log_format = log_line_format::json;
    std::size_t access_log_records = 4096;
    // HTTP/2 beside HTTP/1.1 on the same port: a connection that opens with HTTP/2's preface (h2c with prior
    // knowledge, as `curl --http2-prior-knowledge` and h2load send) speaks it, and over TLS "h2" is offered first
    // through ALPN. Same routes, handlers, limits and metrics; Kestrel's HTTP/2 limits (100 streams per connection,
    // 16 KiB frames, 1 MiB connection window, 768 KiB per stream). False: HTTP/1.1 only.
    bool http2 = true;
    // HTTPS on every loop, with limits.tls_handshake_timeout and limits.max_tls_handshakes.
    net::tls_server_options tls;
    // Called on SIGHUP by wait_for_stop_signal(), after the TLS certificate is reloaded (a service's own data).
    std::function<void()> on_reload;
    // Behind a load balancer or in Kubernetes: on SIGINT or SIGTERM, wait_for_stop_signal() first calls
    // on_draining (where a readiness route starts answering 503) and goes on serving, and accepting, for
    // drain_delay, so that the balancer's health checks (or the endpoints' update) take the instance out of
    // rotation before it stops accepting; then the graceful stop. A second signal cuts the delay short. 0: stop
    // at once.
    std::chrono::milliseconds drain_delay{0};
    std::function<void()> on_draining;
    // Where stall lines go, and the lines of a reload; stderr when empty. Called on the watchdog's thread (a stall)
    // or the one waiting for signals.
    std::function<void(const std::string& line)> log_line;
};

// Thread-per-core: each loop accepts on its own SO_REUSEPORT socket and keeps every connection it accepts;
// a request is read, handled and answered on one thread. The app must outlive the server.
class server {
public:
    server(const app& routes, server_options options);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    // Binds and starts the loops. Errors are values, with a line for a person, and nothing is left running:
    // std::errc::address_in_use when another socket holds the port (another process's, hotpath or not: the loops
    // of this server share it, no one else does), errc::invalid_address or errc::resolve_failed for
    // options.address, errc::invalid_value for a TLS certificate or key that cannot be used (the line says which
    // and why).
    result<void, problem> start();
    // The bound port (after start).
    std::uint16_t port() const noexcept;
    // The bound IP address as text, e.g. "127.0.0.1" or "::1" (after start; options.address once resolved).
    const std::string& address() const noexcept;
    // Where clients reach the server: "http://127.0.0.1:8080", "http://[::1]:8080", "https://..." over TLS
    // (after start; allocates).
    std::string url() const;
    unsigned threads() const noexcept;
    // The backend in use after start(): uring or epoll.
    io_backend io() const noexcept;

    // Reads options.tls's certificate and key files again (renewed in place) and has new handshakes use them;
    // connections open go on with the ones they began with, none is dropped (nginx's reload). Any thread, after
    // start(). On an error the running certificate stays and the line says why.
    result<void, problem> reload_tls();

    // Graceful stop, callable from any thread, once or more: stop accepting, close idle connections, let
    // in-flight requests finish (their responses say "Connection: close") within limits.drain_timeout, then
    // close the rest and end the loops.
    void stop();
    // Blocks until every loop has ended.
    void wait();

    // Stop signals. The loops never take SIGINT, SIGTERM or SIGHUP: start() runs them with all three blocked, so
    // that a signal sent to the process goes to a thread that waits for it or, with none, acts as it would without
    // a server. The simplest safe way is run_until_signal(); start() then wait_for_stop_signal() is safe too.

    // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and the threads it starts later). Optional: call it
    // before start() only to keep a signal that arrives between start() and wait_for_stop_signal(), which would
    // otherwise end the process at once.
    static void block_stop_signals() noexcept;
    // Blocks the three in the calling thread (they stay blocked) and waits: SIGINT or SIGTERM stops and waits (the
    // graceful drain, after options.drain_delay); SIGHUP reloads the TLS certificate (reload_tls) and calls
    // options.on_reload, each saying what it did in a line, then waits again. With neither TLS nor on_reload, a SIGHUP
    // is left pending, unheeded.
    void wait_for_stop_signal();
    // block_stop_signals(), start(), on_started(*this) on the calling thread once the port is bound (to learn
    // port() or url() when port 0 was asked for), then wait_for_stop_signal(). Prints nothing; the caller
    // reports. Returns start()'s error without calling on_started; what on_started throws propagates (the
    // server is then stopped by its destructor).
    result<void, problem> run_until_signal(const std::function<void(const server&)>& on_started = {});

    server_stats stats() const noexcept;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace hotpath
