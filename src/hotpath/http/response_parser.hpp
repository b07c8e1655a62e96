// Zero-copy, allocation-free parser for HTTP/1.x response heads (RFC 9112 §4, §6.3), shared by the load
// generator and the client.
#pragma once

#include <hotpath/http/limits.hpp>
#include <hotpath/http/request_head.hpp>
#include <hotpath/http/request_parser.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hotpath::http {

// All views point into the parsed buffer and stay valid while it is neither modified nor moved.
struct response_head {
    unsigned status = 0;            // 100..999
    std::string_view reason;        // reason-phrase, possibly empty
    std::uint8_t version_minor = 1; // HTTP/1.<minor>: 0 or 1
    std::array<field, max_fields_capacity> fields{};
    std::size_t field_count = 0;

    // RFC 9112 §6.3, for the request this answers: no body after HEAD or for 1xx, 204 and 304; chunked when
    // Transfer-Encoding's final coding is chunked; a body up to the close when Transfer-Encoding is present
    // but not chunked-final, or when neither Transfer-Encoding nor Content-Length is; else Content-Length.
    body_framing framing = body_framing::none;
    std::uint64_t content_length = 0; // valid when framing == content_length
    // The connection may be reused: HTTP/1.1 without "Connection: close", or 1.0 with "keep-alive", and a
    // body that is not close-delimited.
    bool keep_alive = true;

    // The first field named `name` (case-insensitive); empty when absent.
    std::string_view find(std::string_view name) const noexcept;
};

// Parses one response head; a 1xx interim response (100 Continue) is returned as complete with its
// status, and the caller parses again after it. Each line is checked as soon as its LF arrives, so a status line
// or a field line that cannot be valid is refused at once, not when the rest of the head (or a timeout) comes. Stateful
// only to avoid rescanning (as request_parser): call reset() between responses. Errors (status 400 in
// parse_result::error means "malformed") cover: a status line other than HTTP/1.0|1.1 SP 3DIGIT SP reason CRLF (a
// missing reason with its SP is tolerated, RFC 9112 §4), invalid field syntax, obs-fold, bare CR or LF, Content-Length
// that is not 1*DIGIT or that differs between fields, a head over limits.max_header_bytes + max_request_line_bytes or
// with more than max_header_count fields (status 431 in error).
class response_parser {
public:
    explicit response_parser(const limits& l) noexcept : limits_(&l) {}

    // `head_request`: the request was HEAD, so no body follows whatever the fields say.
    parse_result parse(std::string_view input, response_head& out, bool head_request) noexcept;
    void reset() noexcept {
        scanned_ = 0;
        line_start_ = 0;
        lines_ = 0;
        length_.reset();
    }

private:
    const limits* limits_;
    std::size_t scanned_ = 0;             // bytes searched for LFs
    std::size_t line_start_ = 0;          // where the line after the last complete one starts
    std::size_t lines_ = 0;               // complete lines checked so far, the status line included
    std::optional<std::uint64_t> length_; // the first Content-Length among the lines checked
};

} // namespace hotpath::http
