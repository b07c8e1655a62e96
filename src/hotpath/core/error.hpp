// The project's error codes: one enum, one std::error_category, so failures are values.
#pragma once

#include <system_error>

namespace hotpath {

// Every failure a hot path can report. Starts at 1: a std::error_code whose value is 0 means success. The numbers
// are not persisted (reports and counters name failures, messages come from error_category()), so removing a
// value may renumber the others.
enum class errc {
    bad_request = 1, // malformed HTTP message (RFC 9112 syntax)
    timeout,         // a deadline passed
    closed,          // the peer closed the connection
    // The client's failures: each a distinct value a caller can branch on.
    refused,            // the peer refused the connection (nothing listens)
    reset,              // the peer reset the connection
    connect_timeout,    // the connection was not established in time
    malformed_response, // the response broke HTTP/1.1 (RFC 9112)
    response_too_large, // the response body passed the client's size limit
    invalid_url,        // not an absolute http:// or https:// URL (RFC 3986)
    resolve_failed,     // the host name did not resolve
    cancelled,          // the caller abandoned the call (its own peer went away)
    unexpected_status,  // a typed call got a status other than 2xx
    invalid_json,       // a typed call's body was not the JSON it expected
    // A streamed request body (server: request::read_body).
    body_too_large, // the body passed its route's size limit
    // The server's start-up failures (besides the system's own, such as address in use).
    invalid_address, // the address to listen on is neither an IP address nor a host name
    // Capacity.
    overloaded, // a bounded queue was full: the work was refused at once (answer 503 with Retry-After)
    // Setup and the command line.
    invalid_value, // a value as typed (a duration, a size, an option's argument) is not valid
    not_supported, // valid, but not something this build does (an https:// URL before TLS)
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

} // namespace hotpath

template <>
struct std::is_error_code_enum<hotpath::errc> : std::true_type {};
