// A request's body as it arrives, kept in the connection's read buffer right after its head.
#pragma once

#include <hotpath/http/body_reader.hpp>
#include <hotpath/http/status.hpp>

#include <cstddef>
#include <cstdint>

namespace hotpath {

// One stream for both kinds of route. Framed by the one body reader (http::body_reader) and decoded in place: the
// body's bytes start at `at`, the first byte after the head, followed by what arrived and is not read yet. A
// buffered body is the case that reads it all before its handler runs, each piece kept after the one before
// (request::body() sees them whole); a streamed body hands each piece to its handler and drops it when the handler
// asks for the next, so that the buffer holds one piece and one read, however long the body.
// No I/O, no allocation: the connection says where the bytes are, and moves them when it grows its buffer.
class request_body {
public:
    explicit request_body(const http::limits& l) noexcept : reader_(l) {}

    // A new body, framed as its head says: at most limits.max_body_bytes when chunked, or `max_body_bytes` when
    // given (a streaming route's own limit; 0: none). Content-Length was checked against its limit by the caller.
    // Inline: every request starts one, most with no body at all, and then nothing else is touched.
    void start(http::body_framing framing, std::uint64_t content_length) noexcept {
        held_ = used_ = 0;
        complete_ = framing == http::body_framing::none ||
                    (framing == http::body_framing::content_length && content_length == 0);
        if (!complete_) {
            reader_.start(framing, content_length);
        }
    }
    void start(http::body_framing framing, std::uint64_t content_length, std::uint64_t max_body_bytes) noexcept;

    // Reads what arrived: `arrived` bytes from `at`, the first `used()` of them read before. The body bytes found
    // follow those held. Returns status::none, or the status that answers a body that cannot be read: 400
    // (malformed chunked coding), 413 (over its limit) or 431 (trailers over the header limit).
    http::status read(char* at, std::size_t arrived) noexcept;

    // Body bytes held from `at`.
    std::size_t held() const noexcept { return held_; }
    // Bytes from `at` read so far, framing included (Content-Length: the same as held()); bytes past them are the
    // body's rest or, once complete(), the next request.
    std::size_t used() const noexcept { return used_; }
    bool complete() const noexcept { return complete_; }

    // Streamed: the piece held is done with. What arrived past used() moves to `at`; returns how many bytes that is.
    std::size_t drop(char* at, std::size_t arrived) noexcept;
    // Buffered, before the next read: the framing read so far is dead (chunked coding: sizes, extensions), so the
    // next bytes may land right after the body held. Returns held(), where the unread bytes now begin — valid only
    // when everything that arrived was used (the reader asks for more only then).
    std::size_t forget_framing() noexcept;

private:
    http::body_reader reader_;
    std::size_t held_ = 0;
    std::size_t used_ = 0;
    bool complete_ = true;
};

} // namespace hotpath
