// The response reader, as a connection drives it: streams of responses fed whole, split at every offset and byte by
// byte, each read from a buffer that ends at a guard page; the transcript (statuses, bodies, the end) must not
// depend on how the bytes arrived.
#include <hotpath/http/response_reader.hpp>

#include "support/guard_page.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hotpath::http {
namespace {

using test::guarded_buffer;

const char* name(response_error e) {
    switch (e) {
    case response_error::none:
        return "none";
    case response_error::malformed_head:
        return "malformed_head";
    case response_error::head_too_large:
        return "head_too_large";
    case response_error::malformed_body:
        return "malformed_body";
    case response_error::unsolicited_switch:
        return "unsolicited_switch";
    case response_error::truncated:
        return "truncated";
    }
    return "?";
}

struct stream_case {
    const char* label;
    std::string input;
    // One entry per response: "STATUS[+N interim] body", then "error NAME" where one fails, then the end as
    // end_of_input() sees it: "end idle|complete|truncated" (no end after an error).
    std::string expected;
    bool head_request = false;
    bool upgrade = false;
    const limits* lim = nullptr;
};

// Reads `input` arriving in `pieces` (their sizes sum to the input's) as a connection does: each piece appended to
// what is left unconsumed, the whole of it copied to end at a guard page, read until the reader needs more; then
// the end of the stream.
std::string transcript(const stream_case& c, const std::vector<std::size_t>& pieces) {
    static const limits default_limits{};
    response_reader reader(c.lim != nullptr ? *c.lim : default_limits);
    reader.expect(c.head_request, c.upgrade);
    std::string out;
    std::string kept;   // received, not consumed
    std::string body;   // the current response's body so far
    std::size_t at = 0; // of the input
    guarded_buffer buffer(c.input.size() + 1);
    for (const std::size_t piece : pieces) {
        kept.append(c.input, at, piece);
        at += piece;
        for (;;) {
            const std::string_view placed = buffer.place(kept);
            char* data = const_cast<char*>(placed.data());
            const read_step step = reader.read(data, placed.size());
            EXPECT_LE(step.consumed, placed.size());
            if (!step.body.empty()) {
                EXPECT_GE(step.body.data(), data);
                EXPECT_LE(step.body.data() + step.body.size(), data + placed.size());
                body.append(step.body);
            }
            const std::string left(placed.substr(step.consumed));
            if (step.status == read_status::error) {
                if (reader.error() == response_error::none) {
                    return out + "switched";
                }
                return out + "error " + name(reader.error());
            }
            if (step.status == read_status::head) {
                out += std::to_string(reader.head().status);
                if (reader.interim_count() != 0) {
                    out += "+" + std::to_string(reader.interim_count()) + " interim";
                }
                body.clear();
            }
            if (step.status == read_status::done) {
                out += " " + body + "; ";
                body.clear();
            }
            kept = left;
            if (step.status == read_status::need_more) {
                break;
            }
        }
    }
    switch (reader.end_of_input()) {
    case end_status::idle:
        return out + "end idle";
    case end_status::complete:
        return out + " " + body + "; end complete";
    case end_status::truncated:
        return out + "end truncated";
    }
    return out;
}

const limits small_limits{.max_request_line_bytes = 16, .max_header_bytes = 48, .max_header_count = 3};

const stream_case cases[] = {
    {"content_length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "200 hello; end idle"},
    {"empty_body", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "200 ; end idle"},
    {"pipelined", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabHTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\nx",
     "200 ab; 404 x; end idle"},
    {"interim_100", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
     "200+1 interim ok; end idle"},
    {"interim_100_and_103",
     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
     "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
     "201+2 interim ; end idle"},
    {"interim_then_close", "HTTP/1.1 100 Continue\r\n\r\n", "end truncated"},
    {"unsolicited_101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
     "error unsolicited_switch"},
    {"upgrade_asked", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello", "101 ; switched",
     false, true},
    {"chunked_with_trailer",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
     "200 hello world; end idle"},
    {"chunked_then_next",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
     "200 a; 204 ; end idle"},
    {"until_close", "HTTP/1.1 200 OK\r\n\r\nabc", "200 abc; end complete"},
    {"until_close_http10", "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nold", "200 old; end complete"},
    {"head_request", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n",
     "200 ; 200 ; end idle", true},
    {"no_body_statuses", "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n",
     "204 ; 304 ; end idle"},
    {"truncated_body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "200end truncated"},
    {"truncated_head", "HTTP/1.1 200 OK\r\nConte", "end truncated"},
    {"truncated_chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", "200end truncated"},
    {"nothing", "", "end idle"},
    {"malformed_head", "HTTP/2 200\r\n\r\n", "error malformed_head"},
    {"bare_lf", "HTTP/1.1 200 OK\nContent-Length: 0\n\n", "error malformed_head"},
    {"conflicting_lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
     "error malformed_head"},
    {"bad_chunk_size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZ\r\n", "200error malformed_body"},
    {"second_response_bad", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 OOPS\r\n\r\n",
     "200 x; error malformed_head"},
    {"head_too_large", "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", "error head_too_large", false, false,
     &small_limits},
};

class response_reader_streams : public ::testing::TestWithParam<stream_case> {};

TEST_P(response_reader_streams, whole_split_and_byte_by_byte) {
    const stream_case& c = GetParam();
    const std::size_t n = c.input.size();
    EXPECT_EQ(transcript(c, {n}), c.expected) << "whole";
    for (std::size_t k = 0; k <= n; ++k) {
        EXPECT_EQ(transcript(c, {k, n - k}), c.expected) << "split at " << k;
    }
    EXPECT_EQ(transcript(c, std::vector<std::size_t>(n, 1)), c.expected) << "byte by byte";
}

struct by_label {
    std::string operator()(const ::testing::TestParamInfo<stream_case>& p) const { return p.param.label; }
};

INSTANTIATE_TEST_SUITE_P(tables, response_reader_streams, ::testing::ValuesIn(cases), by_label{});

TEST(response_reader, head_bytes_count_the_interim_heads) {
    const limits lim{};
    response_reader reader(lim);
    reader.expect(false);
    std::string in = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    const read_step step = reader.read(in.data(), in.size());
    EXPECT_EQ(step.status, read_status::head);
    EXPECT_EQ(step.consumed, in.size());
    EXPECT_EQ(reader.head_bytes(), in.size());
    EXPECT_EQ(reader.interim_count(), 1u);
    EXPECT_TRUE(reader.started());
}

TEST(response_reader, expect_forgets_a_response_in_progress) {
    const limits lim{};
    response_reader reader(lim);
    reader.expect(false);
    std::string half = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc";
    EXPECT_EQ(reader.read(half.data(), half.size()).status, read_status::head);
    reader.expect(false);
    EXPECT_FALSE(reader.started());
    std::string next = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
    EXPECT_EQ(reader.read(next.data(), next.size()).status, read_status::head);
    EXPECT_EQ(reader.head().status, 202u);
    EXPECT_EQ(reader.read(nullptr, 0).status, read_status::done);
    EXPECT_EQ(reader.end_of_input(), end_status::idle);
}

TEST(response_reader, errors_are_described_in_one_line) {
    for (const auto e : {response_error::malformed_head, response_error::head_too_large, response_error::malformed_body,
                         response_error::unsolicited_switch, response_error::truncated}) {
        const std::string_view text = describe(e);
        EXPECT_FALSE(text.empty());
        EXPECT_EQ(text.find('\n'), std::string_view::npos);
    }
}

} // namespace
} // namespace hotpath::http
