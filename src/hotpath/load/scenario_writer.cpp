// Writing a plan as a scenario file (docs/scenarios.md) that load_scenario reads back into an equal plan.
#include <hotpath/load/scenario.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace hotpath::load {
namespace {

// A TOML string (TOML 1.0 section "String"): a literal string ('...', no escapes) for text with double quotes or
// backslashes but no single quote or control character other than tab, which keeps JSON bodies readable; else a
// basic string with quotes, backslashes and control characters escaped.
std::string toml_string(std::string_view s) {
    const bool literal = std::none_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return c == '\'' || (u < 0x20 && c != '\t') || u == 0x7f;
    });
    if (literal && s.find_first_of("\"\\") != std::string_view::npos) {
        return std::string("'").append(s).append("'");
    }
    std::string out = "\"";
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\r':
            out += "\\r";
            break;
        default:
            if (u < 0x20 || u == 0x7f) {
                constexpr std::string_view hex = "0123456789ABCDEF";
                out.append("\\u00").append(1, hex[u >> 4]).append(1, hex[u & 15]);
            } else {
                out += c;
            }
        }
    }
    return out += '"';
}

// The shortest text that reads back as the same double (std::to_chars round-trip guarantee).
std::string number(double v) {
    std::array<char, 32> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return std::string(buf.data(), r.ptr);
}

std::string stage_text(const stage& s) {
    std::string out = s.what == stage::kind::rate ? "rate=" : "vus=";
    out += number(s.from);
    if (s.to != s.from) {
        out.append("..").append(number(s.to));
    }
    if (s.what == stage::kind::rate) {
        out += "/s";
    }
    return out.append(":").append(exact_duration_text(s.duration));
}

std::string status_list(const std::vector<unsigned>& statuses) {
    std::string out = "[";
    for (const unsigned s : statuses) {
        out.append(out.size() > 1 ? ", " : "").append(std::to_string(s));
    }
    return out += "]";
}

} // namespace

std::string to_toml(const plan& p) {
    const std::vector<request_spec> requests = requests_or_default(p);
    // The url keeps p.to's path when it is a prefix of every request path (as load_scenario made it).
    std::string url_path = p.scenario.empty() || p.to.target == "/" ? "" : p.to.target;
    std::string prefix = url_path;
    while (!prefix.empty() && prefix.back() == '/') {
        prefix.pop_back();
    }
    for (const auto& r : requests) {
        if (r.path_and_query.substr(0, prefix.size() + 1) != prefix + "/") {
            prefix.clear();
            url_path.clear();
        }
    }
    std::string out = "# A hotpath load scenario (docs/scenarios.md).\n";
    out.append("url = ").append(toml_string((p.to.tls() ? "https://" : "http://") + p.to.authority() + url_path));
    out.append("\n\n[load]\n");
    out.append("threads = ").append(std::to_string(p.threads)).append("\n");
    out.append("connections = ").append(std::to_string(p.connections)).append("\n");
    if (p.stages.empty()) {
        out.append("duration = ").append(toml_string(exact_duration_text(p.duration))).append("\n");
    }
    if (p.requests > 0) {
        out.append("requests = ").append(std::to_string(p.requests)).append("\n");
    }
    if (p.rate > 0 && p.stages.empty()) {
        out.append("rate = ").append(number(p.rate)).append("\n");
    }
    out.append("max_connections = ").append(std::to_string(p.max_connections)).append("\n");
    if (!p.stages.empty()) {
        out.append("stages = [");
        for (std::size_t i = 0; i < p.stages.size(); ++i) {
            out.append(i > 0 ? ", " : "").append(toml_string(stage_text(p.stages[i])));
        }
        out.append("]\n");
    }
    out.append("warmup = ").append(toml_string(exact_duration_text(p.warmup))).append("\n");
    out.append("timeout = ").append(toml_string(exact_duration_text(p.timeout))).append("\n");
    out.append("keep_alive = ").append(p.keep_alive ? "true" : "false").append("\n");
    out.append("pipeline = ").append(std::to_string(p.pipeline)).append("\n");
    out.append("think_time = ").append(toml_string(think_time_text(p.think))).append("\n");
    out.append("ignore_retry_after = ").append(p.honour_retry_after ? "false" : "true").append("\n");
    if (p.may_h2()) {
        out.append(p.h2() ? "http = \"2\"\n" : "http = \"auto\"\n");
        out.append("streams = ").append(std::to_string(p.streams)).append("\n");
    }
    if (!p.thresholds.empty()) {
        out.append("thresholds = [");
        for (std::size_t i = 0; i < p.thresholds.size(); ++i) {
            out.append(i > 0 ? ", " : "").append(toml_string(p.thresholds[i].text));
        }
        out.append("]\n");
    }
    if (!p.expected_statuses.empty()) {
        out.append("expect_status = ").append(status_list(p.expected_statuses)).append("\n");
    }
    if (!p.data.source.empty()) {
        out.append("\n[feed]\ncsv = ").append(toml_string(p.data.source)).append("\norder = \"sequential\"\n");
    }
    for (const auto& r : requests) {
        out.append("\n[[request]]\nname = ").append(toml_string(r.name)).append("\n");
        out.append("method = ").append(toml_string(r.method)).append("\n");
        out.append("path = ").append(toml_string(r.path_and_query.substr(prefix.size()))).append("\n");
        if (!r.headers.empty()) {
            out.append("headers = { ");
            for (std::size_t i = 0; i < r.headers.size(); ++i) {
                out.append(i > 0 ? ", " : "").append(toml_string(r.headers[i].first)).append(" = ");
                out.append(toml_string(r.headers[i].second));
            }
            out.append(" }\n");
        }
        if (!r.body.empty()) {
            out.append("body = ").append(toml_string(r.body)).append("\n");
        }
        out.append("weight = ").append(number(r.weight)).append("\n");
        if (r.think) {
            out.append("think_time = ").append(toml_string(think_time_text(*r.think))).append("\n");
        }
        if (!r.expected_statuses.empty()) {
            out.append("expect_status = ").append(status_list(r.expected_statuses)).append("\n");
        }
        const auto status = std::find_if(r.checks.begin(), r.checks.end(),
                                         [](const check& c) { return c.what == check::kind::status; });
        if (status != r.checks.end() && !status->statuses.empty()) {
            out.append("check_status = ").append(status_list(status->statuses)).append("\n");
        }
        std::vector<std::string_view> contains;
        for (const auto& c : r.checks) {
            if (c.what == check::kind::body_contains) {
                contains.push_back(c.text);
            }
        }
        if (!contains.empty()) {
            out.append("check_body_contains = [");
            for (std::size_t i = 0; i < contains.size(); ++i) {
                out.append(i > 0 ? ", " : "").append(toml_string(contains[i]));
            }
            out.append("]\n");
        }
    }
    return out;
}

} // namespace hotpath::load
