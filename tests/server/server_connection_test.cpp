// The server connection driven through in-memory transports: the request parser's tables through a real connection,
// split at every byte; pipelining, bodies read as they arrive, a reader that stops reading, and drain, with no
// socket and no kernel in the way.
#include "http/request_cases.hpp"
#include "support/memory_server.hpp"
#include <hotpath/net/sleep.hpp>
#include <hotpath/server/app.hpp>

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::memory_peer;
using test::memory_server;

// The statuses of the responses in `bytes`, in order ("100 200 404").
std::string statuses(const std::string& bytes) {
    static const std::regex status_line(R"(HTTP/1\.[01] (\d{3})[ \r])");
    std::string out;
    for (std::sregex_iterator it(bytes.begin(), bytes.end(), status_line), end; it != end; ++it) {
        out += (out.empty() ? "" : " ") + (*it)[1].str();
    }
    return out;
}

app echo_app() {
    app a;
    a.any("/", [](request& req, response& res) { res.text("body " + std::to_string(req.body().size())); });
    a.any("/{a}", [](request& req, response& res) { res.text("body " + std::to_string(req.body().size())); });
    a.any("/{a}/{b}", [](request& req, response& res) { res.text("body " + std::to_string(req.body().size())); });
    return a;
}

// Sends `input` on a new connection in pieces of the given sizes, then ends the stream; the statuses of what the
// connection answered before it closed.
std::string exchange(memory_server& server, std::string_view input, const std::vector<std::size_t>& pieces) {
    memory_peer* peer = nullptr;
    const bool closed = server.run(
        [&] {
            peer = &server.connect();
            std::size_t at = 0;
            for (const std::size_t n : pieces) {
                peer->send(input.substr(at, n));
                at += n;
            }
            peer->end();
        },
        [&] { return peer != nullptr && peer->closed(); });
    if (!closed) {
        return "(still open) " + statuses(peer->received());
    }
    return statuses(peer->received());
}

// Every split of `input` (whole, two pieces at each offset, byte by byte) is answered with the same statuses.
std::string same_whatever_the_split(memory_server& server, std::string_view input) {
    const std::size_t n = input.size();
    const std::string whole = exchange(server, input, {n});
    for (std::size_t k = 0; k <= n; ++k) {
        const std::string split = exchange(server, input, {k, n - k});
        if (split != whole) {
            ADD_FAILURE() << "split at " << k << ": " << split << ", whole: " << whole;
            break;
        }
    }
    EXPECT_EQ(exchange(server, input, std::vector<std::size_t>(n, 1)), whole) << "byte by byte";
    return whole;
}

class connection_parses : public testing::TestWithParam<http::request_cases::ok_case> {};

// The case's input, with the body its head announces when the head ends the input: so that the connection answers.
std::string with_body(const http::request_cases::ok_case& c) {
    std::string input(c.input);
    if (c.head.consumed.value_or(input.size()) != input.size()) {
        return input; // bytes follow the head already (another request, or a body)
    }
    if (c.head.framing == http::body_framing::content_length && c.head.content_length.value_or(0) <= 4096) {
        input.append(static_cast<std::size_t>(c.head.content_length.value_or(0)), 'x');
    } else if (c.head.framing == http::body_framing::chunked) {
        input.append("0\r\n\r\n");
    }
    return input;
}

TEST_P(connection_parses, answers_the_same_whatever_the_split) {
    const app a = echo_app();
    memory_server server(a);
    const std::string answered = same_whatever_the_split(server, with_body(GetParam()));
    // A request the parser takes is never refused as malformed by the connection.
    for (const char* refused : {"400", "414", "431", "505"}) {
        EXPECT_NE(answered.substr(0, 3), refused) << answered;
    }
}

class connection_refuses : public testing::TestWithParam<http::request_cases::error_case> {};

TEST_P(connection_refuses, with_the_parsers_status_whatever_the_split) {
    const app a = echo_app();
    memory_server server(a);
    const std::string answered = same_whatever_the_split(server, GetParam().input);
    EXPECT_EQ(answered, std::to_string(http::to_int(GetParam().error))) << GetParam().label;
}

struct by_index {
    template <class Row>
    std::string operator()(const testing::TestParamInfo<Row>& row) const {
        return "c" + std::to_string(row.index);
    }
};

INSTANTIATE_TEST_SUITE_P(request_cases, connection_parses, testing::ValuesIn(http::request_cases::ok_cases),
                         by_index{});
INSTANTIATE_TEST_SUITE_P(request_cases, connection_refuses, testing::ValuesIn(http::request_cases::error_cases),
                         by_index{});

TEST(server_connection, pipelined_requests_are_answered_in_order_in_one_write) {
    app a;
    a.get("/{n}", [](request& req, response& res) { res.text(std::string(req.param("n"))); });
    memory_server server(a);
    memory_peer* peer = nullptr;
    std::size_t changes = 0;
    ASSERT_TRUE(server.run(
        [&] {
            peer = &server.connect();
            peer->send("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\nGET /3 HTTP/1.1\r\nHost: "
                       "a\r\n\r\n");
        },
        [&] {
            ++changes;
            return statuses(peer->received()) == "200 200 200";
        }));
    EXPECT_EQ(changes, 2u) << "the step, then one write for all three";
    const std::string& got = peer->received();
    EXPECT_LT(got.find("\r\n\r\n1"), got.find("\r\n\r\n2"));
    EXPECT_LT(got.find("\r\n\r\n2"), got.find("\r\n\r\n3"));
    EXPECT_FALSE(peer->closed());
}

TEST(server_connection, a_streamed_body_arrives_whole_whatever_the_split) {
    app a;
    a.streaming(
        http::method::put, "/up",
        [](request& req, response& res) -> task<void> {
            std::string all;
            for (;;) {
                auto piece = co_await req.read_body();
                if (!piece) {
                    co_return;
                }
                if (piece->empty()) {
                    break;
                }
                all.append(*piece);
            }
            res.text(all);
        },
        1 << 20);
    memory_server server(a);
    const std::string body = "the quick brown fox jumps over the lazy dog";
    for (const bool chunked : {false, true}) {
        std::string request = "PUT /up HTTP/1.1\r\nHost: a\r\n";
        if (chunked) {
            request += "Transfer-Encoding: chunked\r\n\r\n";
            for (std::size_t i = 0; i < body.size(); i += 10) {
                const std::string part = body.substr(i, 10);
                char size[8];
                std::snprintf(size, sizeof size, "%zx", part.size());
                request += std::string(size) + "\r\n" + part + "\r\n";
            }
            request += "0\r\n\r\n";
        } else {
            request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        }
        for (std::size_t k = 0; k <= request.size(); k += 3) {
            memory_peer* peer = nullptr;
            ASSERT_TRUE(server.run(
                [&] {
                    peer = &server.connect();
                    peer->send(std::string_view(request).substr(0, k));
                    peer->send(std::string_view(request).substr(k));
                },
                [&] { return peer->received().find("\r\n\r\n" + body) != std::string::npos; }))
                << "split at " << k << (chunked ? ", chunked" : "") << ": " << peer->received();
        }
    }
}

TEST(server_connection, a_reader_that_stops_reading_holds_its_response_not_the_loop) {
    app a;
    const std::string big(300 * 1024, 'x');
    a.get("/big", [&big](request&, response& res) { res.text(big); });
    a.get("/small", [](request&, response& res) { res.text("small"); });
    memory_server server(a);
    memory_peer* slow = nullptr;
    memory_peer* other = nullptr;
    ASSERT_TRUE(server.run(
        [&] {
            slow = &server.connect();
            slow->set_window(64 * 1024); // reads nothing past its socket buffer
            slow->send("GET /big HTTP/1.1\r\nHost: a\r\n\r\n");
            other = &server.connect();
            other->send("GET /small HTTP/1.1\r\nHost: a\r\n\r\n");
        },
        [&] { return statuses(other->received()) == "200" && slow->received().size() == 64 * 1024; }));
    EXPECT_LT(slow->received().size(), big.size());
    ASSERT_TRUE(
        server.run([&] { slow->set_window(big.size() * 2); }, [&] { return slow->received().size() > big.size(); }));
    EXPECT_EQ(statuses(slow->received()), "200");
}

TEST(server_connection, drain_closes_idle_connections_now_and_busy_ones_after_their_answer) {
    app a;
    a.get("/wait", [](request&, response& res) -> task<void> {
        co_await net::sleep_for(50ms);
        res.text("done");
    });
    memory_server server(a);
    memory_peer* idle = nullptr;
    memory_peer* busy = nullptr;
    ASSERT_TRUE(server.run(
        [&] {
            idle = &server.connect();
            busy = &server.connect();
            busy->send("GET /wait HTTP/1.1\r\nHost: a\r\n\r\n");
        },
        [&] { return server.loop_worker().handlers_running == 1; }));
    ASSERT_TRUE(
        server.run([&] { server.loop_worker().begin_drain(); }, [&] { return idle->closed() && busy->closed(); }));
    EXPECT_EQ(idle->received(), "");
    EXPECT_EQ(statuses(busy->received()), "200");
    EXPECT_NE(busy->received().find("Connection: close"), std::string::npos);
    EXPECT_EQ(server.loop_worker().connection_count(), 0u);
}

TEST(server_connection, headers_too_slow_are_answered_408) {
    app a = echo_app();
    server_options o;
    o.limits.request_headers_timeout = 1s;
    memory_server server(a, o);
    memory_peer* peer = nullptr;
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(server.run(
        [&] {
            peer = &server.connect();
            peer->send("GET / HTTP/1.1\r\nHo");
        },
        [&] { return !statuses(peer->received()).empty(); }, 5s));
    EXPECT_EQ(statuses(peer->received()), "408");
    EXPECT_GE(std::chrono::steady_clock::now() - start, 1s);
}

} // namespace
} // namespace hotpath
