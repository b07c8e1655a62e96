// Every limit and timeout of the HTTP server in one place, with its default and the reason for it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace hotpath::http {

// Field capacity of a parsed request head; `limits::max_header_count` may be set up to this.
inline constexpr std::size_t max_fields_capacity = 128;

// Defaults follow Kestrel's (KestrelServerLimits), which users of minimal APIs already rely on.
struct limits {
    // Request line (method, target, version, CRLF). Longer → 414. Kestrel: 8 KiB.
    std::size_t max_request_line_bytes = 8 * 1024;
    // Header section after the request line, up to and including the empty line. Longer → 431. Kestrel: 32 KiB.
    std::size_t max_header_bytes = 32 * 1024;
    // Number of header fields. More → 431. Kestrel: 100. At most max_fields_capacity.
    std::size_t max_header_count = 100;
    // Request body, after chunked decoding. Larger → 413. Kestrel: 30,000,000 bytes (~28.6 MiB).
    std::uint64_t max_body_bytes = 30'000'000;
    // A chunk extension (`;name=value...`) longer than this → 400: it can only be an attack (RFC 9112 §7.1.1
    // lets a recipient limit it). Node.js and h2o limit these too.
    std::size_t max_chunk_extension_bytes = 4 * 1024;

    // From the first byte of a request to the end of its header section; slowloris defence → 408 and close.
    // Kestrel: RequestHeadersTimeout 30 s.
    std::chrono::seconds request_headers_timeout{30};
    // Over TLS, from the connection's accept to the end of its handshake; past it the connection is closed (a slow
    // handshake is a slowloris too). Then the request head has request_headers_timeout. Kestrel: HandshakeTimeout
    // 10 s.
    std::chrono::seconds tls_handshake_timeout{10};
    // Over TLS, handshakes in progress per loop; a connection accepted past it is closed at once, so that a flood
    // of new connections cannot hold a loop's memory and keep its CPU on key exchanges. HAProxy's maxsslconn
    // bounds the same. 0: no limit.
    std::size_t max_tls_handshakes = 1024;
    // An idle keep-alive connection is closed after this. Kestrel: KeepAliveTimeout 130 s.
    std::chrono::seconds keep_alive_timeout{130};
    // A body must arrive at least this fast once the grace period has passed, or the connection is closed
    // (slow-POST defence). Kestrel: MinRequestBodyDataRate 240 bytes/s with a 5 s grace period.
    std::uint64_t min_body_bytes_per_second = 240;
    std::chrono::seconds min_body_rate_grace{5};
    // While responses wait to be sent, the client must take them at least this fast, or the connection is closed
    // (a client that stops reading would otherwise hold its connection and buffers for as long as the response
    // is large). Measured as progress: over any span of t seconds with responses waiting, the client must take
    // rate × (t − grace) bytes, so a stall is noticed after the grace period however large the response.
    // Kestrel: MinResponseDataRate 240 bytes/s, 5 s grace. 0: no limit.
    std::uint64_t min_response_bytes_per_second = 240;
    std::chrono::seconds min_response_rate_grace{5};
    // Simultaneous connections across all loops. Past this, a new connection's first request is answered 503 with
    // Retry-After and the connection closed (so a client learns why, instead of seeing a reset); past it by a
    // tenth more (and 16), new connections are closed at once. Kestrel: unlimited (MaxConcurrentConnections).
    std::size_t max_connections = 0; // 0: unlimited
    // Requests whose handler is running (dispatched and not yet answered: most of them awaiting a downstream call,
    // a timer or a blocking call), per loop. Past this, a request is answered 503 with Retry-After at once instead
    // of queueing behind the others without bound; the connection stays open. ASP.NET Core's ConcurrencyLimiter
    // middleware does this (its queue length 0). 0: unlimited.
    std::size_t max_requests_in_flight = 0;
    // The Retry-After of those 503s.
    std::chrono::seconds retry_after{1};
    // On shutdown, in-flight requests get this long to finish before connections are closed.
    std::chrono::milliseconds drain_timeout{std::chrono::seconds{30}};
};

} // namespace hotpath::http
