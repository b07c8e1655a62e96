// The Server-Timing field parser: one pass over the field value, views into it, no allocation but `out`'s.
#include <hotpath/http/server_timing.hpp>

#include <hotpath/http/char_class.hpp>
#include <hotpath/http/request_head.hpp>

#include <charconv>
#include <cmath>
#include <system_error>

namespace hotpath::http {
namespace {

using char_class::is;
using char_class::is_ows;

// A cursor over the field value; every step checks the end, so any bytes at all are safe to scan.
struct cursor {
    std::string_view s;
    std::size_t i = 0;

    bool done() const noexcept { return i >= s.size(); }
    bool at(char c) const noexcept { return i < s.size() && s[i] == c; }
    void skip_ows() noexcept {
        while (i < s.size() && is_ows(s[i])) {
            ++i;
        }
    }
    std::string_view token() noexcept {
        const std::size_t start = i;
        while (i < s.size() && is(s[i], char_class::tchar_bit)) {
            ++i;
        }
        return s.substr(start, i - start);
    }
    // After the opening quote: the content of a quoted-string (RFC 9110 §5.6.4) up to its closing quote, which
    // is consumed. nullopt when a byte is neither qdtext nor a quoted-pair or the value ends first; `i` is then at
    // the offending byte (or the end).
    std::optional<std::string_view> quoted_content() noexcept {
        const std::size_t start = i;
        while (i < s.size()) {
            const char c = s[i];
            if (c == '"') {
                return s.substr(start, i++ - start);
            }
            if (c == '\\') {
                if (i + 1 >= s.size() || !is(s[i + 1], char_class::value_bit)) {
                    return std::nullopt;
                }
                i += 2;
            } else if (is(c, char_class::value_bit)) {
                ++i;
            } else {
                return std::nullopt;
            }
        }
        return std::nullopt;
    }
    // Advances to the next byte in `stops` that is outside a quoted-string, or the end; does not consume it.
    // `quoted`: the cursor is inside a quoted-string already.
    void skip_to(std::string_view stops, bool quoted = false) noexcept {
        while (i < s.size()) {
            const char c = s[i];
            if (quoted) {
                if (c == '\\') {
                    ++i;
                } else if (c == '"') {
                    quoted = false;
                }
            } else if (c == '"') {
                quoted = true;
            } else if (stops.find(c) != std::string_view::npos) {
                return;
            }
            ++i;
        }
        i = s.size();
    }
};

// The HTML rules for parsing floating-point number values, which the spec names for dur: an optional sign, then
// digits with an optional fraction and exponent; bytes after the number are ignored. 0 when there is no number or
// it does not fit a double.
double parse_dur(std::string_view v) noexcept {
    if (!v.empty() && v.front() == '+') {
        v.remove_prefix(1); // std::from_chars takes '-' but not '+'
        if (!v.empty() && v.front() == '-') {
            return 0;
        }
    }
    const std::size_t first = !v.empty() && v.front() == '-' ? 1 : 0;
    // Only a digit or a '.' may start the number: from_chars would also take "inf" and "nan".
    if (first >= v.size() || !((v[first] >= '0' && v[first] <= '9') || v[first] == '.')) {
        return 0;
    }
    double d = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), d);
    if (r.ec != std::errc{} || !std::isfinite(d)) {
        return 0;
    }
    return d;
}

} // namespace

std::string server_timing_metric::description() const {
    std::string text;
    text.reserve(raw_description.size());
    for (std::size_t i = 0; i < raw_description.size(); ++i) {
        if (raw_description[i] == '\\' && i + 1 < raw_description.size()) {
            ++i;
        }
        text.push_back(raw_description[i]);
    }
    return text;
}

server_timing_result parse_server_timing(std::string_view field_value, std::vector<server_timing_metric>& out) {
    server_timing_result result;
    cursor c{field_value};
    while (!c.done()) {
        c.skip_ows();
        if (c.at(',')) { // an empty list element (RFC 9110 §5.6.1)
            ++c.i;
            continue;
        }
        if (c.done()) {
            break;
        }
        server_timing_metric metric;
        metric.name = c.token();
        c.skip_ows();
        if (metric.name.empty() || !(c.done() || c.at(';') || c.at(','))) {
            ++result.rejected;
            c.skip_to(",");
            continue;
        }
        bool desc_seen = false;
        while (c.at(';')) {
            ++c.i;
            c.skip_ows();
            const std::string_view param = c.token();
            c.skip_ows();
            std::string_view value;
            const bool ok = !param.empty();
            if (ok && c.at('=')) {
                ++c.i;
                c.skip_ows();
                if (c.at('"')) {
                    ++c.i;
                    const auto content = c.quoted_content();
                    if (!content) {
                        // A byte that cannot be in a quoted-string: the string still ends at its closing quote.
                        ++result.ignored_params;
                        c.skip_to(";,", true);
                        continue;
                    }
                    value = *content;
                } else {
                    value = c.token();
                }
                c.skip_ows();
            }
            if (!ok || !(c.done() || c.at(';') || c.at(','))) {
                ++result.ignored_params;
                c.skip_to(";,");
                continue;
            }
            if (iequals(param, "dur") && !metric.duration) {
                metric.duration = server_timing_duration{parse_dur(value)};
            } else if (iequals(param, "desc") && !desc_seen) {
                metric.raw_description = value;
                desc_seen = true;
            }
        }
        out.push_back(metric);
        ++result.metrics;
        if (c.at(',')) {
            ++c.i;
        }
    }
    return result;
}

} // namespace hotpath::http
