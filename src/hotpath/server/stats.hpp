// Counters a server keeps per loop: written by that loop only, read by anyone (relaxed atomics, no locks).
#pragma once

#include <hotpath/core/counter.hpp>

#include <cstdint>

namespace hotpath {

struct loop_stats {
    counter connections_accepted;
    counter connections_rejected; // far over limits.max_connections: closed at once
    counter connections_closed;
    counter requests;              // requests dispatched to a handler or answered 404/405
    counter responses_by_class[6]; // index = status / 100 (1xx..5xx)
    counter bad_requests;          // malformed or over a limit: answered 4xx/5xx by the connection, then closed
    counter handler_exceptions;    // exceptions escaping handlers, answered 500
    counter requests_abandoned;    // handlers abandoned unanswered: the client went away, or reset its stream
    // Overload: requests answered 503 with Retry-After at once, by the limit they met.
    counter refused_in_flight;   // limits.max_requests_in_flight on their loop
    counter refused_connections; // limits.max_connections: the first request of a connection over it
    counter refused_draining;    // stopping, past limits.drain_timeout: not run (a loop busy in blocking handlers)
    // Slow clients, counted apart from malformed requests (a 408 is not a bad request):
    counter header_timeouts;   // a request head not whole within limits.request_headers_timeout: 408, or a close
                               // when not one byte of it came
    counter body_timeouts;     // a request body below limits.min_body_bytes_per_second: 408
    counter response_timeouts; // responses taken below limits.min_response_bytes_per_second: closed
    // Not a fault: an idle keep-alive connection closed after limits.keep_alive_timeout.
    counter idle_timeouts;
    counter accept_pauses; // accepting paused: out of file descriptors or kernel memory
    // Over TLS: handshakes completed (resumed among them), failed (a protocol error, a refused certificate; not a
    // peer that left before its end), cut by limits.tls_handshake_timeout, and connections closed at once over
    // limits.max_tls_handshakes.
    counter tls_handshakes;
    counter tls_resumed;
    counter tls_failures;
    counter tls_timeouts;
    counter tls_refused;
    // HTTP/2: connections that chose it (prior knowledge or ALPN), its requests (each a stream, among `requests`),
    // and streams the client reset before their response was whole.
    counter h2_connections;
    counter h2_streams;
    counter h2_resets;
    // Streams reset with REFUSED_STREAM: a connection's request bodies over its budget (see h2_connection.hpp).
    counter h2_refused;
    // Connections cut off (GOAWAY, then closed) by a defence: too many streams ended before their response (rapid
    // reset, MadeYouReset), too many frames that carry no request (floods), or nghttp2's own frame limits.
    counter h2_cut_resets;
    counter h2_cut_control;
    counter h2_cut_frames;
    counter h2_cut_fields;  // connections ended whose header block went on far past the limits (HPACK bombs)
    counter bytes_received; // request bytes as they arrived, framing included
    counter bytes_sent;     // response bytes handed to the transport
    // Request states (server/request_state.hpp) made and freed by the loop's pool: made minus freed is how many
    // exist, in use or pooled. Both stay still while busy connections reuse pooled states.
    counter request_states_made;
    counter request_states_freed;
};

// A plain copy, summed over loops.
struct server_stats {
    std::uint64_t connections_accepted = 0;
    std::uint64_t connections_rejected = 0;
    std::uint64_t connections_closed = 0;
    std::uint64_t requests = 0;
    std::uint64_t responses_by_class[6] = {};
    std::uint64_t bad_requests = 0; // malformed or over a limit; timeouts are not counted here
    std::uint64_t handler_exceptions = 0;
    std::uint64_t refused_in_flight = 0;   // 503: over limits.max_requests_in_flight
    std::uint64_t refused_connections = 0; // 503: on a connection over limits.max_connections
    std::uint64_t refused_draining = 0;    // 503: stopping, dispatched past limits.drain_timeout
    std::uint64_t timeouts = 0;            // slow clients: header_timeouts + body_timeouts + response_timeouts
    std::uint64_t header_timeouts = 0;
    std::uint64_t body_timeouts = 0;
    std::uint64_t response_timeouts = 0;
    std::uint64_t idle_timeouts = 0; // idle keep-alive connections closed (not counted in timeouts)
    std::uint64_t accept_pauses = 0;
    std::uint64_t tls_handshakes = 0;       // over TLS: handshakes completed
    std::uint64_t tls_resumed = 0;          // of them, resumed sessions
    std::uint64_t tls_failures = 0;         // handshakes that failed
    std::uint64_t tls_timeouts = 0;         // cut at limits.tls_handshake_timeout
    std::uint64_t tls_refused = 0;          // connections closed at once over limits.max_tls_handshakes
    std::uint64_t h2_connections = 0;       // connections that spoke HTTP/2
    std::uint64_t h2_streams = 0;           // requests over HTTP/2
    std::uint64_t h2_resets = 0;            // streams the client reset before their end
    std::uint64_t h2_refused = 0;           // streams refused (REFUSED_STREAM) over a connection's body budget
    std::uint64_t request_states_made = 0;  // request states allocated by the loops' pools
    std::uint64_t request_states_freed = 0; // and freed (trimmed, or too grown to keep)
    std::uint64_t access_log_lines = 0;     // with server_options.access_log: lines written
    std::uint64_t access_log_dropped = 0;   // and dropped because the writer fell behind
};

} // namespace hotpath
