// task<T>, when_all, async_semaphore and bounded_fan_out on a real event loop with real timers.
#include "support/loop_runner.hpp"
#include <hotpath/core/error.hpp>
#include <hotpath/core/semaphore.hpp>
#include <hotpath/core/when_all.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/sleep.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

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

// A call that waits `d` unless `stop` is cancelled first (checked every millisecond, as a client call's timer
// and cancel slot would end it): its value, errc::cancelled, or `fail_with` if set.
struct call_log {
    int started = 0;
    int now = 0;
};

task<result<int>> stoppable(int v, std::chrono::milliseconds d, cancel_signal& stop, call_log& log,
                            std::error_code fail_with = {}) {
    ++log.started;
    ++log.now;
    const auto end = std::chrono::steady_clock::now() + d;
    while (!stop.cancelled() && std::chrono::steady_clock::now() < end) {
        co_await net::sleep_for(1ms);
    }
    --log.now;
    if (stop.cancelled()) {
        co_return make_error_code(errc::cancelled);
    }
    if (fail_with) {
        co_return fail_with;
    }
    co_return v;
}

TEST(concurrency_test, when_all_fail_fast_cancels_the_others_at_the_first_failure) {
    call_log log;
    const auto t0 = std::chrono::steady_clock::now();
    auto results = run_on_loop([](call_log& l) -> task<std::vector<result<int>>> {
        cancel_signal group;
        std::vector<task<result<int>>> tasks;
        tasks.push_back(stoppable(0, 5s, group, l));
        tasks.push_back(stoppable(1, 20ms, group, l, make_error_code(errc::timeout)));
        tasks.push_back(stoppable(2, 5s, group, l));
        co_return co_await when_all(std::move(tasks), fail_fast{group});
    }(log));
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    ASSERT_EQ(results.size(), 3u);
    EXPECT_EQ(results[1].error(), errc::timeout);
    EXPECT_EQ(results[0].error(), errc::cancelled);
    EXPECT_EQ(results[2].error(), errc::cancelled);
    EXPECT_EQ(log.started, 3);
    EXPECT_EQ(log.now, 0) << "none left running";
    EXPECT_LT(elapsed, 2s) << "answered at the failure, not after the others' 5 s";

    // A task failing before the next ones start: they are never started, and say cancelled.
    call_log early;
    auto first_fails = run_on_loop([](call_log& l) -> task<std::vector<result<int>>> {
        cancel_signal group;
        std::vector<task<result<int>>> tasks;
        tasks.push_back([]() -> task<result<int>> { co_return make_error_code(errc::refused); }());
        tasks.push_back(stoppable(1, 5s, group, l));
        tasks.push_back(stoppable(2, 5s, group, l));
        co_return co_await when_all(std::move(tasks), fail_fast{group});
    }(early));
    ASSERT_EQ(first_fails.size(), 3u);
    EXPECT_EQ(first_fails[0].error(), errc::refused);
    EXPECT_EQ(first_fails[1].error(), errc::cancelled);
    EXPECT_EQ(first_fails[2].error(), errc::cancelled);
    EXPECT_EQ(early.started, 0);
}

TEST(concurrency_test, when_all_without_fail_fast_still_waits_for_every_task) {
    call_log log;
    auto results = run_on_loop([](call_log& l) -> task<std::vector<result<int>>> {
        cancel_signal unused;
        std::vector<task<result<int>>> tasks;
        tasks.push_back(stoppable(0, 60ms, unused, l));
        tasks.push_back(stoppable(1, 1ms, unused, l, make_error_code(errc::timeout)));
        co_return co_await when_all(std::move(tasks));
    }(log));
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].value(), 0);
    EXPECT_EQ(results[1].error(), errc::timeout);
}

TEST(concurrency_test, bounded_fan_out_fail_fast_cancels_those_in_flight_and_starts_no_more) {
    // 20 calls, 4 at a time; call 2 fails after 20 ms while 0, 1 and 3 would take 5 s.
    call_log log;
    std::vector<std::size_t> made;
    const auto t0 = std::chrono::steady_clock::now();
    auto results = run_on_loop([](call_log& l, std::vector<std::size_t>& m) -> task<std::vector<result<int>>> {
        cancel_signal group;
        co_return co_await bounded_fan_out(
            20, 4,
            [&](std::size_t i) {
                m.push_back(i);
                return i == 2 ? stoppable(2, 20ms, group, l, make_error_code(errc::timeout))
                              : stoppable(static_cast<int>(i), 5s, group, l);
            },
            fail_fast{group});
    }(log, made));
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    ASSERT_EQ(results.size(), 20u);
    EXPECT_EQ(made, (std::vector<std::size_t>{0, 1, 2, 3})) << "no call made after the failure";
    EXPECT_EQ(results[2].error(), errc::timeout);
    for (std::size_t i : {0u, 1u, 3u}) {
        EXPECT_EQ(results[i].error(), errc::cancelled) << "in flight, cancelled: " << i;
    }
    for (std::size_t i = 4; i < 20; ++i) {
        EXPECT_EQ(results[i].error(), errc::cancelled) << "never started: " << i;
    }
    EXPECT_EQ(log.now, 0) << "none left running";
    EXPECT_LT(elapsed, 2s);
}

TEST(concurrency_test, bounded_fan_out_fail_fast_ends_a_long_queue_without_nesting) {
    // 100000 calls, 2 at a time; the first fails: the 99998 never started end in one loop, not one stack frame
    // each (a permit handed from waiter to waiter would be 99998 nested resumes).
    call_log log;
    auto results = run_on_loop([](call_log& l) -> task<std::vector<result<int>>> {
        cancel_signal group;
        co_return co_await bounded_fan_out(
            100000, 2,
            [&](std::size_t i) {
                return i == 0 ? stoppable(0, 5ms, group, l, make_error_code(errc::reset))
                              : stoppable(static_cast<int>(i), 5s, group, l);
            },
            fail_fast{group});
    }(log));
    ASSERT_EQ(results.size(), 100000u);
    EXPECT_EQ(results[0].error(), errc::reset);
    EXPECT_EQ(results[99999].error(), errc::cancelled);
    EXPECT_EQ(log.started, 2);
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

// Destroying a suspended task is how a request is cancelled (task.hpp): the frame's locals are destroyed, the
// awaited sleep cancels its timer, nothing after the suspension point runs, and the loop goes on.
struct cancel_log {
    std::vector<std::string> destroyed;
    bool resumed = false;
    bool done_reported = false;
};

struct frame_witness {
    cancel_log& log;
    std::string name;
    frame_witness(cancel_log& l, std::string n) : log(l), name(std::move(n)) {}
    frame_witness(const frame_witness&) = delete;
    frame_witness& operator=(const frame_witness&) = delete;
    ~frame_witness() { log.destroyed.push_back(name); }
};

task<void> sleeps_then_marks(std::chrono::milliseconds d, cancel_log& log) {
    frame_witness w{log, "inner"};
    co_await net::sleep_for(d);
    log.resumed = true;
}

TEST(concurrency_test, destroying_a_suspended_task_cancels_it) {
    cancel_log log;
    // The owner, on the loop's thread: starts the victim, destroys it while it sleeps, then keeps the loop running
    // past the sleep's deadline, so that a timer firing into the freed frame would show.
    const auto t0 = std::chrono::steady_clock::now();
    auto finished = test::run_on_loop([](cancel_log& lg) -> task<bool> {
        // The victim awaits a child that sleeps 30 ms: destroying the victim destroys the child it awaits, too.
        auto victim = [](cancel_log& l) -> task<void> {
            frame_witness w{l, "outer"};
            co_await sleeps_then_marks(30ms, l);
            l.resumed = true;
        }(lg);
        EXPECT_FALSE(victim.start([](void* l) noexcept { static_cast<cancel_log*>(l)->done_reported = true; }, &lg));
        co_await net::sleep_for(5ms);
        EXPECT_TRUE(lg.destroyed.empty()) << "still suspended";
        victim.reset();
        EXPECT_EQ(lg.destroyed, (std::vector<std::string>{"inner", "outer"})) << "locals destroyed at once";
        co_await net::sleep_for(60ms);
        co_return true;
    }(log));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 65ms) << "the loop ran past the cancelled sleep's deadline";
    EXPECT_EQ(finished, true) << "the loop kept running";
    EXPECT_FALSE(log.resumed) << "nothing after the co_await ran";
    EXPECT_FALSE(log.done_reported) << "a destroyed task never reports done";
    EXPECT_EQ(log.destroyed.size(), 2u) << "each local destroyed once";
}

} // namespace
} // namespace hotpath
