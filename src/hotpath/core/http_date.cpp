// IMF-fixdate formatting without locale or allocation.
#include <hotpath/core/http_date.hpp>

namespace hotpath {
namespace {

void put2(char* p, int v) noexcept {
    p[0] = static_cast<char>('0' + v / 10);
    p[1] = static_cast<char>('0' + v % 10);
}

} // namespace

// Days since 1970-01-01 to a proleptic Gregorian date, by 400-year eras (146097 days each). gmtime_r would do,
// but glibc's first call reads the time zone file (/etc/localtime) even for UTC: seven system calls at start-up.
civil_date civil_from_days(std::int64_t days) noexcept {
    days += 719468; // from 1970-01-01 to 0000-03-01: years then start in March, so leap days fall last
    const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    const auto day_of_era = static_cast<unsigned>(days - era * 146097); // [0, 146096]
    const unsigned year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;               // [0, 399]
    const unsigned day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100); // [0, 365]
    const unsigned shifted_month = (5 * day_of_year + 2) / 153; // [0, 11], March first
    civil_date d;
    d.day = static_cast<int>(day_of_year - (153 * shifted_month + 2) / 5 + 1);
    d.month = static_cast<int>(shifted_month < 10 ? shifted_month + 3 : shifted_month - 9);
    d.year = static_cast<int>(static_cast<std::int64_t>(year_of_era) + era * 400 + (d.month <= 2 ? 1 : 0));
    return d;
}

void format_http_date(std::time_t t, char (&out)[29]) noexcept {
    static constexpr char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const std::int64_t seconds = t;
    std::int64_t day_count = seconds / 86400;
    std::int64_t second_of_day = seconds % 86400;
    if (second_of_day < 0) {
        second_of_day += 86400;
        --day_count;
    }
    const civil_date date = civil_from_days(day_count);
    const auto weekday = static_cast<int>(((day_count % 7) + 11) % 7); // 1970-01-01 was a Thursday (4)
    const auto hour = static_cast<int>(second_of_day / 3600);
    const auto minute = static_cast<int>(second_of_day / 60 % 60);
    const auto second = static_cast<int>(second_of_day % 60);
    char* p = out;
    for (int i = 0; i < 3; ++i) {
        *p++ = days[weekday][i];
    }
    *p++ = ',';
    *p++ = ' ';
    put2(p, date.day);
    p += 2;
    *p++ = ' ';
    for (int i = 0; i < 3; ++i) {
        *p++ = months[date.month - 1][i];
    }
    *p++ = ' ';
    const int year = date.year;
    put2(p, year / 100 % 100);
    put2(p + 2, year % 100);
    p += 4;
    *p++ = ' ';
    put2(p, hour);
    p += 2;
    *p++ = ':';
    put2(p, minute);
    p += 2;
    *p++ = ':';
    put2(p, second);
    p += 2;
    *p++ = ' ';
    *p++ = 'G';
    *p++ = 'M';
    *p = 'T';
}

} // namespace hotpath
