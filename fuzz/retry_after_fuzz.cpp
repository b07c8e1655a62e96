// libFuzzer target for the Retry-After field and the HTTP-date reader (what hotpath load reads from every 429 and
// 503): no crash or over-read on any bytes; a date read is one the formatter writes back to the same text when the
// input was IMF-fixdate, and one glibc's strptime reads alike; a wait is never negative nor past a day.
#include <hotpath/core/http_date.hpp>
#include <hotpath/http/retry_after.hpp>

#include "fuzz_support.hpp"

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

using hotpath::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // Input in a buffer of its own size, so that a read past its end is the address sanitizer's to catch.
    const std::string text(reinterpret_cast<const char*>(data), size);
    const std::time_t now = 1796342400; // 2026-12-04
    if (const auto wait = hotpath::http::parse_retry_after(text, now)) {
        require(wait->count() >= 0 && wait->count() <= 86400);
    }
    const auto date = hotpath::parse_http_date(text, now);
    if (!date) {
        return 0;
    }
    if (text.size() == 29 && text[3] == ',' && text.substr(23, 2) != "60") { // a leap second reads as the next one
        char back[29];
        hotpath::format_http_date(*date, back);
        // The day name is not checked against the date; the rest comes back as it was.
        require(std::string_view(back + 3, 26) == std::string_view(text).substr(3));
        std::tm tm{};
        const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        require(end != nullptr && *end == '\0' && timegm(&tm) == *date);
    }
    return 0;
}
