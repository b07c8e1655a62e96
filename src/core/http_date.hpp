// Formatting of HTTP dates (IMF-fixdate, RFC 9110 §5.6.7).
#pragma once

#include <ctime>

namespace hotpath {

// Writes "Sun, 06 Nov 1994 08:49:37 GMT" (exactly 29 bytes, no terminator) for `t` (UTC) into out.
void format_http_date(std::time_t t, char (&out)[29]) noexcept;

} // namespace hotpath
