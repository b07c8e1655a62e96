// The HTTP date formatter against the C library's gmtime_r, over every day of five centuries and edge times.
#include <hotpath/core/http_date.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>

namespace hotpath {
namespace {

std::string formatted(std::time_t t) {
    char out[29];
    format_http_date(t, out);
    return {out, sizeof(out)};
}

std::string by_gmtime(std::time_t t) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm); // the "C" locale's names
    return buf;
}

TEST(http_date, rfc_9110_example) {
    EXPECT_EQ(formatted(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
}

TEST(http_date, every_day_from_1900_to_2400_matches_gmtime) {
    constexpr std::int64_t day = 86400;
    const std::int64_t first = -25567 * day; // 1900-01-01
    const std::int64_t last = 157054 * day;  // 2400-01-01
    int mismatches = 0;
    // A different second of the day each day, so hours, minutes and seconds are all exercised.
    for (std::int64_t t = first, k = 0; t <= last && mismatches < 5; t += day, ++k) {
        const std::int64_t at = t + (k * 7919) % day;
        const std::string mine = formatted(static_cast<std::time_t>(at));
        const std::string libc = by_gmtime(static_cast<std::time_t>(at));
        if (mine != libc) {
            ADD_FAILURE() << at << ": " << mine << " != " << libc;
            ++mismatches;
        }
    }
}

TEST(http_date, edges_of_days_years_and_leap_days) {
    for (const std::time_t t : {std::time_t{0}, std::time_t{-1}, std::time_t{86399}, std::time_t{86400},
                                std::time_t{951782400} /* 2000-02-29 */, std::time_t{951868799},
                                std::time_t{4107542400} /* 2100-03-01, not a leap year */, std::time_t{4107542399},
                                std::time_t{1798761599} /* 2026-12-31 23:59:59 */, std::time_t{1798761600}}) {
        EXPECT_EQ(formatted(t), by_gmtime(t)) << t;
    }
}

TEST(http_date, civil_from_days_round_trips_known_dates) {
    const civil_date epoch = civil_from_days(0);
    EXPECT_EQ(epoch.year, 1970);
    EXPECT_EQ(epoch.month, 1);
    EXPECT_EQ(epoch.day, 1);
    const civil_date leap = civil_from_days(11016); // 2000-02-29
    EXPECT_EQ(leap.year, 2000);
    EXPECT_EQ(leap.month, 2);
    EXPECT_EQ(leap.day, 29);
    const civil_date before = civil_from_days(-1);
    EXPECT_EQ(before.year, 1969);
    EXPECT_EQ(before.month, 12);
    EXPECT_EQ(before.day, 31);
}

} // namespace
} // namespace hotpath
