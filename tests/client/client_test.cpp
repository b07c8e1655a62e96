// The pooled client against the project's own server and scripted raw peers, over loopback.
#include "support/eventually.hpp"
#include "support/loop_runner.hpp"
#include "support/raw_client.hpp"
#include "support/raw_peer.hpp"
#include "support/test_server.hpp"
#include <hotpath/client/client.hpp>
#include <hotpath/client/json.hpp>
#include <hotpath/core/error.hpp>
#include <hotpath/core/when_all.hpp>
#include <hotpath/net/sleep.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <functional>
#include <map>
#include <string>
#include <thread>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::run_on_loop;
using response_result = result<client_response>;
using test_server_stats_fn = std::function<server_stats()>;

int param_int(request& req, std::string_view name, int fallback) {
    const auto text = req.query_param(name);
    int v = fallback;
    std::from_chars(text.data(), text.data() + text.size(), v);
    return v;
}

// Downstream routes: /hello, /echo?i=, /slow?ms=, /inflight?ms= (counts calls in flight), /big?n=, /json.
struct downstream {
    downstream() {
        routes.get("/hello", [](request&, response& res) { res.text("hello"); });
        routes.get("/echo", [](request& req, response& res) { res.text(req.query_param("i")); });
        routes.get("/slow", [](request& req, response& res) -> task<void> {
            co_await net::sleep_for(std::chrono::milliseconds(param_int(req, "ms", 100)));
            res.text("slow");
        });
        routes.get("/inflight", [this](request& req, response& res) -> task<void> {
            const int now = ++in_flight;
            int seen = max_in_flight.load();
            while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
            }
            co_await net::sleep_for(std::chrono::milliseconds(param_int(req, "ms", 30)));
            --in_flight;
            res.text(req.query_param("i"));
        });
        // Waits up to ms, counting callers that hang up first (the server's request::aborted()).
        routes.get("/abortable", [this](request& req, response& res) -> task<void> {
            const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(param_int(req, "ms", 5000));
            while (!req.aborted().cancelled() && std::chrono::steady_clock::now() < end) {
                co_await net::sleep_for(5ms);
            }
            if (req.aborted().cancelled()) {
                ++abandoned;
            }
            res.text("done");
        });
        routes.get("/big", [](request& req, response& res) {
            res.text(std::string(static_cast<std::size_t>(param_int(req, "n", 5000)), 'x'));
        });
        routes.get("/json",
                   [](request&, response& res) { res.body(R"({"message":"Hello, World!"})", "application/json"); });
        routes.post("/echo-body", [](request& req, response& res) {
            res.text(std::string(req.body()) + "|" + std::string(req.header("content-type")) + "|" +
                     std::string(req.header("x-test")));
        });
    }
    std::string url(std::string_view path) const {
        return "http://127.0.0.1:" + std::to_string(srv->port()) + std::string(path);
    }

    app routes;
    std::atomic<int> in_flight{0};
    std::atomic<int> max_in_flight{0};
    std::atomic<int> abandoned{0};
    std::unique_ptr<test::test_server> srv;
};

class client_test : public ::testing::Test {
protected:
    void SetUp() override { start(); }
    void start(http::limits limits = {}) {
        down.srv.reset();
        down.srv = std::make_unique<test::test_server>(down.routes, limits);
        ASSERT_TRUE(down.srv->ok());
    }
    server_stats server() { return down.srv->get().stats(); }

    downstream down;
};

TEST_F(client_test, sequential_calls_reuse_one_pooled_connection) {
    client c;
    auto bodies = run_on_loop([](client& cl, std::string url) -> task<std::vector<std::string>> {
        std::vector<std::string> out;
        for (int i = 0; i < 10; ++i) {
            auto r = co_await cl.get(url);
            out.push_back(r ? std::to_string(r->status()) + " " + r->body() : r.error().message());
        }
        co_return out;
    }(c, down.url("/hello")));
    ASSERT_TRUE(bodies);
    for (const auto& b : *bodies) {
        EXPECT_EQ(b, "200 hello");
    }
    EXPECT_EQ(c.stats().connections_opened, 1u);
    EXPECT_EQ(c.stats().reused, 9u);
    EXPECT_EQ(c.stats().requests, 10u);
    EXPECT_EQ(server().connections_accepted, 1u);
}

TEST_F(client_test, at_most_max_connections_per_host_and_the_rest_wait_in_order) {
    client_options o;
    o.max_connections_per_host = 2;
    client c(o);
    auto results = run_on_loop([](client& cl, std::string url) -> task<std::vector<response_result>> {
        std::vector<task<response_result>> calls;
        for (int i = 0; i < 6; ++i) {
            calls.push_back(cl.get(url + std::to_string(i)));
        }
        co_return co_await when_all(std::move(calls));
    }(c, down.url("/inflight?ms=40&i=")));
    ASSERT_TRUE(results);
    for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE((*results)[i].has_value()) << (*results)[i].error().message();
        EXPECT_EQ((*results)[i]->body(), std::to_string(i));
    }
    EXPECT_EQ(c.stats().connections_opened, 2u);
    EXPECT_EQ(c.stats().waited_for_connection, 4u);
    EXPECT_EQ(down.max_in_flight.load(), 2);
    EXPECT_EQ(server().connections_accepted, 2u);
}

TEST_F(client_test, bounded_fan_out_keeps_order_and_at_most_k_in_flight_at_the_downstream) {
    client c;
    auto results = run_on_loop([](client& cl, std::string url) -> task<std::vector<response_result>> {
        co_return co_await bounded_fan_out(12, 3, [&](std::size_t i) { return cl.get(url + std::to_string(i)); });
    }(c, down.url("/inflight?ms=30&i=")));
    ASSERT_TRUE(results);
    ASSERT_EQ(results->size(), 12u);
    for (std::size_t i = 0; i < 12; ++i) {
        ASSERT_TRUE((*results)[i].has_value());
        EXPECT_EQ((*results)[i]->body(), std::to_string(i));
    }
    EXPECT_EQ(down.max_in_flight.load(), 3);
    EXPECT_EQ(c.stats().connections_opened, 3u); // each slot keeps its connection
}

TEST_F(client_test, a_connection_past_its_lifetime_is_retired_not_reused) {
    client_options o;
    o.connection_lifetime = 200ms;
    client c(o);
    auto ok = run_on_loop([](client& cl, std::string url) -> task<bool> {
        auto a = co_await cl.get(url);
        auto b = co_await cl.get(url); // young: reused
        co_await net::sleep_for(300ms);
        auto d = co_await cl.get(url); // old: a new one
        co_return a&& b&& d && d->body() == "hello";
    }(c, down.url("/hello")));
    ASSERT_TRUE(ok && *ok);
    EXPECT_EQ(c.stats().connections_opened, 2u);
    EXPECT_EQ(c.stats().reused, 1u);
    EXPECT_EQ(c.stats().closed_lifetime, 1u);
    EXPECT_EQ(server().connections_accepted, 2u);
}

TEST_F(client_test, idle_connections_close_after_the_idle_timeout) {
    client_options o;
    o.idle_timeout = 1s;
    client c(o);
    auto ok = run_on_loop([](client& cl, std::string url) -> task<bool> {
        auto a = co_await cl.get(url);
        co_await net::sleep_for(2500ms); // the pool checks once a second
        co_return a.has_value();
    }(c, down.url("/hello")));
    ASSERT_TRUE(ok && *ok);
    EXPECT_EQ(c.stats().closed_idle, 1u);
    EXPECT_TRUE(eventually([&] { return server().connections_closed == 1; }));
}

TEST_F(client_test, a_destroyed_clients_idle_connections_close_within_a_tick) {
    auto closed = run_on_loop([](std::string url, test_server_stats_fn stats) -> task<std::uint64_t> {
        auto c = std::make_unique<client>();
        auto a = co_await c->get(url);
        if (!a) {
            co_return 99;
        }
        c.reset(); // idle pooled connection left behind
        co_await net::sleep_for(1500ms);
        co_return stats().connections_closed;
    }(down.url("/hello"), [this] { return server(); }));
    ASSERT_TRUE(closed);
    EXPECT_EQ(*closed, 1u);
}

TEST_F(client_test, a_pooled_connection_the_server_closed_is_replaced_without_error) {
    http::limits limits;
    limits.keep_alive_timeout = 1s;
    start(limits);
    client c;
    auto ok = run_on_loop([](client& cl, std::string url) -> task<std::string> {
        auto a = co_await cl.get(url);
        co_await net::sleep_for(2500ms); // the server closes the idle connection meanwhile
        auto b = co_await cl.get(url);
        co_return a&& b ? b->body() : std::string("failed");
    }(c, down.url("/hello")));
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, "hello");
    EXPECT_EQ(c.stats().closed_by_peer, 1u);
    EXPECT_EQ(c.stats().connections_opened, 2u);
    EXPECT_EQ(c.stats().retries, 0u); // detected while idle: never used stale
}

constexpr std::string_view ok_response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

TEST_F(client_test, a_request_that_meets_a_stale_connection_is_retried_once_on_a_new_one) {
    // Connection 0 answers once, then closes when the second request arrives (a peer that had just timed
    // it out); connection 1 answers.
    test::raw_peer peer([](test::peer_socket& s, int index) {
        if (s.read_request().empty()) {
            return;
        }
        s.write(ok_response);
        if (index == 0) {
            (void)s.read_request();
            s.close();
            return;
        }
        (void)s.read_request(1s);
    });
    client c;
    const std::string url = "http://127.0.0.1:" + std::to_string(peer.port()) + "/";
    auto ok = run_on_loop([](client& cl, std::string u) -> task<std::string> {
        auto a = co_await cl.get(u);
        auto b = co_await cl.get(u);
        co_return a&& b ? a->body() + b->body() : (a ? b.error() : a.error()).message();
    }(c, url));
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, "okok");
    EXPECT_EQ(c.stats().retries, 1u);
    EXPECT_EQ(peer.accepted(), 2);
}

// A keep-alive peer that answers the first request, reads the second and closes without answering (it had
// just timed the connection out, or crashed mid-request); a later connection answers everything. Counts the
// requests it read, by request line.
struct closes_after_reading_the_second {
    std::atomic<int> posts{0};
    std::atomic<int> gets{0};
    test::raw_peer peer{[this](test::peer_socket& s, int index) {
        for (int n = 0;; ++n) {
            const std::string r = s.read_request(2s);
            if (r.empty()) {
                return;
            }
            ++(r.starts_with("POST ") ? posts : gets);
            if (index == 0 && n == 1) {
                s.close();
                return;
            }
            s.write(ok_response);
        }
    }};
    std::string url() const { return "http://127.0.0.1:" + std::to_string(peer.port()) + "/"; }
};

TEST_F(client_test, a_post_that_may_have_reached_the_server_is_not_retried) {
    closes_after_reading_the_second p;
    client c;
    auto e = run_on_loop([](client& cl, std::string u) -> task<std::error_code> {
        auto a = co_await cl.get(u);
        if (!a) {
            co_return a.error();
        }
        auto b = co_await cl.post(u, "{\"order\":1}", "application/json");
        co_return b ? std::error_code{} : b.error();
    }(c, p.url()));
    ASSERT_TRUE(e);
    EXPECT_TRUE(*e == errc::closed || *e == errc::reset) << e->message();
    EXPECT_EQ(p.posts.load(), 1) << "the POST reached the peer once: sending it again could repeat its effect";
    EXPECT_EQ(c.stats().retries, 0u);
    EXPECT_EQ(c.stats().not_retried, 1u);
    EXPECT_EQ(p.peer.accepted(), 1);
}

TEST_F(client_test, an_idempotent_request_in_the_same_case_is_retried_once_and_succeeds) {
    for (const bool keyed_post : {false, true}) {
        SCOPED_TRACE(keyed_post ? "POST with Idempotency-Key" : "GET");
        closes_after_reading_the_second p;
        client c;
        auto ok = run_on_loop([](client& cl, std::string u, bool keyed) -> task<std::string> {
            auto a = co_await cl.get(u);
            client_request second;
            second.url = u;
            if (keyed) {
                second.method = "POST";
                second.body = "{}";
                second.headers.emplace_back("idempotency-key", "8e03978e-40d5-43e8-bc93-6894a57f9324");
            }
            auto b = co_await cl.send(std::move(second));
            co_return a&& b ? b->body() : (a ? b.error() : a.error()).message();
        }(c, p.url(), keyed_post));
        ASSERT_TRUE(ok);
        EXPECT_EQ(*ok, "ok");
        EXPECT_EQ(c.stats().retries, 1u);
        EXPECT_EQ(c.stats().not_retried, 0u);
        EXPECT_EQ(p.peer.accepted(), 2);
        EXPECT_EQ(keyed_post ? p.posts.load() : p.gets.load() - 1, 2) << "sent, and sent again";
    }
}

TEST_F(client_test, a_post_on_a_connection_the_peer_closed_before_it_was_written_goes_on_another) {
    // Connection 0 answers once and closes; the call's loop is held until the close has landed, so the pool
    // still offers the connection (the loop has not seen its end): the POST must not be written on it.
    std::atomic<bool> closed{false};
    std::atomic<int> posts_on_first{0};
    std::atomic<int> posts{0};
    test::raw_peer peer([&](test::peer_socket& s, int index) {
        for (;;) {
            const std::string r = s.read_request(2s);
            if (r.empty()) {
                return;
            }
            if (r.starts_with("POST ")) {
                ++posts;
                posts_on_first += index == 0 ? 1 : 0;
            }
            s.write(ok_response);
            if (index == 0) {
                s.close();
                closed = true;
                return;
            }
        }
    });
    client c;
    const std::string url = "http://127.0.0.1:" + std::to_string(peer.port()) + "/";
    auto ok = run_on_loop([](client& cl, std::string u, std::atomic<bool>& peer_closed) -> task<std::string> {
        auto a = co_await cl.get(u);
        // Still inside the loop's handler that completed the GET: block it (deliberately) until the FIN is in.
        const auto end = std::chrono::steady_clock::now() + 2s;
        while (!peer_closed && std::chrono::steady_clock::now() < end) {
            std::this_thread::sleep_for(1ms);
        }
        std::this_thread::sleep_for(20ms);
        auto b = co_await cl.post(u, "{\"order\":1}", "application/json");
        co_return a&& b ? b->body() : (a ? b.error() : a.error()).message();
    }(c, url, closed));
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, "ok");
    EXPECT_EQ(posts.load(), 1);
    EXPECT_EQ(posts_on_first.load(), 0);
    EXPECT_EQ(c.stats().closed_by_peer, 1u) << "found closed before the POST was written";
    EXPECT_EQ(c.stats().retries, 0u);
    EXPECT_EQ(c.stats().not_retried, 0u);
    EXPECT_EQ(c.stats().connections_opened, 2u);
    EXPECT_EQ(peer.accepted(), 2);
}

TEST_F(client_test, no_retry_once_part_of_the_response_arrived) {
    test::raw_peer peer([](test::peer_socket& s, int) {
        if (s.read_request().empty()) {
            return;
        }
        s.write(ok_response);
        if (!s.read_request().empty()) {
            s.write("HTTP/1.1 200 OK\r\nContent-Le");
            s.close();
        }
    });
    client c;
    const std::string url = "http://127.0.0.1:" + std::to_string(peer.port()) + "/";
    auto e = run_on_loop([](client& cl, std::string u) -> task<std::error_code> {
        auto a = co_await cl.get(u);
        auto b = co_await cl.get(u);
        co_return a ? b.error() : a.error();
    }(c, url));
    ASSERT_TRUE(e);
    EXPECT_EQ(*e, errc::closed);
    EXPECT_EQ(c.stats().retries, 0u);
    EXPECT_EQ(peer.accepted(), 1);
}

TEST_F(client_test, chunked_and_close_delimited_bodies) {
    test::raw_peer peer([](test::peer_socket& s, int) {
        if (s.read_request().empty()) {
            return;
        }
        s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n");
        std::this_thread::sleep_for(20ms); // the body arrives in two pieces
        s.write("7\r\n, world\r\n0\r\nTrailer: x\r\n\r\n");
        if (s.read_request().empty()) {
            return;
        }
        s.write("HTTP/1.1 200 OK\r\nX-Mode: close\r\n\r\nuntil the ");
        std::this_thread::sleep_for(20ms);
        s.write("end");
        s.close();
    });
    client c;
    const std::string url = "http://127.0.0.1:" + std::to_string(peer.port()) + "/";
    auto bodies = run_on_loop([](client& cl, std::string u) -> task<std::vector<std::string>> {
        std::vector<std::string> out;
        for (int i = 0; i < 2; ++i) {
            auto r = co_await cl.get(u);
            out.push_back(r ? r->body() + "|" + std::string(r->header("x-mode")) : r.error().message());
        }
        co_return out;
    }(c, url));
    ASSERT_TRUE(bodies);
    EXPECT_EQ((*bodies)[0], "hello, world|");
    EXPECT_EQ((*bodies)[1], "until the end|close");
    EXPECT_EQ(c.stats().connections_opened, 1u); // the chunked response kept the connection
    EXPECT_EQ(c.stats().reused, 1u);
}

std::error_code call_raw_peer(std::string_view response, client_options o = {}, bool close_after = true) {
    test::raw_peer peer([response, close_after](test::peer_socket& s, int) {
        if (s.read_request().empty()) {
            return;
        }
        s.write(response);
        if (close_after) {
            s.close();
        } else {
            (void)s.read_request(2s);
        }
    });
    client c(o);
    auto e = run_on_loop([](client& cl, std::string u) -> task<std::error_code> {
        auto r = co_await cl.get(u);
        co_return r.error();
    }(c, "http://127.0.0.1:" + std::to_string(peer.port()) + "/"));
    return e ? *e : make_error_code(errc::timeout);
}

TEST_F(client_test, malformed_responses_are_errors_not_crashes) {
    const std::string_view cases[] = {
        "hello\r\n\r\n",
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
        "HTTP/1.1 200 OK\nContent-Length: 0\n\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX",
    };
    for (const auto response : cases) {
        SCOPED_TRACE(std::string(response));
        EXPECT_EQ(call_raw_peer(response, {}, false), errc::malformed_response);
    }
}

TEST_F(client_test, a_response_cut_short_is_closed) {
    EXPECT_EQ(call_raw_peer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"), errc::closed);
    EXPECT_EQ(call_raw_peer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"), errc::closed);
    EXPECT_EQ(call_raw_peer(""), errc::closed);
}

TEST_F(client_test, responses_over_the_size_limit_are_refused_whatever_their_framing) {
    client_options o;
    o.max_response_bytes = 1000;
    EXPECT_EQ(call_raw_peer("HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n", o, false), errc::response_too_large);
    EXPECT_EQ(call_raw_peer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n" + std::string(1001, 'x') +
                                "\r\n0\r\n\r\n",
                            o, false),
              errc::response_too_large);
    EXPECT_EQ(call_raw_peer("HTTP/1.1 200 OK\r\n\r\n" + std::string(1001, 'x'), o, false), errc::response_too_large);
    EXPECT_EQ(call_raw_peer("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + std::string(1000, 'x'), o, false),
              std::error_code{});
}

TEST_F(client_test, refused_and_reset_are_distinct_values) {
    client c;
    auto refused = run_on_loop([](client& cl, std::string u) -> task<std::error_code> {
        co_return (co_await cl.get(u)).error();
    }(c, "http://127.0.0.1:" + std::to_string(test::closed_port()) + "/"));
    ASSERT_TRUE(refused);
    EXPECT_EQ(*refused, errc::refused);
    EXPECT_EQ(c.stats().connect_failures, 1u);

    test::raw_peer peer([](test::peer_socket& s, int) {
        if (!s.read_request().empty()) {
            s.reset();
        }
    });
    auto reset = run_on_loop([](client& cl, std::string u) -> task<std::error_code> {
        co_return (co_await cl.get(u)).error();
    }(c, "http://127.0.0.1:" + std::to_string(peer.port()) + "/"));
    ASSERT_TRUE(reset);
    EXPECT_EQ(*reset, errc::reset);
}

TEST_F(client_test, a_slow_response_times_out_and_its_connection_is_closed) {
    client c;
    const auto start = std::chrono::steady_clock::now();
    auto e = run_on_loop([](client& cl, std::string u) -> task<std::error_code> {
        co_return (co_await cl.get(u, {100ms})).error();
    }(c, down.url("/abortable?ms=5000")));
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(e);
    EXPECT_EQ(*e, errc::timeout);
    EXPECT_GE(took, 100ms);
    EXPECT_LT(took, 1500ms);
    EXPECT_EQ(c.stats().timeouts, 1u);
    EXPECT_TRUE(eventually([&] { return down.abandoned == 1; })); // the server saw the connection close
}

TEST_F(client_test, a_call_waiting_for_a_connection_times_out_in_the_queue) {
    client_options o;
    o.max_connections_per_host = 1;
    client c(o);
    auto errors = run_on_loop([](client& cl, std::string slow) -> task<std::vector<std::string>> {
        std::vector<task<response_result>> calls;
        calls.push_back(cl.get(slow));
        calls.push_back(cl.get(slow, {100ms}));
        auto r = co_await when_all(std::move(calls));
        co_return std::vector<std::string>{r[0] ? r[0]->body() : r[0].error().message(), r[1].error().message()};
    }(c, down.url("/slow?ms=400")));
    ASSERT_TRUE(errors);
    EXPECT_EQ((*errors)[0], "slow");
    EXPECT_EQ((*errors)[1], make_error_code(errc::timeout).message());
    EXPECT_EQ(c.stats().connections_opened, 1u);
}

TEST_F(client_test, a_connect_that_gets_no_answer_times_out) {
    // A listener whose accept queue is full: the kernel drops further SYNs, so a connect hangs.
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(::listen(fd, 0), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    std::vector<int> fillers; // non-blocking: the ones past the queue would hang a blocking connect
    for (int i = 0; i < 4; ++i) {
        fillers.push_back(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        (void)::connect(fillers.back(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    }
    std::this_thread::sleep_for(50ms);
    client_options o;
    o.connect_timeout = 200ms;
    client c(o);
    const auto start = std::chrono::steady_clock::now();
    auto e = run_on_loop([](client& cl, std::string u) -> task<std::error_code> {
        co_return (co_await cl.get(u)).error();
    }(c, "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/"));
    const auto took = std::chrono::steady_clock::now() - start;
    ::close(fd);
    for (const int f : fillers) {
        ::close(f);
    }
    ASSERT_TRUE(e);
    EXPECT_EQ(*e, errc::connect_timeout);
    EXPECT_GE(took, 200ms);
    EXPECT_LT(took, 2s);
}

TEST_F(client_test, cancelling_stops_calls_and_their_connections_are_not_pooled) {
    client c;
    cancel_signal signal;
    const auto start = std::chrono::steady_clock::now();
    auto outcome = run_on_loop(
        [](client& cl, std::string slow, std::string hello, cancel_signal& sig) -> task<std::vector<std::string>> {
            std::vector<task<response_result>> calls;
            for (int i = 0; i < 4; ++i) {
                calls.push_back(cl.get(slow, {0ns, {}, &sig}));
            }
            calls.push_back([](cancel_signal& s) -> task<response_result> {
                co_await net::sleep_for(100ms);
                s.cancel();
                co_return make_error_code(errc::cancelled);
            }(sig));
            auto r = co_await when_all(std::move(calls));
            std::vector<std::string> out;
            for (auto& x : r) {
                out.push_back(x ? x->body() : x.error().message());
            }
            auto after = co_await cl.get(hello); // the pool holds none of the cancelled connections
            out.push_back(after ? after->body() : after.error().message());
            co_return out;
        }(c, down.url("/abortable?ms=5000"), down.url("/hello"), signal));
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(outcome);
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ((*outcome)[i], make_error_code(errc::cancelled).message());
    }
    EXPECT_EQ((*outcome)[5], "hello");
    EXPECT_LT(took, 2s);
    EXPECT_EQ(c.stats().cancelled, 4u);
    EXPECT_EQ(c.stats().connections_opened, 5u);
    EXPECT_EQ(c.stats().reused, 0u);
    EXPECT_TRUE(eventually([&] { return down.abandoned == 4; })); // the server saw each connection close
}

TEST_F(client_test, a_call_on_a_cancelled_signal_never_starts) {
    client c;
    cancel_signal signal;
    signal.cancel();
    auto e = run_on_loop([](client& cl, std::string u, cancel_signal& s) -> task<std::error_code> {
        co_return (co_await cl.get(u, {0ns, {}, &s})).error();
    }(c, down.url("/hello"), signal));
    ASSERT_TRUE(e);
    EXPECT_EQ(*e, errc::cancelled);
    EXPECT_EQ(c.stats().connections_opened, 0u);
}

TEST_F(client_test, a_shared_deadline_ends_every_call_of_a_fan_out) {
    client c;
    auto errors = run_on_loop([](client& cl, std::string slow) -> task<std::vector<std::error_code>> {
        call_options o;
        o.deadline = std::chrono::steady_clock::now() + 150ms;
        std::vector<task<response_result>> calls;
        for (int i = 0; i < 3; ++i) {
            calls.push_back(cl.get(slow, o));
        }
        std::vector<std::error_code> out;
        for (auto& r : co_await when_all(std::move(calls))) {
            out.push_back(r.error());
        }
        co_return out;
    }(c, down.url("/slow?ms=2000")));
    ASSERT_TRUE(errors);
    for (const auto& e : *errors) {
        EXPECT_EQ(e, errc::timeout);
    }
}

TEST_F(client_test, bad_urls_and_header_injection_are_refused_before_any_connect) {
    client c;
    auto errors = run_on_loop([](client& cl, std::string good) -> task<std::vector<std::error_code>> {
        std::vector<std::error_code> out;
        out.push_back((co_await cl.get("ftp://127.0.0.1/")).error());
        out.push_back((co_await cl.get("not a url")).error());
        client_request r;
        r.url = good;
        r.headers.emplace_back("X-Evil", "a\r\nInjected: yes");
        out.push_back((co_await cl.send(r)).error());
        r.headers = {{"Bad Name", "x"}};
        out.push_back((co_await cl.send(r)).error());
        r.headers = {};
        r.method = "GE T";
        out.push_back((co_await cl.send(r)).error());
        co_return out;
    }(c, down.url("/hello")));
    ASSERT_TRUE(errors);
    EXPECT_EQ((*errors)[0], errc::invalid_url);
    EXPECT_EQ((*errors)[1], errc::invalid_url);
    EXPECT_EQ((*errors)[2], errc::bad_request);
    EXPECT_EQ((*errors)[3], errc::bad_request);
    EXPECT_EQ((*errors)[4], errc::bad_request);
    EXPECT_EQ(c.stats().connections_opened, 0u);
}

TEST_F(client_test, post_sends_body_headers_and_length) {
    client c;
    auto body = run_on_loop([](client& cl, std::string u) -> task<std::string> {
        client_request r;
        r.method = "POST";
        r.url = u;
        r.body = "payload";
        r.headers = {{"Content-Type", "text/plain"}, {"X-Test", "1"}};
        auto a = co_await cl.send(r);
        auto b = co_await cl.post(u, "", "application/json"); // empty body: Content-Length: 0
        co_return a&& b ? a->body() + "/" + b->body() : std::string("failed");
    }(c, down.url("/echo-body")));
    ASSERT_TRUE(body);
    EXPECT_EQ(*body, "payload|text/plain|1/|application/json|");
}

TEST_F(client_test, get_json_converts_and_reports_status_and_shape_errors) {
    client c;
    auto out = run_on_loop([](client& cl, std::string base) -> task<std::vector<std::string>> {
        std::vector<std::string> o;
        auto m = co_await cl.get_json<std::map<std::string, std::string>>(base + "/json");
        o.push_back(m ? (*m)["message"] : m.error().message());
        auto missing = co_await cl.get_json<std::map<std::string, std::string>>(base + "/nowhere");
        o.push_back(missing.error().message());
        auto not_json = co_await cl.get_json<std::map<std::string, std::string>>(base + "/hello");
        o.push_back(not_json.error().message());
        auto wrong_shape = co_await cl.get_json<std::vector<int>>(base + "/json");
        o.push_back(wrong_shape.error().message());
        co_return o;
    }(c, down.url("")));
    ASSERT_TRUE(out);
    EXPECT_EQ((*out)[0], "Hello, World!");
    EXPECT_EQ((*out)[1], make_error_code(errc::unexpected_status).message());
    EXPECT_EQ((*out)[2], make_error_code(errc::invalid_json).message());
    EXPECT_EQ((*out)[3], make_error_code(errc::invalid_json).message());
}

// The blocking pool answers a resolution from a thread of its own; the loop must still see the answer at once, not
// at its next tick a second later.
TEST_F(client_test, host_names_resolve_off_the_loop) {
    client c;
    const auto t0 = std::chrono::steady_clock::now();
    auto body = run_on_loop([](client& cl, std::string u) -> task<std::string> {
        auto r = co_await cl.get(u);
        co_return r ? r->body() : r.error().message();
    }(c, "http://localhost:" + std::to_string(down.srv->port()) + "/hello"));
    ASSERT_TRUE(body);
    EXPECT_EQ(*body, "hello");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
}

} // namespace
} // namespace hotpath
