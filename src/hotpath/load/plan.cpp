// Parsing a load plan's pieces from text (URL, durations, stages, thresholds) and building the request.
#include <hotpath/load/plan.hpp>

#include <hotpath/http/char_class.hpp>

#include <hotpath/http/request_head.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <system_error>
#include <thread>

namespace hotpath::load {

result<think_time, problem> parse_think_time(std::string_view text) {
    const auto bad = [&] {
        return problem{errc::invalid_value,
                       "bad think time '" + std::string(text) + "' (e.g. 500ms, or 1s..3s for a uniform range)"};
    };
    const std::size_t dots = text.find("..");
    const auto low = parse_duration(text.substr(0, dots));
    const auto high = dots == std::string_view::npos ? low : parse_duration(text.substr(dots + 2));
    if (!low || !high || low->count() < 0 || *high < *low) {
        return bad();
    }
    if (*high > std::chrono::hours{24}) {
        return problem{errc::invalid_value, "think time '" + std::string(text) + "' is longer than a day"};
    }
    return think_time{*low, *high};
}

std::string think_time_text(const think_time& t) {
    return t.min == t.max ? exact_duration_text(t.min) : exact_duration_text(t.min) + ".." + exact_duration_text(t.max);
}

result<std::vector<stage>, problem> parse_stages(std::string_view text) {
    const auto bad = [](std::string message) { return problem{errc::invalid_value, std::move(message)}; };
    std::vector<stage> stages;
    while (!text.empty()) {
        const auto comma = text.find(',');
        std::string_view item = http::char_class::trim_ows(text.substr(0, comma));
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        const auto colon = item.rfind(':');
        const auto eq = item.find('=');
        if (colon == std::string_view::npos || eq == std::string_view::npos || eq > colon) {
            return bad("a stage is KIND=LEVEL:DURATION, e.g. rate=10/s:30s or vus=0..50:1m; got '" + std::string(item) +
                       "'");
        }
        stage s;
        const std::string_view kind = http::char_class::trim_ows(item.substr(0, eq));
        std::string_view level = http::char_class::trim_ows(item.substr(eq + 1, colon - eq - 1));
        if (kind == "rate") {
            s.what = stage::kind::rate;
        } else if (kind == "vus") {
            s.what = stage::kind::vus;
        } else {
            return bad("a stage kind is rate or vus; got '" + std::string(kind) + "'");
        }
        // "A..B" ramps from A to B; a plain "A" holds. Split first: "0." would parse as a number.
        std::string_view first = level;
        std::string_view second;
        if (const auto dots = level.find(".."); dots != std::string_view::npos) {
            first = level.substr(0, dots);
            second = level.substr(dots + 2);
        }
        auto from = take_number(first);
        auto to = from;
        if (!second.empty()) {
            to = take_number(second);
            level = second;
        } else {
            level = first;
        }
        double per = 1;
        if (s.what == stage::kind::rate) {
            if (level == "/s") {
                per = 1;
            } else if (level == "/m") {
                per = 60;
            } else if (!level.empty()) {
                from.reset();
            }
        } else if (!level.empty()) {
            from.reset();
        }
        const auto duration = parse_duration(item.substr(colon + 1));
        if (!from || !to || !duration || duration->count() <= 0) {
            return bad("bad stage '" + std::string(item) + "'");
        }
        s.from = *from / per;
        s.to = *to / per;
        s.duration = *duration;
        if (!stages.empty() && stages.front().what != s.what) {
            return bad("stages mix rate and vus");
        }
        stages.push_back(s);
    }
    if (stages.empty()) {
        return bad("no stages given");
    }
    return stages;
}

result<threshold, problem> parse_threshold(std::string_view text) {
    const auto fail = [](std::string message) { return problem{errc::invalid_value, std::move(message)}; };
    threshold t;
    t.text = std::string(http::char_class::trim_ows(text));
    std::string_view s = t.text;
    const auto op = s.find_first_of("<>");
    if (op == std::string_view::npos) {
        return fail("a threshold is METRIC<VALUE or METRIC>VALUE, e.g. p95<150ms; got '" + t.text + "'");
    }
    const std::string_view name = http::char_class::trim_ows(s.substr(0, op));
    t.less = s[op] == '<';
    std::string_view value = s.substr(op + 1);
    if (!value.empty() && value.front() == '=') {
        value.remove_prefix(1);
    }
    value = http::char_class::trim_ows(value);
    if (name == "errors") {
        t.what = threshold::metric::errors;
        std::string_view v = value;
        const auto n = take_number(v);
        if (!n || (v != "%" && !v.empty())) {
            return fail("errors take a percentage, e.g. errors<8%; got '" + t.text + "'");
        }
        t.limit = v == "%" ? *n / 100 : *n;
        return t;
    }
    if (name == "dropped") {
        t.what = threshold::metric::dropped;
        std::string_view v = value;
        const auto n = take_number(v);
        if (!n || v != "%") {
            return fail("dropped takes a percentage of the planned sends, e.g. dropped<1%; got '" + t.text + "'");
        }
        t.limit = *n / 100;
        return t;
    }
    if (name == "rps") {
        t.what = threshold::metric::rps;
        std::string_view v = value;
        const auto n = take_number(v);
        if (!n || !v.empty()) {
            return fail("rps takes a number, e.g. rps>1000; got '" + t.text + "'");
        }
        t.limit = *n;
        return t;
    }
    if (name == "mean" || name == "avg") {
        t.what = threshold::metric::mean;
    } else if (name == "max") {
        t.what = threshold::metric::max;
    } else if (name.size() > 1 && name.front() == 'p') {
        std::string_view p = name.substr(1);
        const auto n = take_number(p);
        if (!n || !p.empty() || *n > 100) {
            return fail("bad percentile in threshold '" + t.text + "'");
        }
        t.what = threshold::metric::percentile;
        t.percentile = *n;
    } else {
        return fail("unknown threshold metric '" + std::string(name) +
                    "' (use p50..p99.9, mean, max, errors, rps, dropped)");
    }
    const auto d = parse_duration(value);
    if (!d || value.empty() || !std::isalpha(static_cast<unsigned char>(value.back()))) {
        return fail("latency thresholds take a duration with a unit, e.g. 150ms; got '" + t.text + "'");
    }
    t.limit = static_cast<double>(d->count());
    return t;
}

std::chrono::nanoseconds plan::total_time() const noexcept {
    if (stages.empty()) {
        return duration;
    }
    std::chrono::nanoseconds total{};
    for (const auto& s : stages) {
        total += s.duration;
    }
    return total;
}

double plan::level_at(std::chrono::nanoseconds elapsed) const noexcept {
    if (stages.empty()) {
        return rate > 0 ? rate : static_cast<double>(connections);
    }
    elapsed = std::max(elapsed, std::chrono::nanoseconds{}); // before the start: the first stage's level
    for (const auto& s : stages) {
        if (elapsed < s.duration) {
            const double f = static_cast<double>(elapsed.count()) / static_cast<double>(s.duration.count());
            return s.from + (s.to - s.from) * f;
        }
        elapsed -= s.duration;
    }
    return stages.back().to;
}

double plan::max_level() const noexcept {
    if (stages.empty()) {
        return level_at({});
    }
    double most = 0;
    for (const auto& s : stages) {
        most = std::max({most, s.from, s.to});
    }
    return most;
}

std::optional<std::chrono::nanoseconds> plan::arrival_time(double k) const noexcept {
    if (k < 0) {
        return std::nullopt;
    }
    if (stages.empty()) {
        if (!(rate > 0)) {
            return std::nullopt;
        }
        return std::chrono::nanoseconds{static_cast<std::int64_t>(k / rate * 1e9)};
    }
    // Within a stage of length D from rate a to b, arrivals by time t: a*t + (b - a)*t^2 / (2D). Solved for t in
    // the form 2r / (a + sqrt(a^2 + 4Ar)), which stays exact as b - a goes to 0.
    std::chrono::nanoseconds before{};
    double done = 0;
    for (const auto& s : stages) {
        const double d = static_cast<double>(s.duration.count()) / 1e9;
        const double area = (s.from + s.to) / 2 * d;
        const double r = k - done;
        if (r < area) {
            const double a = s.from;
            const double curve = (s.to - s.from) / (2 * d);
            const double root = std::sqrt(std::max(0.0, a * a + 4 * curve * r));
            const double t = a + root > 0 ? 2 * r / (a + root) : 0;
            return before + std::min(s.duration, std::chrono::nanoseconds{static_cast<std::int64_t>(t * 1e9)});
        }
        done += area;
        before += s.duration;
    }
    return std::nullopt;
}

double plan::planned_arrivals() const noexcept {
    if (!open_model()) {
        return 0;
    }
    if (stages.empty()) {
        return rate * static_cast<double>(duration.count()) / 1e9;
    }
    double total = 0;
    for (const auto& s : stages) {
        total += (s.from + s.to) / 2 * static_cast<double>(s.duration.count()) / 1e9;
    }
    return total;
}

unsigned resolve_threads(const plan& p) noexcept {
    return p.threads != 0 ? p.threads : std::max(1u, std::thread::hardware_concurrency());
}

std::vector<request_spec> requests_or_default(const plan& p) {
    if (!p.scenario.empty()) {
        return p.scenario;
    }
    request_spec r;
    r.method = p.method;
    r.path_and_query = p.to.target;
    r.headers = p.headers;
    r.body = p.body;
    r.expected_statuses = p.expected_statuses;
    return {r};
}

std::string build_request(const plan& p, const request_spec& q) {
    std::string r;
    r.append(q.method).append(" ").append(q.path_and_query).append(" HTTP/1.1\r\nHost: ").append(p.to.authority());
    r.append("\r\n");
    bool has_agent = false;
    for (const auto& [name, value] : q.headers) {
        r.append(name).append(": ").append(value).append("\r\n");
        has_agent = has_agent || http::iequals(name, "user-agent");
    }
    if (!has_agent) {
        r.append("User-Agent: hotpath-load\r\n");
    }
    if (!q.body.empty() || q.method == "POST" || q.method == "PUT" || q.method == "PATCH") {
        r.append("Content-Length: ").append(std::to_string(q.body.size())).append("\r\n");
    }
    if (!p.keep_alive) {
        r.append("Connection: close\r\n");
    }
    r.append("\r\n").append(q.body);
    return r;
}

std::vector<std::pair<std::string, std::string>> h2_request_fields(const plan& p, const request_spec& q) {
    std::vector<std::pair<std::string, std::string>> fields;
    fields.emplace_back(":method", q.method);
    fields.emplace_back(":scheme", p.to.tls() ? "https" : "http");
    fields.emplace_back(":authority", p.to.authority());
    fields.emplace_back(":path", q.path_and_query);
    bool has_agent = false;
    for (const auto& [name, value] : q.headers) {
        std::string lower = name;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (lower == "host") {
            fields[2].second = value;
            continue;
        }
        if (lower == "connection" || lower == "keep-alive" || lower == "proxy-connection" ||
            lower == "transfer-encoding" || lower == "upgrade" || (lower == "te" && value != "trailers")) {
            continue;
        }
        has_agent = has_agent || lower == "user-agent";
        fields.emplace_back(std::move(lower), value);
    }
    if (!has_agent) {
        fields.emplace_back("user-agent", "hotpath-load");
    }
    if (!q.body.empty() || q.method == "POST" || q.method == "PUT" || q.method == "PATCH") {
        fields.emplace_back("content-length", std::to_string(q.body.size()));
    }
    return fields;
}

std::string build_request(const plan& p) {
    return build_request(p, requests_or_default(p).front());
}

} // namespace hotpath::load
