// Formatting of HTTP dates (IMF-fixdate, RFC 9110 §5.6.7).
#pragma once

#include <cstdint>
#include <ctime>

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

} // namespace hotpath
