// The profile service (case 4) on 127.0.0.1: each way of waiting answers the same JSON after the delay; only the
// blocking one holds its loop; the offloaded one refuses with 503 when its pool's queue is full and drops queued
// calls whose client went away; the stall watchdog names the blocking route.
#include "apps/profile/service.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

struct timed_reply {
    std::optional<test::http_reply> reply;
    steady::duration took{};
};

timed_reply get(std::uint16_t port, const std::string& path, std::chrono::milliseconds timeout = 5s) {
    test::raw_client c(port);
    const auto t0 = steady::now();
    timed_reply out;
    if (c.send("GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n")) {
        out.reply = c.read_reply(timeout);
    }
    out.took = steady::now() - t0;
    return out;
}

std::string profile_json(const std::string& id) {
    return R"({"id":)" + id + R"(,"name":"User )" + id + R"(","email":"user)" + id + R"(@example.com"})";
}

// One value of a sample on a metrics page ("name{labels} value"), or -1 when absent.
double value_of(const std::string& page, const std::string& sample) {
    const auto at = page.find("\n" + sample + " ");
    return at == std::string::npos ? -1 : std::stod(page.substr(at + sample.size() + 2));
}

struct served {
    app routes;
    std::mutex m;
    std::vector<std::string> stall_lines; // before the server: its watchdog writes here until it stops
    std::unique_ptr<test::test_server> server;

    explicit served(apps::profile_options o, unsigned threads = 1) {
        apps::map_profile(routes, o);
        routes.metrics("/metrics");
        routes.debug_routes("/debug/routes");
        server_options so;
        so.threads = threads;
        so.stall_threshold = 25ms;
        so.stall_backtraces = false;
        so.log_line = [this](const std::string& line) {
            const std::lock_guard lock(m);
            stall_lines.push_back(line);
        };
        server = std::make_unique<test::test_server>(routes, so);
    }
    std::uint16_t port() const { return server->port(); }
};

apps::profile_options with_delay(std::chrono::milliseconds delay, unsigned threads = 4, std::size_t queue = 16) {
    apps::profile_options o;
    o.delay = delay;
    o.pool.threads = threads;
    o.pool.queue_capacity = queue;
    return o;
}

TEST(profile_test, ids_are_decimal_int64s_and_the_json_is_the_originals) {
    EXPECT_EQ(apps::parse_profile_id("42"), 42);
    EXPECT_EQ(apps::parse_profile_id("-7"), -7);
    EXPECT_EQ(apps::parse_profile_id("9223372036854775807"), INT64_MAX);
    EXPECT_EQ(apps::parse_profile_id("-9223372036854775808"), INT64_MIN);
    for (const char* bad : {"", "abc", "4x", "1.5", "+1", " 1", "1 ", "0x10", "9223372036854775808", "--1"}) {
        EXPECT_FALSE(apps::parse_profile_id(bad).has_value()) << bad;
    }
    char out[apps::profile_bytes];
    EXPECT_EQ(apps::write_profile(42, out), profile_json("42"));
    EXPECT_EQ(apps::write_profile(INT64_MIN, out), profile_json("-9223372036854775808"));
}

TEST(profile_test, each_way_answers_the_same_json_after_the_delay) {
    served s(with_delay(50ms));
    ASSERT_TRUE(s.server->ok());
    for (const char* way : {"sync", "async", "offload"}) {
        const auto r = get(s.port(), std::string("/profile/") + way + "/42");
        ASSERT_TRUE(r.reply) << way;
        EXPECT_EQ(r.reply->status, 200) << way;
        EXPECT_EQ(r.reply->field("content-type"), "application/json") << way;
        EXPECT_EQ(r.reply->body, profile_json("42")) << way;
        EXPECT_GE(r.took, 50ms) << way;
    }
}

TEST(profile_test, an_id_that_is_not_an_integer_is_not_found) {
    served s(with_delay(50ms));
    ASSERT_TRUE(s.server->ok());
    for (const char* way : {"sync", "async", "offload"}) {
        for (const char* id : {"abc", "4x", "1.5", "%2B1", "99999999999999999999"}) {
            const auto r = get(s.port(), std::string("/profile/") + way + "/" + id);
            ASSERT_TRUE(r.reply) << way << " " << id;
            EXPECT_EQ(r.reply->status, 404) << way << " " << id;
            EXPECT_LT(r.took, 50ms) << "refused before the delay: " << way << " " << id;
        }
    }
    const auto routes = get(s.port(), "/debug/routes");
    ASSERT_TRUE(routes.reply);
    EXPECT_EQ(routes.reply->status, 200);
    for (const char* way : {"sync", "async", "offload"}) {
        EXPECT_NE(routes.reply->body.find(std::string("/profile/") + way + "/{id}"), std::string::npos)
            << routes.reply->body;
    }
}

// With one loop: while a request waits, does another request on the same loop get through? /metrics answers at
// once unless the loop's thread is asleep in a handler.
steady::duration other_request_while(served& s, const std::string& path) {
    auto slow = std::async(std::launch::async, [&] { return get(s.port(), path); });
    std::this_thread::sleep_for(50ms); // the slow request is in its wait
    const auto other = get(s.port(), "/metrics");
    EXPECT_TRUE(other.reply) << path;
    const auto first = slow.get();
    EXPECT_TRUE(first.reply && first.reply->status == 200) << path;
    return other.took;
}

TEST(profile_test, with_one_loop_sync_holds_every_other_request_and_async_and_offload_do_not) {
    served s(with_delay(400ms));
    ASSERT_TRUE(s.server->ok());
    EXPECT_GE(other_request_while(s, "/profile/sync/1"), 250ms) << "the sync handler held the loop";
    EXPECT_LT(other_request_while(s, "/profile/async/1"), 200ms) << "the async wait left the loop free";
    EXPECT_LT(other_request_while(s, "/profile/offload/1"), 200ms) << "the offloaded call left the loop free";
}

TEST(profile_test, a_full_offload_queue_answers_503_with_retry_after_at_once) {
    served s(with_delay(400ms, 1, 1)); // one thread, one place in the queue
    ASSERT_TRUE(s.server->ok());
    auto running = std::async(std::launch::async, [&] { return get(s.port(), "/profile/offload/1"); });
    std::this_thread::sleep_for(50ms);
    auto queued = std::async(std::launch::async, [&] { return get(s.port(), "/profile/offload/2"); });
    std::this_thread::sleep_for(50ms);
    const auto refused = get(s.port(), "/profile/offload/3");
    ASSERT_TRUE(refused.reply);
    EXPECT_EQ(refused.reply->status, 503);
    EXPECT_EQ(refused.reply->field("retry-after"), "1");
    EXPECT_EQ(refused.reply->field("content-type"), "application/problem+json");
    EXPECT_NE(refused.reply->body.find("\"status\":503"), std::string::npos) << refused.reply->body;
    EXPECT_LT(refused.took, 200ms) << "refused at once, not after a wait";
    const auto a = running.get();
    const auto b = queued.get();
    ASSERT_TRUE(a.reply && b.reply);
    EXPECT_EQ(a.reply->body, profile_json("1"));
    EXPECT_EQ(b.reply->body, profile_json("2"));
    EXPECT_GE(b.took, 700ms) << "waited for the thread, then ran";
    const auto page = get(s.port(), "/metrics");
    ASSERT_TRUE(page.reply);
    const std::string text = "\n" + page.reply->body;
    EXPECT_EQ(value_of(text, R"(hotpath_blocking_rejected_total{pool="profile"})"), 1) << text;
    EXPECT_EQ(value_of(text, R"(hotpath_blocking_completed_total{pool="profile"})"), 2) << text;
    EXPECT_EQ(value_of(text, R"(hotpath_blocking_queue_wait_seconds_count{pool="profile"})"), 2) << text;
}

TEST(profile_test, a_client_gone_while_its_call_is_queued_cancels_it_and_one_gone_while_it_runs_is_safe) {
    served s(with_delay(300ms, 1, 4));
    ASSERT_TRUE(s.server->ok());
    auto running = std::async(std::launch::async, [&] { return get(s.port(), "/profile/offload/1"); });
    std::this_thread::sleep_for(50ms);
    {
        test::raw_client gone(s.port());
        ASSERT_TRUE(gone.send("GET /profile/offload/2 HTTP/1.1\r\nHost: test\r\n\r\n"));
        std::this_thread::sleep_for(50ms); // queued behind the first
    }                                      // closed: the server sees the end while the call waits in the queue
    const auto a = running.get();
    ASSERT_TRUE(a.reply);
    EXPECT_EQ(a.reply->status, 200);
    {
        test::raw_client gone(s.port()); // this one's call runs when its client goes
        ASSERT_TRUE(gone.send("GET /profile/offload/3 HTTP/1.1\r\nHost: test\r\n\r\n"));
        std::this_thread::sleep_for(50ms);
    }
    std::this_thread::sleep_for(400ms); // the call ends; its answer goes nowhere
    const auto page = get(s.port(), "/metrics");
    ASSERT_TRUE(page.reply);
    const std::string text = "\n" + page.reply->body;
    EXPECT_EQ(value_of(text, R"(hotpath_blocking_cancelled_total{pool="profile"})"), 1) << text;
    EXPECT_EQ(value_of(text, R"(hotpath_blocking_completed_total{pool="profile"})"), 2) << "2 never ran: " << text;
    EXPECT_EQ(value_of(text, R"(hotpath_blocking_queue_length{pool="profile"})"), 0) << text;
    const auto after = get(s.port(), "/profile/offload/4");
    ASSERT_TRUE(after.reply);
    EXPECT_EQ(after.reply->body, profile_json("4")) << "the server serves on";
}

TEST(profile_test, the_stall_watchdog_names_the_sync_route_only) {
    served s(with_delay(100ms));
    ASSERT_TRUE(s.server->ok());
    for (const char* way : {"async", "offload"}) {
        const auto r = get(s.port(), std::string("/profile/") + way + "/1");
        ASSERT_TRUE(r.reply && r.reply->status == 200);
    }
    std::this_thread::sleep_for(100ms);
    {
        const std::lock_guard lock(s.m);
        for (const auto& line : s.stall_lines) {
            EXPECT_EQ(line.find("/profile/"), std::string::npos) << "no profile route stalled yet: " << line;
        }
    }
    const auto r = get(s.port(), "/profile/sync/1");
    ASSERT_TRUE(r.reply && r.reply->status == 200);
    std::this_thread::sleep_for(100ms); // the watchdog looks every threshold / 2
    const std::lock_guard lock(s.m);
    bool named = false;
    for (const auto& line : s.stall_lines) {
        named = named || line.find("in the handler of GET /profile/sync/{id}") != std::string::npos;
    }
    EXPECT_TRUE(named) << (s.stall_lines.empty() ? std::string("no stall line") : s.stall_lines.back());
}

} // namespace
} // namespace hotpath
