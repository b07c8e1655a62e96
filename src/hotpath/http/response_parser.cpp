// Finds the end of an HTTP/1.x response head incrementally, then validates and splits it in one pass (RFC 9112).
#include <hotpath/http/response_parser.hpp>

#include <hotpath/http/char_class.hpp>
#include <hotpath/http/field_values.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

namespace hotpath::http {
namespace {

using char_class::is;
using char_class::is_ows;
using char_class::tchar_bit;
using char_class::trim_ows;
using char_class::value_bit;

// RFC 9112 §2.3, §4: every accepted status line starts with this, then '0' or '1'.
constexpr std::string_view version_prefix = "HTTP/1.";
constexpr std::size_t version_bytes = 8; // "HTTP/1.x"

// "HTTP/1.1 200\r\n": the shortest status line accepted (no reason-phrase and no SP before it).
constexpr std::size_t min_status_line_bytes = 14;

constexpr parse_result fail(status s) noexcept {
    return {parse_status::error, 0, s};
}

constexpr bool is_digit(char c) noexcept {
    return c >= '0' && c <= '9';
}

// The offset of the first of the buffered bytes that cannot start "HTTP/1.0" or "HTTP/1.1", or npos.
std::size_t version_mismatch(const char* p, std::size_t n) noexcept {
    const std::size_t checked = std::min(n, version_bytes);
    for (std::size_t i = 0; i < checked; ++i) {
        const bool ok = i < version_prefix.size() ? p[i] == version_prefix[i] : p[i] == '0' || p[i] == '1';
        if (!ok) {
            return i;
        }
    }
    return std::string_view::npos;
}

// RFC 9112 §6.1: Transfer-Encoding lists the codings in the order applied, and several fields form one list
// (RFC 9110 §5.3), so only the last coding seen so far decides the framing. Empty list elements are ignored
// (RFC 9110 §5.6.1); a coding with parameters ("chunked;x=1") is not chunked.
void scan_transfer_encoding(std::string_view value, bool& final_chunked) noexcept {
    while (true) {
        const std::size_t comma = value.find(',');
        const std::string_view coding = trim_ows(value.substr(0, comma));
        if (!coding.empty()) {
            final_chunked = iequals(coding, "chunked");
        }
        if (comma == std::string_view::npos) {
            break;
        }
        value.remove_prefix(comma + 1);
    }
}

// What the field loop learns about the fields that decide framing and connection reuse.
struct field_facts {
    bool content_length_seen = false;
    std::uint64_t content_length = 0;
    bool transfer_encoding_seen = false;
    bool final_chunked = false; // the last transfer coding is "chunked"
    bool close = false;
    bool keep_alive = false;
};

// Applies the rules of one field; false when the field alone makes the response malformed.
bool note_field(const field& f, field_facts& facts) noexcept {
    // Dispatch on length first: most fields match none of these and cost one switch.
    switch (f.name.size()) {
    case 10:
        if (iequals(f.name, "connection")) {
            scan_connection(f.value, facts.close, facts.keep_alive);
        }
        break;
    case 14:
        if (iequals(f.name, "content-length")) {
            std::uint64_t length = 0;
            if (!parse_content_length(f.value, length)) {
                return false;
            }
            // RFC 9112 §6.3 ¶5, RFC 9110 §8.6: repeated equal values are a duplicate made upstream and are
            // accepted; values that differ leave the length unknowable.
            if (facts.content_length_seen && length != facts.content_length) {
                return false;
            }
            facts.content_length_seen = true;
            facts.content_length = length;
        }
        break;
    case 17:
        if (iequals(f.name, "transfer-encoding")) {
            facts.transfer_encoding_seen = true;
            scan_transfer_encoding(f.value, facts.final_chunked);
        }
        break;
    default:
        break;
    }
    return true;
}

// Validates the status line p[0, line_end) (line_end is just past its LF, whose CR the scan checked) and fills
// the head's status-line members. RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ].
struct status_line {
    unsigned status = 0;
    std::uint8_t version_minor = 1;
    std::string_view reason;
};

bool parse_status_line(const char* p, std::size_t line_end, status_line& out) noexcept {
    // §2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT, case-sensitive; only 1.0 and 1.1 are accepted.
    if (line_end < min_status_line_bytes || std::memcmp(p, version_prefix.data(), version_prefix.size()) != 0 ||
        (p[7] != '0' && p[7] != '1') || p[8] != ' ') {
        return false;
    }
    // §4: status-code = 3DIGIT; RFC 9110 §15 codes are 100..999 here (600..999 are used privately).
    if (p[9] < '1' || p[9] > '9' || !is_digit(p[10]) || !is_digit(p[11])) {
        return false;
    }
    // §4: the reason-phrase (HTAB, SP, VCHAR, obs-text) may be empty; its SP too may be missing, as many
    // servers omit it. The loop stops at the line's CR: every other stop (a CTL, a bare CR) is malformed.
    std::size_t reason_start = 12;
    std::size_t i = reason_start;
    if (p[i] == ' ') {
        reason_start = ++i;
        while (is(p[i], value_bit)) {
            ++i;
        }
    }
    if (p[i] != '\r' || i + 2 != line_end) {
        return false;
    }
    out.version_minor = static_cast<std::uint8_t>(p[7] - '0');
    out.status = static_cast<unsigned>((p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0'));
    out.reason = {p + reason_start, i - reason_start};
    return true;
}

// Validates the whole head p[0, head_end) and fills `out`. Invariant relied on by the unchecked loops:
// p[head_end - 4, head_end) is the first "\r\n\r\n" and every LF before it follows a CR, so CR stops every loop
// before head_end.
status parse_head(const char* p, std::size_t head_end, std::size_t max_count, bool head_request,
                  response_head& out) noexcept {
    // An LF is found: the head's second-to-last LF is at head_end - 3 at the latest.
    const auto* first_lf = static_cast<const char*>(std::memchr(p, '\n', head_end));
    const auto line_end = static_cast<std::size_t>(first_lf - p) + 1;
    status_line line;
    if (!parse_status_line(p, line_end, line)) {
        return status::bad_request;
    }
    out.status = line.status;
    out.version_minor = line.version_minor;
    out.reason = line.reason;
    out.field_count = 0;

    field_facts facts;
    const std::size_t fields_end = head_end - 2; // the empty line
    std::size_t i = line_end;
    while (i < fields_end) {
        // Checked before the line's syntax, as the request parser checks its limits first.
        if (out.field_count == max_count) {
            return status::request_header_fields_too_large;
        }
        field& f = out.fields[out.field_count];
        if (!scan_field_line(p, i, f)) {
            return status::bad_request;
        }
        ++out.field_count;
        if (!note_field(f, facts)) {
            return status::bad_request;
        }
    }

    const bool http11 = out.version_minor == 1;
    out.content_length = facts.content_length;
    // RFC 9112 §9.3: 1.1 persists unless "close"; 1.0 only with "keep-alive".
    bool keep_alive = !facts.close && (http11 || facts.keep_alive);
    if (facts.transfer_encoding_seen && (!http11 || facts.content_length_seen)) {
        // RFC 9112 §6.1: Transfer-Encoding in 1.0 means faulty framing, and the connection is closed after the
        // message. §6.3 ¶3: Transfer-Encoding with Content-Length "ought to be handled as an error" (response
        // splitting): Transfer-Encoding wins, and nothing more is read from this connection.
        keep_alive = false;
    }
    if (head_request || out.status < 200 || out.status == 204 || out.status == 304) {
        // RFC 9112 §6.3 ¶1: ends at the empty line whatever the fields say (RFC 9110 §9.3.2, §15.2, §15.3.5,
        // §15.4.5).
        out.framing = body_framing::none;
    } else if (facts.transfer_encoding_seen) {
        // RFC 9112 §6.3 ¶4: chunked as the final coding frames the body; otherwise it runs to the close. A 1.0
        // message cannot be chunked (§6.1), so its body too runs to the close.
        out.framing = http11 && facts.final_chunked ? body_framing::chunked : body_framing::until_close;
    } else if (facts.content_length_seen) {
        out.framing = body_framing::content_length; // §6.3 ¶6
    } else {
        out.framing = body_framing::until_close; // §6.3 ¶8
    }
    // A close-delimited body ends the connection; after 101 it speaks another protocol (RFC 9110 §15.2.2).
    out.keep_alive = keep_alive && out.framing != body_framing::until_close && out.status != 101;
    return status::none;
}

// Checks the complete line p[start, end) (end just past its LF, after a CR) that is line number `index` of the
// head (0: the status line): the same rules parse_head() applies, in its order: the field count, the syntax, a
// Content-Length that cannot be one or that differs from an earlier one (`length` holds the first seen, if any).
status check_line(const char* p, std::size_t start, std::size_t end, std::size_t index, std::size_t max_count,
                  std::optional<std::uint64_t>& length) noexcept {
    if (index == 0) {
        status_line line;
        return parse_status_line(p, end, line) ? status::none : status::bad_request;
    }
    if (index > max_count) {
        return status::request_header_fields_too_large;
    }
    field f;
    std::size_t i = start;
    if (!scan_field_line(p, i, f)) {
        return status::bad_request;
    }
    if (f.name.size() == 14 && iequals(f.name, "content-length")) {
        std::uint64_t value = 0;
        if (!parse_content_length(f.value, value) || (length && *length != value)) {
            return status::bad_request;
        }
        length = value;
    }
    return status::none;
}

} // namespace

parse_result response_parser::parse(std::string_view input, response_head& out, bool head_request) noexcept {
    const char* const p = input.data();
    const std::size_t n = input.size();
    const limits& lim = *limits_;
    // A response has no separate status-line limit: its whole head (status line, fields, empty line) gets the
    // room a request line and a request header section would (saturating, for limits set to the maximum).
    const std::size_t max_head =
        lim.max_header_bytes > std::numeric_limits<std::size_t>::max() - lim.max_request_line_bytes
            ? std::numeric_limits<std::size_t>::max()
            : lim.max_header_bytes + lim.max_request_line_bytes;
    const std::size_t max_count = std::min(lim.max_header_count, max_fields_capacity);

    // Each check is an event at a byte offset (a byte that cannot start the version, an LF, or the offset where
    // the byte limit becomes provable) whose answer depends only on the bytes before it, and events are taken in
    // offset order. So a prefix of the input answers incomplete or the same as the whole input, whatever the split.
    // A byte limit a prefix proves is proved again by every later event, so each event checks it first.
    //
    // The version is checked on every call (at most 8 bytes): a peer that does not speak HTTP/1.x is refused at
    // once, not when its bytes reach the limit. No LF can come before the mismatch, as the prefix holds none.
    if (const std::size_t bad = version_mismatch(p, n); bad != std::string_view::npos) {
        return fail(bad + 1 > max_head ? status::request_header_fields_too_large : status::bad_request);
    }

    // Scan the new bytes LF by LF; an LF preceded by "\r\n\r" ends the head. The look-backs stay inside the buffer
    // (at >= 3 for the end, at >= 1 for the CR). A complete line is checked (check_line) only when this call ends
    // without the head: before any answer at a later LF, or before returning incomplete. A head that ends in this
    // call is checked once, whole, by parse_head(), in the same order: no later LF can have answered first, since
    // every earlier LF passed the limit and the CR checks. So a response that arrives in one piece is scanned twice
    // (LFs, then parse_head), not three times, and a split one still answers as the whole one does.
    std::size_t head_end = 0;
    std::size_t pos = scanned_;
    std::size_t complete_end = line_start_; // just past the last complete line found
    // Checks the complete lines not yet checked, up to complete_end.
    const auto check_lines = [&]() noexcept {
        while (line_start_ < complete_end) {
            const auto* lf = static_cast<const char*>(std::memchr(p + line_start_, '\n', complete_end - line_start_));
            const auto end = static_cast<std::size_t>(lf - p) + 1;
            if (const status s = check_line(p, line_start_, end, lines_, max_count, length_); s != status::none) {
                // A repeated call scans again from this line: the lines found after it were never checked.
                scanned_ = line_start_;
                return s;
            }
            ++lines_;
            line_start_ = end;
        }
        return status::none;
    };
    while (pos < n) {
        const void* lf = std::memchr(p + pos, '\n', n - pos);
        if (lf == nullptr) {
            break;
        }
        const auto at = static_cast<std::size_t>(static_cast<const char*>(lf) - p);
        // On an answer, scanned_ stays at this LF so that a repeated call finds the same event again.
        scanned_ = at;
        const bool head_ends = at >= 3 && p[at - 1] == '\r' && p[at - 2] == '\n' && p[at - 3] == '\r';
        // RFC 6585 §5: the head is whole when it ends here, else it needs at least an empty line more.
        if ((head_ends ? at + 1 : at + 3) > max_head) {
            const status s = check_lines();
            return fail(s != status::none ? s : status::request_header_fields_too_large);
        }
        // RFC 9112 §2.2: a bare LF is not a line terminator.
        if (at == 0 || p[at - 1] != '\r') {
            const status s = check_lines();
            return fail(s != status::none ? s : status::bad_request);
        }
        if (head_ends) {
            head_end = at + 1;
            break;
        }
        complete_end = at + 1;
        pos = at + 1;
    }

    if (head_end == 0) {
        if (const status s = check_lines(); s != status::none) {
            return fail(s);
        }
        scanned_ = n;
        // The head will be at least one byte (its final LF) longer than what is buffered.
        return n + 1 > max_head ? fail(status::request_header_fields_too_large) : parse_result{};
    }
    if (const status s = parse_head(p, head_end, max_count, head_request, out); s != status::none) {
        return fail(s);
    }
    return {parse_status::complete, head_end, status::none};
}

std::string_view response_head::find(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < field_count; ++i) {
        if (iequals(fields[i].name, name)) {
            return fields[i].value;
        }
    }
    return {};
}

} // namespace hotpath::http
