// Reading "hotpath-load/1" documents back into plans and results, checking every field, and merging runs.
#include <hotpath/load/merge.hpp>

#include <hotpath/net/tls_options.hpp>

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <system_error>

namespace hotpath::load {
namespace {

namespace json = boost::json;
constexpr std::string_view schema_name = "hotpath-load/1";

std::error_code bad_input() {
    return std::make_error_code(std::errc::invalid_argument);
}

// A document that cannot be read back: one line naming what is wrong, with from_json's code.
problem bad_document(std::string message) {
    return {bad_input(), std::move(message)};
}

// Builds the same DOM as json::parser, but converts each double from its text with std::from_chars (correctly
// rounded): Boost.JSON 1.81 reads some doubles one ulp off, and a document must read back exactly as written.
struct precise_handler {
    static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

    json::value_stack st;
    std::string number; // the current number's text, when it arrives in parts

    bool on_document_begin(json::error_code&) { return true; }
    bool on_document_end(json::error_code&) { return true; }
    bool on_array_begin(json::error_code&) { return true; }
    bool on_array_end(std::size_t n, json::error_code&) {
        st.push_array(n);
        return true;
    }
    bool on_object_begin(json::error_code&) { return true; }
    bool on_object_end(std::size_t n, json::error_code&) {
        st.push_object(n);
        return true;
    }
    bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
        st.push_chars(s);
        return true;
    }
    bool on_string(json::string_view s, std::size_t, json::error_code&) {
        st.push_string(s);
        return true;
    }
    bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
        st.push_chars(s);
        return true;
    }
    bool on_key(json::string_view s, std::size_t, json::error_code&) {
        st.push_key(s);
        return true;
    }
    bool on_number_part(json::string_view s, json::error_code&) {
        number.append(s.data(), s.size());
        return true;
    }
    bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
        number.clear();
        st.push_int64(i);
        return true;
    }
    bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
        number.clear();
        st.push_uint64(u);
        return true;
    }
    bool on_double(double d, json::string_view s, json::error_code&) {
        number.append(s.data(), s.size());
        double exact = 0;
        const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), exact);
        st.push_double(ec == std::errc{} && end == number.data() + number.size() ? exact : d);
        number.clear();
        return true;
    }
    bool on_bool(bool b, json::error_code&) {
        st.push_bool(b);
        return true;
    }
    bool on_null(json::error_code&) {
        st.push_null();
        return true;
    }
    bool on_comment_part(json::string_view, json::error_code&) { return true; }
    bool on_comment(json::string_view, json::error_code&) { return true; }
};

result<json::value, problem> parse_precise(std::string_view text) {
    json::basic_parser<precise_handler> parser{json::parse_options{}};
    parser.handler().st.reset();
    json::error_code ec;
    const std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
    if (!ec && used < text.size()) {
        ec = json::error::extra_data;
    }
    if (ec) {
        return bad_document(fmt::format("not JSON: {} (at byte {})", ec.message(), used));
    }
    return parser.handler().st.release();
}

std::string_view kind_name(const json::value& v) {
    switch (v.kind()) {
    case json::kind::null:
        return "null";
    case json::kind::bool_:
        return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
        return "a number";
    case json::kind::string:
        return "a string";
    case json::kind::array:
        return "an array";
    case json::kind::object:
        return "an object";
    }
    return "unknown";
}

// An unsigned integer as JSON writes it ("12", not "12.0" or "1.2E1").
std::optional<std::uint64_t> unsigned_of(const json::value& v) {
    if (v.is_uint64()) {
        return v.get_uint64();
    }
    if (v.is_int64() && v.get_int64() >= 0) {
        return static_cast<std::uint64_t>(v.get_int64());
    }
    return std::nullopt;
}

// Element i of an array that must hold objects; a problem when it is something else.
result<const json::object*, problem> object_at(const json::array& a, std::size_t i, const std::string& where) {
    if (!a[i].is_object()) {
        return bad_document(fmt::format("{} is {}; expected an object", where, kind_name(a[i])));
    }
    return &a[i].get_object();
}

// The members of one JSON object, read with their kinds checked; the first failure is kept, one line naming the
// field by its path ("latency.state.min_ns"), and every later call fails too.
class fields {
public:
    fields(const json::object& o, std::string path) : o_(o), path_(std::move(path)) {}

    const std::string& path() const { return path_; }
    std::string path_of(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }

    // Keeps the first failure (a later one is dropped) and returns it.
    problem fail(std::string_view key, std::string_view what) {
        if (!failed()) {
            failure_ = bad_document(fmt::format("{} {}", path_of(key), what));
        }
        return failure_;
    }

    // The first failure, once a call has failed: what a reader of these fields returns.
    const problem& failure() const { return failure_; }

    const json::value* find(std::string_view key) {
        if (failed()) {
            return nullptr;
        }
        const json::value* v = o_.if_contains(json::string_view(key.data(), key.size()));
        if (v == nullptr) {
            fail(key, "is missing");
        }
        return v;
    }

    bool has(std::string_view key) const { return o_.contains(json::string_view(key.data(), key.size())); }

    bool u64(std::string_view key, std::uint64_t& out, std::uint64_t most = std::numeric_limits<std::uint64_t>::max()) {
        const json::value* v = find(key);
        if (v == nullptr) {
            return false;
        }
        const auto value = unsigned_of(*v);
        if (!value) {
            fail(key, fmt::format("is {}; expected an unsigned integer",
                                  v->is_number() ? "a negative or fractional number" : kind_name(*v)));
            return false;
        }
        out = *value;
        if (out > most) {
            fail(key, fmt::format("is {}; at most {} is allowed", out, most));
            return false;
        }
        return true;
    }

    bool u32(std::string_view key, unsigned& out, unsigned least = 0) {
        std::uint64_t v = 0;
        if (!u64(key, v, std::numeric_limits<unsigned>::max())) {
            return false;
        }
        out = static_cast<unsigned>(v);
        if (out < least) {
            fail(key, fmt::format("is {}; at least {} is required", out, least));
            return false;
        }
        return true;
    }

    bool nanoseconds(std::string_view key, std::chrono::nanoseconds& out) {
        std::uint64_t v = 0;
        if (!u64(key, v, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))) {
            return false;
        }
        out = std::chrono::nanoseconds{static_cast<std::int64_t>(v)};
        return true;
    }

    bool number(std::string_view key, double& out) {
        const json::value* v = find(key);
        if (v == nullptr) {
            return false;
        }
        if (!v->is_number()) {
            fail(key, fmt::format("is {}; expected a number", kind_name(*v)));
            return false;
        }
        out = v->is_double()  ? v->get_double()
              : v->is_int64() ? static_cast<double>(v->get_int64())
                              : static_cast<double>(v->get_uint64());
        if (!std::isfinite(out) || out < 0) {
            fail(key, "is negative; expected a number >= 0");
            return false;
        }
        return true;
    }

    bool text(std::string_view key, std::string& out) {
        const json::value* v = find(key);
        if (v == nullptr) {
            return false;
        }
        if (!v->is_string()) {
            fail(key, fmt::format("is {}; expected a string", kind_name(*v)));
            return false;
        }
        out.assign(v->get_string().data(), v->get_string().size());
        return true;
    }

    bool boolean(std::string_view key, bool& out) {
        const json::value* v = find(key);
        if (v == nullptr) {
            return false;
        }
        if (!v->is_bool()) {
            fail(key, fmt::format("is {}; expected true or false", kind_name(*v)));
            return false;
        }
        out = v->get_bool();
        return true;
    }

    const json::object* object(std::string_view key) {
        const json::value* v = find(key);
        if (v != nullptr && !v->is_object()) {
            fail(key, fmt::format("is {}; expected an object", kind_name(*v)));
            return nullptr;
        }
        return v == nullptr ? nullptr : &v->get_object();
    }

    const json::array* array(std::string_view key) {
        const json::value* v = find(key);
        if (v != nullptr && !v->is_array()) {
            fail(key, fmt::format("is {}; expected an array", kind_name(*v)));
            return nullptr;
        }
        return v == nullptr ? nullptr : &v->get_array();
    }

private:
    bool failed() const { return static_cast<bool>(failure_.code); }

    const json::object& o_;
    std::string path_;
    problem failure_; // none until a call fails
};

// A decimal string of at most 2^128 - 1 (how to_json writes the 128-bit sums).
std::optional<metrics::histogram::wide_sum> parse_wide_decimal(std::string_view s) {
    __extension__ using uint128 = unsigned __int128;
    if (s.empty() || s.size() > 39) {
        return std::nullopt;
    }
    uint128 value = 0;
    for (const char c : s) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        const auto digit = static_cast<unsigned>(c - '0');
        if (value > (~uint128{0} - digit) / 10) {
            return std::nullopt;
        }
        value = value * 10 + digit;
    }
    return metrics::histogram::wide_sum{static_cast<std::uint64_t>(value >> 64), static_cast<std::uint64_t>(value)};
}

bool read_wide(fields& f, std::string_view key, metrics::histogram::wide_sum& out) {
    std::string text;
    if (!f.text(key, text)) {
        return false;
    }
    const auto value = parse_wide_decimal(text);
    if (!value) {
        f.fail(key, "is not a decimal integer below 2^128");
        return false;
    }
    out = *value;
    return true;
}

// A histogram object as histogram_json() in report.cpp writes it; only its "state" is read (the rest is derived).
// The state must use this build's layout and be consistent (min and max in the first and last counted buckets).
result<void, problem> read_histogram(fields& parent, std::string_view key, metrics::histogram& h) {
    using metrics::histogram;
    const json::object* o = parent.object(key);
    if (o == nullptr) {
        return parent.failure();
    }
    fields outer(*o, parent.path_of(key));
    const json::object* state_object = outer.object("state");
    if (state_object == nullptr) {
        return outer.failure();
    }
    fields state(*state_object, outer.path_of("state"));
    std::uint64_t lowest = 0;
    std::uint64_t highest = 0;
    std::uint64_t bits = 0;
    std::uint64_t buckets = 0;
    if (!state.u64("lowest_ns", lowest) || !state.u64("highest_ns", highest) || !state.u64("sub_bucket_bits", bits) ||
        !state.u64("bucket_count", buckets)) {
        return state.failure();
    }
    if (lowest != histogram::lowest_ns || highest != histogram::highest_ns || bits != histogram::sub_bucket_bits ||
        buckets != histogram::bucket_count) {
        return bad_document(
            fmt::format("{}: histogram layout {} buckets, {} sub-bucket bits, {}..{} ns differs from this build's {}, "
                        "{}, {}..{} ns; such histograms cannot be merged",
                        state.path(), buckets, bits, lowest, highest, histogram::bucket_count,
                        histogram::sub_bucket_bits, histogram::lowest_ns, histogram::highest_ns));
    }
    const json::array* pairs = state.array("counts");
    if (pairs == nullptr) {
        return state.failure();
    }
    auto counts = std::make_unique<std::array<std::uint64_t, histogram::bucket_count>>();
    std::uint64_t total = 0;
    std::size_t first = histogram::bucket_count;
    std::size_t last = 0;
    for (std::size_t i = 0; i < pairs->size(); ++i) {
        const json::value& pair = (*pairs)[i];
        const std::string where = fmt::format("{}[{}]", state.path_of("counts"), i);
        const json::array* a = pair.if_array();
        const auto index = a != nullptr && a->size() == 2 ? unsigned_of((*a)[0]) : std::nullopt;
        const auto count = a != nullptr && a->size() == 2 ? unsigned_of((*a)[1]) : std::nullopt;
        if (!index || !count) {
            return bad_document(where + " is not an [index, count] pair of unsigned integers");
        }
        if (*index >= histogram::bucket_count || (i > 0 && *index <= last)) {
            return bad_document(fmt::format("{}: bucket index {} is out of range or not increasing", where, *index));
        }
        if (__builtin_add_overflow(total, *count, &total)) {
            return bad_document(where + ": the total count overflows 64 bits");
        }
        (*counts)[*index] = *count;
        last = *index;
        first = *count != 0 ? std::min(first, static_cast<std::size_t>(*index)) : first;
    }
    std::uint64_t min_ns = 0;
    std::uint64_t max_ns = 0;
    std::uint64_t clamped = 0;
    histogram::wide_sum sum{};
    histogram::wide_sum sum_squares{};
    if (!state.u64("min_ns", min_ns) || !state.u64("max_ns", max_ns) || !read_wide(state, "sum_ns", sum) ||
        !read_wide(state, "sum_squares_ns", sum_squares) || !state.u64("clamped", clamped)) {
        return state.failure();
    }
    while (last > 0 && (*counts)[last] == 0) {
        --last;
    }
    const bool consistent = total == 0 ? min_ns == 0 && max_ns == 0 && clamped == 0 && sum == histogram::wide_sum{} &&
                                             sum_squares == histogram::wide_sum{}
                                       : min_ns <= max_ns && histogram::bucket_of(min_ns) == first &&
                                             histogram::bucket_of(max_ns) == last &&
                                             clamped <= (*counts)[histogram::bucket_count - 1] &&
                                             (clamped == 0) == (max_ns <= histogram::highest_ns);
    if (!consistent) {
        return bad_document(state.path() +
                            " is inconsistent (min_ns, max_ns, clamped or the sums do not match the counts)");
    }
    h.restore(*counts, min_ns, max_ns, sum, sum_squares, clamped);
    return {};
}

result<void, problem> read_plan(fields& doc, plan& p) {
    const json::object* run_object = doc.object("run");
    if (run_object == nullptr) {
        return doc.failure();
    }
    fields run(*run_object, "run");
    std::string url;
    std::string model;
    std::chrono::nanoseconds planned{};
    if (!run.text("url", url) || !run.text("method", p.method) || !run.text("model", model) ||
        !run.u32("threads", p.threads, 1) || !run.u32("connections", p.connections) || !run.number("rate", p.rate) ||
        !run.u32("pipeline", p.pipeline, 1) || !run.boolean("keep_alive", p.keep_alive) ||
        !run.nanoseconds("planned_ns", planned) || !run.nanoseconds("warmup_ns", p.warmup)) {
        return run.failure();
    }
    // Written since HTTP/2; absent from older files (HTTP/1.1).
    if (run.has("protocol")) {
        std::string protocol;
        if (!run.text("protocol", protocol) || !run.u32("streams", p.streams, 1)) {
            return run.failure();
        }
        if (protocol != "http/1.1" && protocol != "h2" && protocol != "h2c" && protocol != "auto") {
            return run.fail("protocol", "is \"http/1.1\", \"h2\", \"h2c\" or \"auto\"");
        }
        p.http = protocol == "http/1.1" ? plan::http_version::http1_1
                 : protocol == "auto"   ? plan::http_version::automatic
                                        : plan::http_version::h2;
    }
    // Written since think times and Retry-After; absent from older files (none, honoured: no 429 or 503 counted).
    if (run.has("think_time")) {
        std::string think;
        if (!run.text("think_time", think)) {
            return run.failure();
        }
        auto parsed = parse_think_time(think);
        if (!parsed) {
            return run.fail("think_time", parsed.error().message);
        }
        p.think = *parsed;
    }
    if (run.has("honour_retry_after") && !run.boolean("honour_retry_after", p.honour_retry_after)) {
        return run.failure();
    }
    auto to = http::parse_url(url);
    if (!to) {
        return run.fail("url", "'" + url + "': " + to.error().message);
    }
    p.to = std::move(*to);
    if (p.method.empty() || p.method.find_first_of(" \t\r\n") != std::string::npos) {
        return run.fail("method", "is not an HTTP method");
    }
    const json::array* stages = run.array("stages");
    if (stages == nullptr) {
        return run.failure();
    }
    std::chrono::nanoseconds staged{};
    for (std::size_t i = 0; i < stages->size(); ++i) {
        const std::string where = fmt::format("run.stages[{}]", i);
        const auto item = object_at(*stages, i, where);
        if (!item) {
            return item.error();
        }
        fields f(**item, where);
        stage st;
        std::string kind;
        if (!f.text("kind", kind) || !f.number("from", st.from) || !f.number("to", st.to) ||
            !f.nanoseconds("duration_ns", st.duration)) {
            return f.failure();
        }
        if (kind != "rate" && kind != "vus") {
            return f.fail("kind", "is '" + kind + "'; expected rate or vus");
        }
        st.what = kind == "rate" ? stage::kind::rate : stage::kind::vus;
        if (i > 0 && st.what != p.stages.front().what) {
            return f.fail("kind", "differs from the first stage's; all stages are of one kind");
        }
        staged += st.duration;
        p.stages.push_back(st);
    }
    if (p.stages.empty()) {
        p.duration = planned;
    } else if (staged != planned) {
        return run.fail("planned_ns", "differs from the sum of run.stages durations");
    }
    if (model != "open" && model != "closed") {
        return run.fail("model", "is '" + model + "'; expected open or closed");
    }
    // Written for a part of a plan split with --segment.
    if (run.has("segment") || run.has("segment_sequence")) {
        std::string part;
        std::string sequence;
        if (!run.text("segment", part) || !run.text("segment_sequence", sequence)) {
            return run.failure();
        }
        auto parsed = segment::parse(part, sequence);
        if (!parsed || parsed->whole()) {
            return run.fail("segment", "'" + part + "' of '" + sequence +
                                           "': " + (parsed ? std::string("the whole plan") : parsed.error().message));
        }
        p.part = std::move(*parsed);
    }
    if ((model == "open") != p.open_model()) {
        return run.fail("model", "is '" + model + "' but run.rate and run.stages say otherwise");
    }
    return {};
}

// When the run began (written since --start-at; absent from older files).
result<void, problem> read_start(fields& doc, results& r) {
    const json::object* run_object = doc.object("run");
    if (run_object == nullptr) {
        return doc.failure();
    }
    fields run(*run_object, "run");
    if (!run.has("started_unix_ns")) {
        return {};
    }
    std::chrono::nanoseconds started{};
    std::chrono::nanoseconds spread{};
    if (!run.nanoseconds("started_unix_ns", started) || !run.nanoseconds("start_spread_ns", spread)) {
        return run.failure();
    }
    if (started.count() == 0 || spread.count() > std::numeric_limits<std::int64_t>::max() - started.count()) {
        return run.fail("start_spread_ns", "goes past the end of time");
    }
    r.started_unix_ns = started.count();
    r.last_started_unix_ns = started.count() + spread.count();
    return {};
}

result<void, problem> read_results(fields& doc, bool open_model, results& r) {
    if (!doc.nanoseconds("measured_ns", r.measured) || !doc.u64("responses", r.responses) ||
        !doc.u64("successes", r.successes) || !doc.u64("bytes_received", r.bytes_received) ||
        !doc.u64("bytes_sent", r.bytes_sent) || !doc.u64("connections_opened", r.connections_opened) ||
        !doc.u64("late", r.late) || !doc.u64("unsent", r.unsent)) {
        return doc.failure();
    }
    if (const json::object* retry_after = doc.has("retry_after") ? doc.object("retry_after") : nullptr;
        doc.has("retry_after")) {
        if (retry_after == nullptr) {
            return doc.failure();
        }
        fields ra(*retry_after, "retry_after");
        if (!ra.u64("asked", r.retry_after_asked) || !ra.u64("held", r.retry_after_held) ||
            !ra.nanoseconds("held_ns", r.retry_after_held_for)) {
            return ra.failure();
        }
    }
    if ((doc.has("retried_unprocessed") && !doc.u64("retried_unprocessed", r.retried_unprocessed)) ||
        (doc.has("connections_h2") && !doc.u64("connections_h2", r.connections_h2))) {
        return doc.failure();
    }
    const json::object* errors_object = doc.object("errors");
    if (errors_object == nullptr) {
        return doc.failure();
    }
    fields errors(*errors_object, "errors");
    // HTTP/2's classes are absent from files written before it.
    std::size_t classes = 0;
    for (std::size_t e = 0; e < error_class_count; ++e) {
        const auto name = to_string(static_cast<error_class>(e));
        const bool since_h2 =
            e == static_cast<std::size_t>(error_class::reset) || e == static_cast<std::size_t>(error_class::refused);
        if (since_h2 && !errors.has(name)) {
            continue;
        }
        if (!errors.u64(name, r.errors[e])) {
            return errors.failure();
        }
        ++classes;
    }
    // Files written before connection attempts were counted apart held them as errors.connect.
    std::uint64_t legacy_connect = 0;
    const bool has_legacy_connect = errors.has("connect");
    if (has_legacy_connect && !errors.u64("connect", legacy_connect)) {
        return errors.failure();
    }
    if (errors_object->size() != classes + (has_legacy_connect ? 1 : 0)) {
        return bad_document("errors has an unknown error class");
    }
    // Written since connection attempts are counted apart; absent from older files.
    if (doc.has("connect_attempts") || doc.has("connect_failures")) {
        if (!doc.u64("connect_attempts", r.connect_attempts) || !doc.u64("connect_failures", r.connect_failures)) {
            return doc.failure();
        }
    } else {
        r.connect_failures = legacy_connect;
        r.connect_attempts = r.connections_opened + legacy_connect;
    }
    if (doc.has("connect_error") && !doc.text("connect_error", r.connect_error)) {
        return doc.failure();
    }
    // Written for an https:// target.
    if (doc.has("tls")) {
        const json::object* tls_object = doc.object("tls");
        if (tls_object == nullptr) {
            return doc.failure();
        }
        fields tls(*tls_object, "tls");
        r.tls = true;
        if (!tls.u64("handshakes", r.handshakes.handshakes) || !tls.u64("resumed", r.handshakes.resumed)) {
            return tls.failure();
        }
        if (auto read = read_histogram(tls, "handshake_time", r.handshakes.handshake_time); !read) {
            return read;
        }
        const json::object* failures_object = tls.object("failures");
        if (failures_object == nullptr) {
            return tls.failure();
        }
        fields failures(*failures_object, "tls.failures");
        for (const net::tls_errc e : net::tls_errcs) {
            if (e == net::tls_errc::no_common_protocol && !failures.has(net::tls_errc_name(e))) {
                continue; // written since HTTP/2 (ALPN h2); absent from older files
            }
            if (!failures.u64(net::tls_errc_name(e), r.handshakes.failures_of(e))) {
                return failures.failure();
            }
        }
    }
    // Written since runs say how they ended; absent from older files (completed).
    if (doc.has("ended")) {
        std::string ended;
        if (!doc.text("ended", ended)) {
            return doc.failure();
        }
        if (ended == "interrupted") {
            r.ended = results::ending::interrupted;
            std::string signal;
            r.signal = doc.has("signal") && doc.text("signal", signal) && signal == "SIGTERM" ? SIGTERM : SIGINT;
        } else if (ended == "unreachable") {
            r.ended = results::ending::unreachable;
        } else if (ended != "completed") {
            return bad_document("ended is '" + ended + "'; expected completed, interrupted or unreachable");
        }
    }
    const json::object* statuses = doc.object("statuses");
    if (statuses == nullptr) {
        return doc.failure();
    }
    fields status_fields(*statuses, "statuses");
    for (const auto& [key, value] : *statuses) {
        unsigned status = 0;
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), status);
        if (ec != std::errc{} || end != key.data() + key.size() || status >= r.statuses.size()) {
            return bad_document(fmt::format("statuses has key '{}'; expected a status code below {}",
                                            std::string_view(key), r.statuses.size()));
        }
        if (!status_fields.u64(std::string_view(key.data(), key.size()), r.statuses[status])) {
            return status_fields.failure();
        }
    }
    if (auto read = read_histogram(doc, "latency", r.latency); !read) {
        return read;
    }
    if (open_model) {
        if (auto read = read_histogram(doc, "service_time", r.service_time); !read) {
            return read;
        }
    }
    if (open_model && doc.has("send_lag")) {
        if (auto read = read_histogram(doc, "send_lag", r.send_lag); !read) {
            return read;
        }
    }
    const json::array* seconds = doc.array("seconds");
    if (seconds == nullptr) {
        return doc.failure();
    }
    for (std::size_t i = 0; i < seconds->size(); ++i) {
        const std::string where = fmt::format("seconds[{}]", i);
        const auto item = object_at(*seconds, i, where);
        if (!item) {
            return item.error();
        }
        fields f(**item, where);
        std::uint64_t index = 0;
        if (!f.u64("second", index)) {
            return f.failure();
        }
        if (index != i) {
            return f.fail("second", fmt::format("is {}; expected {} (one entry per second, in order)", index, i));
        }
        auto& s = r.second(i);
        if (!f.u64("responses", s.responses) || !f.u64("errors", s.errors) ||
            (f.has("connect_failures") && !f.u64("connect_failures", s.connect_failures))) {
            return f.failure();
        }
        if (auto read = read_histogram(f, "latency", *s.latency); !read) {
            return read;
        }
    }
    const json::array* requests = doc.array("requests");
    if (requests == nullptr) {
        return doc.failure();
    }
    for (std::size_t i = 0; i < requests->size(); ++i) {
        const std::string where = fmt::format("requests[{}]", i);
        const auto item = object_at(*requests, i, where);
        if (!item) {
            return item.error();
        }
        fields f(**item, where);
        auto& q = r.per_request.emplace_back();
        if (!f.text("name", q.name) || !f.u64("responses", q.responses) || !f.u64("successes", q.successes) ||
            !f.u64("failures", q.failures)) {
            return f.failure();
        }
        if (auto read = read_histogram(f, "latency", q.latency); !read) {
            return read;
        }
    }
    return {};
}

result<void, problem> read_thresholds(fields& doc, plan& p) {
    const json::array* list = doc.array("thresholds");
    if (list == nullptr) {
        return doc.failure();
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
        const std::string where = fmt::format("thresholds[{}]", i);
        const auto item = object_at(*list, i, where);
        if (!item) {
            return item.error();
        }
        fields f(**item, where);
        std::string text;
        if (!f.text("threshold", text)) {
            return f.failure();
        }
        // The open model's implied bound is written with its mark ("dropped<1% (default)").
        constexpr std::string_view implied = " (default)";
        const bool by_default = std::string_view(text).ends_with(implied);
        auto rule = parse_threshold(by_default ? std::string_view(text).substr(0, text.size() - implied.size())
                                               : std::string_view(text));
        if (!rule) {
            return f.fail("threshold", "'" + text + "': " + rule.error().message);
        }
        rule->text = text;
        p.thresholds.push_back(std::move(*rule));
    }
    return {};
}

} // namespace

result<loaded_report, problem> from_json(std::string_view text) {
    auto parsed = parse_precise(text);
    if (!parsed) {
        return std::move(parsed).error();
    }
    if (!parsed->is_object()) {
        return bad_document(fmt::format("the document is {}; expected a {} object", kind_name(*parsed), schema_name));
    }
    fields doc(parsed->get_object(), "");
    std::string schema;
    if (!doc.has("schema")) {
        return bad_document(fmt::format("no \"schema\" field: not a {} document", schema_name));
    }
    if (!doc.text("schema", schema)) {
        return doc.failure();
    }
    if (schema != schema_name) {
        return bad_document(fmt::format("schema is '{}'; this build reads {}", schema, schema_name));
    }
    loaded_report out;
    if (auto read = read_plan(doc, out.p); !read) {
        return std::move(read).error();
    }
    if (auto read = read_results(doc, out.p.open_model(), out.r); !read) {
        return std::move(read).error();
    }
    if (auto read = read_start(doc, out.r); !read) {
        return std::move(read).error();
    }
    if (auto read = read_thresholds(doc, out.p); !read) {
        return std::move(read).error();
    }
    out.outcomes = evaluate(out.p, out.r);
    if (!out.p.part.whole()) {
        out.covered = {{out.p.part.from(), out.p.part.to()}};
        out.sequence = out.p.part.sequence();
    }
    return out;
}

result<void, problem> merge_into(loaded_report& into, const loaded_report& part) {
    const auto refuse = [](std::string message) { return problem{errc::invalid_value, std::move(message)}; };
    if (into.p.open_model() != part.p.open_model()) {
        return refuse("cannot merge an open-model run with a closed-model run (their latencies measure different "
                      "things)");
    }
    const std::size_t common = std::min(into.r.per_request.size(), part.r.per_request.size());
    for (std::size_t i = 0; i < common; ++i) {
        if (into.r.per_request[i].name != part.r.per_request[i].name) {
            return refuse(fmt::format("scenario request {} is '{}' here but '{}' in the runs before: not the same "
                                      "scenario",
                                      i, part.r.per_request[i].name, into.r.per_request[i].name));
        }
    }
    unsigned threads = 0;
    if (__builtin_add_overflow(into.p.threads, part.p.threads, &threads)) {
        return refuse("the thread counts overflow");
    }
    // One plan's runs carry its thresholds alike (a run without any, e.g. one that did not write them, takes the
    // others'); they are judged again on the merged run.
    const auto texts = [](const plan& p) {
        std::string joined;
        for (const threshold& t : p.thresholds) {
            joined += (joined.empty() ? "" : ", ") + t.text;
        }
        return joined;
    };
    // The parts of one plan split with --segment: the same sequence, none twice.
    const auto ranges = [](const loaded_report& l) {
        std::string joined;
        for (const auto& [from, to] : l.covered) {
            joined += (joined.empty() ? "" : ", ") + from.text() + ":" + to.text();
        }
        return joined;
    };
    if (into.covered.empty() != part.covered.empty()) {
        return refuse(into.covered.empty() ? "it is a part of a plan (--segment " + ranges(part) +
                                                 "), the runs before whole ones: not one plan's parts"
                                           : "it is a whole run, the runs before parts of a plan (" + ranges(into) +
                                                 "): not one plan's parts");
    }
    if (!part.covered.empty()) {
        if (into.sequence != part.sequence) {
            const auto text = [](const std::vector<fraction>& sequence) {
                std::string joined;
                for (const fraction& f : sequence) {
                    joined += (joined.empty() ? "" : ",") + f.text();
                }
                return joined;
            };
            return refuse(fmt::format("its segment sequence ({}) differs from the runs' before ({}): not one plan's "
                                      "parts",
                                      text(part.sequence), text(into.sequence)));
        }
        for (const auto& [from, to] : into.covered) {
            for (const auto& [part_from, part_to] : part.covered) {
                if (part_from < to && from < part_to) {
                    return refuse(fmt::format("its segment {} overlaps the parts before ({}): each part once",
                                              ranges(part), ranges(into)));
                }
            }
        }
    }
    if (!into.p.thresholds.empty() && !part.p.thresholds.empty() && texts(into.p) != texts(part.p)) {
        return refuse(fmt::format("its thresholds ({}) differ from the runs' before ({}): not the same plan",
                                  texts(part.p), texts(into.p)));
    }
    into.p.threads = threads;
    into.r.merge(part.r);
    into.outcomes.clear(); // they point into into.p.thresholds, which may change below
    if (into.p.thresholds.empty()) {
        into.p.thresholds = part.p.thresholds;
    }
    into.outcomes = evaluate(into.p, into.r);
    if (!part.covered.empty()) {
        // Its ranges among the others, side by side ones joined: one range left is the merged run's part (the whole
        // plan's at [0, 1)).
        std::vector<std::pair<fraction, fraction>> all = into.covered;
        all.insert(all.end(), part.covered.begin(), part.covered.end());
        std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        into.covered.clear();
        for (const auto& r : all) {
            if (!into.covered.empty() && into.covered.back().second == r.first) {
                into.covered.back().second = r.second;
            } else {
                into.covered.push_back(r);
            }
        }
        if (into.covered.size() == 1) {
            const auto& [from, to] = into.covered.front();
            if (from == fraction{0, 1} && to == fraction{1, 1}) {
                into.p.part = segment{};
            } else if (auto joined = segment::make(from, to, into.sequence)) {
                into.p.part = std::move(*joined);
            }
        }
    }
    return {};
}

result<void, problem> merge_files(const std::vector<std::string>& paths, std::string& out_json,
                                  std::string& report_text, verdict* judged) {
    if (paths.empty()) {
        return problem{bad_input(), "no files to merge"};
    }
    // One merged run and one file at a time: a loaded_report is ~60 KB, so both live on the heap.
    std::unique_ptr<loaded_report> merged;
    for (const auto& path : paths) {
        std::ifstream in(path, std::ios::binary);
        if (!in.is_open()) {
            return problem{std::make_error_code(std::errc::no_such_file_or_directory), "cannot open " + path};
        }
        std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        if (in.bad()) {
            return problem{std::make_error_code(std::errc::io_error), "cannot read " + path};
        }
        auto part = from_json(text);
        if (!part) {
            return problem{part.error().code, path + ": " + part.error().message};
        }
        if (merged == nullptr) {
            merged = std::make_unique<loaded_report>(std::move(*part));
        } else if (auto added = merge_into(*merged, *part); !added) {
            return problem{added.error().code, path + ": " + added.error().message};
        }
    }
    if (merged->covered.size() > 1) {
        std::string left_out;
        for (std::size_t i = 1; i < merged->covered.size(); ++i) {
            left_out += (left_out.empty() ? "" : ", ") + merged->covered[i - 1].second.text() + ":" +
                        merged->covered[i].first.text();
        }
        return problem{errc::invalid_value,
                       "the parts merged leave " + left_out +
                           " of the plan out between them: merge every part, or parts side by side"};
    }
    if (judged != nullptr) {
        *judged = judge(merged->r, merged->outcomes);
    }
    out_json = to_json(merged->p, merged->r, merged->outcomes);
    char* buffer = nullptr;
    std::size_t size = 0;
    std::FILE* memory = ::open_memstream(&buffer, &size);
    if (memory == nullptr) {
        return problem{std::make_error_code(std::errc::not_enough_memory), "out of memory"};
    }
    print_header(memory, merged->p);
    print_report(memory, merged->p, merged->r, merged->outcomes);
    std::fclose(memory);
    report_text.assign(buffer, size);
    std::free(buffer);
    return {};
}

} // namespace hotpath::load
