// Parsing and formatting of durations and sizes.
#include <hotpath/core/units.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace hotpath {

namespace {

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

bool iequal(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
        if (lower(a[i]) != lower(b[i])) {
            return false;
        }
    }
    return true;
}

// `value` with 3 significant digits (at most 2 decimals) and `unit`.
std::string three_digits(double value, const char* unit) {
    char text[48];
    const int decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
    const int n = std::snprintf(text, sizeof(text), "%.*f%s", decimals, value, unit);
    return {text, static_cast<std::size_t>(std::max(n, 0))};
}

} // namespace

std::optional<double> take_number(std::string_view& text) noexcept {
    double v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc{} || v < 0 || !std::isfinite(v)) {
        return std::nullopt;
    }
    text.remove_prefix(static_cast<std::size_t>(r.ptr - text.data()));
    return v;
}

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) {
    text = trim(text);
    const auto value = take_number(text);
    if (!value) {
        return std::nullopt;
    }
    double scale = 1e9;
    if (text == "ms") {
        scale = 1e6;
    } else if (text == "us") {
        scale = 1e3;
    } else if (text == "m") {
        scale = 60e9;
    } else if (text == "h") {
        scale = 3600e9;
    } else if (!text.empty() && text != "s") {
        return std::nullopt;
    }
    const double ns = *value * scale;
    if (ns >= static_cast<double>(std::numeric_limits<std::int64_t>::max())) {
        return std::nullopt;
    }
    return std::chrono::nanoseconds{static_cast<std::int64_t>(ns)};
}

std::string format_duration_ns(double ns, int decimals) {
    char text[48];
    int n = 0;
    decimals = std::clamp(decimals, 0, 9);
    if (ns < 1e3) {
        n = std::snprintf(text, sizeof(text), "%.0fns", ns);
    } else if (ns < 1e6) {
        n = std::snprintf(text, sizeof(text), "%.*fus", decimals, ns / 1e3);
    } else if (ns < 1e9) {
        n = std::snprintf(text, sizeof(text), "%.*fms", decimals, ns / 1e6);
    } else {
        n = std::snprintf(text, sizeof(text), "%.*fs", decimals, ns / 1e9);
    }
    return {text, static_cast<std::size_t>(std::max(n, 0))};
}

std::string exact_duration_text(std::chrono::nanoseconds d) {
    const std::int64_t ns = d.count();
    if (ns == 0) {
        return "0s";
    }
    constexpr std::array<std::pair<std::int64_t, std::string_view>, 5> units{
        {{3'600'000'000'000, "h"}, {60'000'000'000, "m"}, {1'000'000'000, "s"}, {1'000'000, "ms"}, {1'000, "us"}}};
    for (const auto& [scale, unit] : units) {
        if (ns % scale == 0) {
            return std::to_string(ns / scale).append(unit);
        }
    }
    // Below a microsecond: the shortest decimal that reads back to the same count (parse_duration truncates).
    std::array<char, 32> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), (static_cast<double>(ns) + 0.5) / 1e3);
    return std::string(buf.data(), r.ptr).append("us");
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
    text = trim(text);
    const auto value = take_number(text);
    if (!value) {
        return std::nullopt;
    }
    text = trim(text);
    double scale = 1;
    struct unit {
        std::string_view name;
        double scale;
    };
    static constexpr std::array<unit, 13> units{{{"", 1},
                                                 {"b", 1},
                                                 {"k", 1024.0},
                                                 {"kib", 1024.0},
                                                 {"m", 1024.0 * 1024},
                                                 {"mib", 1024.0 * 1024},
                                                 {"g", 1024.0 * 1024 * 1024},
                                                 {"gib", 1024.0 * 1024 * 1024},
                                                 {"kb", 1e3},
                                                 {"mb", 1e6},
                                                 {"gb", 1e9},
                                                 {"t", 1024.0 * 1024 * 1024 * 1024},
                                                 {"tb", 1e12}}};
    bool known = false;
    for (const unit& u : units) {
        if (iequal(text, u.name)) {
            scale = u.scale;
            known = true;
            break;
        }
    }
    if (!known) {
        return std::nullopt;
    }
    const double bytes = std::round(*value * scale);
    if (bytes >= 18446744073709551616.0) { // 2^64
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(bytes);
}

std::string format_size(std::uint64_t bytes) {
    const auto b = static_cast<double>(bytes);
    if (bytes < 1000) {
        return std::to_string(bytes) + " B";
    }
    if (b < 999.5e3) {
        return three_digits(b / 1e3, " kB");
    }
    if (b < 999.5e6) {
        return three_digits(b / 1e6, " MB");
    }
    if (b < 999.5e9) {
        return three_digits(b / 1e9, " GB");
    }
    return three_digits(b / 1e12, " TB");
}

} // namespace hotpath
