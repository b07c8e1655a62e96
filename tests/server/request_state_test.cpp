// Request states lent by the loop's pool: requests across borrow and return, and idle connections holding none.
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include <hotpath/net/loop.hpp>
#include <hotpath/net/sleep.hpp>
#include <hotpath/server/json.hpp>
#include <hotpath/server/request_state.hpp>
#include <hotpath/server/server.hpp>

#include <gtest/gtest.h>

#include <charconv>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::raw_client;
using test::test_server;
using test::to_unsigned;

// A 64-bit FNV-1a of `s`, so that a large body's echo can be checked in a short response.
std::string digest(std::string_view s) {
    std::uint64_t h = 14695981039346656037ull;
    for (char c : s) {
        h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    }
    return std::to_string(s.size()) + ":" + std::to_string(h);
}

app make_app() {
    app a;
    a.get("/seq/{n}", [](request& req, response& res) { res.text(req.param("n")); });
    a.get("/field", [](request& req, response& res) { res.text(digest(req.header("x-big"))); });
    a.post("/digest", [](request& req, response& res) { res.text(digest(req.body())); });
    a.get("/slow", [](request& req, response& res) -> task<void> {
        co_await net::sleep_for(std::chrono::milliseconds{to_unsigned(req.query_param("ms"))});
        res.text("slow " + std::string(req.query_param("id")));
    });
    a.get("/json/{n}", [](request& req, response& res) {
        boost::json::object o(json_storage(res));
        o.emplace("n", req.param("n"));
        res.json(o);
    });
    // Past the arena's inline block: its resource takes more memory, freed when the state goes back.
    a.get("/json-big/{n}", [](request& req, response& res) {
        boost::json::object o(json_storage(res));
        boost::json::array numbers(json_storage(res));
        for (int i = 0; i < 3000; ++i) {
            numbers.emplace_back(i);
        }
        o.emplace("numbers", std::move(numbers));
        o.emplace("n", req.param("n"));
        res.json(o);
    });
    return a;
}

std::string get(std::string_view target) {
    return "GET " + std::string(target) + " HTTP/1.1\r\nHost: t\r\n\r\n";
}

std::string post(std::string_view target, std::string_view body) {
    return "POST " + std::string(target) + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + std::string(body);
}

std::string big_json_body(int n) {
    std::string s = "{\"numbers\":[";
    for (int i = 0; i < 3000; ++i) {
        s += (i == 0 ? "" : ",") + std::to_string(i);
    }
    return s + "],\"n\":\"" + std::to_string(n) + "\"}";
}

std::uint64_t states_alive(test_server& srv) {
    const auto s = srv.get().stats();
    return s.request_states_made - s.request_states_freed;
}

class request_state_test : public ::testing::Test {
protected:
    app routes_ = make_app();
};

TEST_F(request_state_test, pipelined_batches_across_borrow_and_return) {
    test_server srv(routes_);
    raw_client c(srv.port());
    int n = 0;
    for (int round = 0; round < 20; ++round) {
        std::string batch;
        for (int i = 0; i < 16; ++i) {
            batch += get("/seq/" + std::to_string(n + i));
        }
        // Every other round leaves the last request half sent: the state stays borrowed until it is whole.
        const std::size_t cut = round % 2 == 0 ? batch.size() : batch.size() - 9;
        ASSERT_TRUE(c.send(std::string_view(batch).substr(0, cut)));
        for (int i = 0; i < (cut == batch.size() ? 16 : 15); ++i) {
            auto r = c.read_reply();
            ASSERT_TRUE(r) << round << " " << i;
            ASSERT_EQ(r->body, std::to_string(n + i));
        }
        if (cut != batch.size()) {
            std::this_thread::sleep_for(5ms);
            ASSERT_TRUE(c.send(std::string_view(batch).substr(cut)));
            auto r = c.read_reply();
            ASSERT_TRUE(r) << round;
            ASSERT_EQ(r->body, std::to_string(n + 15));
        }
        n += 16;
        std::this_thread::sleep_for(2ms); // idle: the state goes back to the pool
    }
    EXPECT_EQ(states_alive(srv), 1u) << "one connection, one state, reused";
}

TEST_F(request_state_test, a_request_split_at_many_points_with_idle_periods_between) {
    test_server srv(routes_);
    raw_client c(srv.port());
    const std::string body(300, 'b');
    const std::string requests[] = {
        get("/seq/7"),
        post("/digest", body),
        "POST /digest HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;x=y\r\nabc\r\n0\r\n\r\n",
    };
    const std::string expected[] = {"7", digest(body), digest("helloabc")};
    for (int k = 0; k < 3; ++k) {
        const std::string& req = requests[k];
        for (std::size_t step : {1u, 3u, 17u, 64u}) {
            for (std::size_t at = 0; at < req.size(); at += step) {
                ASSERT_TRUE(c.send(std::string_view(req).substr(at, step)));
                if (at % (step * 8) == 0) {
                    std::this_thread::sleep_for(2ms);
                }
            }
            auto r = c.read_reply();
            ASSERT_TRUE(r) << k << " step " << step;
            EXPECT_EQ(r->status, 200);
            EXPECT_EQ(r->body, expected[k]) << k << " step " << step;
            std::this_thread::sleep_for(2ms);
        }
    }
    // Split between two requests: the first is answered while the second's head is still arriving.
    const std::string two = get("/seq/1") + get("/seq/2");
    for (std::size_t at = 1; at < two.size(); at += 5) {
        ASSERT_TRUE(c.send(std::string_view(two).substr(0, at)));
        std::this_thread::sleep_for(1ms);
        ASSERT_TRUE(c.send(std::string_view(two).substr(at)));
        for (const char* want : {"1", "2"}) {
            auto r = c.read_reply();
            ASSERT_TRUE(r) << at;
            ASSERT_EQ(r->body, want) << at;
        }
    }
}

TEST_F(request_state_test, a_large_request_then_small_ones_on_the_same_connection) {
    test_server srv(routes_);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send(get("/seq/0")));
    ASSERT_TRUE(c.read_reply());
    // A head past the 4 KiB buffer, then a body of 200 KiB: the buffer grows, and the grown state is freed.
    const std::string field(20'000, 'f');
    ASSERT_TRUE(c.send("GET /field HTTP/1.1\r\nHost: t\r\nX-Big: " + field + "\r\n\r\n"));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, digest(field));
    std::string body(200 * 1024, '\0');
    for (std::size_t i = 0; i < body.size(); ++i) {
        body[i] = static_cast<char>('a' + i % 23);
    }
    ASSERT_TRUE(c.send(post("/digest", body) + get("/seq/1")));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, digest(body));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "1");
    for (int i = 2; i < 50; ++i) {
        ASSERT_TRUE(c.send(get("/seq/" + std::to_string(i))));
        r = c.read_reply();
        ASSERT_TRUE(r) << i;
        ASSERT_EQ(r->body, std::to_string(i));
    }
    const auto s = srv.get().stats();
    EXPECT_GE(s.request_states_freed, 1u) << "a grown state is not kept in the pool";
    EXPECT_EQ(states_alive(srv), 1u);
}

TEST_F(request_state_test, many_connections_go_idle_and_busy_again_and_idle_ones_hold_no_state) {
    test_server srv(routes_);
    constexpr int connections = 200;
    std::vector<std::unique_ptr<raw_client>> clients;
    for (int i = 0; i < connections; ++i) {
        clients.push_back(std::make_unique<raw_client>(srv.port()));
        ASSERT_TRUE(clients.back()->connected());
    }
    for (int round = 0; round < 3; ++round) {
        // All at once: each connection's request waits 100 ms in its handler, so every one holds a state.
        for (int i = 0; i < connections; ++i) {
            const auto id = std::to_string(round * connections + i);
            ASSERT_TRUE(clients[i]->send(get("/slow?ms=100&id=" + id)));
        }
        for (int i = 0; i < connections; ++i) {
            auto r = clients[i]->read_reply();
            ASSERT_TRUE(r) << round << " " << i;
            ASSERT_EQ(r->body, "slow " + std::to_string(round * connections + i));
        }
        // Then one by one, idle between: they share a few pooled states.
        for (int i = 0; i < connections; ++i) {
            ASSERT_TRUE(clients[i]->send(get("/json/" + std::to_string(i))));
            auto r = clients[i]->read_reply();
            ASSERT_TRUE(r) << round << " " << i;
            ASSERT_EQ(r->body, "{\"n\":\"" + std::to_string(i) + "\"}");
        }
    }
    EXPECT_GE(srv.get().stats().request_states_made, static_cast<std::uint64_t>(connections));
    // Idle, all 200: within two ticks the pool frees what the last second did not need.
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (states_alive(srv) > request_state_pool::min_free && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_LE(states_alive(srv), request_state_pool::min_free);
    // And every connection still works.
    for (int i = 0; i < connections; ++i) {
        ASSERT_TRUE(clients[i]->send(get("/seq/" + std::to_string(i))));
        auto r = clients[i]->read_reply();
        ASSERT_TRUE(r) << i;
        ASSERT_EQ(r->body, std::to_string(i));
    }
}

TEST_F(request_state_test, json_responses_after_the_arena_went_back_with_its_state) {
    test_server srv(routes_);
    raw_client a(srv.port());
    raw_client b(srv.port());
    for (int i = 0; i < 20; ++i) {
        raw_client& c = i % 2 == 0 ? a : b;
        ASSERT_TRUE(c.send(get("/json-big/" + std::to_string(i))));
        auto r = c.read_reply();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->field("content-type"), "application/json");
        ASSERT_EQ(r->body, big_json_body(i)) << i;
        std::this_thread::sleep_for(1ms);
        ASSERT_TRUE(c.send(get("/json/" + std::to_string(i)) + get("/missing")));
        r = c.read_reply();
        ASSERT_TRUE(r) << i;
        ASSERT_EQ(r->body, "{\"n\":\"" + std::to_string(i) + "\"}");
        r = c.read_reply();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->status, 404);
        EXPECT_EQ(r->field("content-type"), "application/problem+json");
    }
}

// The pool alone, on a loop that is never run.
TEST(request_state_pool, reuses_frees_grown_states_and_trims_to_the_peak) {
    net::loop loop(0);
    http::limits limits;
    loop_stats stats;
    request_state_pool pool(limits, loop, stats);

    request_state* s = pool.take();
    EXPECT_EQ(s->capacity, request_state::initial_buffer_bytes);
    EXPECT_EQ(&s->req.head(), &s->head);
    pool.give(s);
    EXPECT_EQ(pool.take(), s) << "the state just given is taken again";
    EXPECT_EQ(stats.request_states_made.get(), 1u);

    // A grown buffer is not kept: the next state is a fresh one of the usual size.
    s->in.reset(new char[64 * 1024]);
    s->capacity = 64 * 1024;
    pool.give(s);
    EXPECT_EQ(pool.free_count(), 0u);
    EXPECT_EQ(stats.request_states_freed.get(), 1u);
    s = pool.take();
    EXPECT_EQ(s->capacity, request_state::initial_buffer_bytes);
    pool.give(s);

    // A burst of 40 in use: the first trim keeps what the burst needed, the second goes down to min_free.
    std::vector<request_state*> burst;
    for (int i = 0; i < 40; ++i) {
        burst.push_back(pool.take());
    }
    EXPECT_EQ(pool.in_use(), 40u);
    for (request_state* b : burst) {
        pool.give(b);
    }
    EXPECT_EQ(pool.free_count(), 40u);
    pool.trim();
    EXPECT_EQ(pool.free_count(), 40u);
    pool.trim();
    EXPECT_EQ(pool.free_count(), request_state_pool::min_free);
    EXPECT_EQ(stats.request_states_made.get() - stats.request_states_freed.get(), request_state_pool::min_free);
}

} // namespace
} // namespace hotpath
