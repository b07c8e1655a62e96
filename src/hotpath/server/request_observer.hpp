// What the server learns of each request once it is answered, and where it tells it.
#pragma once

#include <hotpath/server/metrics.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace hotpath {

namespace net {
class transport;
}
struct request_state;
struct time_attribution;
struct worker;
class response;

// A connection's peer address for the access log, asked of the kernel once per connection (a system call per request
// cost a tenth of a plaintext request) on the first line logged; other connections hold a null pointer.
struct peer_address {
    std::uint8_t family = 0; // AF_INET, AF_INET6, or 0 when unknown
    std::uint8_t bytes[16] = {};
};

// The request observer: one place on every request's path, whatever carries the request (an HTTP/1.1 connection
// today), that turns its timestamps into where its time went (request_time_parts), tells the client
// (Server-Timing, with server_options.server_timing) and records it (the loop's counters, the route's metrics, the
// access log's record). Allocates nothing, except the peer address once per logged connection.
namespace request_observer {

// The handler is done (or the request was answered without one) at `finished`: the parts known before the response
// is written — queued, its own time, downstream calls, other waits (s.timing, finished) — and Server-Timing
// added to s.res when the server says so.
request_time_parts handled(const worker& w, request_state& s, std::chrono::steady_clock::time_point finished);

// The response is bytes (`response_bytes` of them, framing included): counted by its status class, recorded in its
// route's metrics, and logged when the server has an access log. `peer`: the connection's address cache, filled
// from `from`'s socket on first use (not asked for otherwise: a virtual call per request was measurable).
void answered(worker& w, const request_state& s, const request_time_parts& parts, std::size_t response_bytes,
              std::unique_ptr<peer_address>& peer, const net::transport& from) noexcept;

// The W3C Server-Timing field of `parts`, in milliseconds, with the downstream calls described when there were
// any, so that curl -v and a browser's developer tools show where the server's time went. No allocation past the
// response's kept field capacity.
void add_server_timing(response& res, const request_time_parts& parts, const time_attribution& waits);

} // namespace request_observer

} // namespace hotpath
