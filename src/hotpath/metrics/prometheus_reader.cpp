// The text format line by line, as Prometheus's own parser reads it: a sample is a name, an optional label set,
// blanks, a Go-style float, an optional timestamp, and in OpenMetrics an optional exemplar after " # ". Label values
// know three escapes (\\, \" and \n); any other is an error, as it is to Prometheus.
#include <hotpath/metrics/prometheus_reader.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>

namespace hotpath::metrics {

namespace {

bool letter(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool digit(char c) noexcept {
    return c >= '0' && c <= '9';
}
bool blank(char c) noexcept {
    return c == ' ' || c == '\t';
}

// One line, read left to right; each step says what it expected when the text is not that.
class line_reader {
public:
    explicit line_reader(std::string_view text) noexcept : s_(text) {}

    bool done() const noexcept { return i_ >= s_.size(); }
    char peek() const noexcept { return done() ? '\0' : s_[i_]; }
    void skip_blanks() noexcept {
        while (!done() && blank(s_[i_])) {
            ++i_;
        }
    }
    bool take(char c) noexcept {
        if (peek() != c) {
            return false;
        }
        ++i_;
        return true;
    }
    // A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or, with colons refused, a label name.
    std::string_view name(bool colons) noexcept {
        const std::size_t from = i_;
        while (!done() && (letter(s_[i_]) || (colons && s_[i_] == ':') || (i_ > from && digit(s_[i_])))) {
            ++i_;
        }
        return s_.substr(from, i_ - from);
    }
    // A quoted string with \\, \" and \n escapes; the problem's words, or nothing.
    std::optional<std::string_view> quoted(std::string& out) {
        if (!take('"')) {
            return "expected '\"'";
        }
        while (!done()) {
            const char c = s_[i_++];
            if (c == '"') {
                return std::nullopt;
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            switch (peek()) {
            case '\\':
                out += '\\';
                break;
            case '"':
                out += '"';
                break;
            case 'n':
                out += '\n';
                break;
            default:
                return "invalid escape in a quoted value (only \\\\, \\\" and \\n)";
            }
            ++i_;
        }
        return "quoted value not closed";
    }
    // A run of anything but blanks.
    std::string_view token() noexcept {
        const std::size_t from = i_;
        while (!done() && !blank(s_[i_])) {
            ++i_;
        }
        return s_.substr(from, i_ - from);
    }
    std::string_view rest() const noexcept { return done() ? std::string_view() : s_.substr(i_); }

private:
    std::string_view s_;
    std::size_t i_ = 0;
};

} // namespace

std::optional<double> parse_prometheus_number(std::string_view t) noexcept {
    bool negative = false;
    if (!t.empty() && (t.front() == '+' || t.front() == '-')) {
        negative = t.front() == '-';
        t.remove_prefix(1);
    }
    if (t.empty() || t.front() == '+' || t.front() == '-') {
        return std::nullopt;
    }
    double v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::general);
    if (ec != std::errc() || end != t.data() + t.size()) {
        return std::nullopt;
    }
    return negative ? -v : v;
}

namespace {

std::string_view strip_suffix(std::string_view name, std::string_view suffix) noexcept {
    return name.size() > suffix.size() && name.ends_with(suffix) ? name.substr(0, name.size() - suffix.size())
                                                                 : std::string_view();
}

// `# HELP`, `# TYPE`, `# UNIT`, `# EOF` (which sets `eof`) or any other comment; the problem's words, or nothing.
std::optional<std::string> comment(line_reader& r, scrape& out, bool& eof) {
    r.skip_blanks();
    const std::string_view keyword = r.token();
    if (keyword == "EOF") {
        eof = true;
        return std::nullopt;
    }
    if (keyword != "TYPE" && keyword != "UNIT") {
        return std::nullopt; // HELP, or a comment of the page's own
    }
    r.skip_blanks();
    const std::string_view name = r.name(true);
    if (name.empty()) {
        return fmt::format("# {} without a metric name", keyword);
    }
    r.skip_blanks();
    const std::string_view word = r.token();
    r.skip_blanks();
    if (!r.done()) {
        return fmt::format("# {} {}: unexpected '{}' after '{}'", keyword, name, r.rest(), word);
    }
    auto it =
        std::find_if(out.families.begin(), out.families.end(), [&](const scraped_family& f) { return f.name == name; });
    if (it == out.families.end()) {
        out.families.push_back({std::string(name), "", ""});
        it = std::prev(out.families.end());
    }
    if (keyword == "UNIT") {
        it->unit = std::string(word);
        return std::nullopt;
    }
    static constexpr std::array types{"counter",        "gauge",    "histogram", "summary", "untyped",
                                      "gaugehistogram", "stateset", "info",      "unknown"};
    if (std::find(types.begin(), types.end(), word) == types.end()) {
        return fmt::format("# TYPE {}: unknown type '{}'", name, word);
    }
    if (!it->type.empty()) {
        return fmt::format("# TYPE {} declared twice", name);
    }
    it->type = std::string(word);
    return std::nullopt;
}

// `{name="value",...}` after the metric's name; a quoted name without `=` is the metric's own (Prometheus 3).
std::optional<std::string> label_set(line_reader& r, scraped_sample& s, const scrape_limits& limits) {
    while (true) {
        r.skip_blanks();
        if (r.take('}')) {
            return std::nullopt;
        }
        std::string name;
        if (r.peek() == '"') {
            if (auto bad = r.quoted(name)) {
                return std::string(*bad);
            }
        } else {
            name = std::string(r.name(false));
            if (name.empty()) {
                return fmt::format("expected a label name at '{}'", r.rest());
            }
        }
        r.skip_blanks();
        if (!r.take('=')) {
            if (s.name.empty() && (r.peek() == ',' || r.peek() == '}')) {
                s.name = std::move(name); // {"http.server.duration", le="1"}
            } else {
                return fmt::format("expected '=' after the label '{}'", name);
            }
        } else {
            r.skip_blanks();
            std::string value;
            if (auto bad = r.quoted(value)) {
                return fmt::format("label '{}': {}", name, *bad);
            }
            if (std::any_of(s.labels.begin(), s.labels.end(), [&](const auto& l) { return l.first == name; })) {
                return fmt::format("label '{}' given twice", name);
            }
            if (s.labels.size() >= limits.max_labels) {
                return fmt::format("more than {} labels", limits.max_labels);
            }
            s.labels.emplace_back(std::move(name), std::move(value));
        }
        r.skip_blanks();
        if (r.take(',')) {
            continue;
        }
        if (!r.take('}')) {
            return fmt::format("expected ',' or '}}' at '{}'", r.rest());
        }
        return std::nullopt;
    }
}

std::optional<std::string> sample_line(line_reader& r, scrape& out, const scrape_limits& limits) {
    scraped_sample s;
    s.name = std::string(r.name(true));
    if (s.name.empty() && r.peek() != '{') {
        return fmt::format("expected a metric name at '{}'", r.rest());
    }
    r.skip_blanks();
    if (r.take('{')) {
        if (auto bad = label_set(r, s, limits)) {
            return bad;
        }
        if (s.name.empty()) {
            return std::string("a sample without a metric name");
        }
    }
    r.skip_blanks();
    const std::string_view value_text = r.token();
    const auto value = parse_prometheus_number(value_text);
    if (!value) {
        return value_text.empty() ? fmt::format("{}: no value", s.name)
                                  : fmt::format("{}: '{}' is not a number", s.name, value_text);
    }
    s.value = *value;
    r.skip_blanks();
    if (!r.done() && r.peek() != '#') {
        const std::string_view stamp = r.token();
        if (const auto at = parse_prometheus_number(stamp); !at || std::isnan(*at)) {
            return fmt::format("{}: '{}' is not a timestamp", s.name, stamp);
        }
        r.skip_blanks();
    }
    if (!r.done() && !r.take('#')) {
        return fmt::format("{}: unexpected '{}' after the value", s.name, r.rest());
    }
    // What follows " # " is an OpenMetrics exemplar ({trace_id="..."} value [timestamp]): read past.
    out.samples.push_back(std::move(s));
    return std::nullopt;
}

} // namespace

std::string_view scraped_sample::label(std::string_view wanted) const noexcept {
    for (const auto& [n, v] : labels) {
        if (n == wanted) {
            return v;
        }
    }
    return {};
}

std::string_view scrape::type_of(std::string_view sample_name) const noexcept {
    auto declared = [&](std::string_view name) -> const scraped_family* {
        for (const scraped_family& f : families) {
            if (f.name == name && !f.type.empty()) {
                return &f;
            }
        }
        return nullptr;
    };
    if (const auto* f = declared(sample_name)) {
        return f->type;
    }
    for (const std::string_view suffix :
         {"_bucket", "_sum", "_count", "_total", "_created", "_gsum", "_gcount", "_info"}) {
        if (const std::string_view base = strip_suffix(sample_name, suffix); !base.empty()) {
            if (const auto* f = declared(base)) {
                return f->type;
            }
        }
    }
    return {};
}

result<scrape, problem> read_prometheus_text(std::string_view text, const scrape_limits& limits) {
    if (text.size() > limits.max_bytes) {
        return problem{errc::invalid_value,
                       fmt::format("the page is {} bytes, over the {} a scrape reads", text.size(), limits.max_bytes)};
    }
    scrape out;
    std::size_t number_of_line = 0;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        ++number_of_line;
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        line_reader r(line);
        r.skip_blanks();
        if (r.done()) {
            continue;
        }
        bool eof = false;
        const auto bad = r.take('#') ? comment(r, out, eof) : sample_line(r, out, limits);
        if (bad) {
            return problem{errc::invalid_value, fmt::format("line {}: {}", number_of_line, *bad)};
        }
        if (eof) {
            break;
        }
    }
    return out;
}

} // namespace hotpath::metrics
