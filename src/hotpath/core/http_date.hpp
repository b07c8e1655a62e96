// HTTP dates (RFC 9110 §5.6.7): IMF-fixdate written; it and the two obsolete forms read.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string_view>

namespace hotpath {

struct civil_date {
    int year = 1970;
    int month = 1; // 1..12
    int day = 1;   // 1..31
};

// The UTC calendar date `days` days after 1970-01-01 (negative: before), without the C library.
civil_date civil_from_days(std::int64_t days) noexcept;

// Writes "Sun, 06 Nov 1994 08:49:37 GMT" (exactly 29 bytes, no terminator) for `t` (UTC) into out.
void format_http_date(std::time_t t, char (&out)[29]) noexcept;

// Reads an HTTP-date in any of the three forms a recipient must accept (RFC 9110 §5.6.7): IMF-fixdate
// "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT" (a two-digit year more than 50 years
// ahead of `now` is taken as the past century's, as §5.6.7 says) and asctime "Sun Nov  6 08:49:37 1994". The day
// name is checked for its form, not against the date; an impossible date (31 Apr, 29 Feb 2023, 24:00:00) or any
// other text: nullopt. Does not allocate.
std::optional<std::time_t> parse_http_date(std::string_view text, std::time_t now) noexcept;

} // namespace hotpath
