// The HTTP date formatter against the C library's gmtime_r, over every day of five centuries and edge times; the
// reader of the three forms against the formatter and strptime, and what it refuses.
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

std::optional<std::time_t> parsed(std::string_view text) {
    return parse_http_date(text, 1796342400); // 2026-12-04
}

TEST(http_date, the_three_forms_of_rfc_9110s_example_read_alike) {
    EXPECT_EQ(parsed("Sun, 06 Nov 1994 08:49:37 GMT"), std::time_t{784111777});
    EXPECT_EQ(parsed("Sunday, 06-Nov-94 08:49:37 GMT"), std::time_t{784111777});
    EXPECT_EQ(parsed("Sun Nov  6 08:49:37 1994"), std::time_t{784111777});
}

TEST(http_date, every_day_formatted_from_1900_to_2400_reads_back_and_agrees_with_strptime) {
    constexpr std::int64_t day = 86400;
    int mismatches = 0;
    for (std::int64_t t = -25567 * day, k = 0; t <= 157054 * day && mismatches < 5; t += day, ++k) {
        const auto at = static_cast<std::time_t>(t + (k * 7919) % day);
        const std::string text = formatted(at);
        std::tm tm{};
        const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        const bool agree = parsed(text) == at && end != nullptr && *end == '\0' && timegm(&tm) == at;
        if (!agree) {
            ADD_FAILURE() << text;
            ++mismatches;
        }
    }
}

TEST(http_date, rfc_850s_two_digit_year_is_within_fifty_years_ahead) {
    // Now is 2026: 76 is 2076 (50 years ahead), 77 is 1977, 26 and 00 this century.
    EXPECT_EQ(parsed("Wednesday, 01-Jan-76 00:00:00 GMT"), std::time_t{3345062400});
    EXPECT_EQ(parsed("Saturday, 01-Jan-77 00:00:00 GMT"), std::time_t{220924800});
    EXPECT_EQ(parsed("Friday, 04-Dec-26 00:00:00 GMT"), std::time_t{1796342400});
    EXPECT_EQ(parsed("Saturday, 01-Jan-00 00:00:00 GMT"), std::time_t{946684800});
}

TEST(http_date, what_is_not_an_http_date_is_refused) {
    for (const std::string_view bad : {"",
                                       "Sun, 06 Nov 1994 08:49:37",
                                       "Sun, 06 Nov 1994 08:49:37 UTC",
                                       "Sun, 6 Nov 1994 08:49:37 GMT",
                                       "Sun, 06 nov 1994 08:49:37 GMT",
                                       "Sun,06 Nov 1994 08:49:37 GMT",
                                       "Sun, 06 Nov 94 08:49:37 GMT",
                                       "Sun, 31 Apr 1994 08:49:37 GMT",
                                       "Wed, 29 Feb 2023 00:00:00 GMT",
                                       "Sun, 06 Nov 1994 24:00:00 GMT",
                                       "Sun, 06 Nov 1994 08:60:00 GMT",
                                       "Sun, 06 Nov 1994 08:49:37 GMT ",
                                       " Sun, 06 Nov 1994 08:49:37 GMT",
                                       "Sunday, 06-Nov-1994 08:49:37 GMT",
                                       "Sun, 06-Nov-94 08:49:37 GMT",
                                       "Sun Nov 6 08:49:37 1994",
                                       "Sun Nov  6 08:49:37 94",
                                       "Xyz, 06 Nov 1994 08:49:37 GMT",
                                       "Sun, 00 Nov 1994 08:49:37 GMT",
                                       "Sun, 06 Nov 1994 8:49:37 GMT",
                                       "1994-11-06T08:49:37Z",
                                       "120"}) {
        EXPECT_EQ(parsed(bad), std::nullopt) << bad;
    }
    // Every prefix of a valid date is refused: the reader never reads past the text's end.
    const std::string_view good = "Sun, 06 Nov 1994 08:49:37 GMT";
    for (std::size_t n = 0; n < good.size(); ++n) {
        EXPECT_EQ(parsed(good.substr(0, n)), std::nullopt) << n;
    }
    EXPECT_EQ(parsed("Thu, 29 Feb 2024 00:00:00 GMT"), std::time_t{1709164800}); // a leap day
}

} // namespace
} // namespace hotpath
