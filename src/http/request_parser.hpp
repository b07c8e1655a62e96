// Zero-copy, allocation-free parser for HTTP/1.x request heads, strict per RFC 9112.
#pragma once

#include "http/limits.hpp"
#include "http/request_head.hpp"
#include "http/status.hpp"

#include <cstddef>
#include <string_view>

namespace hotpath::http {

enum class parse_status : std::uint8_t {
    complete,   // a whole head was parsed; `consumed` bytes (through the empty line) belong to it
    incomplete, // more bytes are needed; call again with the same buffer extended
    error,      // the head is invalid; answer `error` and close the connection
};

struct parse_result {
    parse_status status = parse_status::incomplete;
    std::size_t consumed = 0;          // valid when complete
    http::status error = status::none; // valid when error: 400, 414, 431, 501 or 505
};

// Parses one request head. Stateful only to avoid rescanning: between requests call reset(). Feeding the
// same growing buffer is O(total bytes): the end of the head is searched only in bytes not yet scanned.
//
// Rules enforced (each answers 400 unless noted):
// - RFC 9112 §2.2: lines end in CRLF; a bare CR or bare LF is rejected. Leading empty lines before the
//   request line are skipped (at most a few; §2.2 "SHOULD ignore at least one empty line").
// - §3: method is a token; exactly one SP between parts; target has no whitespace or control characters;
//   version is "HTTP/1.0" or "HTTP/1.1" (other HTTP/x.y → 505).
// - §5: field names are tokens with no whitespace before the colon; values contain only VCHAR, obs-text,
//   SP and HTAB; obs-fold (a line starting with SP/HTAB) is rejected (§5.2).
// - §6.1, §6.3: Transfer-Encoding together with Content-Length is rejected; Transfer-Encoding other than
//   exactly "chunked" (case-insensitive) as the final and only coding → 501; Transfer-Encoding in HTTP/1.0
//   → 400. Content-Length must be 1*DIGIT without overflow; several Content-Length fields or a list are
//   rejected even when equal.
// - RFC 9110 §7.2 / RFC 9112 §3.2: HTTP/1.1 requires exactly one Host field; a second Host is rejected.
// - Limits: request line longer than limits.max_request_line_bytes → 414; header section longer than
//   max_header_bytes or more than max_header_count fields → 431. These are detected as soon as the
//   buffered bytes prove them, without waiting for the end of the head.
class request_parser {
public:
    explicit request_parser(const limits& l) noexcept : limits_(&l) {}

    // Parses the head at the start of `input`. On complete, `out` holds views into `input`.
    parse_result parse(std::string_view input, request_head& out) noexcept;

    // Forget the scan position; call before parsing the next request.
    void reset() noexcept {
        scanned_ = 0;
        line_end_ = 0;
        field_lines_ = 0;
    }

private:
    const limits* limits_;
    std::size_t scanned_ = 0; // bytes of the current input already searched for the end of the head
    // Kept with scanned_ so the limits are checked on every call without rescanning (O(total bytes)):
    std::size_t line_end_ = 0;    // offset just past the request line's LF; 0 until that LF is seen
    std::size_t field_lines_ = 0; // LFs seen after the request line, not counting the head's final one
};

} // namespace hotpath::http
