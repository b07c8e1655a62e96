// Validates and splits an HTTP/1.x request head line by line as its bytes arrive (RFC 9112).
#include <hotpath/http/request_parser.hpp>

#include <hotpath/http/char_class.hpp>
#include <hotpath/http/field_values.hpp>

#include <algorithm>
#include <cstring>

namespace hotpath::http {
namespace {

// RFC 9112 §2.2 asks to ignore "at least one" empty line before a request; more than this many is not a
// client bug but garbage.
constexpr std::size_t max_leading_empty_lines = 8;

using char_class::hex_bit;
using char_class::host_bit;
using char_class::is;
using char_class::is_ows;
using char_class::tchar_bit;
using char_class::value_bit;
using char_class::vchar_bit;

constexpr parse_result fail(status s) noexcept {
    return {parse_status::error, 0, s};
}

// RFC 3986 §3.2.2-3 authority without userinfo: host [":" port], host a reg-name or an IP literal in brackets
// (checked for its alphabet only), port digits. RFC 9112 §3.2: a Host field that is not one → 400.
bool valid_authority(std::string_view a) noexcept {
    std::size_t i = 0;
    if (!a.empty() && a.front() == '[') {
        i = 1;
        while (i < a.size() && (is(a[i], hex_bit) || a[i] == ':' || a[i] == '.' || a[i] == 'v' || a[i] == 'V')) {
            ++i;
        }
        if (i == a.size() || a[i] != ']') {
            return false;
        }
        ++i;
    } else {
        while (i < a.size() && is(a[i], host_bit)) {
            ++i;
        }
    }
    if (i < a.size()) {
        if (a[i] != ':') {
            return false;
        }
        for (++i; i < a.size(); ++i) {
            if (a[i] < '0' || a[i] > '9') {
                return false;
            }
        }
    }
    return true;
}

// Splits out.target into path and query by its form (RFC 9112 §3.2). origin-form "/p?q" is what clients
// send to an origin server; absolute-form "http://host/p?q" is what they send to a proxy, and a server MUST
// accept it (§3.2.2), its authority replacing the Host field; asterisk-form "*" only with OPTIONS and
// authority-form "host:port" only with CONNECT (§3.2.3-4), where path is the whole target. Anything else is
// not a request-target → 400. `authority` is set for absolute-form only.
status split_target(request_head& out, std::string_view& authority) noexcept {
    std::string_view t = out.target;
    authority = {};
    if (t.front() != '/') {
        if (out.method == method::connect || (t == "*" && out.method == method::options)) {
            out.path = t;
            out.query = {};
            return status::none;
        }
        // absolute-form with the http or https scheme (case-insensitive, RFC 9110 §4.2.3).
        std::size_t scheme = 0;
        if (t.size() > 7 && iequals(t.substr(0, 7), "http://")) {
            scheme = 7;
        } else if (t.size() > 8 && iequals(t.substr(0, 8), "https://")) {
            scheme = 8;
        } else {
            return status::bad_request;
        }
        const std::size_t end = std::min(t.find_first_of("/?", scheme), t.size());
        authority = t.substr(scheme, end - scheme);
        if (authority.empty() || !valid_authority(authority)) {
            return status::bad_request; // RFC 9110 §4.2.1: no empty host; §4.2.4: no userinfo ('@')
        }
        if (end == t.size() || t[end] == '?') {
            // An empty path is "/" (§3.2.1): the view is the scheme's first slash, so it stays in the buffer.
            out.path = t.substr(scheme - 2, 1);
            out.query = end == t.size() ? std::string_view{} : t.substr(end + 1);
            return status::none;
        }
        t = t.substr(end);
    }
    const std::size_t question = t.find('?');
    out.path = t.substr(0, question);
    out.query = question == std::string_view::npos ? std::string_view{} : t.substr(question + 1);
    return status::none;
}

// Validates the request line at p[start, line_end) (line_end is just past its LF) and fills the head's
// request-line members. Loops need no bounds checks: each stops at the LF, which is in none of the classes.
status parse_request_line(const char* p, std::size_t start, std::size_t line_end, request_head& out,
                          std::string_view& authority) noexcept {
    // RFC 9112 §3: request-line = method SP request-target SP HTTP-version; method = token.
    std::size_t i = start;
    while (is(p[i], tchar_bit)) {
        ++i;
    }
    if (i == start || p[i] != ' ') {
        return status::bad_request;
    }
    out.method_token = {p + start, i - start};
    out.method = to_method(out.method_token);

    // §3.2: the target contains no whitespace or control characters.
    const std::size_t target_start = ++i;
    while (is(p[i], vchar_bit)) {
        ++i;
    }
    if (i == target_start || p[i] != ' ') {
        return status::bad_request;
    }
    out.target = {p + target_start, i - target_start};
    if (const status s = split_target(out, authority); s != status::none) {
        return s;
    }

    // §2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT, case-sensitive, then CRLF (§2.2).
    const char* v = p + i + 1;
    if (line_end - (i + 1) != 10 || std::memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' ||
        v[7] < '0' || v[7] > '9' || v[8] != '\r') {
        return status::bad_request;
    }
    if (v[5] != '1' || v[7] > '1') {
        return status::http_version_not_supported;
    }
    out.version_major = 1; // a head reused after an HTTP/2 stream held 2
    out.version_minor = static_cast<std::uint8_t>(v[7] - '0');
    return status::none;
}

} // namespace

// Applies the rules of one field line as soon as it is complete: status::none, or the answer when the field
// alone (with those before it) makes the request invalid. `http11` is the request line's version.
status request_parser::note_field(const field& f, bool http11, request_head& out, field_facts& facts) noexcept {
    // Dispatch on length first: most fields match none of these and cost one switch.
    switch (f.name.size()) {
    case 4:
        if (iequals(f.name, "host")) {
            // RFC 9112 §3.2: exactly one Host, whose value is an authority.
            if (facts.host_seen || !valid_authority(f.value)) {
                return status::bad_request;
            }
            facts.host_seen = true;
            out.host = f.value;
        }
        break;
    case 6:
        if (iequals(f.name, "expect") && iequals(f.value, "100-continue")) {
            facts.expect_continue = true;
        }
        break;
    case 10:
        if (iequals(f.name, "connection")) {
            scan_connection(f.value, facts.close, facts.keep_alive);
        }
        break;
    case 14:
        if (iequals(f.name, "content-length")) {
            // RFC 9112 §6.3 ¶5: several Content-Length fields or a list are refused, even when equal;
            // ¶3: with Transfer-Encoding, a smuggling attempt.
            if (facts.content_length_seen || facts.chunked || !parse_content_length(f.value, out.content_length)) {
                return status::bad_request;
            }
            facts.content_length_seen = true;
        }
        break;
    case 17:
        if (iequals(f.name, "transfer-encoding")) {
            // RFC 9112 §6.1: Transfer-Encoding in 1.0 means faulty framing; §6.3 ¶3: with Content-Length, a
            // smuggling attempt.
            if (!http11 || facts.content_length_seen) {
                return status::bad_request;
            }
            // RFC 9112 §6.1: a coding we do not implement → 501; chunked must be the only one and applied once
            // (RFC 9110 §5.3: a second field is a second coding).
            if (facts.chunked || !iequals(f.value, "chunked")) {
                return status::not_implemented;
            }
            facts.chunked = true;
        }
        break;
    default:
        break;
    }
    return status::none;
}

parse_result request_parser::parse(std::string_view input, request_head& out) noexcept {
    if (done_.status == parse_status::error) {
        return done_;
    }
    if (input.data() != base_ || input.size() < scanned_) {
        // A buffer that moved: the views kept in `out` point into the old place, so start over.
        if (scanned_ != 0 || done_.status == parse_status::complete) {
            *this = request_parser(*limits_);
        }
        base_ = input.data();
    } else if (done_.status == parse_status::complete) {
        return done_;
    }
    done_ = scan(input.data(), input.size(), out);
    return done_;
}

// Each check is an event at a byte offset (an LF, or the offset where a limit becomes provable) whose answer
// depends only on the bytes before it, and events are taken in offset order. So a prefix of the input answers
// incomplete or the same as the whole input, whatever the split (at one LF the byte limits are checked
// before a bare LF, and both before the line's syntax).
parse_result request_parser::scan(const char* p, std::size_t n, request_head& out) noexcept {
    const limits& lim = *limits_;
    if (line_end_ == 0) {
        // RFC 9112 §2.2: skip a few empty lines before the request line; each must be a whole CRLF.
        std::size_t start = 0;
        for (std::size_t empty_lines = 0; start < n && (p[start] == '\r' || p[start] == '\n'); ++empty_lines) {
            if (p[start] == '\n' || empty_lines == max_leading_empty_lines) {
                return fail(status::bad_request);
            }
            if (start + 1 == n) {
                return {};
            }
            if (p[start + 1] != '\n') {
                return fail(status::bad_request);
            }
            start += 2;
        }
        if (start == n) {
            return {};
        }

        // RFC 9112 §3: the request line opens with a method token and SP. A byte that cannot be part of that is
        // refused at its offset, without waiting for an LF that binary input (a TLS hello) may never send. The
        // scan stops before the offset where an unended line proves 414 (below), so events stay in offset order.
        const std::size_t limit = std::min(n, start + lim.max_request_line_bytes - 1);
        std::size_t i = start;
        while (i < limit && is(p[i], tchar_bit)) {
            ++i;
        }
        if (i < limit && (p[i] != ' ' || i == start)) {
            return fail(status::bad_request);
        }

        // The first LF ends the request line. The look-back stays inside the buffer: the line holds at least
        // one byte (the method's) before its LF.
        const std::size_t from = std::max(scanned_, start);
        const void* lf = std::memchr(p + from, '\n', n - from);
        if (lf == nullptr) {
            scanned_ = n;
            // The line will be at least one byte (its LF) longer than what is buffered.
            return n - start >= lim.max_request_line_bytes ? fail(status::uri_too_long) : parse_result{};
        }
        const auto at = static_cast<std::size_t>(static_cast<const char*>(lf) - p);
        scanned_ = at + 1;
        if (at + 1 - start > lim.max_request_line_bytes) {
            return fail(status::uri_too_long);
        }
        if (p[at - 1] != '\r') {
            return fail(status::bad_request); // bare LF ends the request line
        }
        // A whole request line that is not valid ("GET /x" without a version) is refused now: no field line
        // can mend it.
        if (const status s = parse_request_line(p, start, at + 1, out, authority_); s != status::none) {
            return fail(s);
        }
        out.framing = body_framing::none;
        out.content_length = 0;
        out.host = {};
        line_end_ = at + 1;
        line_start_ = line_end_;
    }

    // Field lines, each validated when its LF arrives; the empty line ends the head. Look-backs stay inside the
    // buffer: p[at - 1] needs at >= line_start_ >= line_end_ >= 2.
    const std::size_t max_count = std::min(lim.max_header_count, max_fields_capacity);
    const bool http11 = out.version_minor == 1;
    for (;;) {
        const void* lf = std::memchr(p + scanned_, '\n', n - scanned_);
        if (lf == nullptr) {
            scanned_ = n;
            // The header section will be at least one byte (an LF) longer than what is buffered.
            return n + 1 - line_end_ > lim.max_header_bytes ? fail(status::request_header_fields_too_large)
                                                            : parse_result{};
        }
        const auto at = static_cast<std::size_t>(static_cast<const char*>(lf) - p);
        scanned_ = at + 1;
        const bool head_ends = at == line_start_ + 1 && p[line_start_] == '\r';
        // RFC 6585 §5: the header section (after the request line, through the empty line) as a prefix ending
        // at this LF proves it: whole when the head ends here, else at least one byte longer.
        if (at + (head_ends ? 1 : 2) - line_end_ > lim.max_header_bytes) {
            return fail(status::request_header_fields_too_large);
        }
        if (head_ends) {
            return finish(at + 1, out);
        }
        if (p[at - 1] != '\r') {
            return fail(status::bad_request); // a bare LF
        }
        if (field_count_ == max_count) {
            return fail(status::request_header_fields_too_large);
        }
        // The line p[line_start_, at] ends in CRLF and holds no other LF, so the scans stop inside it.
        field& f = out.fields[field_count_];
        std::size_t i = line_start_;
        if (!scan_field_line(p, i, f)) {
            return fail(status::bad_request);
        }
        ++field_count_;
        if (const status s = note_field(f, http11, out, facts_); s != status::none) {
            return fail(s);
        }
        line_start_ = at + 1;
    }
}

// The empty line ended the head at head_end: the rules that need every field.
parse_result request_parser::finish(std::size_t head_end, request_head& out) noexcept {
    const bool http11 = out.version_minor == 1;
    if (http11 && !facts_.host_seen) {
        return fail(status::bad_request); // RFC 9112 §3.2: a 1.1 request without Host
    }
    if (!authority_.empty()) {
        out.host = authority_; // RFC 9112 §3.2.2: the target's authority, not the Host field
    }
    out.field_count = field_count_;
    out.framing = facts_.chunked               ? body_framing::chunked
                  : facts_.content_length_seen ? body_framing::content_length
                                               : body_framing::none;
    // RFC 9112 §9.3: 1.1 persists unless "close"; 1.0 only with "keep-alive".
    out.keep_alive = !facts_.close && (http11 || facts_.keep_alive);
    // RFC 9110 §10.1.1: a 100-continue expectation in a 1.0 request is ignored.
    out.expect_continue = http11 && facts_.expect_continue;
    return {parse_status::complete, head_end, status::none};
}

} // namespace hotpath::http
