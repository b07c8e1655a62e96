// Where a message body ends, framed as its head says (RFC 9112 §6.3): none, Content-Length, chunked, or the
// connection closing. One reader for every body: the responses the client, the load generator and probe parse,
// and the requests the server reads (server/request_body keeps them in its buffer).
#pragma once

#include <hotpath/http/chunked_decoder.hpp>
#include <hotpath/http/request_head.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hotpath::http {

enum class body_status : std::uint8_t {
    done,       // the body is complete; input past `consumed` belongs to the next message
    incomplete, // all input was used; call again with more
    error,      // malformed chunked coding or over a limit
};

struct body_step {
    body_status status = body_status::incomplete;
    std::size_t consumed = 0;                // input bytes used
    std::string_view data;                   // body bytes this call found: a view into the input (or `out`, when given)
    http::status error = http::status::none; // with error: 400 (malformed), 413 (over the body limit) or 431 (trailers)
};

// Incremental and allocation-free. Chunked bodies are decoded in place: read() rewrites its input, and the
// body bytes it returns start where the input did.
class body_reader {
public:
    explicit body_reader(const limits& l) noexcept : chunked_(l) {}

    // Starts the body of a message with this framing; `content_length` counts for framing content_length. A
    // chunked body may decode to at most limits.max_body_bytes, or `max_body_bytes` when given (0: no limit).
    void start(body_framing framing, std::uint64_t content_length) noexcept;
    void start(body_framing framing, std::uint64_t content_length, std::uint64_t max_body_bytes) noexcept;
    // Reads input[0, size); the body bytes found are where the input was.
    body_step read(char* input, std::size_t size) noexcept { return read(input, size, input); }
    // The same, the body bytes written to `out` instead, which may alias the input as long as out <= input (so
    // that a body decoded in place can follow the bytes decoded before it).
    body_step read(char* input, std::size_t size, char* out) noexcept;
    // Whether the body ends where the connection does (then EOF completes it; otherwise EOF cuts it short).
    bool ends_at_close() const noexcept { return framing_ == body_framing::until_close; }

private:
    body_framing framing_ = body_framing::none;
    std::uint64_t left_ = 0;
    chunked_decoder chunked_;
};

} // namespace hotpath::http
