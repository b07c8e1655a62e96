// IMF-fixdate formatting without locale or allocation.
#include "core/http_date.hpp"

namespace hotpath {
namespace {

void put2(char* p, int v) noexcept {
    p[0] = static_cast<char>('0' + v / 10);
    p[1] = static_cast<char>('0' + v % 10);
}

} // namespace

void format_http_date(std::time_t t, char (&out)[29]) noexcept {
    static constexpr char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::tm tm{};
    gmtime_r(&t, &tm);
    char* p = out;
    for (int i = 0; i < 3; ++i) {
        *p++ = days[tm.tm_wday][i];
    }
    *p++ = ',';
    *p++ = ' ';
    put2(p, tm.tm_mday);
    p += 2;
    *p++ = ' ';
    for (int i = 0; i < 3; ++i) {
        *p++ = months[tm.tm_mon][i];
    }
    *p++ = ' ';
    const int year = tm.tm_year + 1900;
    put2(p, year / 100);
    put2(p + 2, year % 100);
    p += 4;
    *p++ = ' ';
    put2(p, tm.tm_hour);
    p += 2;
    *p++ = ':';
    put2(p, tm.tm_min);
    p += 2;
    *p++ = ':';
    put2(p, tm.tm_sec);
    p += 2;
    *p++ = ' ';
    *p++ = 'G';
    *p++ = 'M';
    *p = 'T';
}

} // namespace hotpath
