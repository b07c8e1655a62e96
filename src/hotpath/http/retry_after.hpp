// The Retry-After field (RFC 9110 §10.2.3): how long a client is asked to wait before its next request.
#pragma once

#include <chrono>
#include <ctime>
#include <optional>
#include <string_view>

namespace hotpath::http {

// `value` (trimmed of OWS) as a wait from `now` (seconds since the epoch): delta-seconds (1*DIGIT; past a day is
// read as a day), or an HTTP-date in any of its three forms (a date already past: no wait). Anything else: nullopt,
// the field ignored, as a client does with a field it cannot read. Does not allocate.
std::optional<std::chrono::seconds> parse_retry_after(std::string_view value, std::time_t now) noexcept;

} // namespace hotpath::http
