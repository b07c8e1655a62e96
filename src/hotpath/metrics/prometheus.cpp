// Escaping and number formats of the Prometheus text format: label values escape \, " and newline; HELP escapes
// \ and newline; numbers are Go-style floats, +Inf, -Inf and NaN.
#include <hotpath/metrics/prometheus.hpp>

#include <charconv>
#include <cmath>

namespace hotpath::metrics {

namespace {

void escape(std::string& out, std::string_view text, bool quote) {
    for (const char c : text) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (quote && c == '"') {
            out += "\\\"";
        } else {
            out += c;
        }
    }
}

std::string_view type_name(metric_type t) noexcept {
    switch (t) {
    case metric_type::counter:
        return "counter";
    case metric_type::gauge:
        return "gauge";
    case metric_type::histogram:
        return "histogram";
    }
    return "untyped";
}

} // namespace

void prometheus_writer::family(std::string_view name, std::string_view help, metric_type type) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    escape(out_, help, false);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type_name(type);
    out_ += '\n';
}

void prometheus_writer::labels(std::span<const label> labels, std::string_view extra_name,
                               std::string_view extra_value) {
    if (labels.size() == 0 && extra_name.empty()) {
        return;
    }
    out_ += '{';
    bool first = true;
    const auto one = [&](std::string_view name, std::string_view value) {
        if (!first) {
            out_ += ',';
        }
        first = false;
        out_ += name;
        out_ += "=\"";
        escape(out_, value, true);
        out_ += '"';
    };
    for (const label& l : labels) {
        one(l.name, l.value);
    }
    if (!extra_name.empty()) {
        one(extra_name, extra_value);
    }
    out_ += '}';
}

void prometheus_writer::number(double value) {
    if (std::isnan(value)) {
        out_ += "NaN";
        return;
    }
    if (std::isinf(value)) {
        out_ += value > 0 ? "+Inf" : "-Inf";
        return;
    }
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value); // shortest exact form
    out_.append(buf, ec == std::errc{} ? end : buf);
}

void prometheus_writer::sample_of(std::string_view name, std::span<const label> l, double value) {
    out_ += name;
    labels(l);
    out_ += ' ';
    number(value);
    out_ += '\n';
}

void prometheus_writer::sample_of(std::string_view name, std::span<const label> l, std::uint64_t value) {
    out_ += name;
    labels(l);
    out_ += ' ';
    char buf[24];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
    out_.append(buf, end);
    out_ += '\n';
}

void prometheus_writer::histogram_of(std::string_view name, std::span<const label> l,
                                     std::span<const double> bounds_seconds, std::span<const std::uint64_t> counts,
                                     double sum_seconds) {
    std::uint64_t cumulative = 0;
    std::string bucket(name);
    bucket += "_bucket";
    char bound[32];
    for (std::size_t i = 0; i <= bounds_seconds.size(); ++i) {
        cumulative += i < counts.size() ? counts[i] : 0;
        std::string_view le = "+Inf";
        if (i < bounds_seconds.size()) {
            // Fixed notation, as client libraries write it: "0.0001", not the shorter "1e-04" (the same number, but not
            // the same label value for a query that names it).
            const auto [end, ec] =
                std::to_chars(bound, bound + sizeof(bound), bounds_seconds[i], std::chars_format::fixed);
            le = std::string_view(bound, static_cast<std::size_t>((ec == std::errc{} ? end : bound) - bound));
        }
        out_ += bucket;
        labels(l, "le", le);
        out_ += ' ';
        char buf[24];
        const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), cumulative);
        out_.append(buf, end);
        out_ += '\n';
    }
    sample_of(std::string(name) + "_sum", l, sum_seconds);
    sample_of(std::string(name) + "_count", l, cumulative);
}

} // namespace hotpath::metrics
