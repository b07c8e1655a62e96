// task<T>, when_all, async_semaphore and bounded_fan_out on a real event loop with real timers.
#include "core/when_all.hpp"
#include "net/loop.hpp"
#include "net/sleep.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

// Runs `t` on a fresh loop until it finishes; returns its value (rethrows its exception).
template <typename T>
T run_on_loop(task<T> t) {
    net::loop l(0);
    std::optional<T> value;
    std::exception_ptr error;
    auto driver = [](task<T> inner, std::optional<T>& out, std::exception_ptr& err, net::loop& lp) -> task<void> {
        try {
            out.emplace(co_await std::move(inner));
        } catch (...) {
            err = std::current_exception();
        }
        lp.stop();
    }(std::move(t), value, error, l);
    l.post([&driver, &l] {
        if (driver.start([](void* loop) noexcept { static_cast<net::loop*>(loop)->stop(); }, &l)) {
            l.stop();
        }
    });
    l.run();
    if (error) {
        std::rethrow_exception(error);
    }
    return std::move(*value);
}

struct gauge {
    int now = 0;
    int peak = 0;
};

task<int> slow_value(int v, std::chrono::milliseconds d, gauge& g) {
    ++g.now;
    g.peak = std::max(g.peak, g.now);
    co_await net::sleep_for(d);
    --g.now;
    co_return v;
}

TEST(concurrency_test, when_all_runs_together_and_keeps_order) {
    gauge g;
    const auto t0 = std::chrono::steady_clock::now();
    auto results = run_on_loop([](gauge& gg) -> task<std::vector<int>> {
        std::vector<task<int>> tasks;
        for (int i = 0; i < 50; ++i) {
            tasks.push_back(slow_value(i, std::chrono::milliseconds{50 - i}, gg));
        }
        co_return co_await when_all(std::move(tasks));
    }(g));
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    ASSERT_EQ(results.size(), 50u);
    for (int i = 0; i < 50; ++i) {
        EXPECT_EQ(results[static_cast<std::size_t>(i)], i);
    }
    EXPECT_EQ(g.peak, 50);
    EXPECT_LT(elapsed, 500ms) << "all 50 waits overlapped";
}

TEST(concurrency_test, when_all_of_nothing_and_of_finished_tasks) {
    auto none =
        run_on_loop([]() -> task<std::vector<int>> { co_return co_await when_all(std::vector<task<int>>{}); }());
    EXPECT_TRUE(none.empty());
    auto ready = run_on_loop([]() -> task<std::vector<int>> {
        std::vector<task<int>> tasks;
        for (int i = 0; i < 3; ++i) {
            tasks.push_back([](int v) -> task<int> { co_return v * 2; }(i));
        }
        co_return co_await when_all(std::move(tasks));
    }());
    EXPECT_EQ(ready, (std::vector<int>{0, 2, 4}));
}

TEST(concurrency_test, when_all_rethrows_after_every_task_finished) {
    gauge g;
    EXPECT_THROW(run_on_loop([](gauge& gg) -> task<std::vector<int>> {
                     std::vector<task<int>> tasks;
                     tasks.push_back(slow_value(1, 30ms, gg));
                     tasks.push_back([]() -> task<int> {
                         co_await net::sleep_for(1ms);
                         throw std::runtime_error("downstream failed");
                     }());
                     tasks.push_back(slow_value(3, 60ms, gg));
                     co_return co_await when_all(std::move(tasks));
                 }(g)),
                 std::runtime_error);
    EXPECT_EQ(g.now, 0) << "no task left running";
}

TEST(concurrency_test, bounded_fan_out_keeps_at_most_k_in_flight) {
    for (std::size_t limit : {1u, 3u, 10u}) {
        gauge g;
        const auto t0 = std::chrono::steady_clock::now();
        auto results = run_on_loop([](gauge& gg, std::size_t k) -> task<std::vector<int>> {
            co_return co_await bounded_fan_out(
                30, k, [&gg](std::size_t i) { return slow_value(static_cast<int>(i), 10ms, gg); });
        }(g, limit));
        const auto elapsed = std::chrono::steady_clock::now() - t0;
        ASSERT_EQ(results.size(), 30u);
        for (int i = 0; i < 30; ++i) {
            EXPECT_EQ(results[static_cast<std::size_t>(i)], i);
        }
        EXPECT_EQ(static_cast<std::size_t>(g.peak), limit) << "limit " << limit;
        // 30 calls of 10 ms, `limit` at a time: about 30 / limit × 10 ms.
        EXPECT_GE(elapsed, std::chrono::milliseconds{(30 / limit) * 10 - 5}) << limit;
    }
}

TEST(concurrency_test, semaphore_hands_permits_over_in_order) {
    std::vector<int> order;
    run_on_loop([](std::vector<int>& out) -> task<int> {
        async_semaphore s(1);
        co_await s.acquire();
        std::vector<task<int>> waiters;
        for (int i = 0; i < 4; ++i) {
            waiters.push_back([](async_semaphore& sem, std::vector<int>& o, int id) -> task<int> {
                co_await sem.acquire();
                o.push_back(id);
                co_await net::sleep_for(1ms);
                sem.release();
                co_return id;
            }(s, out, i));
        }
        auto started = when_all(std::move(waiters));
        // Release the first permit once the waiters queue up (they start inside when_all).
        struct later {
            async_semaphore& sem;
            task<void> run() {
                co_await net::sleep_for(5ms);
                sem.release();
            }
        } releaser{s};
        std::vector<task<int>> both;
        both.push_back([](task<std::vector<int>> w) -> task<int> {
            co_return static_cast<int>((co_await std::move(w)).size());
        }(std::move(started)));
        both.push_back([](later& l) -> task<int> {
            co_await l.run();
            co_return 0;
        }(releaser));
        co_await when_all(std::move(both));
        EXPECT_EQ(s.available(), 1u);
        co_return 0;
    }(order));
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

} // namespace
} // namespace hotpath
