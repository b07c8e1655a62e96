// request_body: the one body stream of the server, read as a buffered route reads it (to its end, the pieces kept
// one after the other, the chunked framing forgotten between reads) and as a streaming route reads it (a piece at a
// time, each dropped), fed whole, split at every offset and byte by byte. Both ways must give the same body and
// leave the same bytes for the next request; a streamed body must never hold more than the piece it hands over.
#include <hotpath/server/request_body.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace hotpath {
namespace {

const http::limits small_limits{.max_header_bytes = 64, .max_body_bytes = 64, .max_chunk_extension_bytes = 16};

struct body_case {
    const char* label;
    http::body_framing framing;
    std::uint64_t content_length;
    std::string input;
    http::status error; // none: the body completes
    std::string body;
    std::string rest; // input left for the next request
};

const std::vector<body_case>& cases() {
    static const std::vector<body_case> all{
        {"length", http::body_framing::content_length, 5, "hello", http::status::none, "hello", ""},
        {"length then next", http::body_framing::content_length, 5, "helloGET / HTTP/1.1\r\n", http::status::none,
         "hello", "GET / HTTP/1.1\r\n"},
        {"chunked", http::body_framing::chunked, 0, "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", http::status::none,
         "hello world", ""},
        {"chunked, tiny chunks and extensions then next", http::body_framing::chunked, 0,
         "1;a=b\r\nh\r\n1\r\ni\r\n1 ; q=\"x y\"\r\n!\r\n0\r\nTrailer: t\r\n\r\nPOST", http::status::none, "hi!",
         "POST"},
        {"chunked, the body at its limit", http::body_framing::chunked, 0,
         "40\r\n" + std::string(64, 'a') + "\r\n0\r\n\r\n", http::status::none, std::string(64, 'a'), ""},
        {"chunked over the limit", http::body_framing::chunked, 0, "41\r\n" + std::string(65, 'a') + "\r\n0\r\n\r\n",
         http::status::content_too_large, "", ""},
        {"chunked, a bad size", http::body_framing::chunked, 0, "5\r\nhello\r\nzz\r\n", http::status::bad_request, "",
         ""},
        {"chunked, no CRLF after the data", http::body_framing::chunked, 0, "2\r\nabX", http::status::bad_request, "",
         ""},
    };
    return all;
}

struct outcome {
    http::status error = http::status::none;
    bool complete = false;
    std::string body;
    std::string rest;
    std::size_t most_held_unread = 0; // streamed: the most bytes kept in the buffer after a piece was dropped
};

// The buffered route: every read lands after the body so far; the whole body is there at the end.
outcome read_buffered(const body_case& c, const std::vector<std::size_t>& cuts) {
    request_body body(small_limits);
    body.start(c.framing, c.content_length);
    std::string buffer(c.input.size() + 1, '\0');
    std::size_t end = 0;
    std::size_t fed = 0;
    outcome o;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : c.input.size();
        c.input.copy(buffer.data() + end, to - fed, fed);
        end += to - fed;
        fed = to;
        if (const auto error = body.read(buffer.data(), end); error != http::status::none) {
            o.error = error;
            return o;
        }
        if (body.complete()) {
            o.complete = true;
            o.body.assign(buffer.data(), body.held());
            o.rest.assign(buffer.data() + body.used(), end - body.used());
            o.rest += c.input.substr(fed);
            return o;
        }
        EXPECT_EQ(body.used(), end) << "an incomplete read uses all it is given";
        if (c.framing == http::body_framing::chunked) {
            end = body.forget_framing();
        }
    }
    return o;
}

// The streaming route: each piece handed over, then dropped when the next is asked for.
outcome read_streamed(const body_case& c, const std::vector<std::size_t>& cuts) {
    request_body body(small_limits);
    body.start(c.framing, c.content_length, small_limits.max_body_bytes);
    std::string buffer(c.input.size() + 1, '\0');
    std::size_t end = 0;
    std::size_t fed = 0;
    outcome o;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : c.input.size();
        c.input.copy(buffer.data() + end, to - fed, fed);
        end += to - fed;
        fed = to;
        for (;;) {
            if (const auto error = body.read(buffer.data(), end); error != http::status::none) {
                o.error = error;
                return o;
            }
            o.body.append(buffer.data(), body.held());
            const bool done = body.complete();
            const bool got_piece = body.held() != 0;
            end = body.drop(buffer.data(), end);
            if (done) {
                o.complete = true;
                o.rest.assign(buffer.data(), end);
                o.rest += c.input.substr(fed);
                return o;
            }
            o.most_held_unread = std::max(o.most_held_unread, end);
            if (!got_piece) {
                break; // only framing so far: wait for more
            }
        }
    }
    return o;
}

void expect_outcome(const body_case& c, const outcome& o, const std::string& how) {
    EXPECT_EQ(o.error, c.error) << how;
    if (c.error != http::status::none) {
        return;
    }
    EXPECT_TRUE(o.complete) << how;
    EXPECT_EQ(o.body, c.body) << how;
    EXPECT_EQ(o.rest, c.rest) << how;
    EXPECT_EQ(o.most_held_unread, 0u) << how << ": a streamed body keeps nothing past the piece it hands over";
}

class request_body_cases : public testing::TestWithParam<body_case> {};

TEST_P(request_body_cases, buffered_and_streamed_whole_split_and_byte_by_byte) {
    const body_case& c = GetParam();
    std::vector<std::vector<std::size_t>> ways{{}};
    for (std::size_t at = 1; at < c.input.size(); ++at) {
        ways.push_back({at});
    }
    std::vector<std::size_t> bytes;
    for (std::size_t at = 1; at < c.input.size(); ++at) {
        bytes.push_back(at);
    }
    ways.push_back(bytes);
    for (const auto& cuts : ways) {
        const std::string how = cuts.size() == bytes.size() && !cuts.empty() ? "byte by byte"
                                : cuts.empty()                               ? "whole"
                                                                             : "split at " + std::to_string(cuts[0]);
        expect_outcome(c, read_buffered(c, cuts), "buffered, " + how);
        expect_outcome(c, read_streamed(c, cuts), "streamed, " + how);
    }
}

INSTANTIATE_TEST_SUITE_P(tables, request_body_cases, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<body_case>& param) {
                             std::string name;
                             for (const char* p = param.param.label; *p != '\0'; ++p) {
                                 name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
                             }
                             return name;
                         });

TEST(request_body, no_body_and_an_empty_length_are_complete_at_once) {
    request_body body(small_limits);
    char none[1] = {'x'};
    body.start(http::body_framing::none, 0);
    EXPECT_TRUE(body.complete());
    EXPECT_EQ(body.read(none, 1), http::status::none);
    EXPECT_EQ(body.used(), 0u) << "the byte belongs to the next request";
    body.start(http::body_framing::content_length, 0);
    EXPECT_TRUE(body.complete());
    EXPECT_EQ(body.held(), 0u);
}

TEST(request_body, a_streaming_routes_own_limit_holds_for_chunked_bodies) {
    request_body body(small_limits);
    std::string input = "5\r\nhello\r\n0\r\n\r\n";
    body.start(http::body_framing::chunked, 0, 4);
    EXPECT_EQ(body.read(input.data(), input.size()), http::status::content_too_large);
    input = "41\r\n" + std::string(65, 'a') + "\r\n0\r\n\r\n";
    body.start(http::body_framing::chunked, 0, 0); // 0: no limit of its own, not even the server's
    EXPECT_EQ(body.read(input.data(), input.size()), http::status::none);
    EXPECT_TRUE(body.complete());
    EXPECT_EQ(body.held(), 65u);
}

TEST(request_body, a_new_body_forgets_the_last) {
    request_body body(small_limits);
    std::string first = "3\r\nabc\r\n";
    body.start(http::body_framing::chunked, 0);
    ASSERT_EQ(body.read(first.data(), first.size()), http::status::none);
    EXPECT_EQ(body.held(), 3u);
    std::string second = "xy";
    body.start(http::body_framing::content_length, 2);
    EXPECT_EQ(body.held(), 0u);
    EXPECT_EQ(body.used(), 0u);
    ASSERT_EQ(body.read(second.data(), second.size()), http::status::none);
    EXPECT_TRUE(body.complete());
    EXPECT_EQ(std::string(second.data(), body.held()), "xy");
}

} // namespace
} // namespace hotpath
