// The HTTP client (HTTP/1.1, and HTTP/2 by ALPN or h2c): async, on the caller's own event loop, with a pool of
// connections per host per loop.
#pragma once

#include <hotpath/client/response.hpp>
#include <hotpath/core/cancel.hpp>
#include <hotpath/core/result.hpp>
#include <hotpath/core/task.hpp>
#include <hotpath/http/limits.hpp>
#include <hotpath/net/tls_options.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotpath {

namespace client_detail {
struct shared_state;
}
namespace metrics {
class source;
}

// The HTTP version a client speaks (.NET's HttpRequestMessage.Version with its VersionPolicy).
enum class client_protocol : std::uint8_t {
    http1, // HTTP/1.1 only: a request at a time per connection, many connections
    // HTTP/2 only: every call to a host on one connection's streams (more connections only when its streams are all
    // taken). https:// asks for h2 by ALPN and fails a server that does not agree (net::tls_errc::no_common_protocol);
    // http:// speaks h2c with prior knowledge (RFC 9113 §3.3), as gRPC does.
    http2,
    // https:// offers h2 and http/1.1 by ALPN and speaks what the server picks (RequestVersionOrLower); http://
    // speaks HTTP/1.1.
    prefer_http2,
};

// Defaults follow .NET's SocketsHttpHandler and HttpClient where they have one.
struct client_options {
    client_protocol protocol = client_protocol::http1;
    // Connections per (host, port) per event loop, open or opening; calls beyond wait for one (FIFO).
    std::size_t max_connections_per_host = 1024;
    std::chrono::nanoseconds connect_timeout = std::chrono::seconds{15};  // ConnectTimeout: infinite in .NET
    std::chrono::nanoseconds request_timeout = std::chrono::seconds{100}; // HttpClient.Timeout
    std::chrono::nanoseconds idle_timeout = std::chrono::minutes{1};      // PooledConnectionIdleTimeout
    // PooledConnectionLifetime: a connection older than this is closed instead of reused (lets DNS changes
    // take effect). Zero: no limit (.NET's default); case 1 of CASES.md sets 5 minutes.
    std::chrono::nanoseconds connection_lifetime = std::chrono::nanoseconds::zero();
    // Response bodies over this fail with errc::response_too_large (MaxResponseContentBufferSize).
    std::uint64_t max_response_bytes = 64ull * 1024 * 1024;
    // Response head limits (bytes, field count) for the shared parser.
    http::limits limits;
    // https:// URLs: the server's certificate verified against the system's roots (or ca_file) and its name, unless
    // verify is false; a client certificate for mutual TLS; sessions resumed on new connections. The server name is
    // the URL's host unless server_name is given. A certificate refused fails the call with its net::tls_errc.
    net::tls_client_options tls;
};

// A name for a kind of call in the client's metrics, made once by client::route (at set-up, not per call): the
// route template of the downstream it calls, e.g. "/weatherForecast", never the raw path, so that the series stay
// few. The default, id 0, names the unnamed calls (route="").
struct client_route {
    // Names a client registers at most; client::route gives every later name one shared id, "(other)".
    static constexpr std::uint16_t max_named = 64;
    std::uint16_t id = 0;
};

// Per call: an earlier deadline than the client's request_timeout, and a signal that abandons the call.
struct call_options {
    std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero(); // zero: client_options::request_timeout
    // When set, the call also ends at this instant: one deadline shared by all the calls of a fan-out.
    std::chrono::steady_clock::time_point deadline{};
    // When cancelled (e.g. request::aborted() of the inbound request), the call ends with errc::cancelled and
    // its connection is closed, not returned to the pool. Must outlive the call.
    cancel_signal* cancel = nullptr;
    // What the call's figures are counted under, with its downstream (host:port): see client::route.
    client_route route{};
};

struct client_request {
    std::string method = "GET";
    std::string url; // absolute: http://host[:port]/path?query
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body; // sent with Content-Length (also 0 for POST, PUT and PATCH without a body)
};

// The client's metrics summed over every loop, downstream and route (read from any thread; approximate while calls
// run). The same figures as the Prometheus families of client::metrics(), in one struct.
struct client_stats {
    std::uint64_t requests = 0;              // calls that got a response
    std::uint64_t failures = 0;              // calls that ended in an error
    std::uint64_t connections_opened = 0;    // connects that succeeded
    std::uint64_t connect_failures = 0;      // connects that failed (refused, timed out, unresolved)
    std::uint64_t reused = 0;                // requests sent on a pooled connection
    std::uint64_t retries = 0;               // idempotent requests retried after a stale pooled connection failed
    std::uint64_t not_retried = 0;           // other requests that failed so: returned as errors, maybe processed
    std::uint64_t closed_idle = 0;           // pooled connections closed by the idle timeout
    std::uint64_t closed_lifetime = 0;       // connections retired by connection_lifetime
    std::uint64_t closed_by_peer = 0;        // pooled connections the peer closed while idle, found before use
    std::uint64_t timeouts = 0;              // calls that failed with errc::timeout or errc::connect_timeout
    std::uint64_t cancelled = 0;             // calls that failed with errc::cancelled (their cancel signal)
    std::uint64_t abandoned = 0;             // calls whose awaiting coroutine was destroyed before they ended
    std::uint64_t waited_for_connection = 0; // calls that queued because the host was at its connection limit
};

// One client, shared by every loop (like a static HttpClient): each loop gets its own pools on first use,
// so a call never leaves the loop it was awaited on. Calls are coroutines: `co_await c.get(url)` on an event
// loop thread (server handler, load worker, or a loop of your own). Expected failures are values in the
// result (errc: refused, reset, connect_timeout, timeout, malformed_response, response_too_large,
// invalid_url, resolve_failed, cancelled, closed; over https:// a net::tls_errc for a certificate refused or a
// failed handshake, errc::invalid_value when client_options::tls names files that cannot be used); nothing throws
// but allocation failure.
//
// Retries (RFC 9110 §9.2.2, the rule of Go's transport). A pooled connection may have been closed by the peer
// just as a request goes out. When a request on a reused connection fails with errc::closed or errc::reset
// before any byte of its response arrived, it is sent again, once, on a new connection, if it is idempotent:
// GET, HEAD, OPTIONS, TRACE, PUT, DELETE, or any request with an Idempotency-Key (or X-Idempotency-Key)
// field. Any other request (POST, PATCH, ...) may have reached the server, so the error is returned instead
// (stats().not_retried counts these). Such a request is only ever resent when it provably never left: before
// writing one on a reused connection, the client looks at the socket (one recv with MSG_PEEK); a connection
// the peer has closed, or spoken on out of turn, is dropped (stats().closed_by_peer) and another one taken, so
// the request is written once. Idempotent requests skip that look: their retry covers the case.
// Over HTTP/2 a request the server provably did not process (its stream refused with REFUSED_STREAM, or above the
// last stream of its GOAWAY) is sent again once, whatever its method (RFC 9113 §8.7).
//
// The client must outlive its calls; idle pooled connections are closed within a second of its end.
class client {
public:
    explicit client(client_options options = {});
    ~client();
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    task<result<client_response>> send(client_request request, call_options options = {});
    task<result<client_response>> get(std::string url, call_options options = {});
    task<result<client_response>> post(std::string url, std::string body, std::string content_type,
                                       call_options options = {});

    // GET, then the body as JSON converted to T with boost::json::try_value_to (define tag_invoke for your
    // types); a status other than 2xx is errc::unexpected_status, a body that is not such JSON
    // errc::invalid_json. Defined in client/json.hpp: include it to use this.
    template <typename T>
    task<result<T>> get_json(std::string url, call_options options = {});

    // Whether `url` is one send() accepts (http:// or https://): success or errc::invalid_url.
    static std::error_code check_url(std::string_view url);

    const client_options& options() const noexcept;
    client_stats stats() const; // allocates: a copy of the figures by downstream, summed

    // The id that counts calls named `name` (call_options::route) apart, per downstream: the same id for the same
    // name; past client_route::max_named names, the id of "(other)". Takes a lock and may allocate: call it once
    // when setting up, keep the id. Any thread.
    client_route route(std::string_view name);

    // The client's figures for a metrics page (app.expose(c.metrics())), as the families hotpath_client_...:
    // calls by downstream (host:port), route and outcome (status class or error kind), their durations, connections
    // opened, reused, failed and closed, the pools' idle and busy connections, calls waiting and in flight. Each
    // loop writes its own figures without locks or allocation; a scrape sums them. Shares ownership of the
    // figures: they stay readable after the client is gone. A call refused before it has a downstream (an invalid
    // URL, method or field) is not counted.
    std::shared_ptr<const metrics::source> metrics() const noexcept;

private:
    std::shared_ptr<client_detail::shared_state> shared_;
};

} // namespace hotpath
