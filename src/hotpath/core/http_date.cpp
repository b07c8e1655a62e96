// HTTP dates without locale or allocation: IMF-fixdate written, the three forms of RFC 9110 §5.6.7 read.
#include <hotpath/core/http_date.hpp>

namespace hotpath {
namespace {

constexpr std::string_view short_days[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::string_view long_days[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                           "Thursday", "Friday", "Saturday"};
constexpr std::string_view month_names[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// Days from 1970-01-01 to a proleptic Gregorian date: civil_from_days's inverse.
std::int64_t days_from_civil(std::int64_t year, unsigned month, unsigned day) noexcept {
    year -= month <= 2 ? 1 : 0;
    const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
    const auto year_of_era = static_cast<unsigned>(year - era * 400);                           // [0, 399]
    const unsigned day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1; // [0, 365]
    const unsigned day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + static_cast<std::int64_t>(day_of_era) - 719468;
}

// A cursor over the date's text: each step takes what it expects or fails, and the whole must be used.
struct date_reader {
    std::string_view text;
    std::size_t at = 0;
    bool ok = true;

    bool literal(std::string_view s) noexcept {
        ok = ok && text.substr(at, s.size()) == s;
        at += ok ? s.size() : 0;
        return ok;
    }
    // Exactly `n` digits.
    int digits(std::size_t n) noexcept {
        int v = 0;
        for (std::size_t i = 0; ok && i < n; ++i) {
            const char c = at < text.size() ? text[at] : '\0';
            ok = c >= '0' && c <= '9';
            v = v * 10 + (c - '0');
            ++at;
        }
        return ok ? v : 0;
    }
    // One of `names`, by index; -1 (and not ok) when none is there.
    template <std::size_t N>
    int one_of(const std::string_view (&names)[N]) noexcept {
        for (std::size_t i = 0; ok && i < N; ++i) {
            if (text.substr(at, names[i].size()) == names[i]) {
                at += names[i].size();
                return static_cast<int>(i);
            }
        }
        ok = false;
        return -1;
    }
    // "HH:MM:SS"
    int time_of_day() noexcept {
        const int h = digits(2);
        literal(":");
        const int m = digits(2);
        literal(":");
        const int s = digits(2);
        ok = ok && h < 24 && m < 60 && s < 61; // 60: a leap second, read as the next second
        return h * 3600 + m * 60 + s;
    }
    bool done() const noexcept { return ok && at == text.size(); }
};

bool valid_date(int year, int month, int day) noexcept {
    static constexpr int lengths[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month >= 1 && month <= 12 && day >= 1 && day <= lengths[month - 1] + (month == 2 && leap ? 1 : 0);
}

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

std::optional<std::time_t> parse_http_date(std::string_view text, std::time_t now) noexcept {
    date_reader r{text};
    int year = 0;
    int month = 0;
    int day = 0;
    int seconds = 0;
    if (text.size() > 3 && text[3] == ',') { // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
        r.one_of(short_days);
        r.literal(", ");
        day = r.digits(2);
        r.literal(" ");
        month = r.one_of(month_names) + 1;
        r.literal(" ");
        year = r.digits(4);
        r.literal(" ");
        seconds = r.time_of_day();
        r.literal(" GMT");
    } else if (text.size() > 3 && text[3] == ' ') { // asctime: "Sun Nov  6 08:49:37 1994"
        r.one_of(short_days);
        r.literal(" ");
        month = r.one_of(month_names) + 1;
        r.literal(" ");
        if (r.at < text.size() && text[r.at] == ' ') {
            ++r.at;
            day = r.digits(1);
        } else {
            day = r.digits(2);
        }
        r.literal(" ");
        seconds = r.time_of_day();
        r.literal(" ");
        year = r.digits(4);
    } else { // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
        r.one_of(long_days);
        r.literal(", ");
        day = r.digits(2);
        r.literal("-");
        month = r.one_of(month_names) + 1;
        r.literal("-");
        const int yy = r.digits(2);
        r.literal(" ");
        seconds = r.time_of_day();
        r.literal(" GMT");
        // The century that puts the year at most 50 years ahead of now.
        const int this_year = civil_from_days(static_cast<std::int64_t>(now) / 86400).year;
        year = this_year / 100 * 100 + yy;
        year += year > this_year + 50 ? -100 : year <= this_year - 50 ? 100 : 0;
    }
    if (!r.done() || !valid_date(year, month, day)) {
        return std::nullopt;
    }
    return static_cast<std::time_t>(
        days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 + seconds);
}

} // namespace hotpath
