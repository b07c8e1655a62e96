// Steady-state requests allocate nothing on the server's loop thread: counted by replacing operator new.
#include "net/loop.hpp"
#include "net/sleep.hpp"
#include "server/json.hpp"
#include "server/server.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>

namespace {

std::atomic<std::uint64_t> loop_allocations{0};

void* counted(std::size_t n) {
    if (hotpath::net::loop::current() != nullptr) {
        loop_allocations.fetch_add(1, std::memory_order_relaxed);
    }
    if (void* p = std::malloc(n == 0 ? 1 : n)) {
        return p;
    }
    throw std::bad_alloc();
}

} // namespace

void* operator new(std::size_t n) {
    return counted(n);
}
void* operator new[](std::size_t n) {
    return counted(n);
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}

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
        auto s = std::make_unique<std::string>(100, 'x'); // one heap allocation per request
        res.text(*s);
    });
    a.get("/sleep", [](request&, response& res) -> task<void> {
        co_await net::sleep_for(1ms);
        res.text("slept");
    });
    return a;
}

// Sends `rounds` batches of the same pipelined requests on one connection and returns the loop thread's
// allocations during the measured rounds (after `warmup` rounds have sized every buffer).
std::uint64_t allocations_for(std::uint16_t port, const std::string& batch, int expected, int rounds) {
    test::raw_client c(port);
    auto round = [&] {
        EXPECT_TRUE(c.send(batch));
        for (int i = 0; i < expected; ++i) {
            EXPECT_TRUE(c.read_reply());
        }
    };
    for (int i = 0; i < 50; ++i) {
        round();
    }
    const auto before = loop_allocations.load();
    for (int i = 0; i < rounds; ++i) {
        round();
    }
    return loop_allocations.load() - before;
}

TEST(allocation_test, steady_state_requests_allocate_nothing) {
    const app routes = make_app();
    test::test_server srv(routes);
    ASSERT_TRUE(srv.ok());
    const std::string get = "GET /plaintext HTTP/1.1\r\nHost: t\r\nUser-Agent: test\r\n\r\n";
    EXPECT_EQ(allocations_for(srv.port(), get, 1, 500), 0u) << "plaintext";
    std::string pipelined;
    for (int i = 0; i < 16; ++i) {
        pipelined += get;
    }
    EXPECT_EQ(allocations_for(srv.port(), pipelined, 16, 100), 0u) << "pipelined plaintext";
    EXPECT_EQ(allocations_for(srv.port(), "GET /json HTTP/1.1\r\nHost: t\r\n\r\n", 1, 500), 0u) << "json";
    EXPECT_EQ(allocations_for(srv.port(), "GET /users/12345 HTTP/1.1\r\nHost: t\r\n\r\n", 1, 500), 0u) << "params";
    EXPECT_EQ(allocations_for(srv.port(),
                              "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "5\r\nhello\r\n0\r\n\r\n",
                              1, 500),
              0u)
        << "chunked echo";
    EXPECT_EQ(allocations_for(srv.port(), "GET /sleep HTTP/1.1\r\nHost: t\r\n\r\n", 1, 200), 0u)
        << "coroutine handler with a timer";
    EXPECT_EQ(allocations_for(srv.port(), "GET /missing HTTP/1.1\r\nHost: t\r\n\r\n", 1, 200), 0u) << "404";
}

} // namespace
} // namespace hotpath
