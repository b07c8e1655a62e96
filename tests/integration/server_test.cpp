// The server over real loopback sockets: keep-alive, pipelining, bodies, routing, errors, shutdown.
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include <hotpath/core/error.hpp>
#include <hotpath/net/address.hpp>
#include <hotpath/net/sleep.hpp>
#include <hotpath/server/json.hpp>
#include <hotpath/server/server.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::raw_client;
using test::test_server;
using test::to_unsigned;

app make_app() {
    app a;
    a.get("/hello", [](request&, response& res) { res.text("hello"); });
    a.get("/seq/{n}", [](request& req, response& res) { res.text(req.param("n")); });
    a.get("/users/{id}/orders/{order}", [](request& req, response& res) {
        res.text(std::string(req.param("id")) + "|" + std::string(req.param("order")) + "|" +
                 std::string(req.query_param("q")));
    });
    a.post("/echo", [](request& req, response& res) { res.body(req.body(), "application/octet-stream"); });
    a.post("/size", [](request& req, response& res) {
        std::uint64_t sum = 0;
        for (char c : req.body()) {
            sum = sum * 31 + static_cast<unsigned char>(c);
        }
        res.text(std::to_string(req.body().size()) + ":" + std::to_string(sum));
    });
    a.put("/items/{id}", [](request& req, response& res) { res.text("put " + std::string(req.param("id"))); });
    a.del("/items/{id}", [](request& req, response& res) { res.text("deleted " + std::string(req.param("id"))); });
    a.get("/slow", [](request& req, response& res) -> task<void> {
        co_await net::sleep_for(std::chrono::milliseconds{to_unsigned(req.query_param("ms"))});
        res.text("slow");
    });
    a.get("/throw", [](request&, response&) { throw std::runtime_error("boom"); });
    a.get("/async-throw", [](request&, response&) -> task<void> {
        co_await net::sleep_for(1ms);
        throw std::runtime_error("boom later");
    });
    a.get("/json", [](request&, response& res) {
        boost::json::object o(json_storage(res));
        o.emplace("message", "Hello, World!");
        res.json(o);
    });
    a.get("/redirect", [](request&, response& res) { res.redirect("https://example.invalid/x"); });
    a.get("/where", [](request& req, response& res) {
        res.text(std::string(req.host()) + " " + std::string(req.path()) + " " + std::string(req.query()));
    });
    // Serialised in many pieces: a long escaped string and a long array.
    a.get("/json-big", [](request&, response& res) {
        boost::json::object o(json_storage(res));
        o.emplace("text", std::string(5000, '"'));
        boost::json::array numbers(json_storage(res));
        for (int i = 0; i < 2000; ++i) {
            numbers.emplace_back(i * 7919);
        }
        o.emplace("numbers", std::move(numbers));
        res.json(o);
    });
    return a;
}

std::string get(std::string_view target) {
    return "GET " + std::string(target) + " HTTP/1.1\r\nHost: t\r\n\r\n";
}

class server_test : public ::testing::Test {
protected:
    app routes_ = make_app();
};

TEST_F(server_test, answers_with_server_date_and_length) {
    test_server srv(routes_);
    ASSERT_TRUE(srv.ok());
    raw_client c(srv.port());
    ASSERT_TRUE(c.send(get("/hello")));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello");
    EXPECT_EQ(r->field("server"), "hotpath");
    EXPECT_EQ(r->field("date").size(), 29u);
    EXPECT_EQ(r->field("content-length"), "5");
    EXPECT_EQ(r->field("content-type"), "text/plain; charset=utf-8");
    EXPECT_EQ(r->field("connection"), "");
}

TEST_F(server_test, json_is_serialised_by_the_json_library) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send(get("/json")));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, R"({"message":"Hello, World!"})");
    EXPECT_EQ(r->field("content-type"), "application/json");

    ASSERT_TRUE(c.send(get("/json-big")));
    r = c.read_reply();
    ASSERT_TRUE(r);
    boost::system::error_code ec;
    const auto back = boost::json::parse(r->body, ec);
    ASSERT_FALSE(ec) << r->body.substr(0, 200);
    EXPECT_EQ(back.at("text").as_string(), std::string(5000, '"'));
    const auto& numbers = back.at("numbers").as_array();
    ASSERT_EQ(numbers.size(), 2000u);
    EXPECT_EQ(numbers[1999].as_int64(), 1999 * 7919);
    EXPECT_EQ(r->body.size(), std::stoul(std::string(r->field("content-length"))));
}

TEST_F(server_test, keep_alive_serves_many_requests_on_one_connection) {
    test_server srv(routes_);
    raw_client c(srv.port());
    for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(c.send(get("/seq/" + std::to_string(i))));
        auto r = c.read_reply();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->body, std::to_string(i));
    }
    EXPECT_EQ(srv.get().stats().connections_accepted, 1u);
}

TEST_F(server_test, pipelined_requests_in_one_packet_are_answered_in_order) {
    test_server srv(routes_);
    raw_client c(srv.port());
    std::string batch;
    for (int i = 0; i < 500; ++i) {
        batch += get("/seq/" + std::to_string(i));
    }
    ASSERT_TRUE(c.send(batch));
    for (int i = 0; i < 500; ++i) {
        auto r = c.read_reply();
        ASSERT_TRUE(r) << i;
        ASSERT_EQ(r->body, std::to_string(i));
    }
}

TEST_F(server_test, pipelining_keeps_order_across_an_async_handler) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send(get("/seq/1") + get("/slow?ms=50") + get("/seq/2") + get("/slow?ms=1") + get("/seq/3")));
    const char* expected[] = {"1", "slow", "2", "slow", "3"};
    for (const char* e : expected) {
        auto r = c.read_reply();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->body, e);
    }
}

TEST_F(server_test, path_and_query_parameters) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send(get("/users/42/orders/7?x=1&q=abc")));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "42|7|abc");
    ASSERT_TRUE(c.send("PUT /items/9 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "put 9");
    ASSERT_TRUE(c.send("DELETE /items/9 HTTP/1.1\r\nHost: t\r\n\r\n"));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "deleted 9");
}

TEST_F(server_test, large_content_length_body_arrives_whole) {
    test_server srv(routes_);
    raw_client c(srv.port());
    std::string body(3 * 1024 * 1024 + 17, '\0');
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < body.size(); ++i) {
        body[i] = static_cast<char>('a' + i % 26);
        sum = sum * 31 + static_cast<unsigned char>(body[i]);
    }
    ASSERT_TRUE(
        c.send("POST /size HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
    auto r = c.read_reply(10s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, std::to_string(body.size()) + ":" + std::to_string(sum));
}

// Bytes that arrive while a handler is suspended are kept for later; past a high-water mark reading pauses.
// A large body behind it must still be read in full once its turn comes. 4 MB: more than the receive
// buffers io_uring fills before a pause takes effect (256 x 4 KiB per loop).
TEST_F(server_test, large_body_pipelined_behind_an_async_handler_arrives_whole) {
    test_server srv(routes_);
    raw_client c(srv.port());
    std::string body(4 * 1024 * 1024, 'x');
    for (std::size_t i = 0; i < body.size(); i += 7) {
        body[i] = static_cast<char>('a' + i % 26);
    }
    std::uint64_t sum = 0;
    for (char ch : body) {
        sum = sum * 31 + static_cast<unsigned char>(ch);
    }
    ASSERT_TRUE(c.send(get("/slow?ms=300") + "POST /size HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body + get("/hello")));
    auto r = c.read_reply(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "slow");
    r = c.read_reply(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, std::to_string(body.size()) + ":" + std::to_string(sum));
    r = c.read_reply(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "hello");
}

// A client that half-closes after a complete request and the start of another gets its answer, then the
// close: the rest of the second request can no longer come, so no timeout should be waited for.
TEST_F(server_test, half_close_after_a_partial_request_closes_once_answered) {
    http::limits l;
    l.request_headers_timeout = std::chrono::seconds{20};
    test_server srv(routes_, l);
    for (const char* partial :
         {"GET /hello HTTP/1.1\r\nHo", "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\n\r\nabc"}) {
        for (int i = 0; i < 5; ++i) {
            raw_client c(srv.port());
            ASSERT_TRUE(c.send(get("/hello") + partial));
            c.shutdown_send();
            auto r = c.read_reply();
            ASSERT_TRUE(r);
            EXPECT_EQ(r->body, "hello");
            EXPECT_TRUE(c.wait_closed(std::chrono::seconds{3})) << partial;
        }
    }
}

TEST_F(server_test, chunked_body_is_decoded_and_the_next_request_follows) {
    test_server srv(routes_);
    raw_client c(srv.port());
    std::string chunked = "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    std::string expected;
    for (int i = 0; i < 300; ++i) {
        const std::string piece(static_cast<std::size_t>(i % 50 + 1), static_cast<char>('A' + i % 26));
        char hex[16];
        const auto end = std::to_chars(hex, hex + sizeof(hex), piece.size(), 16).ptr;
        chunked += std::string(hex, end) + ";ext=1\r\n" + piece + "\r\n";
        expected += piece;
    }
    chunked += "0\r\nX-Trailer: yes\r\n\r\n";
    ASSERT_TRUE(c.send(chunked + get("/seq/5")));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, expected);
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "5");
}

TEST_F(server_test, chunked_body_sent_one_byte_at_a_time) {
    test_server srv(routes_);
    raw_client c(srv.port());
    const std::string msg = "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";
    for (char ch : msg) {
        ASSERT_TRUE(c.send(std::string_view(&ch, 1)));
    }
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "hello, world");
}

TEST_F(server_test, expect_100_continue_gets_an_interim_response) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
    auto interim = c.read_reply();
    ASSERT_TRUE(interim);
    EXPECT_EQ(interim->status, 100);
    ASSERT_TRUE(c.send("12345"));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "12345");
}

TEST_F(server_test, head_has_the_fields_of_get_without_the_body) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n" + get("/seq/8")));
    auto r = c.read_reply(5s, true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->field("content-length"), "5");
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "8"); // the HEAD reply carried no body bytes
}

TEST_F(server_test, http_1_0_closes_unless_keep_alive_is_asked) {
    test_server srv(routes_);
    {
        raw_client c(srv.port());
        ASSERT_TRUE(c.send("GET /hello HTTP/1.0\r\n\r\n"));
        auto r = c.read_reply();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->field("connection"), "close");
        EXPECT_TRUE(c.wait_closed());
    }
    raw_client c(srv.port());
    ASSERT_TRUE(c.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->field("connection"), "keep-alive");
    ASSERT_TRUE(c.send("GET /seq/3 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "3");
}

TEST_F(server_test, connection_close_is_honoured_and_later_requests_ignored) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send("GET /seq/1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" + get("/seq/2")));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "1");
    EXPECT_EQ(r->field("connection"), "close");
    EXPECT_TRUE(c.wait_closed());
}

// The server runs in this process: its sockets are among this process's descriptors.
std::vector<int> socket_fds_with_peer_port(std::uint16_t peer_port) {
    std::vector<int> fds;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        const int fd = std::stoi(entry.path().filename().string());
        sockaddr_in peer{};
        socklen_t len = sizeof(peer);
        if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0 && peer.sin_family == AF_INET &&
            ntohs(peer.sin_port) == peer_port) {
            fds.push_back(fd);
        }
    }
    return fds;
}

std::size_t open_fd_count() {
    const auto it = std::filesystem::directory_iterator("/proc/self/fd");
    return static_cast<std::size_t>(std::distance(std::filesystem::begin(it), std::filesystem::end(it)));
}

// TCP_NODELAY is set once on the listener and inherited by every accepted socket; a closed connection's
// descriptor is closed by the server (through the ring on io_uring), so a thousand of them leave none behind.
TEST_F(server_test, accepted_sockets_have_nagle_off_and_closed_ones_leave_no_descriptor) {
    test_server srv(routes_);
    const std::size_t before = open_fd_count();
    {
        raw_client c(srv.port());
        ASSERT_TRUE(c.send(get("/hello")));
        ASSERT_TRUE(c.read_reply());
        const auto fds = socket_fds_with_peer_port(c.local_port());
        ASSERT_EQ(fds.size(), 1u);
        int nodelay = 0;
        socklen_t len = sizeof(nodelay);
        ASSERT_EQ(::getsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
        EXPECT_EQ(nodelay, 1);
    }
    for (int i = 0; i < 1000; ++i) {
        raw_client c(srv.port());
        ASSERT_TRUE(c.send("GET /hello HTTP/1.0\r\n\r\n")) << i;
        ASSERT_TRUE(c.read_reply()) << i;
        ASSERT_TRUE(c.wait_closed()) << i; // FIN: the server's descriptor is closed
    }
    // The first connection was closed by the client: the server closes its end once it has read the EOF.
    for (int i = 0; i < 200 && open_fd_count() != before; ++i) {
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(open_fd_count(), before);
    EXPECT_EQ(srv.get().stats().connections_accepted, 1001u);
}

TEST_F(server_test, unknown_path_is_404_problem_json) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send(get("/nope")));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    EXPECT_EQ(r->field("content-type"), "application/problem+json");
    EXPECT_NE(r->body.find(R"("status":404)"), std::string::npos);
    // The connection stays usable after a 404.
    ASSERT_TRUE(c.send(get("/hello")));
    EXPECT_TRUE(c.read_reply());
}

// RFC 9112 §3.2: a server accepts absolute-form targets (clients send them through proxies), takes the
// host from them; "OPTIONS *" asks about the server; CONNECT asks for a tunnel this server does not open.
TEST_F(server_test, request_target_forms) {
    test_server srv(routes_);
    raw_client c(srv.port());
    // Sends one request and reads its reply; status 0 when none came.
    const auto exchange = [](raw_client& client, std::string_view bytes) {
        const bool sent = client.send(bytes);
        auto reply = sent ? client.read_reply() : std::nullopt;
        return reply.value_or(test::http_reply{});
    };
    auto r = exchange(c, "GET http://api.example:8080/where?x=1 HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "api.example:8080 /where x=1");
    EXPECT_EQ(exchange(c, "OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n").status, 204);
    EXPECT_EQ(exchange(c, get("/where")).body, "t /where ");

    raw_client tunnel(srv.port());
    r = exchange(tunnel, "CONNECT db.example:5432 HTTP/1.1\r\nHost: db.example:5432\r\n\r\n");
    EXPECT_EQ(r.status, 501);
    EXPECT_EQ(r.field("content-type"), "application/problem+json");
    EXPECT_TRUE(tunnel.wait_closed());

    raw_client bad(srv.port());
    EXPECT_EQ(exchange(bad, "GET where HTTP/1.1\r\nHost: t\r\n\r\n").status, 400);
}

TEST_F(server_test, wrong_method_is_405_with_allow) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send("POST /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405);
    EXPECT_EQ(r->field("allow"), "GET, HEAD");
    ASSERT_TRUE(c.send("GET /items/3 HTTP/1.1\r\nHost: t\r\n\r\n"));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405);
    EXPECT_EQ(r->field("allow"), "PUT, DELETE");
}

// An echo service answers every method on one route (issue #11): standard methods, a custom token, HEAD with the
// fields of the reply and no body; 405 still comes from routes that list their methods.
TEST(server_any_method, an_echo_route_answers_every_method_and_head_without_a_body) {
    app a;
    a.any("/echo/{what}", [](request& req, response& res) {
        res.text(std::string(req.method_token()) + " " + std::string(req.param("what")) + " " +
                 std::string(req.body()));
    });
    a.get("/only-get", [](request&, response& res) { res.text("got"); });
    test_server srv(a);
    ASSERT_TRUE(srv.ok());
    raw_client c(srv.port());
    const auto exchange = [&c](std::string_view bytes, bool head_request = false) {
        const bool sent = c.send(bytes);
        auto reply = sent ? c.read_reply(5s, head_request) : std::nullopt;
        return reply.value_or(test::http_reply{});
    };

    auto r = exchange("PATCH /echo/a HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nxyz");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "PATCH a xyz");
    r = exchange("DELETE /echo/b HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "DELETE b ");
    r = exchange("PURGE /echo/c HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "PURGE c ");
    r = exchange("GET /echo/d HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_EQ(r.body, "GET d ");

    // HEAD: the length of the body a HEAD handler made, and no body bytes before the next reply.
    r = exchange("HEAD /echo/e HTTP/1.1\r\nHost: t\r\n\r\n", true);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.field("content-length"), "7"); // "HEAD e "
    EXPECT_EQ(r.body, "");
    r = exchange("PUT /echo/f HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "PUT f ");

    r = exchange("PURGE /only-get HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(r.field("allow"), "GET, HEAD");
}

TEST_F(server_test, handler_exception_is_a_counted_500_and_the_server_goes_on) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send(get("/throw")));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    ASSERT_TRUE(c.send(get("/async-throw")));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    ASSERT_TRUE(c.send(get("/hello")));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(srv.get().stats().handler_exceptions, 2u);
}

TEST_F(server_test, redirect_sets_location) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send(get("/redirect")));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 302);
    EXPECT_EQ(r->field("location"), "https://example.invalid/x");
    EXPECT_EQ(r->field("content-length"), "0");
}

TEST_F(server_test, many_loops_share_one_port) {
    test_server srv(routes_, {}, 4);
    ASSERT_TRUE(srv.ok());
    EXPECT_EQ(srv.get().threads(), 4u);
    for (int i = 0; i < 40; ++i) {
        raw_client c(srv.port());
        ASSERT_TRUE(c.send(get("/hello")));
        ASSERT_TRUE(c.read_reply());
    }
}

server_options options_on(std::string address, std::uint16_t port, unsigned threads = 1) {
    server_options o;
    o.address = std::move(address);
    o.port = port;
    o.threads = threads;
    o.io = test::test_io();
    return o;
}

// The loops of one server share its port; another server (another process, hotpath or not) may not join it, as
// with nginx or Kestrel: start() says the address is in use.
TEST_F(server_test, a_port_another_server_holds_is_refused) {
    test_server first(routes_, {}, 2);
    ASSERT_TRUE(first.ok());
    server second(routes_, options_on("127.0.0.1", first.port(), 2));
    const auto started = second.start();
    ASSERT_FALSE(started);
    EXPECT_EQ(started.error().code, std::errc::address_in_use) << started.error().message;
    EXPECT_EQ(second.threads(), 0u); // nothing left running
    // The first server still has every connection.
    for (int i = 0; i < 10; ++i) {
        raw_client c(first.port());
        ASSERT_TRUE(c.send(get("/hello")));
        ASSERT_TRUE(c.read_reply());
    }
}

// A socket of another program that asks to share the port (SO_REUSEPORT, same user) is no reason to share it.
TEST_F(server_test, a_port_a_foreign_reuseport_socket_holds_is_refused) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), length), 0);
    ASSERT_EQ(::listen(fd, 16), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length), 0);
    server s(routes_, options_on("127.0.0.1", ntohs(addr.sin_port)));
    const auto started = s.start();
    EXPECT_FALSE(started);
    EXPECT_EQ(started.error().code, std::errc::address_in_use) << started.error().message;
    ::close(fd);
}

TEST_F(server_test, listens_on_a_host_name) {
    server s(routes_, options_on("localhost", 0, 2));
    const auto started = s.start();
    ASSERT_TRUE(started) << started.error().message;
    EXPECT_TRUE(s.address() == "127.0.0.1" || s.address() == "::1") << s.address();
    EXPECT_EQ(s.url(), "http://" + net::host_port(s.address(), s.port()));
    raw_client c(s.port(), s.address());
    ASSERT_TRUE(c.send(get("/hello")));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "hello");
    s.stop();
    s.wait();
}

TEST_F(server_test, listens_on_ipv6_loopback) {
    server s(routes_, options_on("::1", 0));
    const auto started = s.start();
    ASSERT_TRUE(started) << started.error().message;
    EXPECT_EQ(s.address(), "::1");
    EXPECT_EQ(s.url(), "http://[::1]:" + std::to_string(s.port()));
    raw_client c(s.port(), "::1");
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(get("/hello")));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "hello");
    s.stop();
    s.wait();
}

// What is neither an address nor a host name is refused with a message that says an address is needed, without
// a DNS query for something that looks like an address.
TEST_F(server_test, refuses_what_is_not_an_address) {
    for (const char* bad : {"256.1.1.1", "1::2::3", "", "127.0.0.1:80"}) {
        server s(routes_, options_on(bad, 0));
        const auto t0 = std::chrono::steady_clock::now();
        const auto started = s.start();
        ASSERT_FALSE(started) << bad;
        EXPECT_EQ(started.error().code, errc::invalid_address) << bad << ": " << started.error().message;
        EXPECT_NE(started.error().message.find("address"), std::string::npos);
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms) << bad;
    }
}

TEST(host_port, brackets_ipv6_literals_only) {
    EXPECT_EQ(net::host_port("::1", 8080), "[::1]:8080");
    EXPECT_EQ(net::host_port("fe80::1", 80), "[fe80::1]:80");
    EXPECT_EQ(net::host_port("[::1]", 80), "[::1]:80");
    EXPECT_EQ(net::host_port("127.0.0.1", 8080), "127.0.0.1:8080");
    EXPECT_EQ(net::host_port("localhost", 0), "localhost:0");
}

// Whether `pid`'s main thread sleeps in sigwait() (/proc shows the system call a sleeping thread is in). SigBlk
// cannot tell: while the thread waits, the kernel lifts the block on the signals it waits for.
bool main_thread_in_sigwait(pid_t pid) {
    std::ifstream syscall("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/syscall");
    long number = -1;
    return (syscall >> number) && number == SYS_rt_sigtimedwait;
}

// A program that calls start() and then wait_for_stop_signal(), never block_stop_signals(), still drains on
// SIGTERM: the loops never take the signal, and the waiting thread blocks it itself.
TEST_F(server_test, sigterm_drains_without_block_stop_signals) {
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(out[1], STDOUT_FILENO);
        ::close(out[0]);
        ::close(out[1]);
        ::execl(SIGNAL_CHILD_BINARY, SIGNAL_CHILD_BINARY, static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(out[1]);
    FILE* from_child = ::fdopen(out[0], "r");
    unsigned port = 0;
    ASSERT_EQ(std::fscanf(from_child, "%u", &port), 1);
    raw_client busy(static_cast<std::uint16_t>(port));
    ASSERT_TRUE(busy.send(get("/slow?ms=1000")));
    // Signal once the child waits for it in sigwait (before that, SIGTERM ends a program that has not blocked it,
    // with or without a server).
    for (const auto t0 = std::chrono::steady_clock::now();
         !main_thread_in_sigwait(pid) && std::chrono::steady_clock::now() - t0 < 5s;) {
        std::this_thread::sleep_for(5ms);
    }
    std::this_thread::sleep_for(100ms); // the request is in its handler
    ::kill(pid, SIGTERM);
    auto r = busy.read_reply();
    ASSERT_TRUE(r) << "the in-flight request was not answered";
    EXPECT_EQ(r->body, "slow");
    EXPECT_EQ(r->field("connection"), "close");
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) : "exit status");
    char line[128] = {};
    EXPECT_NE(std::fgets(line, sizeof(line), from_child), nullptr);
    EXPECT_NE(std::fgets(line, sizeof(line), from_child), nullptr);
    EXPECT_EQ(std::string_view(line), "drained after 1 requests\n");
    std::fclose(from_child);
}

// run_until_signal() tells the caller where it listens once it does, which port 0 leaves it no other way to learn.
TEST_F(server_test, run_until_signal_reports_the_port_it_picked) {
    server s(routes_, options_on("127.0.0.1", 0));
    std::promise<std::string> started;
    auto url = started.get_future();
    std::thread runner([&] {
        const auto ran = s.run_until_signal([&started](const server& running) { started.set_value(running.url()); });
        EXPECT_TRUE(ran) << ran.error().message;
    });
    ASSERT_EQ(url.wait_for(5s), std::future_status::ready);
    const std::string where = url.get();
    EXPECT_EQ(where, "http://127.0.0.1:" + std::to_string(s.port()));
    EXPECT_NE(s.port(), 0);
    raw_client c(s.port());
    ASSERT_TRUE(c.send(get("/hello")));
    EXPECT_TRUE(c.read_reply());
    // The runner blocked SIGTERM before starting: a signal to that thread reaches its sigwait, and it drains.
    ::pthread_kill(runner.native_handle(), SIGTERM);
    runner.join();
    EXPECT_TRUE(c.wait_closed());
}

TEST_F(server_test, graceful_shutdown_completes_an_in_flight_request) {
    auto srv = std::make_unique<test_server>(routes_);
    const auto port = srv->port();
    raw_client idle(port);
    ASSERT_TRUE(idle.send(get("/hello")));
    ASSERT_TRUE(idle.read_reply());

    raw_client busy(port);
    ASSERT_TRUE(busy.send(get("/slow?ms=400")));
    std::this_thread::sleep_for(100ms); // the handler is now sleeping
    const auto t0 = std::chrono::steady_clock::now();
    srv->get().stop();

    auto r = busy.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "slow");
    EXPECT_EQ(r->field("connection"), "close");
    EXPECT_TRUE(busy.wait_closed());
    EXPECT_TRUE(idle.wait_closed());
    srv->get().wait();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    raw_client late(port);
    EXPECT_FALSE(late.connected());
    srv.reset();
}

// The cut comes at the deadline itself, not at the loop's next once-a-second tick: the server starts ~100 ms
// before stop(), so a deadline 1 s after stop() falls just past a tick and a tick-driven cut would come ~0.9 s late.
TEST_F(server_test, drain_timeout_cuts_a_request_that_takes_too_long) {
    http::limits l;
    l.drain_timeout = 1s;
    auto srv = std::make_unique<test_server>(routes_, l);
    raw_client busy(srv->port());
    ASSERT_TRUE(busy.send(get("/slow?ms=20000")));
    std::this_thread::sleep_for(100ms);
    const auto t0 = std::chrono::steady_clock::now();
    srv->get().stop();
    EXPECT_TRUE(busy.wait_closed(5s));
    const auto cut = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(cut, 1s);
    EXPECT_LT(cut, 1450ms);
    srv->get().wait();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

} // namespace
} // namespace hotpath
