// Retry-After's two forms, and what a client ignores.
#include <hotpath/http/retry_after.hpp>

#include <gtest/gtest.h>

namespace hotpath::http {
namespace {

constexpr std::time_t now = 784111777; // Sun, 06 Nov 1994 08:49:37 GMT

TEST(retry_after, delta_seconds) {
    EXPECT_EQ(parse_retry_after("0", now), std::chrono::seconds{0});
    EXPECT_EQ(parse_retry_after("1", now), std::chrono::seconds{1});
    EXPECT_EQ(parse_retry_after("120", now), std::chrono::seconds{120});
    EXPECT_EQ(parse_retry_after("007", now), std::chrono::seconds{7});
    // Past a day (and past any integer) reads as a day.
    EXPECT_EQ(parse_retry_after("86401", now), std::chrono::seconds{86400});
    EXPECT_EQ(parse_retry_after("99999999999999999999999999", now), std::chrono::seconds{86400});
}

TEST(retry_after, an_http_date_is_the_wait_until_it_and_none_once_past) {
    EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now), std::chrono::seconds{30});
    EXPECT_EQ(parse_retry_after("Sunday, 06-Nov-94 08:50:07 GMT", now), std::chrono::seconds{30});
    EXPECT_EQ(parse_retry_after("Sun Nov  6 08:50:07 1994", now), std::chrono::seconds{30});
    EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), std::chrono::seconds{0});
    EXPECT_EQ(parse_retry_after("Sat, 05 Nov 1994 08:49:37 GMT", now), std::chrono::seconds{0});
    EXPECT_EQ(parse_retry_after("Sun, 06 Nov 2094 08:49:37 GMT", now), std::chrono::seconds{86400});
}

TEST(retry_after, anything_else_is_ignored) {
    for (const std::string_view bad : {"", "-1", "1.5", "1 ", "1s", "soon", "0x10", "+5", "Sun, 06 Nov 1994"}) {
        EXPECT_EQ(parse_retry_after(bad, now), std::nullopt) << bad;
    }
}

} // namespace
} // namespace hotpath::http
