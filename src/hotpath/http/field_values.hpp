// Parsers of the field values that decide framing and connection reuse, shared by the request and response
// parsers (internal: included by .cpp files only).
#pragma once

#include <hotpath/http/char_class.hpp>
#include <hotpath/http/request_head.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

namespace hotpath::http {

// Content-Length values above this are rejected: no body that large can exist, and the bound keeps the
// arithmetic of callers (offsets, remaining bytes) free of overflow.
inline constexpr std::uint64_t max_content_length = std::numeric_limits<std::int64_t>::max();

// RFC 9110 §8.6: Content-Length = 1*DIGIT. True and `out` set to the value when `value` is one or more ASCII
// digits worth at most max_content_length; false and `out` untouched otherwise (empty, a list such as "5, 5", a
// sign, spaces inside, hex, or overflow). `value` is already trimmed of OWS. Does not allocate.
bool parse_content_length(std::string_view value, std::uint64_t& out) noexcept;

// RFC 9110 §7.6.1: Connection = #connection-option, a comma-separated list of tokens. Sets `close` when an
// option is "close" and `keep_alive` when one is "keep-alive" (case-insensitive, OWS around each element
// ignored); never clears either, so several Connection fields accumulate. Other options are ignored. Does not
// allocate.
void scan_connection(std::string_view value, bool& close, bool& keep_alive) noexcept;

// RFC 9112 §5: field-line = field-name ":" OWS field-value OWS CRLF, starting at p[i]. On success sets `out`
// (views into p; the value without its OWS) and advances `i` past the CRLF. Returns false on a syntax error:
// a leading SP/HTAB (obs-fold, §5.2), an empty name, whitespace before the colon, or a CTL, DEL, bare CR or
// bare LF in the value. The caller guarantees the head's final CRLF CRLF lies ahead, so the scans stop there.
inline bool scan_field_line(const char* p, std::size_t& i, field& out) noexcept {
    using char_class::is;
    using char_class::is_ows;
    const std::size_t name_start = i;
    while (is(p[i], char_class::tchar_bit)) {
        ++i;
    }
    if (i == name_start || p[i] != ':') {
        return false;
    }
    const std::size_t name_end = i++;
    while (is_ows(p[i])) {
        ++i;
    }
    const std::size_t value_start = i;
    while (is(p[i], char_class::value_bit)) {
        ++i;
    }
    if (p[i] != '\r' || p[i + 1] != '\n') {
        return false;
    }
    std::size_t value_end = i;
    while (value_end > value_start && is_ows(p[value_end - 1])) {
        --value_end;
    }
    i += 2;
    out.name = {p + name_start, name_end - name_start};
    out.value = {p + value_start, value_end - value_start};
    return true;
}

} // namespace hotpath::http
