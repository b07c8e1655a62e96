// Table-driven tests of chunked_decoder: each case decoded whole and in place, split at every offset in place, and
// byte by byte with each byte at a guard page.
#include <hotpath/http/chunked_decoder.hpp>

#include "support/guard_page.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace hotpath::http {
namespace {

using namespace std::string_view_literals;
using test::guarded_buffer;

// Small limits so that boundary cases fit on one line: body 64 bytes, trailer section 32, extensions 16.
const limits small_limits{.max_header_bytes = 32, .max_body_bytes = 64, .max_chunk_extension_bytes = 16};

constexpr std::size_t all = std::string_view::npos;

struct chunk_case {
    std::string_view label;
    std::string_view input;
    chunk_status status;
    http::status error;       // when status is error
    std::string_view payload; // decoded bytes (when done or incomplete)
    std::size_t consumed;     // when done; `all` for the whole input
};

constexpr chunk_status done = chunk_status::done;
constexpr chunk_status more = chunk_status::incomplete;
constexpr chunk_status error = chunk_status::error;
constexpr http::status ok = status::none;
constexpr http::status e400 = status::bad_request;
constexpr http::status e413 = status::content_too_large;
constexpr http::status e431 = status::request_header_fields_too_large;

const std::string_view body_64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

const chunk_case cases[] = {
    // Framing (RFC 9112 §7.1).
    {"simple", "5\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"empty body", "0\r\n\r\n", done, ok, "", all},
    {"multiple chunks", "5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n", done, ok, "hello world", all},
    {"one-byte chunks", "1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n\r\n", done, ok, "abc", all},
    {"uppercase hex", "A\r\n0123456789\r\n0\r\n\r\n", done, ok, "0123456789", all},
    {"lowercase hex", "a\r\n0123456789\r\n0\r\n\r\n", done, ok, "0123456789", all},
    {"mixed-case hex", "1f\r\n0123456789abcdef0123456789abcde\r\n0\r\n\r\n", done, ok,
     "0123456789abcdef0123456789abcde", all},
    {"leading zeros", "0005\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"16 hex digits", "0000000000000005\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"last chunk 000", "5\r\nhello\r\n000\r\n\r\n", done, ok, "hello", all},
    {"CRLF inside data", "4\r\n\r\n\r\n\r\n0\r\n\r\n", done, ok, "\r\n\r\n", all},
    {"binary data", "3\r\n\0\xff\n\r\n0\r\n\r\n"sv, done, ok, "\0\xff\n"sv, all},
    {"bytes after the body are left", "5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n", done, ok, "hello", 15},
    {"next request right after", "0\r\n\r\n0\r\n\r\n", done, ok, "", 5},
    // Extensions (§7.1.1): parsed and discarded.
    {"extension name", "5;a\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"extension name=value", "5;a=b\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"two extensions", "5;a=b;c\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"extensions with BWS", "5 ; a = b\t;\tc\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"quoted extension", "5;a=\"x y;z\"\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"quoted extension with escapes", "5;a=\"\\\"\\\\\"\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"quoted then more", "5;a=\"\" ;b\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"extension on last chunk", "5\r\nhello\r\n0;end=1\r\n\r\n", done, ok, "hello", all},
    {"extension at limit", "5;aaaaaaaaaaaaaaa\r\nhello\r\n0\r\n\r\n", done, ok, "hello", all},
    {"extension limit is per chunk", "1;aaaaaaaaaaaaaaa\r\nh\r\n1;aaaaaaaaaaaaaaa\r\ni\r\n0\r\n\r\n", done, ok, "hi",
     all},
    {"extension over limit", "5;aaaaaaaaaaaaaaaa\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"extension over limit by BWS", "5                 ;a\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"quoted extension over limit", "5;a=\"0123456789abc\"\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"extension without name", "5;\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"extension with only a value", "5;=b\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"extension empty value", "5;a=\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"extension name with @", "5;a@b\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"extension value with /", "5;a=b/c\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"extension value after BWS without ;", "5;a=b c\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"extension name BWS then value", "5;a b\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"unterminated quote", "5;a=\"x\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"control in quoted", "5;a=\"\x01\"\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"escaped control in quoted", "5;a=\"\\\x01\"\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"text after closing quote", "5;a=\"x\"y\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"trailing BWS after extension", "5;a \r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    // Chunk-size syntax.
    {"no size", "\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"size then only extension", ";a\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"negative size", "-5\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"0x prefix", "0x5\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"space before size", " 5\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"space after size", "5 \r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"non-hex letter", "5g\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"17 hex digits", "00000000000000005\r\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"bare LF after size", "5\nhello\r\n0\r\n\r\n", error, e400, "", 0},
    {"bare CR after size", "5\rhello\r\n0\r\n\r\n", error, e400, "", 0},
    // Data must be followed by CRLF.
    {"missing CRLF after data", "5\r\nhelloX\r\n0\r\n\r\n", error, e400, "hello", 0},
    {"data shorter than size", "5\r\nhell\r\n0\r\n\r\n", error, e400, "hell\r", 0},
    {"bare LF after data", "5\r\nhello\n0\r\n\r\n", error, e400, "hello", 0},
    {"bare CR after data", "5\r\nhello\r0\r\n\r\n", error, e400, "hello", 0},
    {"missing last chunk", "5\r\nhello\r\n\r\n", error, e400, "hello", 0},
    // Trailer section (§7.1.2): field lines, then CRLF.
    {"trailer", "5\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\n", done, ok, "hello", all},
    {"two trailers", "5\r\nhello\r\n0\r\nA: 1\r\nB:\t2 \r\n\r\n", done, ok, "hello", all},
    {"trailer empty value", "0\r\nX:\r\n\r\n", done, ok, "", all},
    {"trailer obs-text", "0\r\nX: caf\xc3\xa9\r\n\r\n", done, ok, "", all},
    {"trailer then next request", "0\r\nX: 1\r\n\r\nGET", done, ok, "", 11},
    {"trailer obs-fold", "0\r\nX: a\r\n b\r\n\r\n", error, e400, "", 0},
    {"trailer space before colon", "0\r\nX : a\r\n\r\n", error, e400, "", 0},
    {"trailer empty name", "0\r\n: a\r\n\r\n", error, e400, "", 0},
    {"trailer without colon", "0\r\nX a\r\n\r\n", error, e400, "", 0},
    {"trailer NUL", "0\r\nX: a\0\r\n\r\n"sv, error, e400, "", 0},
    {"trailer DEL", "0\r\nX: a\x7f\r\n\r\n", error, e400, "", 0},
    {"trailer bare LF", "0\r\nX: a\n\r\n", error, e400, "", 0},
    {"trailer bare CR", "0\r\nX: a\rb\r\n\r\n", error, e400, "", 0},
    {"final bare LF", "5\r\nhello\r\n0\r\n\n", error, e400, "hello", 0},
    {"final CR then junk", "0\r\n\rX", error, e400, "", 0},
    // Trailer section limit, 32 bytes through the final CRLF: "X: " + value + CRLF + CRLF is value + 7.
    {"trailers at limit", "0\r\nX: 0123456789abcdef012345678\r\n\r\n", done, ok, "", all},
    {"trailers over limit", "0\r\nX: 0123456789abcdef0123456789\r\n\r\n", error, e431, "", 0},
    {"many small trailers over limit", "0\r\nA:\r\nB:\r\nC:\r\nD:\r\nE:\r\nF:\r\nG:\r\nH:\r\n\r\n", error, e431, "", 0},
    {"trailers over limit without CRLF", "0\r\nX: 0123456789abcdef0123456789abcdef", error, e431, "", 0},
    // Body limit, 64 bytes: refused when a chunk-size announces more, before its data arrives.
    {"body at limit", "40\r\n0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n0\r\n\r\n", done, ok,
     body_64, all},
    {"chunk over limit", "41\r\n", error, e413, "", 0},
    {"chunk over limit with leading zeros", "0041\r\n", error, e413, "", 0},
    {"second chunk over limit", "3f\r\n0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\r\n2\r\nxx\r\n",
     error, e413, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde", 0},
    {"huge chunk size", "ffffffffffffffff\r\n", error, e413, "", 0},
    // Waiting for more.
    {"nothing yet", "", more, ok, "", all},
    {"size only", "5", more, ok, "", all},
    {"partial data", "5\r\nhel", more, ok, "hel", all},
    {"data without CRLF", "5\r\nhello", more, ok, "hello", all},
    {"last chunk without final CRLF", "5\r\nhello\r\n0\r\n", more, ok, "hello", all},
    {"inside a trailer", "0\r\nX: 1\r\n", more, ok, "", all},
    {"inside a quoted extension", "5;a=\"x", more, ok, "", all},
};

std::string describe(const chunk_result& r) {
    switch (r.status) {
    case chunk_status::done:
        return "done, consumed " + std::to_string(r.consumed);
    case chunk_status::incomplete:
        return "incomplete, consumed " + std::to_string(r.consumed);
    case chunk_status::error:
        return "error " + std::to_string(to_int(r.error));
    }
    return "?";
}

// The final answer a case expects, with `consumed` resolved against the input size.
chunk_result expected_result(const chunk_case& c) {
    const std::size_t consumed = c.consumed == all ? c.input.size() : c.consumed;
    return {c.status, c.status == error ? 0 : consumed, 0, c.error};
}

bool same(const chunk_result& a, const chunk_result& b) {
    return a.status == b.status && (a.status == chunk_status::error ? a.error == b.error : a.consumed == b.consumed);
}

std::string test_name(std::size_t index, std::string_view label) {
    std::string name = "c" + std::to_string(index) + "_";
    for (const char c : label) {
        name += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
    }
    return name;
}

class decodes : public testing::TestWithParam<chunk_case> {};

// Whole, in place: out == input, and the input ends at a guard page.
TEST_P(decodes, whole_in_place) {
    const chunk_case& c = GetParam();
    guarded_buffer buffer(c.input.size() + 1);
    char* data = buffer.place_writable(c.input);
    chunked_decoder decoder(small_limits);
    const chunk_result r = decoder.decode(data, c.input.size(), data);
    EXPECT_TRUE(same(r, expected_result(c))) << "got " << describe(r) << ", want " << describe(expected_result(c));
    EXPECT_LE(r.consumed, c.input.size());
    EXPECT_LE(r.produced, r.consumed);
    EXPECT_EQ(std::string_view(data, r.produced), c.payload);
    EXPECT_EQ(decoder.body_bytes(), r.produced);
    if (r.status == chunk_status::done) {
        // What follows the body is untouched: the next pipelined request.
        EXPECT_EQ(std::string_view(data + r.consumed, c.input.size() - r.consumed), c.input.substr(r.consumed));
    }
    // Done and errors stick.
    if (r.status != chunk_status::incomplete) {
        const chunk_result again = decoder.decode(data, c.input.size(), data);
        EXPECT_EQ(again.status, r.status);
        EXPECT_EQ(again.error, r.error);
        EXPECT_EQ(again.produced, 0U);
    }
}

// Split at every offset, in place, as a connection that decodes into the front of its read buffer does. The caller
// keeps two offsets into one buffer: `in`, the first byte not yet consumed, and `out`, the end of the decoded
// payload (out <= in always). Each call is decode(buffer + in, bytes_read - in, buffer + out), after which
// in += consumed and out += produced. While incomplete every input byte is consumed, so nothing is re-fed; after
// done, [in, bytes_read) is the start of the next request.
TEST_P(decodes, split_in_place) {
    const chunk_case& c = GetParam();
    const chunk_result expected = expected_result(c);
    guarded_buffer buffer(c.input.size() + 1);
    for (std::size_t k = 0; k <= c.input.size(); ++k) {
        char* data = buffer.place_writable(c.input);
        chunked_decoder decoder(small_limits);
        std::size_t in = 0;
        std::size_t out = 0;
        chunk_result r = decoder.decode(data, k, data);
        in += r.consumed;
        out += r.produced;
        if (r.status == chunk_status::incomplete) {
            ASSERT_EQ(r.consumed, k) << "split at " << k;
            r = decoder.decode(data + in, c.input.size() - in, data + out);
            in += r.consumed;
            out += r.produced;
        }
        ASSERT_EQ(r.status, expected.status) << "split at " << k << ": got " << describe(r);
        if (r.status == chunk_status::error) {
            ASSERT_EQ(r.error, expected.error) << "split at " << k;
        } else {
            ASSERT_EQ(in, expected.consumed) << "split at " << k;
            ASSERT_EQ(std::string_view(data, out), c.payload) << "split at " << k;
        }
    }
}

// One byte per call, each byte alone before a guard page; the payload goes to a separate buffer.
TEST_P(decodes, byte_by_byte) {
    const chunk_case& c = GetParam();
    const chunk_result expected = expected_result(c);
    guarded_buffer buffer(1);
    std::string payload(c.input.size(), '\0');
    chunked_decoder decoder(small_limits);
    std::size_t in = 0;
    std::size_t out = 0;
    chunk_result r;
    while (in < c.input.size()) {
        r = decoder.decode(buffer.place_writable(c.input.substr(in, 1)), 1, payload.data() + out);
        in += r.consumed;
        out += r.produced;
        if (r.status != chunk_status::incomplete) {
            break;
        }
    }
    ASSERT_EQ(r.status, expected.status) << describe(r);
    if (r.status == chunk_status::error) {
        EXPECT_EQ(r.error, expected.error);
    } else {
        EXPECT_EQ(in, expected.consumed);
    }
    if (r.status != chunk_status::error) {
        EXPECT_EQ(payload.substr(0, out), c.payload);
    }
}

struct by_label {
    template <class Row>
    std::string operator()(const testing::TestParamInfo<Row>& row) const {
        return test_name(row.index, row.param.label);
    }
};

INSTANTIATE_TEST_SUITE_P(chunked_decoder, decodes, testing::ValuesIn(cases), by_label{});

// 64 chunks of 1 KiB with the default limits, split at many offsets.
TEST(chunked_decoder, many_chunks_default_limits) {
    const limits lim{};
    std::string encoded;
    std::string expected;
    for (int i = 0; i < 64; ++i) {
        std::string chunk(1024, static_cast<char>('a' + i % 26));
        encoded += "400;i=" + std::to_string(i) + "\r\n" + chunk + "\r\n";
        expected += chunk;
    }
    encoded += "0\r\nX-Checksum: 42\r\n\r\n";
    guarded_buffer buffer(encoded.size() + 1);
    for (std::size_t k = 0; k <= encoded.size(); k += 97) {
        char* data = buffer.place_writable(encoded);
        chunked_decoder decoder(lim);
        chunk_result first = decoder.decode(data, k, data);
        ASSERT_EQ(first.status, chunk_status::incomplete);
        chunk_result second = decoder.decode(data + k, encoded.size() - k, data + first.produced);
        ASSERT_EQ(second.status, chunk_status::done);
        ASSERT_EQ(first.consumed + second.consumed, encoded.size());
        ASSERT_EQ(std::string_view(data, first.produced + second.produced), expected);
        ASSERT_EQ(decoder.body_bytes(), expected.size());
    }
}

TEST(chunked_decoder, default_limit_on_body_is_413) {
    const limits lim{};
    chunked_decoder decoder(lim);
    // 30,000,001 = 0x1C9C381.
    std::string input = "1C9C381\r\n";
    const chunk_result r = decoder.decode(input.data(), input.size(), input.data());
    EXPECT_EQ(r.status, chunk_status::error);
    EXPECT_EQ(r.error, status::content_too_large);
    chunked_decoder at_limit(lim);
    input = "1C9C380\r\n";
    EXPECT_EQ(at_limit.decode(input.data(), input.size(), input.data()).status, chunk_status::incomplete);
}

TEST(chunked_decoder, reset_starts_a_new_body) {
    chunked_decoder decoder(small_limits);
    std::string input = "3\r\nabc\r\n0\r\n\r\n";
    ASSERT_EQ(decoder.decode(input.data(), input.size(), input.data()).status, chunk_status::done);
    EXPECT_EQ(decoder.body_bytes(), 3U);
    decoder.reset();
    EXPECT_EQ(decoder.body_bytes(), 0U);
    input = "2\r\nde\r\n0\r\n\r\n";
    const chunk_result r = decoder.decode(input.data(), input.size(), input.data());
    EXPECT_EQ(r.status, chunk_status::done);
    EXPECT_EQ(std::string_view(input.data(), r.produced), "de");

    // Done sticks until reset; reset also forgets a half-read quoted extension and a sticky error.
    std::string half = "5;a=\"\\";
    EXPECT_EQ(decoder.decode(half.data(), half.size(), half.data()).status, chunk_status::done);
    decoder.reset();
    EXPECT_EQ(decoder.decode(half.data(), half.size(), half.data()).status, chunk_status::incomplete);
    decoder.reset();
    std::string bad = "x";
    EXPECT_EQ(decoder.decode(bad.data(), bad.size(), bad.data()).status, chunk_status::error);
    EXPECT_EQ(decoder.decode(bad.data(), bad.size(), bad.data()).status, chunk_status::error);
    decoder.reset();
    input = "1\r\nz\r\n0\r\n\r\n";
    EXPECT_EQ(decoder.decode(input.data(), input.size(), input.data()).status, chunk_status::done);
}

TEST(chunked_decoder, body_limit_counts_across_chunks) {
    // 40 + 24 = 64 bytes is at the limit; one more chunk byte is over it.
    std::string at = "28\r\n" + std::string(40, 'x') + "\r\n18\r\n" + std::string(24, 'y') + "\r\n0\r\n\r\n";
    chunked_decoder decoder(small_limits);
    EXPECT_EQ(decoder.decode(at.data(), at.size(), at.data()).status, chunk_status::done);
    std::string over = "28\r\n" + std::string(40, 'x') + "\r\n19\r\n";
    chunked_decoder second(small_limits);
    const chunk_result r = second.decode(over.data(), over.size(), over.data());
    EXPECT_EQ(r.status, chunk_status::error);
    EXPECT_EQ(r.error, status::content_too_large);
    EXPECT_EQ(r.produced, 40U);
}

} // namespace
} // namespace hotpath::http
