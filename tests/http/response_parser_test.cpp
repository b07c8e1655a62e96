// Table-driven tests of response_parser: each case is fed whole, split at every offset and byte by byte, always
// ending at a guard page so that any read past the input crashes the test.
#include <hotpath/http/response_parser.hpp>

#include "support/guard_page.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <limits>
#include <optional>
#include <string>

namespace hotpath::http {
namespace {

using namespace std::string_view_literals;
using test::guarded_buffer;

// Only the members that are set are checked.
struct head_expect {
    std::optional<std::size_t> consumed{}; // default: through the first empty line
    std::optional<unsigned> status{};
    std::optional<std::string_view> reason{};
    std::optional<int> minor{};
    std::optional<bool> keep_alive{};
    std::optional<body_framing> framing{};
    std::optional<std::uint64_t> content_length{};
    std::optional<std::size_t> field_count{};
};

struct ok_case {
    std::string_view label;
    std::string_view input;
    head_expect head;
    bool head_request = false; // the response answers a HEAD request
};

struct error_case {
    std::string_view label;
    std::string_view input;
    status error = status::bad_request;
    bool head_request = false;
};

const limits default_limits{};

// Small limits so that boundary cases fit on one line: a head of at most 16 + 48 = 64 bytes and 3 fields.
const limits small_limits{.max_request_line_bytes = 16, .max_header_bytes = 48, .max_header_count = 3};

bool same(const parse_result& a, const parse_result& b) {
    return a.status == b.status && (a.status != parse_status::complete || a.consumed == b.consumed) &&
           (a.status != parse_status::error || a.error == b.error);
}

std::string describe(const parse_result& r) {
    switch (r.status) {
    case parse_status::complete:
        return "complete, consumed " + std::to_string(r.consumed);
    case parse_status::incomplete:
        return "incomplete";
    case parse_status::error:
        return "error " + std::to_string(to_int(r.error));
    }
    return "?";
}

bool within(std::string_view inner, std::string_view outer) {
    return inner.empty() ||
           (inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size());
}

// Feeds `input` whole, then as a connection would: a prefix of k bytes followed by the whole buffer with the
// same parser (no reset), for every k; then growing one byte at a time. A prefix may answer incomplete, or
// exactly what the whole input answers (an error, or a head that ends inside the prefix); the last call
// must always answer `expected`. Returns the head of the whole-input parse, whose views point into `whole`.
response_head feed_all_ways(const limits& lim, std::string_view input, bool head_request, const parse_result& expected,
                            guarded_buffer& whole) {
    guarded_buffer prefix_buffer(input.size() + 1);
    const std::string_view placed = whole.place(input);

    response_head head;
    response_parser parser(lim);
    const parse_result r = parser.parse(placed, head, head_request);
    EXPECT_TRUE(same(r, expected)) << "whole: got " << describe(r) << ", want " << describe(expected);
    if (r.status == parse_status::complete) {
        EXPECT_LE(r.consumed, input.size());
        const std::string_view used = placed.substr(0, r.consumed);
        EXPECT_TRUE(within(head.reason, used));
        for (std::size_t i = 0; i < head.field_count; ++i) {
            EXPECT_TRUE(within(head.fields[i].name, used));
            EXPECT_TRUE(within(head.fields[i].value, used));
        }
    }
    // A repeated call with the same buffer answers the same.
    response_head again;
    EXPECT_TRUE(same(parser.parse(placed, again, head_request), expected)) << "repeated call";

    for (std::size_t k = 0; k < input.size(); ++k) {
        response_parser split(lim);
        response_head scratch;
        const parse_result first = split.parse(prefix_buffer.place(input.substr(0, k)), scratch, head_request);
        if (first.status != parse_status::incomplete && !same(first, expected)) {
            ADD_FAILURE() << "prefix of " << k << " bytes: got " << describe(first) << ", want incomplete or "
                          << describe(expected);
            break;
        }
        const parse_result second = split.parse(prefix_buffer.place(input), scratch, head_request);
        if (!same(second, expected)) {
            ADD_FAILURE() << "split at " << k << ": got " << describe(second) << ", want " << describe(expected);
            break;
        }
    }

    response_parser growing(lim);
    response_head scratch;
    for (std::size_t k = 1; k <= input.size(); ++k) {
        const parse_result step = growing.parse(prefix_buffer.place(input.substr(0, k)), scratch, head_request);
        if (k == input.size() ? !same(step, expected)
                              : (step.status != parse_status::incomplete && !same(step, expected))) {
            ADD_FAILURE() << "growing to " << k << " bytes: got " << describe(step) << ", want " << describe(expected);
            break;
        }
    }
    return head;
}

std::string test_name(std::size_t index, std::string_view label) {
    std::string name = "c" + std::to_string(index) + "_";
    for (const char c : label) {
        name += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
    }
    return name;
}

// Names each instantiated test after its row: "c<index>_<label>".
struct by_label {
    template <class Row>
    std::string operator()(const testing::TestParamInfo<Row>& row) const {
        return test_name(row.index, row.param.label);
    }
};

constexpr auto none = body_framing::none;
constexpr auto by_length = body_framing::content_length;
constexpr auto chunked = body_framing::chunked;
constexpr auto until_close = body_framing::until_close;

// ---------------------------------------------------------------------------------------------------------------
// Responses that parse.

const ok_case ok_cases[] = {
    {"200 with Content-Length",
     "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
     {.consumed = 38,
      .status = 200,
      .reason = "OK",
      .minor = 1,
      .keep_alive = true,
      .framing = by_length,
      .content_length = 5,
      .field_count = 1}},
    {"typical server response",
     "HTTP/1.1 200 OK\r\nDate: Wed, 02 Dec 2026 13:00:00 GMT\r\nServer: hotpath\r\nContent-Type: text/plain\r\n"
     "Content-Length: 13\r\n\r\nHello, World!",
     {.status = 200, .keep_alive = true, .framing = by_length, .content_length = 13, .field_count = 4}},
    {"Content-Length zero",
     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
     {.framing = by_length, .content_length = 0}},
    {"Content-Length with OWS", "HTTP/1.1 200 OK\r\ncontent-length: \t 42 \t\r\n\r\n", {.content_length = 42}},
    {"Content-Length leading zeros", "HTTP/1.1 200 OK\r\nContent-Length: 007\r\n\r\n", {.content_length = 7}},
    {"Content-Length 2^63-1",
     "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\n",
     {.framing = by_length, .content_length = 9223372036854775807ULL}},
    // RFC 9112 §6.3 ¶5, RFC 9110 §8.6: identical duplicates are accepted (as the same decimal value).
    {"identical duplicate Content-Length",
     "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
     {.keep_alive = true, .framing = by_length, .content_length = 5, .field_count = 2}},
    {"duplicate Content-Length, same value other spelling",
     "HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 005\r\n\r\n",
     {.framing = by_length, .content_length = 5}},
    {"three identical Content-Length",
     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
     {.framing = by_length, .content_length = 0}},
    // Transfer-Encoding (RFC 9112 §6.1, §6.3 ¶4): the final coding decides.
    {"chunked",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
     {.consumed = 47, .keep_alive = true, .framing = chunked}},
    {"chunked uppercase", "HTTP/1.1 200 OK\r\ntransfer-encoding: CHUNKED\r\n\r\n", {.framing = chunked}},
    {"gzip, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", {.framing = chunked}},
    {"gzip then chunked in two fields",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
     {.keep_alive = true, .framing = chunked}},
    {"chunked with empty list elements",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: , chunked ,, \r\n\r\n",
     {.framing = chunked}},
    {"chunked, gzip is close-delimited",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
     {.keep_alive = false, .framing = until_close}},
    {"chunked then gzip in two fields",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n",
     {.keep_alive = false, .framing = until_close}},
    {"TE gzip alone",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
     {.keep_alive = false, .framing = until_close}},
    {"TE identity", "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n", {.framing = until_close}},
    {"TE chunked with parameter",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;x=1\r\n\r\n",
     {.framing = until_close}},
    {"TE xchunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n", {.framing = until_close}},
    {"TE empty", "HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n", {.keep_alive = false, .framing = until_close}},
    {"underscore name is another field",
     "HTTP/1.1 200 OK\r\nTransfer_Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
     {.framing = by_length, .content_length = 1}},
    // §6.3 ¶3: Transfer-Encoding overrides Content-Length, and the connection is not reused.
    {"TE chunked and CL",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
     {.keep_alive = false, .framing = chunked}},
    {"CL and TE chunked",
     "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
     {.keep_alive = false, .framing = chunked}},
    {"CL and TE gzip",
     "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\n",
     {.framing = until_close}},
    // §6.1: Transfer-Encoding in 1.0 is faulty framing: read to the close.
    {"TE chunked on 1.0",
     "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n",
     {.minor = 0, .keep_alive = false, .framing = until_close}},
    {"TE and CL on 1.0",
     "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n",
     {.keep_alive = false, .framing = until_close}},
    // §6.3 ¶8: neither → the body runs to the close.
    {"no CL no TE", "HTTP/1.1 200 OK\r\n\r\n", {.keep_alive = false, .framing = until_close, .field_count = 0}},
    {"no CL no TE with keep-alive",
     "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\nbody",
     {.consumed = 43, .keep_alive = false, .framing = until_close}},
    {"no CL no TE on 1.0 with keep-alive",
     "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n",
     {.keep_alive = false, .framing = until_close}},
    {"500 without CL", "HTTP/1.1 500 Internal Server Error\r\n\r\n", {.status = 500, .framing = until_close}},
    // §6.3 ¶1: HEAD, 1xx, 204 and 304 end at the empty line whatever the fields say.
    {"HEAD with CL",
     "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
     {.keep_alive = true, .framing = none, .content_length = 5},
     true},
    {"HEAD with TE chunked",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
     {.keep_alive = true, .framing = none},
     true},
    {"HEAD without CL", "HTTP/1.1 200 OK\r\n\r\n", {.keep_alive = true, .framing = none}, true},
    {"HEAD 1.0 without CL", "HTTP/1.0 200 OK\r\n\r\n", {.keep_alive = false, .framing = none}, true},
    {"HEAD 404", "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\n", {.status = 404, .framing = none}, true},
    {"100 Continue",
     "HTTP/1.1 100 Continue\r\n\r\n",
     {.status = 100, .reason = "Continue", .keep_alive = true, .framing = none, .field_count = 0}},
    {"100 Continue then the final response",
     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
     {.consumed = 25, .status = 100, .framing = none}},
    {"103 Early Hints with a field",
     "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n",
     {.status = 103, .keep_alive = true, .framing = none, .field_count = 1}},
    {"101 Switching Protocols",
     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
     {.status = 101, .keep_alive = false, .framing = none}},
    {"204", "HTTP/1.1 204 No Content\r\n\r\n", {.status = 204, .keep_alive = true, .framing = none}},
    {"204 with TE", "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", {.framing = none}},
    {"304 with CL",
     "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
     {.status = 304, .keep_alive = true, .framing = none, .content_length = 5}},
    {"205 has a body",
     "HTTP/1.1 205 Reset Content\r\nContent-Length: 0\r\n\r\n",
     {.status = 205, .framing = by_length}},
    // Connection (RFC 9112 §9.3) is a list of case-insensitive tokens.
    {"1.1 close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", {.keep_alive = false}},
    {"1.1 CLOSE in a list",
     "HTTP/1.1 200 OK\r\nConnection: Upgrade ,\tCLOSE\r\nContent-Length: 0\r\n\r\n",
     {.keep_alive = false}},
    {"1.1 closed is not close",
     "HTTP/1.1 200 OK\r\nConnection: closed, x-close\r\nContent-Length: 0\r\n\r\n",
     {.keep_alive = true}},
    {"1.1 close in second field",
     "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
     {.keep_alive = false}},
    {"1.0 close by default", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", {.minor = 0, .keep_alive = false}},
    {"1.0 keep-alive",
     "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
     {.minor = 0, .keep_alive = true, .framing = by_length}},
    {"1.0 Keep-Alive in a list",
     "HTTP/1.0 200 OK\r\nConnection: foo, Keep-Alive\r\nContent-Length: 0\r\n\r\n",
     {.keep_alive = true}},
    {"1.0 keep-alive, close",
     "HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n",
     {.keep_alive = false}},
    {"1.0 close then keep-alive fields",
     "HTTP/1.0 200 OK\r\nConnection: close\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
     {.keep_alive = false}},
    {"1.0 empty Connection", "HTTP/1.0 200 OK\r\nConnection:\r\nContent-Length: 0\r\n\r\n", {.keep_alive = false}},
    {"1.0 204 with keep-alive",
     "HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n",
     {.keep_alive = true, .framing = none}},
    // Status line (RFC 9112 §4): the reason-phrase may be empty, and its SP missing.
    {"empty reason with SP", "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", {.status = 200, .reason = ""}},
    {"no reason no SP", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", {.status = 200, .reason = "", .field_count = 1}},
    {"no reason no SP no fields", "HTTP/1.1 204\r\n\r\n", {.status = 204, .reason = "", .framing = none}},
    {"reason with spaces", "HTTP/1.1 404 Not Found\r\n\r\n", {.status = 404, .reason = "Not Found"}},
    {"reason kept as sent", "HTTP/1.1 200  OK \t\r\n\r\n", {.reason = " OK \t"}},
    {"reason with obs-text", "HTTP/1.1 200 D\xc3\xa9j\xc3\xa0 vu\r\n\r\n", {.reason = "D\xc3\xa9j\xc3\xa0 vu"}},
    {"reason of symbols", "HTTP/1.1 200 !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\r\n\r\n", {.status = 200}},
    {"reason that looks like a status line", "HTTP/1.1 200 HTTP/1.1 500 X\r\n\r\n", {.status = 200}},
    {"status 100 lowest", "HTTP/1.1 100 \r\n\r\n", {.status = 100}},
    {"status 599", "HTTP/1.1 599 X\r\n\r\n", {.status = 599, .framing = until_close}},
    {"status 999 highest", "HTTP/1.1 999 X\r\n\r\n", {.status = 999}},
    {"status 199 is interim", "HTTP/1.1 199 X\r\n\r\n", {.status = 199, .framing = none}},
    {"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", {.consumed = 38, .minor = 0}},
    // Fields: OWS trimmed, obs-text allowed in values, names case-insensitive.
    {"OWS trimmed", "HTTP/1.1 200 OK\r\nX-A: \t a b \t\r\nX-B:c\r\n\r\n", {.field_count = 2}},
    {"empty value", "HTTP/1.1 200 OK\r\nX-Empty:\r\n\r\n", {.field_count = 1}},
    {"value of only OWS", "HTTP/1.1 200 OK\r\nX-Empty:  \t \r\n\r\n", {.field_count = 1}},
    {"obs-text in value", "HTTP/1.1 200 OK\r\nX: caf\xc3\xa9 \xff\x80\r\n\r\n", {.field_count = 1}},
    {"name of tchar symbols", "HTTP/1.1 200 OK\r\n!#$%&'*+-.^_`|~09azAZ: v\r\n\r\n", {.field_count = 1}},
    {"Set-Cookie twice", "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n", {.field_count = 2}},
    // Pipelined responses: consumed stops at the end of the first head.
    {"pipelined stops at first head",
     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 204 No Content\r\n\r\n",
     {.consumed = 38, .status = 200, .content_length = 2}},
    {"pipelined heads back to back",
     "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
     {.consumed = 27, .status = 204}},
    {"pipelined after a partial second", "HTTP/1.1 304 Not Modified\r\n\r\nGARBAGE\n\r", {.consumed = 29}},
    {"body bytes look like a head end",
     "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n\r\n\r\n",
     {.consumed = 38, .content_length = 4}},
};

class response_parses : public testing::TestWithParam<ok_case> {};

TEST_P(response_parses, whole_split_and_growing) {
    const ok_case& c = GetParam();
    guarded_buffer whole(c.input.size() + 1);
    const std::size_t head_end = c.input.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string_view::npos) << "case without an empty line";
    const std::size_t consumed = c.head.consumed.value_or(head_end + 4);
    const parse_result expected{parse_status::complete, consumed, status::none};
    const response_head head = feed_all_ways(default_limits, c.input, c.head_request, expected, whole);
    const head_expect& e = c.head;
    if (e.status) {
        EXPECT_EQ(head.status, *e.status);
    }
    if (e.reason) {
        EXPECT_EQ(head.reason, *e.reason);
    }
    if (e.minor) {
        EXPECT_EQ(head.version_minor, *e.minor);
    }
    if (e.keep_alive) {
        EXPECT_EQ(head.keep_alive, *e.keep_alive);
    }
    if (e.framing) {
        EXPECT_EQ(head.framing, *e.framing);
    }
    if (e.content_length) {
        EXPECT_EQ(head.content_length, *e.content_length);
    }
    if (e.field_count) {
        EXPECT_EQ(head.field_count, *e.field_count);
    }
}

INSTANTIATE_TEST_SUITE_P(response_parser, response_parses, testing::ValuesIn(ok_cases), by_label{});

// ---------------------------------------------------------------------------------------------------------------
// Responses that are refused: 400 means malformed.

const error_case error_cases[] = {
    // RFC 9112 §4: status-code = 3DIGIT, here 100..999.
    {"status of 2 digits", "HTTP/1.1 20 OK\r\n\r\n"},
    {"status of 2 digits no reason", "HTTP/1.1 20\r\n\r\n"},
    {"status of 4 digits", "HTTP/1.1 2000 OK\r\n\r\n"},
    {"status of 4 digits no reason", "HTTP/1.1 2000\r\n\r\n"},
    {"status of letters", "HTTP/1.1 abc OK\r\n\r\n"},
    {"status with a letter", "HTTP/1.1 2x0 OK\r\n\r\n"},
    {"status with a sign", "HTTP/1.1 +20 OK\r\n\r\n"},
    {"status 099", "HTTP/1.1 099 X\r\n\r\n"},
    {"status 000", "HTTP/1.1 000 X\r\n\r\n"},
    {"status missing", "HTTP/1.1 \r\n\r\n"},
    {"status and SP missing", "HTTP/1.1\r\n\r\n"},
    {"two SP before status", "HTTP/1.1  200 OK\r\n\r\n"},
    {"HTAB before status", "HTTP/1.1\t200 OK\r\n\r\n"},
    {"HTAB after status", "HTTP/1.1 200\tOK\r\n\r\n"},
    {"status glued to reason", "HTTP/1.1 200OK\r\n\r\n"},
    // RFC 9112 §2.3: only HTTP/1.0 and HTTP/1.1, case-sensitive.
    {"HTTP/1.2", "HTTP/1.2 200 OK\r\n\r\n"},
    {"HTTP/2.0", "HTTP/2.0 200 OK\r\n\r\n"},
    {"HTTP/2", "HTTP/2 200 OK\r\n\r\n"},
    {"HTTP/0.9", "HTTP/0.9 200 OK\r\n\r\n"},
    {"HTTP/1.10", "HTTP/1.10 200 OK\r\n\r\n"},
    {"HTTP/1 without minor", "HTTP/1 200 OK\r\n\r\n"},
    {"lowercase version", "http/1.1 200 OK\r\n\r\n"},
    {"ICY", "ICY 200 OK\r\n\r\n"},
    {"leading SP", " HTTP/1.1 200 OK\r\n\r\n"},
    {"leading CRLF", "\r\nHTTP/1.1 200 OK\r\n\r\n"},
    {"empty head", "\r\n\r\n"},
    {"HTML instead of a head", "<html>\r\n\r\n"},
    {"TLS record", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"},
    {"request line", "GET / HTTP/1.1\r\nHost: a\r\n\r\n"},
    // RFC 9112 §2.2: CRLF only.
    {"bare LF ends status line", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n"},
    {"bare LF refused at once", "HTTP/1.1 200 OK\n"},
    {"bare LF ends a field", "HTTP/1.1 200 OK\r\nX: a\nY: b\r\n\r\n"},
    {"bare LF as empty line", "HTTP/1.1 200 OK\r\nX: a\r\n\n"},
    {"bare LF head end", "HTTP/1.1 200 OK\n\n"},
    {"bare LF in reason", "HTTP/1.1 200 O\nK\r\n\r\n"},
    {"bare LF in value", "HTTP/1.1 200 OK\r\nX: a\nb\r\n\r\n"},
    {"bare CR in reason", "HTTP/1.1 200 O\rK\r\n\r\n"},
    {"bare CR ends status line", "HTTP/1.1 200 OK\rX: a\r\n\r\n"},
    {"bare CR in value", "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n"},
    {"bare CR in name", "HTTP/1.1 200 OK\r\nX\r: b\r\n\r\n"},
    {"CR CR LF", "HTTP/1.1 200 OK\r\r\n\r\n"},
    // Control bytes in the reason-phrase.
    {"NUL in reason", "HTTP/1.1 200 O\0K\r\n\r\n"sv},
    {"DEL in reason", "HTTP/1.1 200 O\x7f\r\n\r\n"},
    {"ESC in reason", "HTTP/1.1 200 \x1b[0m\r\n\r\n"},
    // §5: field lines; §5.2: obs-fold.
    {"obs-fold with SP", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n"},
    {"obs-fold with HTAB", "HTTP/1.1 200 OK\r\nX: a\r\n\tb\r\n\r\n"},
    {"first field line folded", "HTTP/1.1 200 OK\r\n X: a\r\n\r\n"},
    {"CL obs-fold", "HTTP/1.1 200 OK\r\nContent-Length:\r\n 5\r\n\r\n"},
    {"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n"},
    {"tab before colon", "HTTP/1.1 200 OK\r\nX\t: a\r\n\r\n"},
    {"empty field name", "HTTP/1.1 200 OK\r\n: a\r\n\r\n"},
    {"missing colon", "HTTP/1.1 200 OK\r\nX-A b\r\n\r\n"},
    {"name with (", "HTTP/1.1 200 OK\r\nX(A: b\r\n\r\n"},
    {"name with obs-text", "HTTP/1.1 200 OK\r\nX\xc3\xa9: b\r\n\r\n"},
    {"NUL in value", "HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n"sv},
    {"DEL in value", "HTTP/1.1 200 OK\r\nX: a\x7f\r\n\r\n"},
    {"vertical tab in value", "HTTP/1.1 200 OK\r\nX: a\vb\r\n\r\n"},
    // RFC 9110 §8.6: Content-Length = 1*DIGIT; RFC 9112 §6.3 ¶5: differing values are refused.
    {"CL letters", "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n"},
    {"CL empty", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n"},
    {"CL minus", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"},
    {"CL plus", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n"},
    {"CL inner space", "HTTP/1.1 200 OK\r\nContent-Length: 5 5\r\n\r\n"},
    {"CL hex", "HTTP/1.1 200 OK\r\nContent-Length: 0x5\r\n\r\n"},
    {"CL decimal point", "HTTP/1.1 200 OK\r\nContent-Length: 5.0\r\n\r\n"},
    {"CL list in one field", "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n"},
    {"CL 2^63", "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n"},
    {"CL 2^64", "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n"},
    {"CL 30 digits", "HTTP/1.1 200 OK\r\nContent-Length: 100000000000000000000000000005\r\n\r\n"},
    {"CL differing duplicates", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"},
    {"CL differing duplicates any case", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 50\r\n\r\n"},
    {"CL duplicate then empty", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length:\r\n\r\n"},
    {"CL third differs", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\nContent-Length: 4\r\n\r\n"},
    {"CL differing with TE",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"},
    // The rules hold whatever the framing ends up being.
    {"bad CL in a HEAD response", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", status::bad_request, true},
    {"differing CL in a 304", "HTTP/1.1 304 Not Modified\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"},
    {"obs-fold in a 100", "HTTP/1.1 100 Continue\r\nX: a\r\n b\r\n\r\n"},
};

class response_refuses : public testing::TestWithParam<error_case> {};

TEST_P(response_refuses, whole_split_and_growing) {
    const error_case& c = GetParam();
    guarded_buffer whole(c.input.size() + 1);
    feed_all_ways(default_limits, c.input, c.head_request, {parse_status::error, 0, c.error}, whole);
}

INSTANTIATE_TEST_SUITE_P(response_parser, response_refuses, testing::ValuesIn(error_cases), by_label{});

// A peer that does not speak HTTP/1.x is refused from its first bytes, without waiting for an empty line.
TEST(response_parser, refuses_a_foreign_protocol_at_once) {
    for (const std::string_view input : {"X"sv, "h"sv, "HTTP/2"sv, "HTTP/1.2"sv, "HTTP/1,"sv, "\x16\x03"sv, "\n"sv}) {
        SCOPED_TRACE(input);
        guarded_buffer buffer(input.size());
        response_head head;
        response_parser parser(default_limits);
        const parse_result r = parser.parse(buffer.place(input), head, false);
        EXPECT_TRUE(same(r, {parse_status::error, 0, status::bad_request})) << describe(r);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Inputs that are fine so far but need more bytes.

const std::string_view incomplete_cases[] = {
    "",
    "H",
    "HTTP/1.",
    "HTTP/1.1",
    "HTTP/1.0 ",
    "HTTP/1.1 200 OK",
    "HTTP/1.1 200 OK\r",
    "HTTP/1.1 200 OK\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 5",
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r",
};

// A line that cannot be valid is refused as soon as its LF arrives, however much of the head is still to come
// (issue #11: a bad status line waited for the response timeout).
const std::string_view refused_at_once_cases[] = {
    "HTTP/1.1 2x0 OK\r\n",
    "HTTP/1.1 200\x01\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: x\r\n",
    "HTTP/1.1 200 OK\r\nbad name: 1\r\n",
    "HTTP/1.1 200 OK\r\nno colon\r\nContent-Length: 5\r\n",
    "HTTP/1.1 200 OK\r\nX: 1\r\n obs-fold\r\n",
};

class response_refused : public testing::TestWithParam<std::string_view> {};

TEST_P(response_refused, at_the_first_bad_line) {
    guarded_buffer whole(GetParam().size() + 1);
    feed_all_ways(default_limits, GetParam(), false, {parse_status::error, 0, status::bad_request}, whole);
}

INSTANTIATE_TEST_SUITE_P(response_parser, response_refused, testing::ValuesIn(refused_at_once_cases));

class response_waits : public testing::TestWithParam<std::string_view> {};

TEST_P(response_waits, for_more_bytes) {
    guarded_buffer whole(GetParam().size() + 1);
    feed_all_ways(default_limits, GetParam(), false, {parse_status::incomplete, 0, status::none}, whole);
}

INSTANTIATE_TEST_SUITE_P(response_parser, response_waits, testing::ValuesIn(incomplete_cases));

// ---------------------------------------------------------------------------------------------------------------
// Limits, with small_limits: a head of at most 64 bytes and 3 fields. The byte limit is enforced as soon as the
// buffered bytes prove it, and before any syntax check. The field count is checked once the head is whole (the
// parser keeps no count between calls), line by line before each line's syntax.

struct limit_case {
    std::string_view label;
    std::string_view input;
    parse_result expected;
};

constexpr parse_result complete(std::size_t consumed) {
    return {parse_status::complete, consumed, status::none};
}
constexpr parse_result waiting{parse_status::incomplete, 0, status::none};
constexpr parse_result too_large{parse_status::error, 0, status::request_header_fields_too_large};
constexpr parse_result bad{parse_status::error, 0, status::bad_request};

// "HTTP/1.1 200 OK\r\n" is 17 bytes and "x: " + value + CRLF + CRLF is value + 7: a 40-byte value makes 64.
const limit_case limit_cases[] = {
    {"head at limit", "HTTP/1.1 200 OK\r\nx: 0123456789abcdef0123456789abcdef01234567\r\n\r\n", complete(64)},
    {"head over limit", "HTTP/1.1 200 OK\r\nx: 0123456789abcdef0123456789abcdef012345678\r\n\r\n", too_large},
    {"head at limit, incomplete", "HTTP/1.1 200 OK\r\nx: 0123456789abcdef0123456789abcdef01234567\r\n\r", waiting},
    {"head over limit, incomplete", "HTTP/1.1 200 OK\r\nx: 0123456789abcdef0123456789abcdef012345678\r\n\r", too_large},
    {"head at limit, then a body",
     "HTTP/1.1 200 OK\r\nx: 0123456789abcdef0123456789abcdef01234567\r\n\r\n0123456789abcdef0123456789abcdef",
     complete(64)},
    {"head over limit beats syntax", "HTTP/1.1 200 OK\r\nx : 0123456789abcdef0123456789abcdef01234567\r\n\r\n",
     too_large},
    {"head over limit beats bare LF", "HTTP/1.1 200 OK\r\nx: 0123456789abcdef0123456789abcdef0123456789\n\r\n",
     too_large},
    {"bare LF within the limit", "HTTP/1.1 200 OK\r\nx: 0123456789abcdef0123456789abcdef0123456\n\r\n", bad},
    {"head over limit, no LF at all",
     "HTTP/1.1 200 OK\r\nx: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", too_large},
    {"status line alone over limit", "HTTP/1.1 200 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
     too_large},
    {"status line of 63 bytes", "HTTP/1.1 200 0123456789abcdef0123456789abcdef0123456789abcdef\r\n\r\n", too_large},
    {"status line of 62 bytes", "HTTP/1.1 200 0123456789abcdef0123456789abcdef0123456789abcde\r\n\r\n", complete(64)},
    // Field counts.
    {"fields at count limit", "HTTP/1.1 200 OK\r\na: 1\r\nb: 2\r\nc: 3\r\n\r\n", complete(37)},
    {"fields over count limit", "HTTP/1.1 200 OK\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\n\r\n", too_large},
    {"empty fields over count limit", "HTTP/1.1 200 OK\r\na:\r\nb:\r\nc:\r\nd:\r\n\r\n", too_large},
    {"fields over count limit, incomplete", "HTTP/1.1 200 OK\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\n", too_large},
    {"fields at count limit, incomplete", "HTTP/1.1 200 OK\r\na: 1\r\nb: 2\r\nc: 3\r\n", waiting},
    {"bad field before the count limit", "HTTP/1.1 200 OK\r\na : 1\r\nb: 2\r\nc: 3\r\nd: 4\r\n\r\n", bad},
    {"bad field past the count limit", "HTTP/1.1 200 OK\r\na: 1\r\nb: 2\r\nc: 3\r\nd : 4\r\n\r\n", too_large},
    {"foreign protocol within limits", "SSH-2.0-OpenSSH_9.6\r\n", bad},
};

class response_limited : public testing::TestWithParam<limit_case> {};

TEST_P(response_limited, whole_split_and_growing) {
    const limit_case& c = GetParam();
    guarded_buffer whole(c.input.size() + 1);
    feed_all_ways(small_limits, c.input, false, c.expected, whole);
}

INSTANTIATE_TEST_SUITE_P(response_parser, response_limited, testing::ValuesIn(limit_cases), by_label{});

// A limit smaller than "HTTP/1.x" answers 431 rather than 400 for a foreign protocol, whatever the split.
TEST(response_parser, tiny_limit_beats_the_version_check) {
    const limits tiny{.max_request_line_bytes = 2, .max_header_bytes = 2, .max_header_count = 1};
    guarded_buffer whole(64);
    feed_all_ways(tiny, "HTTP/1.X", false, too_large, whole);
    feed_all_ways(tiny, "HTTX", false, bad, whole);
    feed_all_ways(tiny, "HTTP/1.1 200 OK\r\n\r\n", false, too_large, whole);
}

// The default limits with real sizes: a head of 8 KiB + 32 KiB, 100 fields.
TEST(response_parser, default_limits_at_and_over) {
    const std::size_t max_head = 8 * 1024 + 32 * 1024;
    const std::string status_line = "HTTP/1.1 200 OK\r\n"; // 17 bytes
    const auto fields = [](std::size_t count) {
        std::string s;
        for (std::size_t i = 0; i < count; ++i) {
            s += "x" + std::to_string(i) + ": v\r\n";
        }
        return s;
    };
    const std::string at_limit = status_line + "x: " + std::string(max_head - 24, 'v') + "\r\n\r\n";
    const std::string over_limit = status_line + "x: " + std::string(max_head - 23, 'v') + "\r\n\r\n";
    const struct {
        std::string label;
        std::string input;
        parse_result expected;
    } cases[] = {
        {"head at limit", at_limit, complete(max_head)},
        {"head over limit", over_limit, too_large},
        {"100 fields", status_line + fields(100) + "\r\n", complete(17 + fields(100).size() + 2)},
        {"101 fields", status_line + fields(101) + "\r\n", too_large},
    };
    guarded_buffer buffer(64 * 1024);
    for (const auto& c : cases) {
        SCOPED_TRACE(c.label);
        response_head head;
        response_parser whole(default_limits);
        EXPECT_TRUE(same(whole.parse(buffer.place(c.input), head, false), c.expected));
        // Growing byte by byte stays O(total bytes): only new bytes are searched.
        response_parser growing(default_limits);
        parse_result r;
        for (std::size_t k = 1; k <= c.input.size(); ++k) {
            r = growing.parse(std::string_view(c.input).substr(0, k), head, false);
            if (r.status != parse_status::incomplete) {
                break;
            }
        }
        EXPECT_TRUE(same(r, c.expected)) << describe(r);
    }
}

TEST(response_parser, max_header_count_above_capacity_is_capped) {
    limits wide;
    wide.max_header_count = 1000;
    std::string input = "HTTP/1.1 200 OK\r\n";
    for (std::size_t i = 0; i < max_fields_capacity; ++i) {
        input += "x: v\r\n";
    }
    const std::string at_capacity = input + "\r\n";
    const std::string over_capacity = input + "x: v\r\n\r\n";
    response_head head;
    response_parser parser(wide);
    EXPECT_TRUE(same(parser.parse(at_capacity, head, false), complete(at_capacity.size())));
    EXPECT_EQ(head.field_count, max_fields_capacity);
    parser.reset();
    EXPECT_TRUE(same(parser.parse(over_capacity, head, false), too_large));
}

TEST(response_parser, limits_at_their_maximum_do_not_overflow) {
    limits huge;
    huge.max_request_line_bytes = std::numeric_limits<std::size_t>::max();
    huge.max_header_bytes = std::numeric_limits<std::size_t>::max();
    response_head head;
    response_parser parser(huge);
    EXPECT_TRUE(same(parser.parse("HTTP/1.1 200 OK\r\n", head, false), waiting));
    EXPECT_TRUE(same(parser.parse("HTTP/1.1 200 OK\r\n\r\n", head, false), complete(19)));
}

// Fed every prefix of `input` in turn (one buffer growing, as bytes arrive), the parser answers nothing or the
// same as it did to the whole input.
void expect_growing_input_answers(const limits& l, const std::string& input, const parse_result& expected) {
    response_head head;
    guarded_buffer buffer(input.size() + 1);
    response_parser growing(l);
    for (std::size_t k = 1; k <= input.size(); ++k) {
        const parse_result step = growing.parse(buffer.place(std::string_view(input).substr(0, k)), head, false);
        if (step.status != parse_status::incomplete) {
            ASSERT_TRUE(same(step, expected)) << "growing to " << k << " bytes: " << describe(step);
        }
    }
}

// Found by the fuzzer: a field over the count (431 when its line ends), then, in bytes that arrive later, a bare LF
// (400 at once). Lines are checked only when a call ends without the head; a call that refused a line must start
// the next one from that line again, so that growing input keeps answering 431, as the whole input does.
TEST(response_parser, a_line_refused_before_a_later_bad_lf_answers_the_same_as_it_grows) {
    const limits four_fields{.max_request_line_bytes = 32, .max_header_bytes = 64, .max_header_count = 4};
    const std::string input = "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC:2\r\nC: 3\r\nD: 5\r\nE: 5\rTT 3\r\n 5\r\b\r:\n"
                              "E 5\r\n\r\n";
    response_head head;
    response_parser whole(four_fields);
    const parse_result expected = whole.parse(input, head, false);
    ASSERT_EQ(expected.status, parse_status::error);
    EXPECT_EQ(expected.error, status::request_header_fields_too_large);
    expect_growing_input_answers(four_fields, input, expected);
}

// Two Content-Length values that differ (400 at the second) before a field over the count (431 at its line): every
// prefix that holds the second one answers 400, as the whole head does, not 431 from the later line.
TEST(response_parser, differing_lengths_answer_400_before_a_later_field_over_the_count) {
    const limits four_fields{.max_request_line_bytes = 32, .max_header_bytes = 64, .max_header_count = 4};
    const std::string input =
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\na: b\r\nc: d\r\ne: f\r\n\r\n";
    response_head head;
    response_parser whole(four_fields);
    const parse_result expected = whole.parse(input, head, false);
    ASSERT_EQ(expected.status, parse_status::error);
    EXPECT_EQ(expected.error, status::bad_request);
    expect_growing_input_answers(four_fields, input, expected);
}

TEST(response_parser, reset_starts_the_next_response) {
    const std::string_view stream = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
    response_head head;
    response_parser parser(default_limits);
    const parse_result interim = parser.parse(stream, head, false);
    ASSERT_EQ(interim.status, parse_status::complete);
    EXPECT_EQ(head.status, 100U);
    EXPECT_EQ(head.framing, body_framing::none);
    parser.reset();
    const std::string_view rest = stream.substr(interim.consumed);
    const parse_result final_response = parser.parse(rest, head, false);
    ASSERT_EQ(final_response.status, parse_status::complete);
    EXPECT_EQ(head.status, 200U);
    EXPECT_EQ(head.reason, "OK");
    EXPECT_EQ(head.framing, body_framing::content_length);
    EXPECT_EQ(head.content_length, 2U);
    EXPECT_EQ(rest.substr(final_response.consumed), "hi");
}

TEST(response_head, find_is_case_insensitive_and_first_wins) {
    const std::string_view input = "HTTP/1.1 200 OK\r\nX-Dup: 1\r\nx-dup: 2\r\nContent-Length:  3 \r\n\r\n";
    response_head head;
    response_parser parser(default_limits);
    ASSERT_EQ(parser.parse(input, head, false).status, parse_status::complete);
    EXPECT_EQ(head.find("x-DUP"), "1");
    EXPECT_EQ(head.find("content-length"), "3");
    EXPECT_EQ(head.find("missing"), "");
    EXPECT_EQ(head.find("x-du"), "");
}

} // namespace
} // namespace hotpath::http
