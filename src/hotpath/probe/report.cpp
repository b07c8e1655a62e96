// The probe's console reports and JSON document.
#include <hotpath/probe/report.hpp>

#include <hotpath/load/report.hpp>
#include <hotpath/net/tls_options.hpp>

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace hotpath::probe {
namespace {

std::string duration_text(double ns) {
    return format_duration_ns(ns);
}

std::string bytes_range(std::uint64_t lo, std::uint64_t hi) {
    return lo == hi ? fmt::format("{} B", lo) : fmt::format("{}..{} B", lo, hi);
}

std::string centered(std::string_view text, std::size_t width) {
    if (text.size() >= width) {
        return std::string(text);
    }
    const std::size_t left = (width - text.size()) / 2;
    return std::string(left, ' ') + std::string(text) + std::string(width - text.size() - left, ' ');
}

void rtrim(std::string& s) {
    while (!s.empty() && s.back() == ' ') {
        s.pop_back();
    }
}

// Each Server-Timing metric name with its dur per response (the sum when a response names it more than once), in
// the order names first appear.
std::vector<std::pair<std::string, std::vector<double>>> server_timing_by_name(const std::vector<sample>& samples) {
    std::vector<std::pair<std::string, std::vector<double>>> by_name;
    for (const auto& s : samples) {
        if (!s.ok()) {
            continue;
        }
        std::map<std::string, double> per_response;
        for (const auto& m : s.server_timing) {
            if (m.duration_ms) {
                per_response[m.name] += *m.duration_ms;
            }
        }
        for (const auto& m : s.server_timing) {
            const auto it = per_response.find(m.name);
            if (it == per_response.end()) {
                continue; // no dur, or already taken
            }
            auto named = std::find_if(by_name.begin(), by_name.end(), [&](const auto& e) { return e.first == m.name; });
            if (named == by_name.end()) {
                by_name.emplace_back(m.name, std::vector<double>{});
                named = std::prev(by_name.end());
            }
            named->second.push_back(it->second);
            per_response.erase(it);
        }
    }
    return by_name;
}

// The phases of one request as a timeline: lengths in a bar, cumulative readings at the bar's boundaries.
void print_timeline(std::FILE* out, const sample& s, bool tls) {
    const phase_lengths ph = phases_of(s);
    std::vector<std::string_view> labels{"Resolve", "Connect", "Send", "Wait", "Receive"};
    std::vector<double> lengths{ph.resolve, ph.connect, ph.send, ph.wait, ph.receive};
    std::vector<std::string_view> ends{"resolved", "connected", "sent", "first byte", "total"};
    std::vector<std::chrono::nanoseconds> readings{s.resolved, s.connected, s.sent, s.first_byte, s.done};
    if (tls) {
        labels.insert(labels.begin() + 2, "TLS");
        lengths.insert(lengths.begin() + 2, ph.tls);
        ends.insert(ends.begin() + 2, "handshaken");
        readings.insert(readings.begin() + 2, s.handshaken);
    }
    const std::size_t columns = labels.size();
    constexpr std::size_t width = 14;
    std::string line = " ";
    for (const auto label : labels) {
        line += centered(label, width) + " ";
    }
    rtrim(line);
    fmt::print(out, "{}\n", line);
    line = "[";
    for (std::size_t i = 0; i < columns; ++i) {
        line += centered(duration_text(lengths[i]), width) + (i + 1 == columns ? "]" : "|");
    }
    fmt::print(out, "{}\n", line);
    const std::size_t total_width = columns * (width + 1) + 1;
    line.assign(total_width, ' ');
    for (std::size_t k = 1; k <= columns; ++k) {
        line[k * (width + 1)] = '|';
    }
    rtrim(line);
    fmt::print(out, "{}\n", line);
    for (std::size_t k = 1; k <= columns; ++k) {
        line.assign(total_width, ' ');
        for (std::size_t j = k + 1; j <= columns; ++j) {
            line[j * (width + 1)] = '|';
        }
        const std::string text =
            fmt::format("{} {}", ends[k - 1], duration_text(static_cast<double>(readings[k - 1].count())));
        const std::size_t end = k * (width + 1) + 1; // the text ends on the boundary
        const std::size_t start = end > text.size() ? end - text.size() : 0;
        line.replace(start, text.size(), text);
        rtrim(line);
        fmt::print(out, "{}\n", line);
    }
}

void print_single(std::FILE* out, const plan& p, const sample& s) {
    fmt::print(out, "hotpath probe {} {}\n", p.method, p.to.text());
    fmt::print(out, "  Connected    {} ({})\n", s.address, s.reused ? "reused connection" : "new connection");
    if (!s.tls_version.empty()) {
        fmt::print(out, "  TLS          {}, {} handshake{}\n", s.tls_version, s.tls_resumed ? "resumed" : "full",
                   s.alpn.empty() ? "" : ", ALPN " + s.alpn);
    }
    fmt::print(out, "  Response     HTTP/1.{} {}{}{}: head {} B, body {} B\n\n", s.version_minor, s.status,
               s.reason.empty() ? "" : " ", s.reason, s.head_bytes, s.body_bytes);
    print_timeline(out, s, p.to.tls());
    if (!s.server_timing.empty()) {
        std::size_t name_width = 0;
        for (const auto& m : s.server_timing) {
            name_width = std::max(name_width, m.name.size());
        }
        fmt::print(out, "\n  Server-Timing\n");
        for (const auto& m : s.server_timing) {
            std::string line = fmt::format("    {:<{}}  {:>9}", m.name, name_width,
                                           m.duration_ms ? duration_text(*m.duration_ms * 1e6) : "-");
            if (!m.description.empty()) {
                line += "  " + m.description;
            }
            fmt::print(out, "{}\n", line);
        }
    }
}

std::string stats_row(std::string_view name, const stats& st, double scale) {
    return fmt::format("  {:<12} {:>10} {:>10} {:>10} {:>10}", name, duration_text(st.min * scale),
                       duration_text(st.median * scale), duration_text(st.p95 * scale), duration_text(st.max * scale));
}

// The failures counted by class, with the first message: "2 timeout, 1 reset (first: ...)".
std::string failures_text(const std::vector<sample>& samples) {
    std::vector<std::pair<std::string, std::size_t>> counts;
    const sample* first = nullptr;
    for (const auto& s : samples) {
        if (s.ok()) {
            continue;
        }
        first = first == nullptr ? &s : first;
        std::string name = failure_class(s);
        auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == name; });
        if (it == counts.end()) {
            counts.emplace_back(std::move(name), 1);
        } else {
            ++it->second;
        }
    }
    std::string text;
    for (const auto& [name, n] : counts) {
        text += fmt::format("{}{} {}", text.empty() ? "" : ", ", n, name);
    }
    return first == nullptr ? text : text + " (first: " + first->message + ")";
}

void print_several(std::FILE* out, const plan& p, const std::vector<sample>& samples) {
    fmt::print(out, "hotpath probe {} {}: {} requests, {}\n", p.method, p.to.text(), samples.size(),
               p.keep_alive ? "one connection kept alive" : "a new connection each");
    std::vector<double> resolve, connect, tls, send, wait, receive, first_byte, total;
    std::size_t resumed = 0;
    std::map<unsigned, std::size_t> statuses;
    std::uint64_t head_lo = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t head_hi = 0;
    std::uint64_t body_lo = head_lo;
    std::uint64_t body_hi = 0;
    std::size_t opened = 0;
    std::string address;
    for (const auto& s : samples) {
        if (!s.reused && s.connected.count() > 0) {
            ++opened;
        }
        if (!s.ok()) {
            continue;
        }
        address = s.address;
        const phase_lengths ph = phases_of(s);
        resolve.push_back(ph.resolve);
        connect.push_back(ph.connect);
        if (!s.tls_version.empty()) {
            tls.push_back(ph.tls);
            resumed += s.tls_resumed ? 1 : 0;
        }
        send.push_back(ph.send);
        wait.push_back(ph.wait);
        receive.push_back(ph.receive);
        first_byte.push_back(static_cast<double>(s.first_byte.count()));
        total.push_back(static_cast<double>(s.done.count()));
        ++statuses[s.status];
        head_lo = std::min(head_lo, s.head_bytes);
        head_hi = std::max(head_hi, s.head_bytes);
        body_lo = std::min(body_lo, s.body_bytes);
        body_hi = std::max(body_hi, s.body_bytes);
    }
    fmt::print(out, "  Connected    {} ({} connection{} opened)\n", address, opened, opened == 1 ? "" : "s");
    std::string status_text;
    for (const auto& [status, n] : statuses) {
        status_text += fmt::format("{}{}: {}", status_text.empty() ? "" : ", ", status, n);
    }
    fmt::print(out, "  Statuses     {}\n", status_text);
    fmt::print(out, "  Sizes        head {}, body {}\n", bytes_range(head_lo, head_hi), bytes_range(body_lo, body_hi));
    const std::size_t failed = samples.size() - total.size();
    if (failed > 0) {
        fmt::print(out, "  Failed       {} of {}: {}\n", failed, samples.size(), failures_text(samples));
    }
    fmt::print(out, "\n  {:<12} {:>10} {:>10} {:>10} {:>10}\n", "", "min", "median", "p95", "max");
    fmt::print(out, "{}\n", stats_row("resolve", summarize(resolve), 1));
    fmt::print(out, "{}\n", stats_row("connect", summarize(connect), 1));
    if (p.to.tls()) {
        std::string row = stats_row("tls", summarize(tls), 1);
        row += fmt::format("  ({} handshake{}, {} resumed)", tls.size(), tls.size() == 1 ? "" : "s", resumed);
        fmt::print(out, "{}\n", row);
    }
    fmt::print(out, "{}\n", stats_row("send", summarize(send), 1));
    fmt::print(out, "{}\n", stats_row("wait", summarize(wait), 1));
    fmt::print(out, "{}\n", stats_row("receive", summarize(receive), 1));
    fmt::print(out, "{}\n", stats_row("first byte", summarize(first_byte), 1));
    fmt::print(out, "{}\n", stats_row("total", summarize(total), 1));
    const auto timing = server_timing_by_name(samples);
    if (!timing.empty()) {
        fmt::print(out, "\n  Server-Timing (dur)\n");
        for (const auto& [name, values] : timing) {
            std::string row = stats_row(name, summarize(values), 1e6);
            if (values.size() != total.size()) {
                row += fmt::format("  ({} of {} responses)", values.size(), total.size());
            }
            fmt::print(out, "{}\n", row);
        }
    }
}

// A number as JSON writes it best: an integer when it is one (0, not Boost.JSON's "0E0"), else the double.
boost::json::value number(double v) {
    if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9e15) {
        return static_cast<std::int64_t>(v);
    }
    return v;
}

boost::json::value us(std::chrono::nanoseconds d) {
    return number(static_cast<double>(d.count()) / 1e3);
}

boost::json::object stats_json(const stats& st, double scale) {
    boost::json::object o;
    o["count"] = st.count;
    o["min"] = number(st.min * scale);
    o["median"] = number(st.median * scale);
    o["p95"] = number(st.p95 * scale);
    o["max"] = number(st.max * scale);
    return o;
}

boost::json::object sample_json(const sample& s) {
    boost::json::object o;
    if (!s.ok()) {
        o["error"] = failure_class(s);
        o["message"] = s.message;
    }
    o["address"] = s.address;
    o["reused_connection"] = s.reused;
    boost::json::object readings;
    readings["resolved"] = us(s.resolved);
    readings["connected"] = us(s.connected);
    readings["handshaken"] = us(s.handshaken);
    readings["sent"] = us(s.sent);
    readings["first_byte"] = us(s.first_byte);
    readings["total"] = us(s.done);
    o["readings_us"] = std::move(readings);
    if (!s.ok()) {
        return o;
    }
    const phase_lengths ph = phases_of(s);
    boost::json::object phases;
    phases["resolve"] = number(ph.resolve / 1e3);
    phases["connect"] = number(ph.connect / 1e3);
    phases["tls"] = number(ph.tls / 1e3);
    phases["send"] = number(ph.send / 1e3);
    phases["wait"] = number(ph.wait / 1e3);
    phases["receive"] = number(ph.receive / 1e3);
    o["phases_us"] = std::move(phases);
    if (!s.tls_version.empty()) {
        o["tls"] = boost::json::object{{"version", s.tls_version}, {"resumed", s.tls_resumed}, {"alpn", s.alpn}};
    }
    o["http_version"] = fmt::format("1.{}", s.version_minor);
    o["status"] = s.status;
    o["reason"] = s.reason;
    o["head_bytes"] = s.head_bytes;
    o["body_bytes"] = s.body_bytes;
    o["received_bytes"] = s.received_bytes;
    boost::json::array timing;
    for (const auto& m : s.server_timing) {
        boost::json::object e;
        e["name"] = m.name;
        e["dur_ms"] = m.duration_ms ? number(*m.duration_ms) : boost::json::value(nullptr);
        e["desc"] = m.description;
        timing.push_back(std::move(e));
    }
    o["server_timing"] = std::move(timing);
    return o;
}

} // namespace

stats summarize(std::vector<double> values) {
    stats st;
    if (values.empty()) {
        return st;
    }
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    st.count = n;
    st.min = values.front();
    st.max = values.back();
    st.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    const auto rank = static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(n)));
    st.p95 = values[std::clamp<std::size_t>(rank, 1, n) - 1];
    return st;
}

phase_lengths phases_of(const sample& s) noexcept {
    const auto ns = [](std::chrono::nanoseconds d) { return static_cast<double>(d.count()); };
    // A reused connection, or one that failed before its handshake, has no handshake: its reading is the connect's.
    const auto handshaken = std::max(s.handshaken, s.connected);
    return {ns(s.resolved),          ns(s.connected - s.resolved), ns(handshaken - s.connected),
            ns(s.sent - handshaken), ns(s.first_byte - s.sent),    ns(s.done - s.first_byte)};
}

verdict judge(const std::vector<sample>& samples) noexcept {
    if (std::any_of(samples.begin(), samples.end(), [](const sample& s) { return s.ok(); })) {
        return verdict::answered;
    }
    if (!samples.empty() && samples.front().error == make_error_code(errc::resolve_failed)) {
        return verdict::unresolved;
    }
    return verdict::nothing_answered;
}

std::string failure_class(const sample& s) {
    if (s.ok()) {
        return "";
    }
    if (s.error.category() == net::tls_category()) {
        const std::string_view name = net::tls_errc_name(static_cast<net::tls_errc>(s.error.value()));
        return name.empty() ? "tls" : "tls_" + std::string(name);
    }
    if (s.error.category() != error_category()) {
        return "system";
    }
    switch (static_cast<errc>(s.error.value())) {
    case errc::refused:
        return "refused";
    case errc::timeout:
        return "timeout";
    case errc::connect_timeout:
        return "connect_timeout";
    case errc::reset:
        return "reset";
    case errc::closed:
        return "closed";
    case errc::malformed_response:
        return "malformed_response";
    case errc::resolve_failed:
        return "resolve_failed";
    default:
        return "other";
    }
}

void print_report(std::FILE* out, const plan& p, const std::vector<sample>& samples) {
    if (samples.size() == 1 && samples.front().ok()) {
        print_single(out, p, samples.front());
    } else {
        print_several(out, p, samples);
    }
}

std::string failure_line(const std::vector<sample>& samples) {
    if (samples.empty()) {
        return "no request was made";
    }
    if (samples.size() == 1) {
        return samples.front().message;
    }
    return fmt::format("all {} requests failed: {}", samples.size(), failures_text(samples));
}

std::string to_json(const plan& p, const std::vector<sample>& samples) {
    boost::json::object doc;
    doc["schema"] = "hotpath-probe/1";
    doc["url"] = p.to.text();
    doc["method"] = p.method;
    doc["requests"] = samples.size();
    doc["keep_alive"] = p.keep_alive;
    doc["timeout_ms"] = number(static_cast<double>(p.timeout.count()) / 1e6);
    boost::json::array all;
    std::vector<double> resolve, connect, send, wait, receive, first_byte, total;
    boost::json::object statuses;
    boost::json::object errors;
    for (const auto& s : samples) {
        all.push_back(sample_json(s));
        if (!s.ok()) {
            auto& n = errors[failure_class(s)];
            n = n.is_null() ? 1 : n.as_int64() + 1;
            continue;
        }
        const phase_lengths ph = phases_of(s);
        resolve.push_back(ph.resolve);
        connect.push_back(ph.connect);
        send.push_back(ph.send);
        wait.push_back(ph.wait);
        receive.push_back(ph.receive);
        first_byte.push_back(static_cast<double>(s.first_byte.count()));
        total.push_back(static_cast<double>(s.done.count()));
        auto& n = statuses[std::to_string(s.status)];
        n = n.is_null() ? 1 : n.as_int64() + 1;
    }
    doc["succeeded"] = total.size();
    doc["failed"] = samples.size() - total.size();
    doc["statuses"] = std::move(statuses);
    doc["errors"] = std::move(errors);
    boost::json::object summary;
    boost::json::object phases;
    phases["resolve"] = stats_json(summarize(resolve), 1e-3);
    phases["connect"] = stats_json(summarize(connect), 1e-3);
    phases["send"] = stats_json(summarize(send), 1e-3);
    phases["wait"] = stats_json(summarize(wait), 1e-3);
    phases["receive"] = stats_json(summarize(receive), 1e-3);
    phases["first_byte"] = stats_json(summarize(first_byte), 1e-3);
    phases["total"] = stats_json(summarize(total), 1e-3);
    summary["phases_us"] = std::move(phases);
    boost::json::object timing;
    for (const auto& [name, values] : server_timing_by_name(samples)) {
        timing[name] = stats_json(summarize(values), 1);
    }
    summary["server_timing_ms"] = std::move(timing);
    doc["summary"] = std::move(summary);
    doc["samples"] = std::move(all);
    return boost::json::serialize(doc);
}

} // namespace hotpath::probe
