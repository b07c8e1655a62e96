// body_reader: each framing fed whole, split at every offset, and byte by byte; the body bytes and the end
// must come out the same every way, and input past the end must be left for the next message.
#include <hotpath/http/body_reader.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hotpath::http {
namespace {

const limits small_limits{.max_header_bytes = 64, .max_body_bytes = 64, .max_chunk_extension_bytes = 16};

struct body_case {
    const char* label;
    body_framing framing;
    std::uint64_t content_length;
    std::string input;
    body_status status; // after all input
    std::string body;   // body bytes produced
    std::string rest;   // input left after the body (when done)
};

const std::vector<body_case>& cases() {
    static const std::vector<body_case> all{
        {"no body", body_framing::none, 0, "HTTP/1.1 200", body_status::done, "", "HTTP/1.1 200"},
        {"length zero", body_framing::content_length, 0, "next", body_status::done, "", "next"},
        {"length exact", body_framing::content_length, 5, "hello", body_status::done, "hello", ""},
        {"length then next", body_framing::content_length, 5, "helloHTTP/1.1", body_status::done, "hello", "HTTP/1.1"},
        {"length short", body_framing::content_length, 9, "hello", body_status::incomplete, "hello", ""},
        {"chunked", body_framing::chunked, 0, "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", body_status::done,
         "hello world", ""},
        {"chunked then next", body_framing::chunked, 0, "3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\nHTTP/1.1", body_status::done,
         "abc", "HTTP/1.1"},
        {"chunked short", body_framing::chunked, 0, "5\r\nhel", body_status::incomplete, "hel", ""},
        {"chunked bad size", body_framing::chunked, 0, "zz\r\n", body_status::error, "", ""},
        {"chunked over the body limit", body_framing::chunked, 0, "41\r\n" + std::string(65, 'a') + "\r\n0\r\n\r\n",
         body_status::error, "", ""},
        {"until close", body_framing::until_close, 0, "all of it, HTTP/1.1 too", body_status::incomplete,
         "all of it, HTTP/1.1 too", ""},
    };
    return all;
}

struct outcome {
    body_status status = body_status::incomplete;
    std::string body;
    std::string rest;
};

// Feeds `input` in pieces that end at `cuts` (each piece copied to its own buffer, as a connection would).
outcome feed(const body_case& c, const std::vector<std::size_t>& cuts) {
    body_reader reader(small_limits);
    reader.start(c.framing, c.content_length);
    outcome out;
    std::string pending; // input not consumed yet
    std::size_t from = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : c.input.size();
        pending.append(c.input, from, to - from);
        from = to;
        const body_step s = reader.read(pending.data(), pending.size());
        out.body.append(s.data);
        pending.erase(0, s.consumed);
        out.status = s.status;
        if (s.status != body_status::incomplete) {
            pending.append(c.input, from, std::string::npos);
            break;
        }
    }
    out.rest = out.status == body_status::done ? pending : "";
    return out;
}

TEST(body_reader, whole_split_at_every_offset_and_byte_by_byte) {
    for (const auto& c : cases()) {
        std::vector<std::vector<std::size_t>> ways{{}};
        for (std::size_t at = 0; at <= c.input.size(); ++at) {
            ways.push_back({at});
        }
        std::vector<std::size_t> bytes;
        for (std::size_t at = 1; at < c.input.size(); ++at) {
            bytes.push_back(at);
        }
        ways.push_back(bytes);
        for (const auto& cuts : ways) {
            const outcome o = feed(c, cuts);
            const std::string where = std::string(c.label) + ", " + std::to_string(cuts.size()) + " cuts" +
                                      (cuts.size() == 1 ? " at " + std::to_string(cuts[0]) : "");
            EXPECT_EQ(o.status, c.status) << where;
            if (c.status != body_status::error) {
                EXPECT_EQ(o.body, c.body) << where;
                EXPECT_EQ(o.rest, c.rest) << where;
            }
        }
    }
}

TEST(body_reader, only_a_close_delimited_body_ends_at_close) {
    body_reader reader(small_limits);
    reader.start(body_framing::until_close, 0);
    EXPECT_TRUE(reader.ends_at_close());
    for (const auto f : {body_framing::none, body_framing::content_length, body_framing::chunked}) {
        reader.start(f, 3);
        EXPECT_FALSE(reader.ends_at_close());
    }
}

TEST(body_reader, a_reader_is_reused_across_messages) {
    body_reader reader(small_limits);
    std::string first = "2\r\nab\r\n0\r\n\r\n";
    reader.start(body_framing::chunked, 0);
    const auto a = reader.read(first.data(), first.size());
    EXPECT_EQ(a.status, body_status::done);
    EXPECT_EQ(a.data, "ab");
    // The chunked state starts over: a second body decodes from its own first size line.
    std::string second = "1\r\nz\r\n0\r\n\r\n";
    reader.start(body_framing::chunked, 0);
    const auto b = reader.read(second.data(), second.size());
    EXPECT_EQ(b.status, body_status::done);
    EXPECT_EQ(b.data, "z");
    std::string third = "xyz";
    reader.start(body_framing::content_length, 2);
    const auto c = reader.read(third.data(), third.size());
    EXPECT_EQ(c.status, body_status::done);
    EXPECT_EQ(c.consumed, 2u);
    EXPECT_EQ(c.data, "xy");
}

} // namespace
} // namespace hotpath::http
