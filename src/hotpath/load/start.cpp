// Start times as typed, and the run's start shared between threads.
#include <hotpath/load/start.hpp>

#include <fmt/core.h>

#include <cctype>
#include <charconv>

namespace hotpath::load {

namespace {

problem bad_time(std::string_view text) {
    return {errc::invalid_value,
            fmt::format("--start-at {}: not a time; give RFC 3339 with its zone (2026-12-06T16:00:00Z, "
                        "2026-12-06T17:00:00.250+01:00) or Unix seconds (date +%s)",
                        text)};
}

// Reads exactly `digits` decimal digits at `at`, advancing it.
std::optional<int> digits_at(std::string_view s, std::size_t& at, std::size_t digits) {
    if (at + digits > s.size()) {
        return std::nullopt;
    }
    int v = 0;
    for (std::size_t i = 0; i < digits; ++i) {
        const char c = s[at + i];
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        v = v * 10 + (c - '0');
    }
    at += digits;
    return v;
}

bool take(std::string_view s, std::size_t& at, char c) {
    if (at < s.size() && s[at] == c) {
        ++at;
        return true;
    }
    return false;
}

// The nanoseconds of a fraction's digits after its point ("25" -> 250,000,000), at most 9 of them.
std::optional<std::int64_t> fraction_ns(std::string_view s, std::size_t& at) {
    const std::size_t from = at;
    std::int64_t ns = 0;
    std::int64_t scale = 100'000'000;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
        if (at - from >= 9) {
            return std::nullopt;
        }
        ns += (s[at] - '0') * scale;
        scale /= 10;
        ++at;
    }
    if (at == from) {
        return std::nullopt;
    }
    return ns;
}

// A point and its fraction's nanoseconds at `at` (0 without a point), none when the point has no digits or more
// than 9.
std::optional<std::int64_t> fraction_if_any(std::string_view s, std::size_t& at) {
    return take(s, at, '.') ? fraction_ns(s, at) : std::optional<std::int64_t>(0);
}

std::optional<wall_clock::time_point> unix_seconds(std::string_view s) {
    std::size_t at = 0;
    std::int64_t seconds = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), seconds);
    if (ec != std::errc{} || end == s.data() || seconds < 0 || seconds > 253'402'300'799) { // to 9999-12-31
        return std::nullopt;
    }
    at = static_cast<std::size_t>(end - s.data());
    const auto ns = fraction_if_any(s, at);
    if (!ns) {
        return std::nullopt;
    }
    if (at != s.size()) {
        return std::nullopt;
    }
    return wall_clock::time_point{std::chrono::duration_cast<wall_clock::duration>(std::chrono::seconds{seconds} +
                                                                                   std::chrono::nanoseconds{*ns})};
}

std::optional<wall_clock::time_point> rfc3339(std::string_view s) {
    using namespace std::chrono;
    // YYYY-MM-DD, a T (or t, or a space), hh:mm:ss: each number followed by the separator of its place.
    struct part {
        std::size_t digits;
        std::string_view then; // any one of these after it; none for the seconds
    };
    constexpr part parts[] = {{4, "-"}, {2, "-"}, {2, "Tt "}, {2, ":"}, {2, ":"}, {2, ""}};
    int value[6] = {};
    std::size_t at = 0;
    for (std::size_t i = 0; i < std::size(parts); ++i) {
        const auto v = digits_at(s, at, parts[i].digits);
        if (!v) {
            return std::nullopt;
        }
        value[i] = *v;
        if (!parts[i].then.empty()) {
            if (at >= s.size() || parts[i].then.find(s[at]) == std::string_view::npos) {
                return std::nullopt;
            }
            ++at;
        }
    }
    const int y = value[0], mo = value[1], d = value[2], h = value[3], mi = value[4], sec = value[5];
    const auto ns = fraction_if_any(s, at);
    if (!ns) {
        return std::nullopt;
    }
    minutes offset{0};
    if (take(s, at, 'Z') || take(s, at, 'z')) {
    } else if (at < s.size() && (s[at] == '+' || s[at] == '-')) {
        const int sign = s[at] == '-' ? -1 : 1;
        ++at;
        const auto oh = digits_at(s, at, 2);
        if (!oh || !take(s, at, ':')) {
            return std::nullopt;
        }
        const auto om = digits_at(s, at, 2);
        if (!om || *oh > 23 || *om > 59) {
            return std::nullopt;
        }
        offset = minutes{sign * (*oh * 60 + *om)};
    } else {
        return std::nullopt; // a time without its zone would be read in whichever the machine has
    }
    if (at != s.size()) {
        return std::nullopt;
    }
    const year_month_day date{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
    if (!date.ok() || h > 23 || mi > 59 || sec > 60) { // 60: a leap second, read as the next second's start
        return std::nullopt;
    }
    const auto local = sys_days{date} + hours{h} + minutes{mi} + seconds{sec} + nanoseconds{*ns};
    return wall_clock::time_point{duration_cast<wall_clock::duration>((local - offset).time_since_epoch())};
}

} // namespace

result<wall_clock::time_point, problem> parse_start_time(std::string_view text) {
    if (text.empty()) {
        return bad_time(text);
    }
    if (const auto t =
            text.find_first_not_of("0123456789.") == std::string_view::npos ? unix_seconds(text) : rfc3339(text)) {
        return *t;
    }
    return bad_time(text);
}

std::string wall_clock_text(wall_clock::time_point t) {
    using namespace std::chrono;
    const auto ms = floor<milliseconds>(t);
    const auto day = floor<days>(ms);
    const year_month_day date{day};
    const hh_mm_ss time{ms - day};
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", static_cast<int>(date.year()),
                       static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()), time.hours().count(),
                       time.minutes().count(), time.seconds().count(), time.subseconds().count());
}

bool run_control::release() noexcept {
    if (!paused_.load() || phase_.load() != phase::waiting) {
        return false;
    }
    return !released_.exchange(true);
}

std::optional<wall_clock::time_point> run_control::start_at() const noexcept {
    const std::int64_t ns = start_at_ns_.load();
    return ns == 0 ? std::nullopt
                   : std::optional(wall_clock::time_point{
                         std::chrono::duration_cast<wall_clock::duration>(std::chrono::nanoseconds{ns})});
}

std::optional<wall_clock::time_point> run_control::began() const noexcept {
    const std::int64_t ns = began_ns_.load();
    return ns == 0 ? std::nullopt
                   : std::optional(wall_clock::time_point{
                         std::chrono::duration_cast<wall_clock::duration>(std::chrono::nanoseconds{ns})});
}

void run_control::wait_for(bool paused, std::optional<wall_clock::time_point> at) noexcept {
    paused_.store(paused);
    start_at_ns_.store(at ? std::chrono::duration_cast<std::chrono::nanoseconds>(at->time_since_epoch()).count() : 0);
}

void run_control::begin(wall_clock::time_point at) noexcept {
    began_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count());
    phase_.store(phase::running);
}

} // namespace hotpath::load
