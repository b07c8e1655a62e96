// A handler's answer when a blocking call (net/blocking_pool.hpp) did not run: the pool's queue was full (503 with
// Retry-After), or the client went away (no one reads the answer).
#pragma once

#include <hotpath/core/error.hpp>
#include <hotpath/net/blocking_pool.hpp>
#include <hotpath/server/response.hpp>

#include <charconv>
#include <chrono>
#include <string>
#include <string_view>
#include <system_error>

namespace hotpath {

// Fills `res` for a blocking call that failed with `why` instead of giving a value:
// - errc::overloaded: 503 problem+json and `Retry-After: <retry_after in whole seconds, at least 1>` (RFC 9110
//   §10.2.3), so that a client backs off instead of piling onto the queue;
// - errc::cancelled: 503 problem+json too (the client is gone; a proxy in between still gets an answer);
// - anything else: 500 problem+json naming the error.
// Allocates a little (the JSON body), as any problem answer does.
inline void answer_blocking_failure(response& res, std::error_code why,
                                    std::chrono::seconds retry_after = std::chrono::seconds{1}) {
    if (why == errc::overloaded) {
        res.problem(http::status::service_unavailable, "the server is busy: its blocking work queue is full");
        const auto seconds = retry_after.count() < 1 ? 1 : retry_after.count();
        char text[24];
        const auto [end, ec] = std::to_chars(text, text + sizeof(text), seconds);
        (void)ec;
        res.header("Retry-After", std::string_view(text, static_cast<std::size_t>(end - text)));
    } else if (why == errc::cancelled) {
        res.problem(http::status::service_unavailable, "the request was cancelled: the client went away");
    } else {
        res.problem(http::status::internal_server_error, "a blocking call failed: " + why.message());
    }
}

} // namespace hotpath
