// Parsers of the field values that decide framing and connection reuse, shared by the request and response
// parsers (internal: included by .cpp files only).
#pragma once

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

} // namespace hotpath::http
