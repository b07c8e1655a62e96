// The client library over HTTP/2 (client_options::protocol): h2c with prior knowledge and h2 through ALPN, against
// hotpath's own server, nginx, and a Node server that refuses streams, goes away and allows few streams at once
// (tests/integration/h2_peer.js). Calls to a host share a connection's streams; a call's deadline, a response past
// the limit or a refused stream ends that stream alone; what the server did not process is sent again.
#include "integration/https_support.hpp"
#include "support/eventually.hpp"
#include "support/loop_runner.hpp"
#include "support/peers.hpp"
#include "support/test_certs.hpp"
#include "support/test_server.hpp"

#include <hotpath/client/client.hpp>
#include <hotpath/core/when_all.hpp>
#include <hotpath/net/sleep.hpp>
#include <hotpath/net/tls.hpp>
#include <hotpath/server/server.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using https_support::missing_nginx;
using https_support::nginx_peer;
using https_support::program_path;
using test::eventually;
using test::run_on_loop;
using test::test_cert;
using test::test_server;
using test::to_unsigned;
using response_result = result<client_response>;

app make_app() {
    app a;
    a.get("/hello", [](request&, response& res) { res.text("hello"); });
    a.get("/version", [](request& req, response& res) {
        res.text(std::to_string(req.version_major()) + "." + std::to_string(req.version_minor()));
    });
    a.get("/users/{id}", [](request& req, response& res) {
        res.header("X-Id", req.param("id"));
        res.text(std::string(req.param("id")) + "|" + std::string(req.header("x-test")) + "|" +
                 std::string(req.host()));
    });
    a.post("/echo", [](request& req, response& res) { res.body(req.body(), "application/octet-stream"); });
    a.get("/slow", [](request& req, response& res) -> task<void> {
        co_await net::sleep_for(std::chrono::milliseconds{to_unsigned(req.query_param("ms"))});
        res.text("slow");
    });
    a.get("/big",
          [](request& req, response& res) { res.text(std::string(to_unsigned(req.query_param("kb")) * 1024, 'x')); });
    return a;
}

client_options h2c() {
    client_options o;
    o.protocol = client_protocol::http2;
    return o;
}

std::string local(std::uint16_t port, const std::string& path, const std::string& scheme = "http") {
    return scheme + "://127.0.0.1:" + std::to_string(port) + path;
}

// `n` calls of `request` at once, each with `options`, on the loop it is awaited on: their results, in order.
task<std::vector<response_result>> many(client& c, client_request request, int n, call_options options = {}) {
    std::vector<task<response_result>> calls;
    for (int i = 0; i < n; ++i) {
        calls.push_back(c.send(request, options));
    }
    co_return co_await when_all(std::move(calls));
}

// The same on a loop of its own (its own pools: a connection of its own to each host).
std::vector<response_result> at_once(client& c, const client_request& request, int n, call_options options = {}) {
    auto got = run_on_loop(many(c, request, n, options), 30s);
    return got ? std::move(*got) : std::vector<response_result>{};
}

client_request get(std::string url) {
    client_request r;
    r.url = std::move(url);
    return r;
}

client_request post(std::string url, std::string body) {
    client_request r;
    r.method = "POST";
    r.url = std::move(url);
    r.body = std::move(body);
    return r;
}

response_result one(client& c, const client_request& request, call_options options = {}) {
    auto all = at_once(c, request, 1, options);
    return all.empty() ? response_result(make_error_code(errc::timeout)) : std::move(all.front());
}

std::string why(const response_result& r) {
    return r ? "status " + std::to_string(r->status()) + ": " + r->body().substr(0, 200) : r.error().message();
}

TEST(h2_client_test, calls_at_once_share_one_h2c_connection_on_streams_side_by_side) {
    const app routes = make_app();
    test_server s(routes);
    ASSERT_TRUE(s.ok());
    client c(h2c());
    // 64 calls of 300 ms at once: side by side on one connection's streams, not one after another; then one more.
    const auto started = std::chrono::steady_clock::now();
    auto got = run_on_loop([](client& cl, std::uint16_t port) -> task<std::vector<response_result>> {
        auto all = co_await many(cl, get(local(port, "/slow?ms=300")), 64);
        all.push_back(co_await cl.get(local(port, "/version")));
        co_return all;
    }(c, s.port()));
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_TRUE(got && got->size() == 65u);
    for (std::size_t i = 0; i < 64; ++i) {
        const auto& r = (*got)[i];
        ASSERT_TRUE(r && r->status() == 200 && r->body() == "slow") << why(r);
    }
    EXPECT_LT(took, 10s); // one after another: 19 s
    ASSERT_TRUE(got->back()) << why(got->back());
    EXPECT_EQ(got->back()->body(), "2.0");
    EXPECT_EQ(c.stats().connections_opened, 1u);
    EXPECT_EQ(c.stats().reused, 64u);
    EXPECT_EQ(c.stats().requests, 65u);
    EXPECT_EQ(s.get().stats().h2_connections, 1u);
    EXPECT_EQ(s.get().stats().h2_streams, 65u);
}

TEST(h2_client_test, fields_bodies_past_the_window_and_statuses_go_both_ways) {
    const app routes = make_app();
    test_server s(routes);
    ASSERT_TRUE(s.ok());
    client c(h2c());
    client_request users = get(local(s.port(), "/users/7"));
    users.headers.emplace_back("X-Test", "upper-case name");
    users.headers.emplace_back("Connection", "keep-alive"); // forbidden over HTTP/2: left out, not an error
    // 3 MiB up and back: past the server's stream window (768 KiB) and the connection's (1 MiB) both ways.
    client_request echo = post(local(s.port(), "/echo"), "");
    for (int i = 0; echo.body.size() < (3u << 20); ++i) {
        echo.body += std::to_string(i) + ",";
    }
    auto got = run_on_loop([](client& cl, std::vector<client_request> requests) -> task<std::vector<response_result>> {
        std::vector<response_result> out;
        for (auto& r : requests) {
            out.push_back(co_await cl.send(std::move(r)));
        }
        co_return out;
    }(c, {users, echo, get(local(s.port(), "/missing")), post(local(s.port(), "/echo"), "")}));
    ASSERT_TRUE(got && got->size() == 4u);
    const auto& u = (*got)[0];
    ASSERT_TRUE(u && u->status() == 200) << why(u);
    EXPECT_EQ(u->body(), "7|upper-case name|127.0.0.1:" + std::to_string(s.port()));
    EXPECT_EQ(u->header("X-Id"), "7");
    EXPECT_EQ(u->header("content-type"), "text/plain; charset=utf-8");
    const auto& e = (*got)[1];
    ASSERT_TRUE(e && e->status() == 200) << why(e);
    EXPECT_TRUE(e->body() == echo.body) << e->body().size() << " bytes back of " << echo.body.size();
    const auto& missing = (*got)[2];
    ASSERT_TRUE(missing) << why(missing);
    EXPECT_EQ(missing->status(), 404u);
    EXPECT_EQ(missing->header("content-type"), "application/problem+json");
    const auto& none = (*got)[3];
    ASSERT_TRUE(none && none->status() == 200) << why(none);
    EXPECT_EQ(none->body(), "");
    EXPECT_EQ(c.stats().connections_opened, 1u);
}

TEST(h2_client_test, a_call_past_its_deadline_resets_its_stream_and_the_connection_goes_on) {
    const app routes = make_app();
    test_server s(routes);
    ASSERT_TRUE(s.ok());
    client c(h2c());
    // As many calls as the server allows streams, each given up: none may keep its stream, or the next would wait.
    auto got = run_on_loop([](client& cl, std::uint16_t port) -> task<std::vector<response_result>> {
        call_options quick;
        quick.timeout = 200ms;
        auto all = co_await many(cl, get(local(port, "/slow?ms=3000")), 100, quick);
        call_options bounded;
        bounded.timeout = 2s;
        all.push_back(co_await cl.get(local(port, "/hello"), bounded));
        co_return all;
    }(c, s.port()));
    ASSERT_TRUE(got && got->size() == 101u);
    for (std::size_t i = 0; i < 100; ++i) {
        const auto& r = (*got)[i];
        ASSERT_FALSE(r) << why(r);
        EXPECT_EQ(r.error(), errc::timeout);
    }
    ASSERT_TRUE(got->back() && got->back()->body() == "hello") << why(got->back());
    EXPECT_EQ(c.stats().connections_opened, 1u);
    EXPECT_EQ(c.stats().timeouts, 100u);
    EXPECT_TRUE(eventually([&] { return s.get().stats().h2_resets == 100; })) << s.get().stats().h2_resets;
}

TEST(h2_client_test, a_response_past_the_limit_fails_its_call_alone) {
    const app routes = make_app();
    test_server s(routes);
    ASSERT_TRUE(s.ok());
    client_options o = h2c();
    o.max_response_bytes = 64 * 1024;
    client c(o);
    auto got = run_on_loop([](client& cl, std::uint16_t port) -> task<std::vector<response_result>> {
        std::vector<response_result> out;
        out.push_back(co_await cl.get(local(port, "/big?kb=512")));
        out.push_back(co_await cl.get(local(port, "/big?kb=32")));
        co_return out;
    }(c, s.port()));
    ASSERT_TRUE(got && got->size() == 2u);
    ASSERT_FALSE(got->front()) << why(got->front());
    EXPECT_EQ(got->front().error(), errc::response_too_large);
    ASSERT_TRUE(got->back() && got->back()->body().size() == 32u * 1024) << why(got->back());
    EXPECT_EQ(c.stats().connections_opened, 1u);
}

TEST(h2_client_test, an_idle_connection_closes_at_the_idle_timeout_and_the_next_call_opens_another) {
    const app routes = make_app();
    test_server s(routes);
    ASSERT_TRUE(s.ok());
    client_options o = h2c();
    o.idle_timeout = 300ms;
    client c(o);
    struct seen {
        std::vector<response_result> results;
        client_stats busy; // after a call that outlived the pool's tick
    };
    auto got = run_on_loop([](client& cl, std::uint16_t port) -> task<seen> {
        seen out;
        out.results.push_back(co_await cl.get(local(port, "/slow?ms=1500"))); // past a tick, in use
        out.busy = cl.stats();
        co_await net::sleep_for(1500ms); // idle past the timeout, and a tick to see it
        out.results.push_back(co_await cl.get(local(port, "/hello")));
        co_return out;
    }(c, s.port()));
    ASSERT_TRUE(got && got->results.size() == 2u);
    for (const auto& r : got->results) {
        ASSERT_TRUE(r) << why(r);
    }
    EXPECT_EQ(got->busy.closed_idle, 0u) << "a connection with a stream open is not idle";
    EXPECT_EQ(c.stats().closed_idle, 1u);
    EXPECT_EQ(c.stats().connections_opened, 2u);
}

server_options tls_server(bool http2) {
    server_options o;
    o.threads = 1;
    o.http2 = http2;
    o.tls.cert_file = test_cert("server.pem");
    o.tls.key_file = test_cert("server.key");
    return o;
}

TEST(h2_client_test, prefer_http2_speaks_h2_where_alpn_agrees_and_http1_where_it_does_not) {
    const app routes = make_app();
    test_server h2(routes, tls_server(true));
    test_server h1(routes, tls_server(false));
    ASSERT_TRUE(h2.ok() && h1.ok());
    client_options o;
    o.protocol = client_protocol::prefer_http2;
    o.tls.ca_file = test_cert("ca.pem");
    client c(o);
    for (const auto& [server, version] : {std::pair<test_server*, std::string>{&h2, "2.0"}, {&h1, "1.1"}}) {
        const auto results = at_once(c, get(local(server->port(), "/version", "https")), 20);
        ASSERT_EQ(results.size(), 20u);
        for (const auto& r : results) {
            ASSERT_TRUE(r && r->body() == version) << why(r);
        }
    }
    // Over h2 the 20 calls waited for the first handshake, then shared its connection; over HTTP/1.1 they each
    // opened their own once it told.
    EXPECT_EQ(h2.get().stats().h2_connections, 1u);
    EXPECT_EQ(h2.get().stats().connections_accepted, 1u);
    EXPECT_EQ(h1.get().stats().h2_connections, 0u);
    EXPECT_EQ(h1.get().stats().connections_accepted, 20u);
}

TEST(h2_client_test, http2_only_fails_a_server_that_does_not_agree_to_h2) {
    const app routes = make_app();
    test_server h1(routes, tls_server(false));
    ASSERT_TRUE(h1.ok());
    client_options o = h2c();
    o.tls.ca_file = test_cert("ca.pem");
    client c(o);
    const auto r = one(c, get(local(h1.port(), "/hello", "https")));
    ASSERT_FALSE(r) << why(r);
    EXPECT_EQ(r.error(), net::tls_errc::no_common_protocol) << r.error().message();
    EXPECT_EQ(c.stats().connect_failures, 1u);
    // Plain HTTP/1.1 spoken to with h2c's preface is no HTTP/2: a malformed response, not a hang.
    test_server plain(routes, [] {
        server_options p;
        p.threads = 1;
        p.http2 = false;
        return p;
    }());
    ASSERT_TRUE(plain.ok());
    client h2c_client(h2c());
    const auto refused = one(h2c_client, get(local(plain.port(), "/hello")));
    ASSERT_FALSE(refused) << why(refused);
}

TEST(h2_client_test, nginx_answers_every_call_over_h2c_and_over_h2) {
    if (const auto m = missing_nginx(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    nginx_peer plain("client_h2c", "http2");
    nginx_peer tls("client_h2", "ssl http2");
    ASSERT_TRUE(plain.up()) << plain.log();
    ASSERT_TRUE(tls.up()) << tls.log();
    client_options o = h2c();
    o.tls.ca_file = test_cert("ca.pem");
    client c(o);
    for (const std::string& url : {plain.url("http", "/x"), tls.url("https", "/x")}) {
        // 5 rounds of 40 at once on one loop: one connection's streams.
        auto got = run_on_loop([](client& cl, std::string u) -> task<std::vector<response_result>> {
            std::vector<response_result> all;
            for (int round = 0; round < 5; ++round) {
                for (auto& r : co_await many(cl, get(u), 40)) {
                    all.push_back(std::move(r));
                }
            }
            co_return all;
        }(c, url));
        ASSERT_TRUE(got && got->size() == 200u) << url;
        for (const auto& r : *got) {
            ASSERT_TRUE(r && r->status() == 200 && r->body() == "ok") << url << ": " << why(r);
        }
    }
    EXPECT_EQ(c.stats().connections_opened, 2u); // one per server, 200 calls on each
    EXPECT_EQ(c.stats().requests, 400u);
}

std::string missing_node() {
    return program_path("node").empty() ? "no node on the PATH (the HTTP/2 peer is a Node script)" : "";
}

test::running_peer node_peer(unsigned max_streams = 100) {
    return test::start_peer({program_path("node"), H2_PEER_SCRIPT, "{port}", std::to_string(max_streams)}, 10s);
}

TEST(h2_client_test, a_refused_stream_is_sent_again_once_whatever_its_method) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const auto node = node_peer();
    ASSERT_NE(node.port, 0);
    client c(h2c());
    auto got = run_on_loop([](client& cl, client_request r, std::uint16_t port) -> task<std::vector<response_result>> {
        std::vector<response_result> out;
        out.push_back(co_await cl.send(std::move(r)));
        out.push_back(co_await cl.get(local(port, "/ok")));
        co_return out;
    }(c, post(local(node.port, "/refuse"), "once"), node.port));
    ASSERT_TRUE(got && got->size() == 2u);
    ASSERT_FALSE(got->front()) << why(got->front());
    EXPECT_EQ(got->front().error(), errc::reset);
    EXPECT_EQ(c.stats().retries, 1u); // refused twice: sent again once, then the error
    ASSERT_TRUE(got->back() && got->back()->body() == "ok") << why(got->back());
    EXPECT_EQ(c.stats().connections_opened, 1u);
}

TEST(h2_client_test, posts_past_a_goaway_go_again_on_a_new_connection) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const auto node = node_peer();
    ASSERT_NE(node.port, 0);
    client c(h2c());
    auto got = run_on_loop([](client& cl, client_request r) -> task<std::vector<response_result>> {
        std::vector<response_result> all;
        for (int round = 0; round < 10; ++round) {
            for (auto& one_result : co_await many(cl, r, 20)) {
                all.push_back(std::move(one_result));
            }
        }
        co_return all;
    }(c, post(local(node.port, "/goaway"), "not idempotent")));
    ASSERT_TRUE(got && got->size() == 200u);
    for (const auto& r : *got) {
        ASSERT_TRUE(r && r->body() == "ok") << why(r);
    }
    // Each connection answers 50 and goes away: the calls past them go again on the next.
    EXPECT_GE(c.stats().connections_opened, 4u);
    EXPECT_GE(c.stats().retries, 1u);
    EXPECT_EQ(c.stats().failures, 0u);
}

TEST(h2_client_test, calls_past_the_servers_stream_limit_wait_for_room) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const auto node = node_peer(5);
    ASSERT_NE(node.port, 0);
    client_options o = h2c();
    o.max_connections_per_host = 1;
    client c(o);
    const auto results = at_once(c, get(local(node.port, "/slow")), 40);
    ASSERT_EQ(results.size(), 40u);
    unsigned most = 0;
    for (const auto& r : results) {
        ASSERT_TRUE(r && r->body() == "slow") << why(r);
        most = std::max(most, to_unsigned(r->header("x-most-open")));
    }
    EXPECT_EQ(most, 5u) << "the server allows 5 streams at once";
    EXPECT_EQ(c.stats().connections_opened, 1u);

    // Where more connections may open, a pool that knows the limit opens them once a connection's streams are all
    // taken, up to its own limit.
    client_options more = h2c();
    more.max_connections_per_host = 3;
    client wider(more);
    auto got = run_on_loop([](client& cl, std::uint16_t port) -> task<std::vector<response_result>> {
        auto all = co_await many(cl, get(local(port, "/ok")), 1);
        for (auto& r : co_await many(cl, get(local(port, "/slow")), 30)) {
            all.push_back(std::move(r));
        }
        co_return all;
    }(wider, node.port));
    ASSERT_TRUE(got && got->size() == 31u);
    for (const auto& r : *got) {
        ASSERT_TRUE(r) << why(r);
    }
    EXPECT_EQ(wider.stats().connections_opened, 3u);
}

} // namespace
} // namespace hotpath
