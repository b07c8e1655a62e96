// Retry-After: delta-seconds or an HTTP-date.
#include <hotpath/http/retry_after.hpp>

#include <hotpath/core/http_date.hpp>

namespace hotpath::http {

std::optional<std::chrono::seconds> parse_retry_after(std::string_view value, std::time_t now) noexcept {
    constexpr std::int64_t day = 86400;
    if (!value.empty() && value.front() >= '0' && value.front() <= '9') {
        std::int64_t seconds = 0;
        for (const char c : value) {
            if (c < '0' || c > '9') {
                return std::nullopt;
            }
            seconds = seconds >= day ? day : seconds * 10 + (c - '0');
        }
        return std::chrono::seconds{seconds < day ? seconds : day};
    }
    const auto at = parse_http_date(value, now);
    if (!at) {
        return std::nullopt;
    }
    const std::int64_t wait = static_cast<std::int64_t>(*at) - static_cast<std::int64_t>(now);
    return std::chrono::seconds{wait <= 0 ? 0 : wait < day ? wait : day};
}

} // namespace hotpath::http
