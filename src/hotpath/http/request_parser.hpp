// Zero-copy, allocation-free parser for HTTP/1.x request heads, strict per RFC 9112.
#pragma once

#include <hotpath/http/limits.hpp>
#include <hotpath/http/request_head.hpp>
#include <hotpath/http/status.hpp>

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
// same growing buffer is O(total bytes): each line is searched for its end and validated once, as soon as its
// LF arrives, so a line that cannot be valid is refused at once rather than after the rest of the head (or
// the headers timeout).
//
// Rules enforced (each answers 400 unless noted):
// - RFC 9112 §2.2: lines end in CRLF; a bare CR or bare LF is rejected. Leading empty lines before the
//   request line are skipped (at most a few; §2.2 "SHOULD ignore at least one empty line").
// - §3: method is a token; exactly one SP between parts; target has no whitespace or control characters;
//   version is "HTTP/1.0" or "HTTP/1.1" (other HTTP/x.y → 505). Checked when the request line's LF arrives.
// - §5: field names are tokens with no whitespace before the colon; values contain only VCHAR, obs-text,
//   SP and HTAB; obs-fold (a line starting with SP/HTAB) is rejected (§5.2). Checked at each field's LF.
// - §6.1, §6.3: Transfer-Encoding together with Content-Length is rejected; Transfer-Encoding other than
//   exactly "chunked" (case-insensitive) as the final and only coding → 501; Transfer-Encoding in HTTP/1.0
//   → 400. Content-Length must be 1*DIGIT without overflow; several Content-Length fields or a list are
//   rejected even when equal. Each is answered at the field that breaks the rule.
// - RFC 9110 §7.2 / RFC 9112 §3.2: HTTP/1.1 requires exactly one Host field (a missing one is known at the
//   end of the head; a second one, or an invalid value, at once).
// - Limits: request line longer than limits.max_request_line_bytes → 414; header section longer than
//   max_header_bytes or more than max_header_count fields → 431. These are detected as soon as the
//   buffered bytes prove them, without waiting for the end of the head.
// Each check is an event at a byte offset, taken in offset order, so any split of the input answers the same.
class request_parser {
public:
    explicit request_parser(const limits& l) noexcept : limits_(&l) {}

    // Parses the head at the start of `input`. On complete, `out` holds views into `input`. While incomplete,
    // call again with the same `out` and the same buffer extended; `out` holds views of the lines already
    // validated, so when the buffer has moved (input.data() differs) the parser starts over from its first
    // byte. After complete or error, further calls answer the same until reset().
    parse_result parse(std::string_view input, request_head& out) noexcept;

    // Forget the request parsed so far; call before parsing the next request.
    void reset() noexcept { *this = request_parser(*limits_); }

private:
    // What the field lines so far say about the fields that decide framing and connection reuse.
    struct field_facts {
        bool host_seen = false;
        bool content_length_seen = false;
        bool chunked = false; // a Transfer-Encoding field, whose value is exactly "chunked"
        bool close = false;
        bool keep_alive = false;
        bool expect_continue = false;
    };

    parse_result scan(const char* p, std::size_t n, request_head& out) noexcept;
    parse_result finish(std::size_t head_end, request_head& out) noexcept;
    static status note_field(const field& f, bool http11, request_head& out, field_facts& facts) noexcept;

    const limits* limits_;
    const char* base_ = nullptr;  // input.data() of the last call: where the views in `out` point
    std::size_t scanned_ = 0;     // bytes of the input already searched for LFs
    std::size_t line_end_ = 0;    // offset just past the request line's LF; 0 until that LF is seen
    std::size_t line_start_ = 0;  // after the request line: where the field line being awaited starts
    std::size_t field_count_ = 0; // field lines validated and stored in out.fields
    field_facts facts_;
    std::string_view authority_; // the authority of an absolute-form target (RFC 9112 §3.2.2)
    parse_result done_;          // complete or error once known
};

} // namespace hotpath::http
