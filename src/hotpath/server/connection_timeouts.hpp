// What a server connection waits for, and for how long: the read-side timeout and the minimum response rate.
#pragma once

#include <hotpath/http/limits.hpp>
#include <hotpath/net/timer.hpp>

#include <cstdint>
#include <optional>

namespace hotpath {

// The connection says what it waits for (a head, the next request, a body, the end of a lingering close) and
// reports the bytes that arrive; its tick, once a second, asks check() whether a limit ran out and acts on the
// answer. No I/O and no clock of its own: times are the loop's, given by the caller, so a test can walk time.
// The limits are the connection's (http::limits), passed in rather than kept, so an idle connection stays small.
class connection_timeouts {
public:
    enum class waiting : std::uint8_t {
        none,      // a handler runs, or responses are being written (the response rate covers that time)
        handshake, // a TLS handshake: limits.tls_handshake_timeout from the accept
        headers,   // the rest of a request head: limits.request_headers_timeout
        idle,      // the next request on a kept-alive connection: limits.keep_alive_timeout
        body_rate, // a request body: limits.min_body_bytes_per_second after limits.min_body_rate_grace
        linger,    // a lingering close: read and discard until the deadline
    };
    enum class expired : std::uint8_t {
        nothing,
        response_rate, // the client stopped taking its responses
        handshake,
        headers,
        idle,
        body_rate,
        linger,
    };

    // A new connection: its first head is due within the headers timeout (as Kestrel does).
    connection_timeouts(const http::limits& limits, net::clock::time_point now) noexcept;

    waiting what() const noexcept { return waiting_; }
    // Inline, with received(): once or twice per request.
    void wait_headers(const http::limits& limits, net::clock::time_point now) noexcept {
        waiting_ = waiting::headers;
        deadline_ = now + limits.request_headers_timeout;
    }
    // A TLS connection waits for its handshake first; then its first head (wait_headers).
    void wait_handshake(const http::limits& limits, net::clock::time_point now) noexcept {
        waiting_ = waiting::handshake;
        deadline_ = now + limits.tls_handshake_timeout;
    }
    void wait_idle(const http::limits& limits, net::clock::time_point now) noexcept {
        waiting_ = waiting::idle;
        deadline_ = now + limits.keep_alive_timeout;
    }
    // A body is due, `already` of its bytes here.
    void wait_body(net::clock::time_point now, std::uint64_t already) noexcept;
    void wait_linger(net::clock::time_point now, net::clock::duration for_how_long) noexcept;
    void wait_nothing() noexcept { waiting_ = waiting::none; }
    // A body no longer watched (it is complete, or failed): back to waiting for nothing.
    void body_done() noexcept;

    // Bytes arrived: a kept-alive connection now waits for the rest of a head; a body's rate counts them.
    void received(const http::limits& limits, net::clock::time_point now, std::uint64_t bytes) noexcept {
        if (waiting_ == waiting::idle) {
            wait_headers(limits, now);
        } else if (waiting_ == waiting::body_rate) {
            body_received_ += bytes;
        }
    }

    // The tick. `unacknowledged`: when responses wait to be written, the bytes the peer has acknowledged so far
    // (transport::bytes_acknowledged()), otherwise nullopt. `reading_paused`: the connection stopped reading (its
    // responses are not being taken), so a body's rate is measured afresh once it reads again.
    expired check(const http::limits& limits, net::clock::time_point now, std::optional<std::uint64_t> acknowledged,
                  bool reading_paused) noexcept;

private:
    // The minimum response rate, measured as progress (see check()).
    bool response_too_slow(const http::limits& limits, net::clock::time_point now,
                           std::optional<std::uint64_t> acknowledged) noexcept;

    waiting waiting_ = waiting::headers;
    bool writing_at_tick_ = false; // a write was pending at the last tick
    net::clock::time_point deadline_{};
    // The response rate: bytes the client may still fall behind; while writing_at_tick_, the bytes acknowledged at
    // that tick and its time.
    double response_credit_bytes_ = 0;
    std::uint64_t acknowledged_at_tick_ = 0;
    net::clock::time_point last_tick_{};
    // The body rate: since when, and how much arrived.
    net::clock::time_point body_started_{};
    std::uint64_t body_received_ = 0;
};

} // namespace hotpath
