// Reading scenario files: TOML (parsed with toml++) checked key by key into a plan.
#include <hotpath/load/scenario.hpp>

#include <hotpath/core/spelling.hpp>

#include <hotpath/http/request_head.hpp>
#include <hotpath/http/response.hpp>
#include <hotpath/load/options.hpp>

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>

namespace hotpath::load {
namespace {

// Reading TOML values: each getter succeeds when the key is absent or valid, else returns the problem

std::string line_of(const toml::node& n) {
    return "line " + std::to_string(n.source().begin.line) + ": ";
}

problem fail(const toml::node& at, const std::string& message) {
    return problem{errc::invalid_value, line_of(at) + message};
}

std::string_view type_name(const toml::node& n) noexcept {
    switch (n.type()) {
    case toml::node_type::string:
        return "a string";
    case toml::node_type::integer:
        return "an integer";
    case toml::node_type::floating_point:
        return "a float";
    case toml::node_type::boolean:
        return "a boolean";
    case toml::node_type::array:
        return "an array";
    case toml::node_type::table:
        return "a table";
    default:
        return "a date or time";
    }
}

problem wrong_type(const toml::node& n, std::string_view key, std::string_view expected) {
    return fail(n, std::string(key) + " must be " + std::string(expected) + ", not " + std::string(type_name(n)));
}

// Refuses keys outside `allowed`, suggesting the closest one: a typo must not be silently ignored.
result<void, problem> only_keys(const toml::table& t, std::string_view prefix,
                                std::initializer_list<std::string_view> allowed) {
    for (const auto& [key, value] : t) {
        const std::string_view k = key.str();
        if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) {
            continue;
        }
        std::string message = "unknown key '" + std::string(prefix) + std::string(k) + "'";
        const auto best = std::min_element(allowed.begin(), allowed.end(), [&](std::string_view x, std::string_view y) {
            return edit_distance(k, x) < edit_distance(k, y);
        });
        if (edit_distance(k, *best) <= 2) {
            message += " (did you mean '" + std::string(*best) + "'?)";
        } else {
            message += " (known keys:";
            for (const auto a : allowed) {
                message.append(" ").append(a);
            }
            message += ")";
        }
        return fail(value, message);
    }
    return {};
}

result<void, problem> get_string(const toml::table& t, std::string_view key, std::string_view full,
                                 std::optional<std::string>& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
        return {};
    }
    if (const auto* s = n->as_string()) {
        out = s->get();
        return {};
    }
    return wrong_type(*n, full, "a string");
}

result<void, problem> get_bool(const toml::table& t, std::string_view key, std::string_view full,
                               std::optional<bool>& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
        return {};
    }
    if (const auto* b = n->as_boolean()) {
        out = b->get();
        return {};
    }
    return wrong_type(*n, full, "true or false");
}

result<void, problem> get_integer(const toml::table& t, std::string_view key, std::string_view full, std::int64_t min,
                                  std::int64_t max, std::optional<std::int64_t>& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
        return {};
    }
    const auto* i = n->as_integer();
    if (i == nullptr) {
        return wrong_type(*n, full, "an integer");
    }
    if (i->get() < min || i->get() > max) {
        return fail(*n, std::string(full) + " must be from " + std::to_string(min) + " to " + std::to_string(max) +
                            "; got " + std::to_string(i->get()));
    }
    out = i->get();
    return {};
}

// A number > 0 (integer or float).
result<void, problem> get_positive(const toml::table& t, std::string_view key, std::string_view full,
                                   std::optional<double>& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
        return {};
    }
    double v = 0;
    if (const auto* i = n->as_integer()) {
        v = static_cast<double>(i->get());
    } else if (const auto* f = n->as_floating_point()) {
        v = f->get();
    } else {
        return wrong_type(*n, full, "a number");
    }
    if (!(v > 0) || !std::isfinite(v)) {
        return fail(*n, std::string(full) + " must be a number > 0");
    }
    out = v;
    return {};
}

result<void, problem> get_duration(const toml::table& t, std::string_view key, std::string_view full, bool zero_ok,
                                   std::optional<std::chrono::nanoseconds>& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
        return {};
    }
    // A bare number is seconds, as on the command line (-d 2).
    std::optional<std::chrono::nanoseconds> d;
    std::string given;
    if (const auto* text = n->as_string(); text != nullptr) {
        given = text->get();
        d = parse_duration(given);
    } else if (n->is_integer() || n->is_floating_point()) {
        const double seconds =
            n->is_integer() ? static_cast<double>(n->as_integer()->get()) : n->as_floating_point()->get();
        char digits[32];
        given.assign(digits, std::to_chars(digits, digits + sizeof(digits), seconds).ptr);
        d = seconds >= 0 ? parse_duration(given) : std::nullopt;
    } else {
        return wrong_type(*n, full, "a duration like \"30s\" (a bare number is seconds)");
    }
    if (!d || (!zero_ok && d->count() <= 0)) {
        return fail(*n,
                    std::string(full) + " must be a duration like \"30s\", \"250ms\" or \"2m\"; got \"" + given + "\"");
    }
    out = *d;
    return {};
}

// A think time: "500ms" or "1s..3s" (a bare number is seconds).
result<void, problem> get_think_time(const toml::table& t, std::string_view key, std::string_view full,
                                     std::optional<think_time>& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
        return {};
    }
    std::string given;
    if (const auto* text = n->as_string(); text != nullptr) {
        given = text->get();
    } else if (n->is_integer() || n->is_floating_point()) {
        const double seconds =
            n->is_integer() ? static_cast<double>(n->as_integer()->get()) : n->as_floating_point()->get();
        char digits[32];
        given.assign(digits, std::to_chars(digits, digits + sizeof(digits), seconds).ptr);
    } else {
        return wrong_type(*n, full, "a duration like \"500ms\" or a range like \"1s..3s\"");
    }
    auto parsed = parse_think_time(given);
    if (!parsed) {
        return fail(*n, std::string(full) + ": " + parsed.error().message);
    }
    out = *parsed;
    return {};
}

// An array of strings, or (when `one_ok`) a single string.
result<void, problem> get_strings(const toml::table& t, std::string_view key, std::string_view full, bool one_ok,
                                  std::optional<std::vector<std::string>>& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
        return {};
    }
    const std::string_view expected = one_ok ? "a string or an array of strings" : "an array of strings";
    std::vector<std::string> v;
    if (const auto* s = n->as_string(); s != nullptr && one_ok) {
        v.push_back(s->get());
    } else if (const auto* a = n->as_array()) {
        for (const auto& item : *a) {
            const auto* s_item = item.as_string();
            if (s_item == nullptr) {
                return wrong_type(item, std::string(full) + " items", "strings");
            }
            v.push_back(s_item->get());
        }
    } else {
        return wrong_type(*n, full, expected);
    }
    out = std::move(v);
    return {};
}

// A non-empty array of HTTP status codes (100-599).
result<void, problem> get_statuses(const toml::table& t, std::string_view key, std::string_view full,
                                   std::optional<std::vector<unsigned>>& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
        return {};
    }
    const auto* a = n->as_array();
    if (a == nullptr || a->empty()) {
        return a == nullptr ? wrong_type(*n, full, "an array of statuses, e.g. [404]")
                            : fail(*n, std::string(full) + " must list at least one status, e.g. [404]");
    }
    std::vector<unsigned> v;
    for (const auto& item : *a) {
        const auto* i = item.as_integer();
        if (i == nullptr || i->get() < 100 || i->get() > 599) {
            return fail(item, std::string(full) + " holds statuses from 100 to 599, e.g. [200, 404]");
        }
        v.push_back(static_cast<unsigned>(i->get()));
    }
    out = std::move(v);
    return {};
}

// The first failure among getters already run, in the order given; success when none failed. The getters only
// read the table and fill their own optionals, so running them all before looking is the same as stopping at the
// first failure.
result<void, problem> first_failure(std::initializer_list<result<void, problem>> read) {
    for (const auto& r : read) {
        if (!r) {
            return r;
        }
    }
    return {};
}

// The sections of a scenario.

result<void, problem> read_load(const toml::table& t, plan& q) {
    if (auto known = only_keys(t, "load.",
                               {"connections", "threads", "duration", "requests", "rate", "max_connections", "stages",
                                "warmup", "timeout", "keep_alive", "pipeline", "thresholds", "expect_status", "http",
                                "streams", "think_time", "ignore_retry_after"});
        !known) {
        return known;
    }
    std::optional<std::int64_t> connections, threads, requests, max_connections, pipeline, streams;
    std::optional<std::chrono::nanoseconds> duration, warmup, timeout;
    std::optional<double> rate;
    std::optional<bool> keep_alive, ignore_retry_after;
    std::optional<think_time> think;
    std::optional<std::vector<std::string>> stages, thresholds;
    std::optional<std::vector<unsigned>> statuses;
    const auto read = first_failure({
        get_integer(t, "connections", "load.connections", 1, 100000, connections),
        get_integer(t, "threads", "load.threads", 0, 1024, threads),
        get_integer(t, "requests", "load.requests", 1, std::numeric_limits<std::int64_t>::max(), requests),
        get_integer(t, "max_connections", "load.max_connections", 0, 1000000, max_connections),
        get_integer(t, "pipeline", "load.pipeline", 1, 1024, pipeline),
        get_integer(t, "streams", "load.streams", 1, 1000, streams),
        get_duration(t, "duration", "load.duration", false, duration),
        get_duration(t, "warmup", "load.warmup", true, warmup),
        get_duration(t, "timeout", "load.timeout", false, timeout),
        get_positive(t, "rate", "load.rate", rate),
        get_bool(t, "keep_alive", "load.keep_alive", keep_alive),
        get_bool(t, "ignore_retry_after", "load.ignore_retry_after", ignore_retry_after),
        get_think_time(t, "think_time", "load.think_time", think),
        get_strings(t, "stages", "load.stages", true, stages),
        get_strings(t, "thresholds", "load.thresholds", false, thresholds),
        get_statuses(t, "expect_status", "load.expect_status", statuses),
    });
    if (!read) {
        return read;
    }
    if (const toml::node* http = t.get("http"); http != nullptr) {
        const auto version = http->value<std::string>();
        if (!version || (*version != "1.1" && *version != "2" && *version != "auto")) {
            return fail(*http, "load.http is \"1.1\", \"2\" or \"auto\"");
        }
        q.http = *version == "2"      ? plan::http_version::h2
                 : *version == "auto" ? plan::http_version::automatic
                                      : plan::http_version::http1_1;
    }
    if (stages && duration) {
        return fail(*t.get("duration"), "load.duration and load.stages do not mix: the stages set the run's length");
    }
    if (stages && rate) {
        return fail(*t.get("rate"), "load.rate and load.stages do not mix: rate stages set the rate");
    }
    if (stages) {
        std::string joined;
        for (const auto& s : *stages) {
            joined.append(joined.empty() ? "" : ", ").append(s);
        }
        auto parsed = parse_stages(joined);
        if (!parsed) {
            return fail(*t.get("stages"), "load.stages: " + parsed.error().message);
        }
        q.stages = std::move(*parsed);
        q.rate = 0;
    }
    if (thresholds) {
        q.thresholds.clear();
        for (const auto& text : *thresholds) {
            auto th = parse_threshold(text);
            if (!th) {
                return fail(*t.get("thresholds"), "load.thresholds: " + th.error().message);
            }
            q.thresholds.push_back(std::move(*th));
        }
    }
    q.connections = connections ? static_cast<unsigned>(*connections) : q.connections;
    q.threads = threads ? static_cast<unsigned>(*threads) : q.threads;
    q.requests = requests ? static_cast<std::uint64_t>(*requests) : q.requests;
    q.max_connections = max_connections ? static_cast<unsigned>(*max_connections) : q.max_connections;
    q.pipeline = pipeline ? static_cast<unsigned>(*pipeline) : q.pipeline;
    q.streams = streams ? static_cast<unsigned>(*streams) : q.streams;
    q.warmup = warmup.value_or(q.warmup);
    q.timeout = timeout.value_or(q.timeout);
    q.rate = rate.value_or(q.rate);
    q.keep_alive = keep_alive.value_or(q.keep_alive);
    q.honour_retry_after = ignore_retry_after ? !*ignore_retry_after : q.honour_retry_after;
    q.think = think.value_or(q.think);
    q.expected_statuses = statuses.value_or(q.expected_statuses);
    if (duration) {
        q.duration = *duration;
    } else if (requests && !stages) {
        q.duration = std::chrono::hours{24 * 365}; // as `hotpath load -n`: until the count is done
    }
    return {};
}

bool read_file(const std::filesystem::path& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return false;
    }
    out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return !in.bad();
}

result<void, problem> read_feed(const toml::table& t, std::string_view base_dir, feed& out) {
    if (auto known = only_keys(t, "feed.", {"csv", "order"}); !known) {
        return known;
    }
    std::optional<std::string> csv, order;
    if (auto read = first_failure({get_string(t, "csv", "feed.csv", csv), get_string(t, "order", "feed.order", order)});
        !read) {
        return read;
    }
    if (!csv || csv->empty()) {
        return fail(t, "feed.csv is required: the CSV file's path, relative to the scenario file");
    }
    if (order && *order != "sequential") {
        return fail(*t.get("order"),
                    "feed.order must be \"sequential\" (rows in turn, dealt to the workers); got \"" + *order + "\"");
    }
    std::filesystem::path path(*csv);
    if (path.is_relative() && !base_dir.empty()) {
        path = std::filesystem::path(base_dir) / path;
    }
    std::string text;
    if (!read_file(path, text)) {
        return fail(*t.get("csv"), "feed.csv: cannot read " + path.string());
    }
    feed f;
    if (auto read = load_csv(text, f); !read) {
        return fail(*t.get("csv"), "feed.csv " + *csv + ", " + read.error().message);
    }
    f.source = *csv;
    out = std::move(f);
    return {};
}

// What a placeholder's value may not contain where it lands, and the name of that place for messages.
struct slot {
    std::string_view what;      // "path", "header value", "body"
    std::string_view forbidden; // bytes a value may not hold there
};

std::string column_list(const feed& f) {
    std::string s;
    for (const auto& c : f.columns) {
        s.append(s.empty() ? "" : ", ").append(c);
    }
    return s;
}

// Every placeholder in `text` names a column of `f`, and every row's value fits the slot.
result<void, problem> check_placeholders(std::string_view text, const slot& where, const feed& f,
                                         const std::string& label, const toml::node& at, bool& used) {
    for (auto ph = next_placeholder(text, 0); ph; ph = next_placeholder(text, ph->end)) {
        const std::string name(ph->name);
        if (f.columns.empty()) {
            return fail(at, label + ": the " + std::string(where.what) + " uses {{" + name +
                                "}} but there is no [feed] to fill it");
        }
        const auto column = column_index(f, name);
        if (!column) {
            return fail(at, label + ": the " + std::string(where.what) + " uses {{" + name + "}} but " + f.source +
                                " has no column '" + name + "' (its columns: " + column_list(f) + ")");
        }
        used = true;
        for (std::size_t r = 0; r < f.rows.size(); ++r) {
            if (f.rows[r][*column].find_first_of(where.forbidden) != std::string::npos) {
                return fail(at, label + ": row " + std::to_string(r + 1) + " of " + f.source + " has a value of '" +
                                    name + "' that cannot go in a " + std::string(where.what) +
                                    " (space or control character)");
            }
        }
    }
    return {};
}

// Bytes a request target may not hold (RFC 9112 section 3.2: no whitespace or controls), and header values.
constexpr std::string_view path_forbidden{"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
                                          "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x20\x7f",
                                          34};
constexpr std::string_view value_forbidden{"\x00\r\n", 3};

std::string without_placeholders(std::string_view text) {
    std::string out;
    std::size_t at = 0;
    for (auto ph = next_placeholder(text, 0); ph; ph = next_placeholder(text, ph->end)) {
        out.append(text.substr(at, ph->begin - at)).append("x");
        at = ph->end;
    }
    return out.append(text.substr(at));
}

result<void, problem> read_request(const toml::table& t, std::size_t index, std::string_view prefix, const feed& f,
                                   bool& used, request_spec& r) {
    std::string label = "request " + std::to_string(index + 1);
    if (auto known = only_keys(t, "request.",
                               {"name", "method", "path", "headers", "body", "weight", "expect_status", "check_status",
                                "check_body_contains", "think_time"});
        !known) {
        return known;
    }
    std::optional<std::string> name, method, path, body;
    if (auto read = get_string(t, "name", label + ": name", name); !read) {
        return read;
    }
    if (name) {
        if (name->empty() || name->find_first_of("\r\n") != std::string::npos) {
            return fail(*t.get("name"), label + ": name must be one non-empty line");
        }
        label = "request '" + *name + "'";
    }
    std::optional<double> weight;
    std::optional<think_time> think;
    std::optional<std::vector<unsigned>> expect, check_status;
    std::optional<std::vector<std::string>> contains;
    const auto read = first_failure({
        get_string(t, "method", label + ": method", method),
        get_string(t, "path", label + ": path", path),
        get_string(t, "body", label + ": body", body),
        get_positive(t, "weight", label + ": weight", weight),
        get_statuses(t, "expect_status", label + ": expect_status", expect),
        get_statuses(t, "check_status", label + ": check_status", check_status),
        get_strings(t, "check_body_contains", label + ": check_body_contains", true, contains),
        get_think_time(t, "think_time", label + ": think_time", think),
    });
    if (!read) {
        return read;
    }
    if (!path) {
        return fail(t, label + ": path is required, e.g. path = \"/\"");
    }
    const toml::node& path_node = *t.get("path");
    if (path->empty() || path->front() != '/') {
        return fail(path_node, label + ": path must start with '/'; got \"" + *path + "\"");
    }
    if (without_placeholders(*path).find_first_of(path_forbidden) != std::string::npos) {
        return fail(path_node, label + ": path has spaces or control characters; percent-encode them");
    }
    r = request_spec{};
    r.method = method.value_or("GET");
    if (!http::is_token(r.method)) {
        return fail(*t.get("method"), label + ": method must be a token like GET or POST; got \"" + r.method + "\"");
    }
    r.name = name.value_or(r.method + " " + *path);
    r.path_and_query = std::string(prefix) + *path;
    r.body = body.value_or("");
    r.weight = weight.value_or(1);
    r.think = think;
    r.expected_statuses = expect.value_or(std::vector<unsigned>{});
    if (check_status) {
        r.checks.push_back(check{check::kind::status, *check_status, {}});
    }
    for (auto& text : contains.value_or(std::vector<std::string>{})) {
        if (text.empty() || has_placeholders(text)) {
            return fail(*t.get("check_body_contains"),
                        label + ": check_body_contains needs a non-empty text without placeholders");
        }
        r.checks.push_back(check{check::kind::body_contains, {}, std::move(text)});
    }
    if (auto checked = check_placeholders(r.path_and_query, {"path", path_forbidden}, f, label, path_node, used);
        !checked) {
        return checked;
    }
    if (body) {
        if (auto checked = check_placeholders(r.body, {"body", {}}, f, label, *t.get("body"), used); !checked) {
            return checked;
        }
    }
    if (const toml::node* h = t.get("headers")) {
        const auto* headers = h->as_table();
        if (headers == nullptr) {
            return wrong_type(*h, label + ": headers", "a table like { \"Content-Type\" = \"application/json\" }");
        }
        for (const auto& [key, value] : *headers) {
            const std::string field_name(key.str());
            const auto* v = value.as_string();
            if (v == nullptr) {
                return wrong_type(value, label + ": header " + field_name, "a string");
            }
            if (!http::is_token(field_name)) {
                return fail(value, label + ": bad header name '" + field_name + "'");
            }
            for (const std::string_view own : {"host", "content-length", "transfer-encoding", "connection"}) {
                if (http::iequals(field_name, own)) {
                    return fail(value, label + ": header '" + field_name +
                                           "' is set by hotpath (from url, the body and load.keep_alive)");
                }
            }
            for (const auto& seen : r.headers) {
                if (http::iequals(seen.first, field_name)) {
                    return fail(value, label + ": header '" + field_name + "' is given twice");
                }
            }
            if (v->get().find_first_of(value_forbidden) != std::string::npos) {
                return fail(value, label + ": header " + field_name + " has a line break");
            }
            if (auto checked = check_placeholders(v->get(), {"header value", value_forbidden}, f, label, value, used);
                !checked) {
                return checked;
            }
            r.headers.emplace_back(field_name, v->get());
        }
    }
    return {};
}

result<void, problem> read_scenario(const toml::table& doc, std::string_view base_dir, plan& q) {
    if (auto known = only_keys(doc, "", {"url", "load", "feed", "request"}); !known) {
        return known;
    }
    const toml::node* url_node = doc.get("url");
    if (url_node == nullptr) {
        return problem{errc::invalid_value, "line 1: url is required, e.g. url = \"http://127.0.0.1:8080\""};
    }
    std::optional<std::string> url;
    if (auto read = get_string(doc, "url", "url", url); !read) {
        return read;
    }
    auto to = http::parse_url(*url);
    if (!to) {
        return fail(*url_node, "url: " + to.error().message);
    }
    if (to->target.find('?') != std::string::npos) {
        return fail(*url_node, "url: a query belongs in each request's path, not in the url");
    }
    std::string prefix = to->target;
    while (!prefix.empty() && prefix.back() == '/') {
        prefix.pop_back();
    }
    q.to = std::move(*to);
    if (const toml::node* n = doc.get("load")) {
        if (n->as_table() == nullptr) {
            return wrong_type(*n, "load", "a table: [load]");
        }
        if (auto read = read_load(*n->as_table(), q); !read) {
            return read;
        }
    }
    q.data = feed{};
    if (const toml::node* n = doc.get("feed")) {
        if (n->as_table() == nullptr) {
            return wrong_type(*n, "feed", "a table: [feed]");
        }
        if (auto read = read_feed(*n->as_table(), base_dir, q.data); !read) {
            return read;
        }
    }
    const toml::node* requests = doc.get("request");
    const toml::array* list = requests != nullptr ? requests->as_array() : nullptr;
    if (requests != nullptr && (list == nullptr || (!list->empty() && !list->is_array_of_tables()))) {
        return wrong_type(*requests, "request", "an array of tables: one [[request]] per request");
    }
    if (list == nullptr || list->empty()) {
        return problem{errc::invalid_value,
                       "line 1: the scenario has no [[request]]; add one with at least path = \"/\""};
    }
    q.scenario.clear();
    bool used = false;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const toml::table& t = *list->get(i)->as_table();
        request_spec r;
        if (auto read = read_request(t, i, prefix, q.data, used, r); !read) {
            return read;
        }
        for (const auto& seen : q.scenario) {
            if (seen.name == r.name) {
                return fail(t, "request '" + r.name + "': two requests have this name; names must differ");
            }
        }
        q.scenario.push_back(std::move(r));
    }
    if (!q.data.columns.empty() && !used) {
        return fail(*doc.get("feed"), "[feed]: no request uses a {{column}} of " + q.data.source);
    }
    const toml::node& load_at = doc.get("load") != nullptr ? *doc.get("load") : doc;
    if (const std::string problem = validate(q, plan_source::scenario); !problem.empty()) {
        return fail(load_at, problem);
    }
    return {};
}

} // namespace

result<void, problem> load_scenario(std::string_view toml_text, std::string_view base_dir, plan& p) {
    toml::table doc;
    try {
        doc = toml::parse(toml_text);
    } catch (const toml::parse_error& e) {
        std::string description(e.description());
        std::replace(description.begin(), description.end(), '\n', ' ');
        return problem{errc::invalid_value, "line " + std::to_string(e.source().begin.line) + ", column " +
                                                std::to_string(e.source().begin.column) + ": " + description};
    }
    plan q = p;
    if (auto read = read_scenario(doc, base_dir, q); !read) {
        return read;
    }
    p = std::move(q);
    return {};
}

result<void, problem> load_scenario_file(const std::string& path, plan& p) {
    std::string text;
    if (!read_file(path, text)) {
        return problem{errc::invalid_value, "cannot read scenario " + path};
    }
    if (auto loaded = load_scenario(text, std::filesystem::path(path).parent_path().string(), p); !loaded) {
        return problem{loaded.error().code, path + ": " + loaded.error().message};
    }
    return {};
}

} // namespace hotpath::load
