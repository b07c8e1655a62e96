// What held a loop's thread in a stall, as a real server tells it: three handlers hold their loop for 300 ms each,
// one computing, one asleep, one waiting on a lock another thread holds; the route report and the stall line say
// which (the watchdog's measure, net/thread_activity.hpp).
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include <hotpath/server/app.hpp>
#include <hotpath/server/route_report.hpp>
#include <hotpath/server/stall_event.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::raw_client;

constexpr auto held = 300ms;

std::string get(std::uint16_t port, const std::string& path) {
    raw_client c(port);
    c.send("GET " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    auto r = c.read_reply();
    return r ? std::to_string(r->status) + " " + r->body : std::string("no reply");
}

const route_figures* find(const route_report& r, std::string_view route) {
    const auto it = std::find_if(r.routes.begin(), r.routes.end(), [&](const auto& f) { return f.route == route; });
    return it == r.routes.end() ? nullptr : &*it;
}

// What held most of the route's stalls.
std::string top_waiting(const route_figures& f) {
    return f.stall_waiting.empty() ? std::string("(none)") : f.stall_waiting.front().waiting;
}

TEST(stall_activity_test, computing_sleeping_and_waiting_on_a_lock_are_told_apart) {
    std::mutex till; // held by another thread while /turnstile waits for it
    app routes;
    routes.get("/abacus/{n}", [](request&, response& res) {
        const auto until = std::chrono::steady_clock::now() + held;
        std::uint64_t beads = 0;
        while (std::chrono::steady_clock::now() < until) {
            beads = beads * 31 + 7; // on the CPU, on the loop's thread
        }
        res.text(std::to_string(beads % 10));
    });
    routes.get("/sundial/{n}", [](request&, response& res) {
        std::this_thread::sleep_for(held); // asleep in a system call, on the loop's thread
        res.text("noon");
    });
    routes.get("/turnstile/{n}", [&till](request&, response& res) {
        const std::lock_guard lock(till); // a lock another thread holds
        res.text("through");
    });
    routes.debug_routes("/debug/routes");
    std::mutex m;
    std::vector<std::string> lines;
    server_options o;
    o.threads = 1;
    o.stall_threshold = 50ms; // a crowded 2-core machine may hold a thread 25 ms on its own
    o.log_line = [&](const std::string& line) {
        const std::lock_guard lock(m);
        lines.push_back(line);
    };
    test::test_server s(routes, o);
    ASSERT_TRUE(s.ok());

    EXPECT_EQ(get(s.port(), "/abacus/1").substr(0, 3), "200");
    EXPECT_EQ(get(s.port(), "/sundial/1"), "200 noon");
    std::promise<void> locked;
    std::thread holder([&] {
        const std::lock_guard lock(till);
        locked.set_value();
        std::this_thread::sleep_for(held);
    });
    locked.get_future().wait();
    EXPECT_EQ(get(s.port(), "/turnstile/1"), "200 through");
    holder.join();

    // The last stall is counted when the watchdog sees its turn over (within threshold / 2).
    std::optional<route_report> report;
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    do {
        const std::string body = get(s.port(), "/debug/routes");
        ASSERT_EQ(body.substr(0, 4), "200 ") << body;
        auto r = parse_route_report(std::string_view(body).substr(4));
        ASSERT_TRUE(r.has_value()) << r.error().message;
        report = std::move(*r);
        const route_figures* last = find(*report, "/turnstile/{n}");
        if (last != nullptr && last->stalls > 0) {
            break;
        }
        std::this_thread::sleep_for(20ms);
    } while (std::chrono::steady_clock::now() < deadline);

    const route_figures* abacus = find(*report, "/abacus/{n}");
    const route_figures* sundial = find(*report, "/sundial/{n}");
    const route_figures* turnstile = find(*report, "/turnstile/{n}");
    ASSERT_TRUE(abacus != nullptr && sundial != nullptr && turnstile != nullptr);
    for (const route_figures* f : {abacus, sundial, turnstile}) {
        SCOPED_TRACE(f->route);
        EXPECT_EQ(f->stalls, 1u);
        ASSERT_TRUE(f->stall_cpu_share.has_value());
        EXPECT_GT(f->stall_measured_ms, 100); // from the first notice (before 75 ms) to the end (300 ms)
    }
    EXPECT_EQ(top_waiting(*abacus), "computes");
    EXPECT_EQ(top_waiting(*sundial), "clock_nanosleep");
    EXPECT_EQ(top_waiting(*turnstile), "lock");
    // Margins wide enough for a crowded machine: asleep or waiting, a thread uses next to no CPU.
    EXPECT_LT(*sundial->stall_cpu_share, 0.5);
    EXPECT_LT(*turnstile->stall_cpu_share, 0.5);

    // One line per loop per second: the first stall's, which says what its thread did, and reads back.
    const std::lock_guard lock(m);
    ASSERT_FALSE(lines.empty());
    const auto first = parse_stall_line(lines.front());
    ASSERT_TRUE(first.has_value()) << lines.front();
    EXPECT_EQ(first->route, "/abacus/{n}");
    EXPECT_EQ(first->waiting, "computes") << lines.front();
    EXPECT_TRUE(first->cpu_percent.has_value()) << lines.front();
    EXPECT_NE(lines.front().find("; its thread: on the CPU "), std::string::npos) << lines.front();
}

} // namespace
} // namespace hotpath
