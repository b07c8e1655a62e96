// Steady-state requests allocate nothing on the server's loop thread, and a handler that allocates is counted
// exactly: read from the counting allocator (core/alloc_count.hpp, linked into this test).
#include "support/loop_runner.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include <hotpath/client/client.hpp>
#include <hotpath/core/alloc_count.hpp>
#include <hotpath/net/blocking_pool.hpp>
#include <hotpath/net/sleep.hpp>
#include <hotpath/server/json.hpp>
#include <hotpath/server/server.hpp>

#include <gtest/gtest.h>

#include <charconv>
#include <cstdio>
#include <memory>
#include <string>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

app make_app() {
    app a;
    a.get("/plaintext", [](request&, response& res) { res.text("Hello, World!", "text/plain"); });
    a.get("/json", [](request&, response& res) {
        boost::json::object o(json_storage(res));
        o.emplace("message", "Hello, World!");
        res.json(o);
    });
    a.get("/users/{id}", [](request& req, response& res) { res.text(req.param("id")); });
    a.post("/echo", [](request& req, response& res) { res.body(req.body(), "application/octet-stream"); });
    a.get("/allocates", [](request&, response& res) {
        auto s = std::make_unique<std::string>(100, 'x'); // two allocations: the string, its 101-byte buffer
        res.text(*s);
    });
    a.get("/sleep", [](request&, response& res) -> task<void> {
        co_await net::sleep_for(1ms);
        res.text("slept");
    });
    // A call on a blocking pool: queued in the frame, resumed through the loop's mailbox.
    auto pool = std::make_shared<blocking_pool>(blocking_pool_options{.threads = 2, .queue_capacity = 8, .name = "t"});
    a.get("/offload", [pool](request& req, response& res) -> task<void> {
        const auto r = co_await pool->run([] { return 7; }, req.aborted());
        res.text(r.has_value() && *r == 7 ? "offloaded" : "failed");
    });
    // The loop thread's allocations and bytes so far, "<allocations> <bytes>": the counters are per thread, so the
    // loop's own are read on the loop, by a handler. Once the response's buffer has held one, it allocates nothing.
    a.get("/allocations", [](request&, response& res) {
        const alloc::counts now = alloc::this_thread();
        char text[48];
        char* end = std::to_chars(text, text + 20, now.allocations).ptr;
        *end++ = ' ';
        end = std::to_chars(end, text + sizeof(text), now.bytes).ptr;
        res.text({text, static_cast<std::size_t>(end - text)});
    });
    return a;
}

// The loop thread's counts, read by a request on `c`.
alloc::counts loop_counts(test::raw_client& c) {
    EXPECT_TRUE(c.send("GET /allocations HTTP/1.1\r\nHost: t\r\n\r\n"));
    const auto reply = c.read_reply();
    alloc::counts counts;
    if (!reply) {
        ADD_FAILURE() << "no reply to /allocations";
        return counts;
    }
    const char* p = reply->body.data();
    const char* end = p + reply->body.size();
    p = std::from_chars(p, end, counts.allocations).ptr;
    std::from_chars(p + 1, end, counts.bytes);
    return counts;
}

// Sends `rounds` batches of the same pipelined requests on one connection and returns the loop thread's
// allocations during the measured rounds (after 50 rounds have sized every buffer). The test server runs
// one loop, so every request runs on the thread whose counts are read.
alloc::counts allocations_for(std::uint16_t port, const std::string& batch, int expected, int rounds) {
    test::raw_client c(port);
    auto round = [&] {
        EXPECT_TRUE(c.send(batch));
        for (int i = 0; i < expected; ++i) {
            EXPECT_TRUE(c.read_reply());
        }
    };
    loop_counts(c); // the first reading may size buffers; the next ones count from here
    for (int i = 0; i < 50; ++i) {
        round();
    }
    // Counts what happens on the loop after the first reading's handler, up to the second's: the measured rounds,
    // and the first reading's response and the second's request, which allocate nothing once warm either.
    const alloc::counts before = loop_counts(c);
    for (int i = 0; i < rounds; ++i) {
        round();
    }
    return loop_counts(c) - before;
}

TEST(allocation_test, steady_state_requests_allocate_nothing) {
    ASSERT_TRUE(alloc::counting()) << "the counting allocator is not linked into this test";
    const app routes = make_app();
    test::test_server srv(routes);
    ASSERT_TRUE(srv.ok());
    const std::string get = "GET /plaintext HTTP/1.1\r\nHost: t\r\nUser-Agent: test\r\n\r\n";
    EXPECT_EQ(allocations_for(srv.port(), get, 1, 500).allocations, 0u) << "plaintext";
    std::string pipelined;
    for (int i = 0; i < 16; ++i) {
        pipelined += get;
    }
    EXPECT_EQ(allocations_for(srv.port(), pipelined, 16, 100).allocations, 0u) << "pipelined plaintext";
    EXPECT_EQ(allocations_for(srv.port(), "GET /json HTTP/1.1\r\nHost: t\r\n\r\n", 1, 500).allocations, 0u) << "json";
    EXPECT_EQ(allocations_for(srv.port(), "GET /users/12345 HTTP/1.1\r\nHost: t\r\n\r\n", 1, 500).allocations, 0u)
        << "params";
    EXPECT_EQ(allocations_for(srv.port(),
                              "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "5\r\nhello\r\n0\r\n\r\n",
                              1, 500)
                  .allocations,
              0u)
        << "chunked echo";
    EXPECT_EQ(allocations_for(srv.port(), "GET /sleep HTTP/1.1\r\nHost: t\r\n\r\n", 1, 200).allocations, 0u)
        << "coroutine handler with a timer";
    EXPECT_EQ(allocations_for(srv.port(), "GET /offload HTTP/1.1\r\nHost: t\r\n\r\n", 1, 200).allocations, 0u)
        << "a call on a blocking pool";
    EXPECT_EQ(allocations_for(srv.port(), "GET /missing HTTP/1.1\r\nHost: t\r\n\r\n", 1, 200).allocations, 0u) << "404";
}

// A handler that allocates twice per request (the std::string object, then its 101-byte buffer) is counted
// exactly that: nothing else on the request's path allocates.
TEST(allocation_test, a_handler_that_allocates_is_counted_exactly) {
    const app routes = make_app();
    test::test_server srv(routes);
    ASSERT_TRUE(srv.ok());
    constexpr int rounds = 100;
    const alloc::counts n = allocations_for(srv.port(), "GET /allocates HTTP/1.1\r\nHost: t\r\n\r\n", 1, rounds);
    EXPECT_EQ(n.allocations, 2u * rounds);
    EXPECT_EQ(n.bytes, (sizeof(std::string) + 101) * rounds);
}

// A client call allocates (its frame, the URL's parts, the response's strings), but its metrics do not: once a
// route's figures exist on a loop's pool, a call named for it allocates exactly what an unnamed call does, and the
// count per call stays the same however many calls were made. The first call of a route on a pool makes its
// figures: the route's call_metrics and its bucket array, and the pool's table of routes when it grows. Counted
// on the client's loop thread only (the test's own, in run_on_loop).
TEST(allocation_test, client_metrics_allocate_nothing_per_call) {
    ASSERT_TRUE(alloc::counting()) << "the counting allocator is not linked into this test";
    app routes;
    routes.get("/plaintext", [](request&, response& res) { res.text("Hello, World!", "text/plain"); });
    test::test_server srv(routes);
    ASSERT_TRUE(srv.ok());
    client c;
    const client_route named = c.route("/plaintext");
    struct counts {
        std::uint64_t unnamed = 0, unnamed_again = 0, first_named = 0, named = 0;
    };
    auto measured = test::run_on_loop([](client& cl, std::string url, client_route r) -> task<counts> {
        const auto calls = [&](int n, client_route route) -> task<std::uint64_t> {
            const alloc::counts before = alloc::this_thread();
            for (int i = 0; i < n; ++i) {
                (void)co_await cl.get(url, {0ns, {}, nullptr, route});
            }
            co_return (alloc::this_thread() - before).allocations;
        };
        counts out;
        (void)co_await calls(50, {}); // the pool's connection and its buffers
        out.unnamed = co_await calls(200, {});
        out.unnamed_again = co_await calls(200, {});
        out.first_named = co_await calls(1, r);
        out.named = co_await calls(200, r);
        co_return out;
    }(c, "http://127.0.0.1:" + std::to_string(srv.port()) + "/plaintext", named));
    ASSERT_TRUE(measured);
    EXPECT_EQ(measured->unnamed % 200, 0u) << measured->unnamed;
    EXPECT_EQ(measured->unnamed_again, measured->unnamed);
    EXPECT_EQ(measured->named, measured->unnamed) << "a named route costs no allocation per call";
    const std::uint64_t per_call = measured->unnamed / 200;
    EXPECT_GE(measured->first_named, per_call + 2);
    EXPECT_LE(measured->first_named, per_call + 3);
    std::printf("[ counted  ] a client call: %llu allocations (its route's first call on a pool: %llu)\n",
                static_cast<unsigned long long>(per_call), static_cast<unsigned long long>(measured->first_named));
    EXPECT_EQ(c.stats().requests, 651u);
}

} // namespace
} // namespace hotpath
