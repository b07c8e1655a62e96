// Incremental, in-place decoder for the chunked transfer coding (RFC 9112 §7.1); allocation-free.
#pragma once

#include <hotpath/http/limits.hpp>
#include <hotpath/http/status.hpp>

#include <cstddef>
#include <cstdint>

namespace hotpath::http {

enum class chunk_status : std::uint8_t {
    done,       // the last chunk and trailer section were read; the body is complete
    incomplete, // all input was consumed; call again with more
    error,      // malformed or over a limit: answer `error` and close
};

struct chunk_result {
    chunk_status status = chunk_status::incomplete;
    std::size_t consumed = 0;          // input bytes used; after done, the rest is the next request
    std::size_t produced = 0;          // payload bytes written to `out` by this call
    http::status error = status::none; // 400, or 413 when the decoded body passes limits.max_body_bytes
};

// Decodes a chunked body that may arrive in any number of pieces. Each call reads input[0, size) and
// writes the payload to `out`, which may alias `input` as long as out <= input (decoding in place
// shrinks the data, so the payload never overtakes the framing it came from).
//
// Rules: chunk-size is 1*HEXDIG without overflow (more than 16 digits → 400); chunk extensions are
// parsed (`;` token [= token / quoted-string], BWS allowed around `;` and `=`) and discarded, and more
// than limits.max_chunk_extension_bytes of them → 400; each chunk's data must be followed by CRLF;
// trailer fields are syntax-checked like header fields and discarded, their section bounded by
// limits.max_header_bytes (→ 431); lines end in CRLF only.
class chunked_decoder {
public:
    explicit chunked_decoder(const limits& l) noexcept : limits_(&l), max_body_bytes_(l.max_body_bytes) {}

    chunk_result decode(const char* input, std::size_t size, char* out) noexcept;

    // Start a new body, of at most limits.max_body_bytes.
    void reset() noexcept;
    // Start a new body of at most `max_body_bytes` (a streaming route's own limit; 0: none).
    void reset(std::uint64_t max_body_bytes) noexcept;

    // Payload bytes decoded so far in this body.
    std::uint64_t body_bytes() const noexcept { return body_bytes_; }

private:
    const limits* limits_;
    std::uint64_t max_body_bytes_; // past it: 413
    // Internal state of the incremental machine; the implementation documents each.
    std::uint8_t state_ = 0;
    std::uint64_t chunk_remaining_ = 0;
    std::uint64_t body_bytes_ = 0;
    std::size_t digits_ = 0;
    std::size_t extension_bytes_ = 0;
    std::size_t trailer_bytes_ = 0;
    bool quoted_ = false;
    bool escaped_ = false;
};

} // namespace hotpath::http
