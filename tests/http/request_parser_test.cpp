// Table-driven tests of request_parser: each case is fed whole, split at every offset and byte by byte, always
// ending at a guard page so that any read past the input crashes the test.
#include <hotpath/http/request_parser.hpp>

#include "http/request_cases.hpp"
#include "support/guard_page.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hotpath::http {
namespace {

using namespace std::string_view_literals;
using test::guarded_buffer;
using namespace request_cases;

const limits default_limits{};

// Small limits so that boundary cases fit on one line.
const limits small_limits{.max_request_line_bytes = 32, .max_header_bytes = 64, .max_header_count = 3};

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
request_head feed_all_ways(const limits& lim, std::string_view input, const parse_result& expected,
                           guarded_buffer& whole) {
    guarded_buffer prefix_buffer(input.size() + 1);
    const std::string_view placed = whole.place(input);

    request_head head;
    request_parser parser(lim);
    const parse_result r = parser.parse(placed, head);
    EXPECT_TRUE(same(r, expected)) << "whole: got " << describe(r) << ", want " << describe(expected);
    if (r.status == parse_status::complete) {
        EXPECT_LE(r.consumed, input.size());
        for (std::string_view v : {head.method_token, head.target, head.path, head.query, head.host}) {
            EXPECT_TRUE(within(v, placed.substr(0, r.consumed)));
        }
        for (std::size_t i = 0; i < head.field_count; ++i) {
            EXPECT_TRUE(within(head.fields[i].name, placed.substr(0, r.consumed)));
            EXPECT_TRUE(within(head.fields[i].value, placed.substr(0, r.consumed)));
        }
    }
    // A repeated call with the same buffer answers the same.
    request_head again;
    EXPECT_TRUE(same(parser.parse(placed, again), expected)) << "repeated call";

    for (std::size_t k = 0; k < input.size(); ++k) {
        request_parser split(lim);
        request_head scratch;
        const parse_result first = split.parse(prefix_buffer.place(input.substr(0, k)), scratch);
        if (first.status != parse_status::incomplete && !same(first, expected)) {
            ADD_FAILURE() << "prefix of " << k << " bytes: got " << describe(first) << ", want incomplete or "
                          << describe(expected);
            break;
        }
        const parse_result second = split.parse(prefix_buffer.place(input), scratch);
        if (!same(second, expected)) {
            ADD_FAILURE() << "split at " << k << ": got " << describe(second) << ", want " << describe(expected);
            break;
        }
    }

    request_parser growing(lim);
    request_head scratch;
    for (std::size_t k = 1; k <= input.size(); ++k) {
        const parse_result step = growing.parse(prefix_buffer.place(input.substr(0, k)), scratch);
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

class parses : public testing::TestWithParam<ok_case> {};

TEST_P(parses, whole_split_and_growing) {
    const ok_case& c = GetParam();
    guarded_buffer whole(c.input.size() + 1);
    const parse_result expected{parse_status::complete, c.head.consumed.value_or(c.input.size()), status::none};
    const request_head head = feed_all_ways(default_limits, c.input, expected, whole);
    const head_expect& e = c.head;
    if (e.method) {
        EXPECT_EQ(head.method, *e.method);
    }
    if (e.method_token) {
        EXPECT_EQ(head.method_token, *e.method_token);
    }
    if (e.target) {
        EXPECT_EQ(head.target, *e.target);
    }
    if (e.path) {
        EXPECT_EQ(head.path, *e.path);
    }
    if (e.query) {
        EXPECT_EQ(head.query, *e.query);
    }
    if (e.minor) {
        EXPECT_EQ(head.version_minor, *e.minor);
    }
    if (e.keep_alive) {
        EXPECT_EQ(head.keep_alive, *e.keep_alive);
    }
    if (e.expect_continue) {
        EXPECT_EQ(head.expect_continue, *e.expect_continue);
    }
    if (e.framing) {
        EXPECT_EQ(head.framing, *e.framing);
    }
    if (e.content_length) {
        EXPECT_EQ(head.content_length, *e.content_length);
    }
    if (e.host) {
        EXPECT_EQ(head.host, *e.host);
    }
    if (e.field_count) {
        EXPECT_EQ(head.field_count, *e.field_count);
    }
}

INSTANTIATE_TEST_SUITE_P(request_parser, parses, testing::ValuesIn(ok_cases), by_label{});

class refuses : public testing::TestWithParam<error_case> {};

TEST_P(refuses, whole_split_and_growing) {
    const error_case& c = GetParam();
    guarded_buffer whole(c.input.size() + 1);
    feed_all_ways(default_limits, c.input, {parse_status::error, 0, c.error}, whole);
}

INSTANTIATE_TEST_SUITE_P(request_parser, refuses, testing::ValuesIn(error_cases), by_label{});

// ---------------------------------------------------------------------------------------------------------------
// Inputs that are fine so far but need more bytes.

const std::string_view incomplete_cases[] = {
    "",
    "G",
    "GET / HTTP/1.1",
    "GET / HTTP/1.1\r",
    "GET / HTTP/1.1\r\n",
    "GET / HTTP/1.1\r\nHost: a",
    "GET / HTTP/1.1\r\nHost: a\r\n",
    "GET / HTTP/1.1\r\nHost: a\r\n\r",
    "\r",
    "\r\n",
    "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n",
    "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nG",
    "GET /( HTTP/1.1\r\n", // a valid request line: its fields may follow
    "GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n",
    "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n",
    "GET / HTTP/1.1\r\nHost: a\r\nX: b", // the line is checked once its LF arrives
    "GET / HTTP/1.1\r\nHost a",
};

class waits : public testing::TestWithParam<std::string_view> {};

TEST_P(waits, for_more_bytes) {
    guarded_buffer whole(GetParam().size() + 1);
    feed_all_ways(default_limits, GetParam(), {parse_status::incomplete, 0, status::none}, whole);
}

INSTANTIATE_TEST_SUITE_P(request_parser, waits, testing::ValuesIn(incomplete_cases));

// ---------------------------------------------------------------------------------------------------------------
// Limits, with small_limits: request line 32 bytes, header section 64 bytes, 3 fields. A limit is enforced as soon
// as the buffered bytes prove it, before the syntax of the line whose end proves it (so a prefix never answers
// differently); a line refused earlier decides.

struct limit_case {
    std::string_view label;
    std::string_view input;
    parse_result expected;
};

constexpr parse_result complete(std::size_t consumed) {
    return {parse_status::complete, consumed, status::none};
}
constexpr parse_result waiting{parse_status::incomplete, 0, status::none};
constexpr parse_result too_long{parse_status::error, 0, status::uri_too_long};
constexpr parse_result too_large{parse_status::error, 0, status::request_header_fields_too_large};
constexpr parse_result bad{parse_status::error, 0, status::bad_request};

// Request lines below are 32 ("GET /" + 16 + " HTTP/1.0\r\n") or 33 bytes.
const limit_case limit_cases[] = {
    {"request line at limit", "GET /0123456789abcdef HTTP/1.0\r\n\r\n", complete(34)},
    {"request line at limit after leading CRLF", "\r\n\r\nGET /0123456789abcdef HTTP/1.0\r\n\r\n", complete(38)},
    {"request line over limit", "GET /0123456789abcdefg HTTP/1.0\r\n\r\n", too_long},
    {"request line over limit, no LF yet", "GET /0123456789abcdefg HTTP/1.0\r", too_long},
    {"request line at limit, no LF yet", "GET /0123456789abcdef HTTP/1.0\r", waiting},
    {"request line at limit, bare LF", "GET /0123456789abcdefg HTTP/1.0\n\r\n", bad},
    {"request line over limit, bare LF", "GET /0123456789abcdefgh HTTP/1.0\n\r\n", too_long},
    {"bad method byte beats request line over limit", "G(T /0123456789abcdefg HTTP/1.0\r\n\r\n", bad},
    {"request line over limit beats late bad method byte", "GETGETGETGETGETGETGETGETGETGETG( / HTTP/1.0\r\n\r\n",
     too_long},
    {"request line over limit beats version", "GET /0123456789abcdefg HTTP/2.0\r\n\r\n", too_long},
    {"request line far over limit", "GET /0123456789abcdef0123456789abcdef0123456789abcdef", too_long},
    // Header sections: "x: " + value + CRLF + CRLF is value + 7 bytes.
    {"header section at limit",
     "GET / HTTP/1.0\r\nx: 0123456789abcdef0123456789abcdef0123456789abcdef012345678\r\n\r\n", complete(80)},
    {"header section over limit",
     "GET / HTTP/1.0\r\nx: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789\r\n\r\n", too_large},
    {"header section at limit, incomplete",
     "GET / HTTP/1.0\r\nx: 0123456789abcdef0123456789abcdef0123456789abcdef012345678\r\n\r", waiting},
    {"header section over limit, incomplete",
     "GET / HTTP/1.0\r\nx: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789\r\n\r", too_large},
    {"header section over limit beats syntax",
     "GET / HTTP/1.0\r\nx : 0123456789abcdef0123456789abcdef0123456789abcdef0123456789\r\n\r\n", too_large},
    {"bad field within limits beats the empty line over limit",
     "GET / HTTP/1.0\r\nx : 0123456789abcdef0123456789abcdef0123456789abcdef012345678\r\n\r\n", bad},
    {"header section over limit, no LF at all",
     "GET / HTTP/1.0\r\nx: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", too_large},
    // Field counts.
    {"fields at count limit", "GET / HTTP/1.1\r\nHost: a\r\nb: 1\r\nc: 2\r\n\r\n", complete(39)},
    {"fields over count limit", "GET / HTTP/1.1\r\nHost: a\r\nb: 1\r\nc: 2\r\nd: 3\r\n\r\n", too_large},
    {"fields over count limit, incomplete", "GET / HTTP/1.1\r\nHost: a\r\nb: 1\r\nc: 2\r\nd: 3\r\n", too_large},
    {"empty fields over count limit", "GET / HTTP/1.0\r\na:\r\nb:\r\nc:\r\nd:\r\n\r\n", too_large},
    {"fields at count limit, incomplete", "GET / HTTP/1.1\r\nHost: a\r\nb: 1\r\nc: 2\r\n", waiting},
    {"bad field within limits", "GET / HTTP/1.1\r\nHost: a\r\nb : 1\r\n\r\n", bad},
    {"bad request line beats a later header section over limit",
     "GET /x\r\nx: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789\r\n\r\n", bad},
    {"bad field beats a later field over the count limit", "GET / HTTP/1.1\r\nHost: a\r\nb : 1\r\nc: 2\r\nd: 3\r\n\r\n",
     bad},
};

class limited : public testing::TestWithParam<limit_case> {};

TEST_P(limited, whole_split_and_growing) {
    const limit_case& c = GetParam();
    guarded_buffer whole(c.input.size() + 1);
    feed_all_ways(small_limits, c.input, c.expected, whole);
}

INSTANTIATE_TEST_SUITE_P(request_parser, limited, testing::ValuesIn(limit_cases), by_label{});

// The default limits with real sizes: 8 KiB request line, 32 KiB header section, 100 fields.
TEST(request_parser, default_limits_at_and_over) {
    const auto line = [](std::size_t bytes) { return "GET /" + std::string(bytes - 16, 'a') + " HTTP/1.0\r\n"; };
    const auto fields = [](std::size_t count) {
        std::string s;
        for (std::size_t i = 0; i < count; ++i) {
            s += "x" + std::to_string(i) + ": v\r\n";
        }
        return s;
    };
    const std::string section_at_limit = "x: " + std::string(32 * 1024 - 7, 'v') + "\r\n";
    const std::string section_over_limit = "x: " + std::string(32 * 1024 - 6, 'v') + "\r\n";
    const struct {
        std::string label;
        std::string input;
        parse_result expected;
    } cases[] = {
        {"line at limit", line(8192) + "\r\n", complete(8194)},
        {"line over limit", line(8193) + "\r\n", too_long},
        {"section at limit", line(16) + section_at_limit + "\r\n", complete(16 + 32 * 1024)},
        {"section over limit", line(16) + section_over_limit + "\r\n", too_large},
        {"100 fields", line(16) + fields(100) + "\r\n", complete(16 + fields(100).size() + 2)},
        {"101 fields", line(16) + fields(101) + "\r\n", too_large},
    };
    guarded_buffer buffer(64 * 1024);
    for (const auto& c : cases) {
        SCOPED_TRACE(c.label);
        request_head head;
        request_parser whole(default_limits);
        EXPECT_TRUE(same(whole.parse(buffer.place(c.input), head), c.expected));
        // Growing byte by byte stays O(total bytes): only new bytes are searched.
        request_parser growing(default_limits);
        parse_result r;
        for (std::size_t k = 1; k <= c.input.size(); ++k) {
            r = growing.parse(std::string_view(c.input).substr(0, k), head);
            if (r.status != parse_status::incomplete) {
                break;
            }
        }
        EXPECT_TRUE(same(r, c.expected)) << describe(r);
    }
}

TEST(request_parser, max_header_count_above_capacity_is_capped) {
    limits wide;
    wide.max_header_count = 1000;
    std::string input = "GET / HTTP/1.0\r\n";
    for (std::size_t i = 0; i <= max_fields_capacity; ++i) {
        input += "x: v\r\n";
    }
    input += "\r\n";
    request_head head;
    request_parser parser(wide);
    EXPECT_TRUE(same(parser.parse(input, head), too_large));
}

TEST(request_parser, reset_starts_the_next_request) {
    const std::string_view two = "GET /a HTTP/1.1\r\nHost: a\r\n\r\nPOST /b HTTP/1.0\r\n\r\n";
    request_head head;
    request_parser parser(default_limits);
    const parse_result first = parser.parse(two, head);
    ASSERT_EQ(first.status, parse_status::complete);
    EXPECT_EQ(head.target, "/a");
    parser.reset();
    const parse_result second = parser.parse(two.substr(first.consumed), head);
    ASSERT_EQ(second.status, parse_status::complete);
    EXPECT_EQ(head.method, method::post);
    EXPECT_EQ(head.target, "/b");
    EXPECT_EQ(first.consumed + second.consumed, two.size());
}

TEST(request_head, find_is_case_insensitive_and_first_wins) {
    const std::string_view input = "GET / HTTP/1.1\r\nHost: a\r\nX-Dup: 1\r\nx-dup: 2\r\n\r\n";
    request_head head;
    request_parser parser(default_limits);
    ASSERT_EQ(parser.parse(input, head).status, parse_status::complete);
    EXPECT_EQ(head.find("x-DUP"), "1");
    EXPECT_EQ(head.find("host"), "a");
    EXPECT_EQ(head.find("missing"), "");
    EXPECT_EQ(head.find("x-du"), "");
}

TEST(request_head, iequals) {
    EXPECT_TRUE(iequals("Content-Length", "content-length"));
    EXPECT_TRUE(iequals("", ""));
    EXPECT_FALSE(iequals("abc", "abd"));
    EXPECT_FALSE(iequals("abc", "ab"));
    EXPECT_FALSE(iequals("@", "`")); // differ only in bit 0x20, but are not letters
    EXPECT_FALSE(iequals("[", "{"));
    EXPECT_TRUE(iequals("\xc9", "\xc9"));
    EXPECT_FALSE(iequals("\xc9", "\xe9"));
}

} // namespace
} // namespace hotpath::http
