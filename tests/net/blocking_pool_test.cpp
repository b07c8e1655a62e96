// The blocking pool: at most `threads` calls at once, a bounded queue that refuses at once, resumption on the
// awaiting loop's thread, cancellation of queued calls, results dropped for coroutines that went away, and many
// loops calling at once (run under ThreadSanitizer too).
#include "support/promtool.hpp"
#include "support/test_server.hpp"
#include <hotpath/core/attribution.hpp>
#include <hotpath/metrics/prometheus.hpp>
#include <hotpath/metrics/source.hpp>
#include <hotpath/net/blocking_pool.hpp>
#include <hotpath/net/loop.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// A loop of the backend under test on a thread of its own, with the tasks started on it (destroyed on it).
class loop_thread {
public:
    loop_thread() : loop_(0) {
        if (test::test_io() == io_backend::epoll) {
            loop_.disable_ring();
        }
        std::atomic<bool> up{false};
        loop_.post([&up] { up = true; });
        thread_ = std::thread([this] { loop_.run(); });
        while (!up) {
            std::this_thread::sleep_for(1ms);
        }
    }
    ~loop_thread() {
        call([this] { tasks_.clear(); }); // frames still suspended are destroyed on their loop
        loop_.stop();
        thread_.join();
    }
    net::loop& get() { return loop_; }
    std::thread::id thread_id() const { return thread_.get_id(); }

    // Runs `fn` on the loop and waits for it.
    void call(const std::function<void()>& fn) {
        std::atomic<bool> done{false};
        loop_.post([&] {
            fn();
            done = true;
        });
        while (!done) {
            std::this_thread::sleep_for(100us);
        }
    }
    // Starts `t` on the loop; the loop keeps it until drop_tasks() or the end.
    void spawn(task<void> t) {
        call([&] {
            tasks_.push_back(std::move(t));
            (void)tasks_.back().start([](void*) noexcept {}, nullptr);
        });
    }
    // Destroys every task started here, finished or suspended.
    void drop_tasks() {
        call([this] { tasks_.clear(); });
    }

private:
    net::loop loop_;
    std::thread thread_;
    std::vector<task<void>> tasks_; // on the loop's thread only
};

// Waits up to 10 s for `ready()`.
bool eventually(const std::function<bool()>& ready) {
    const auto limit = steady::now() + 10s;
    while (!ready()) {
        if (steady::now() > limit) {
            return false;
        }
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

// A call that blocks until the test opens the gate.
struct gate {
    std::atomic<bool> open{false};
    void wait() const {
        while (!open) {
            std::this_thread::sleep_for(200us);
        }
    }
};

TEST(blocking_pool_test, never_more_calls_run_at_once_than_threads) {
    blocking_pool pool({.threads = 3, .queue_capacity = 100, .name = "t"});
    std::atomic<int> running{0};
    std::atomic<int> most{0};
    std::atomic<int> done{0};
    {
        loop_thread a;
        loop_thread b;
        auto call = [&]() -> task<void> {
            const auto r = co_await pool.run([&] {
                const int now = ++running;
                int seen = most.load();
                while (now > seen && !most.compare_exchange_weak(seen, now)) {
                }
                std::this_thread::sleep_for(20ms);
                --running;
                return now;
            });
            EXPECT_TRUE(r.has_value());
            ++done;
        };
        for (int i = 0; i < 20; ++i) {
            a.spawn(call());
            b.spawn(call());
        }
        ASSERT_TRUE(eventually([&] { return done == 40; })) << done;
    }
    EXPECT_LE(most.load(), 3) << "never a 4th call at once";
    EXPECT_EQ(most.load(), 3) << "40 calls of 20 ms kept the 3 threads busy together";
    const auto s = pool.stats();
    EXPECT_EQ(s.completed, 40U);
    EXPECT_EQ(s.busy, 0U);
    EXPECT_EQ(s.queued, 0U);
    EXPECT_EQ(s.rejected, 0U);
}

TEST(blocking_pool_test, the_call_runs_on_a_pool_thread_and_the_coroutine_resumes_on_its_own_loop) {
    blocking_pool pool({.threads = 2, .queue_capacity = 64, .name = "t"});
    std::atomic<int> right{0};
    std::atomic<int> done{0};
    {
        loop_thread loops[2];
        for (auto& l : loops) {
            for (int i = 0; i < 10; ++i) {
                l.spawn([](blocking_pool& p, loop_thread& me, std::atomic<int>& ok, std::atomic<int>& n) -> task<void> {
                    const auto before = std::this_thread::get_id();
                    const auto ran_on = co_await p.run([] { return std::this_thread::get_id(); });
                    EXPECT_TRUE(ran_on.has_value());
                    const bool fn_off_loop = ran_on.has_value() && *ran_on != me.thread_id();
                    const bool back_home = std::this_thread::get_id() == before &&
                                           std::this_thread::get_id() == me.thread_id() &&
                                           net::loop::current() == &me.get();
                    EXPECT_TRUE(fn_off_loop) << "fn ran on the loop's thread";
                    EXPECT_TRUE(back_home) << "resumed off its loop";
                    ok += fn_off_loop && back_home ? 1 : 0;
                    ++n;
                }(pool, l, right, done));
            }
        }
        ASSERT_TRUE(eventually([&] { return done == 20; }));
    }
    EXPECT_EQ(right.load(), 20);
}

TEST(blocking_pool_test, a_full_queue_refuses_at_once_with_overloaded) {
    blocking_pool pool({.threads = 1, .queue_capacity = 1, .name = "t"});
    gate g;
    std::atomic<int> a_value{0};
    std::atomic<int> b_value{0};
    std::atomic<bool> c_done{false};
    std::atomic<bool> c_refused{false};
    std::atomic<long long> c_took_us{-1};
    {
        loop_thread l;
        l.spawn([](blocking_pool& p, gate& shut, std::atomic<int>& out) -> task<void> {
            const auto r = co_await p.run([&shut] {
                shut.wait();
                return 1;
            });
            out = r.has_value() ? *r : -1;
        }(pool, g, a_value));
        ASSERT_TRUE(eventually([&] { return pool.stats().busy == 1; }));
        l.spawn([](blocking_pool& p, std::atomic<int>& out) -> task<void> {
            const auto r = co_await p.run([] { return 2; });
            out = r.has_value() ? *r : -1;
        }(pool, b_value));
        ASSERT_TRUE(eventually([&] { return pool.stats().queued == 1; }));
        l.spawn([](blocking_pool& p, std::atomic<bool>& refused, std::atomic<long long>& took,
                   std::atomic<bool>& done) -> task<void> {
            const auto t0 = steady::now();
            const auto r = co_await p.run([] { return 3; });
            took = std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - t0).count();
            refused = !r.has_value() && r.error() == errc::overloaded;
            done = true;
        }(pool, c_refused, c_took_us, c_done));
        // spawn() returns once the task ran to its first suspension: a refusal resumed it at once, on the loop.
        EXPECT_TRUE(c_done) << "the refused call did not resume at once";
        EXPECT_TRUE(c_refused);
        EXPECT_LT(c_took_us.load(), 200'000) << "no wait (a loaded machine may still preempt the loop)";
        EXPECT_EQ(pool.stats().rejected, 1U);
        g.open = true;
        ASSERT_TRUE(eventually([&] { return a_value != 0 && b_value != 0; }));
    }
    EXPECT_EQ(a_value.load(), 1);
    EXPECT_EQ(b_value.load(), 2);
    EXPECT_EQ(pool.stats().completed, 2U);
}

TEST(blocking_pool_test, a_queued_call_cancelled_never_runs_and_its_coroutine_sees_cancelled) {
    blocking_pool pool({.threads = 1, .queue_capacity = 4, .name = "t"});
    gate g;
    std::atomic<bool> b_ran{false};
    std::atomic<bool> b_cancelled{false};
    std::atomic<bool> b_done{false};
    std::atomic<bool> a_done{false};
    std::atomic<bool> c_cancelled{false};
    {
        loop_thread l;
        cancel_signal signal; // touched on the loop only
        l.spawn([](blocking_pool& p, gate& shut, std::atomic<bool>& done) -> task<void> {
            const auto r = co_await p.run([&shut] { shut.wait(); });
            EXPECT_TRUE(r.has_value());
            done = true;
        }(pool, g, a_done));
        ASSERT_TRUE(eventually([&] { return pool.stats().busy == 1; }));
        l.spawn([](blocking_pool& p, cancel_signal& s, std::atomic<bool>& ran, std::atomic<bool>& cancelled,
                   std::atomic<bool>& done) -> task<void> {
            const auto r = co_await p.run([&ran] { ran = true; }, s);
            cancelled = !r.has_value() && r.error() == errc::cancelled;
            done = true;
        }(pool, signal, b_ran, b_cancelled, b_done));
        ASSERT_TRUE(eventually([&] { return pool.stats().queued == 1; }));
        l.call([&] { signal.cancel(); });
        ASSERT_TRUE(eventually([&] { return b_done.load(); }));
        EXPECT_TRUE(b_cancelled);
        EXPECT_FALSE(a_done) << "the running call was not disturbed";
        EXPECT_EQ(pool.stats().queued, 0U);
        EXPECT_EQ(pool.stats().cancelled, 1U);
        // A signal already cancelled: the call is not even queued.
        l.spawn([](blocking_pool& p, cancel_signal& s, std::atomic<bool>& ran, std::atomic<bool>& out) -> task<void> {
            const auto r = co_await p.run([&ran] { ran = true; }, s);
            out = !r.has_value() && r.error() == errc::cancelled;
        }(pool, signal, b_ran, c_cancelled));
        EXPECT_TRUE(c_cancelled);
        g.open = true;
        ASSERT_TRUE(eventually([&] { return a_done.load(); }));
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_FALSE(b_ran) << "a cancelled call ran";
    EXPECT_EQ(pool.stats().completed, 1U);
}

// What a call returns, telling where it was destroyed.
struct probe {
    std::atomic<int>* destroyed;
    std::atomic<bool>* on_loop_thread;
    std::thread::id loop_thread;
    ~probe() {
        *on_loop_thread = std::this_thread::get_id() == loop_thread;
        ++*destroyed;
    }
};

TEST(blocking_pool_test, a_coroutine_destroyed_leaves_its_queued_call_unrun_and_its_running_call_dropped) {
    blocking_pool pool({.threads = 1, .queue_capacity = 4, .name = "t"});
    gate g;
    std::atomic<int> destroyed{0};
    std::atomic<bool> on_loop_thread{true};
    std::atomic<bool> queued_ran{false};
    {
        loop_thread l;
        const auto loop_id = l.thread_id();
        l.spawn([](blocking_pool& p, gate& shut, std::atomic<int>& d, std::atomic<bool>& where,
                   std::thread::id id) -> task<void> {
            (void)co_await p.run([&shut, &d, &where, id] {
                shut.wait();
                return std::unique_ptr<probe>(new probe{&d, &where, id});
            });
            ADD_FAILURE() << "a destroyed coroutine resumed";
        }(pool, g, destroyed, on_loop_thread, loop_id));
        ASSERT_TRUE(eventually([&] { return pool.stats().busy == 1; }));
        l.spawn([](blocking_pool& p, std::atomic<bool>& ran) -> task<void> {
            (void)co_await p.run([&ran] { ran = true; });
            ADD_FAILURE() << "a destroyed coroutine resumed";
        }(pool, queued_ran));
        ASSERT_TRUE(eventually([&] { return pool.stats().queued == 1; }));
        l.drop_tasks(); // as a connection closed under its handler does
        EXPECT_EQ(pool.stats().queued, 0U);
        EXPECT_EQ(pool.stats().abandoned, 1U);
        g.open = true;
        ASSERT_TRUE(eventually([&] { return pool.stats().dropped == 1; }));
        ASSERT_TRUE(eventually([&] { return destroyed == 1; }));
        std::this_thread::sleep_for(20ms); // a stray delivery would run now
    }
    EXPECT_EQ(destroyed.load(), 1) << "the dropped result was destroyed once";
    EXPECT_FALSE(on_loop_thread) << "on the pool's thread, not the loop's";
    EXPECT_FALSE(queued_ran) << "an abandoned queued call ran";
    EXPECT_EQ(pool.stats().completed, 1U);
}

TEST(blocking_pool_test, values_move_only_values_void_and_exceptions_come_back) {
    blocking_pool pool({.threads = 2, .queue_capacity = 8, .name = "t"});
    std::atomic<bool> done{false};
    {
        loop_thread l;
        l.spawn([](blocking_pool& p, std::atomic<bool>& d) -> task<void> {
            const auto text = co_await p.run([] { return std::string(100, 'x'); });
            EXPECT_EQ(text.has_value() ? text->size() : 0U, 100U);
            auto owned = co_await p.run([] { return std::make_unique<int>(7); });
            EXPECT_TRUE(owned.has_value() && **owned == 7);
            const result<void> nothing = co_await p.run([] {});
            EXPECT_TRUE(nothing.has_value());
            bool caught = false;
            try {
                (void)co_await p.run([]() -> int { throw std::runtime_error("from the pool"); });
            } catch (const std::runtime_error& e) {
                caught = std::string(e.what()) == "from the pool";
            }
            EXPECT_TRUE(caught) << "fn's exception is rethrown on the loop";
            // The shared pool behind blocking(fn).
            const auto shared = co_await blocking([] { return 42; });
            EXPECT_TRUE(shared.has_value() && *shared == 42);
            d = true;
        }(pool, done));
        ASSERT_TRUE(eventually([&] { return done.load(); }));
    }
    EXPECT_FALSE(blocking_pool::configure_shared({})) << "the shared pool exists: too late to configure it";
}

// A lambda that owns something with a destructor, named before the co_await (GCC 12 destroys such a lambda twice
// when it is a temporary inside the co_await expression: see blocking_pool::run): its captures reach the pool
// thread intact and are destroyed once.
TEST(blocking_pool_test, a_named_lambda_owning_strings_and_shared_pointers_runs_and_is_destroyed_once) {
    blocking_pool pool({.threads = 2, .queue_capacity = 8, .name = "t"});
    std::atomic<bool> done{false};
    auto owned = std::make_shared<std::string>(1000, 'y');
    {
        loop_thread l;
        l.spawn([](blocking_pool& p, std::shared_ptr<std::string> shared, std::atomic<bool>& d) -> task<void> {
            for (int i = 0; i < 50; ++i) {
                auto fn = [text = std::string(200, 'x'), shared] { return text.size() + shared->size(); };
                auto call = p.run(std::move(fn));
                const auto n = co_await call;
                EXPECT_TRUE(n.has_value() && *n == 1200U);
            }
            d = true;
        }(pool, owned, done));
        ASSERT_TRUE(eventually([&] { return done.load(); }));
    }
    EXPECT_EQ(owned.use_count(), 1) << "every copy the calls held was destroyed";
}

TEST(blocking_pool_test, the_wait_counts_as_the_requests_wait) {
    blocking_pool pool({.threads = 1, .queue_capacity = 8, .name = "t"});
    time_attribution waits;
    std::atomic<bool> done{false};
    {
        loop_thread l;
        l.call([&] { waits.start(); });
        auto t = [](blocking_pool& p, std::atomic<bool>& d) -> task<void> {
            (void)co_await p.run([] { std::this_thread::sleep_for(30ms); });
            d = true;
        }(pool, done);
        t.attribute_to(&waits);
        l.spawn(std::move(t));
        ASSERT_TRUE(eventually([&] { return done.load(); }));
        l.call([] {});
    }
    EXPECT_GE(waits.waited_ns, 30'000'000U);
    EXPECT_EQ(waits.downstream_ns, 0U) << "not a downstream call";
    EXPECT_EQ(waits.waits_in_flight, 0U);
}

TEST(blocking_pool_test, its_metrics_pass_promtool) {
    blocking_pool pool({.threads = 2, .queue_capacity = 0, .name = "files"});
    {
        loop_thread l;
        std::atomic<bool> done{false};
        l.spawn([](blocking_pool& p, std::atomic<bool>& d) -> task<void> {
            (void)co_await p.run([] { std::this_thread::sleep_for(2ms); });
            d = true;
        }(pool, done));
        ASSERT_TRUE(eventually([&] { return done.load(); }));
    }
    std::string text;
    metrics::prometheus_writer out(text);
    const std::shared_ptr<const metrics::source> sources[] = {pool.metrics()};
    metrics::write_sources(out, sources);
    for (const char* line :
         {"hotpath_blocking_threads{pool=\"files\"} 2", "hotpath_blocking_threads_busy{pool=\"files\"} 0",
          "hotpath_blocking_queue_length{pool=\"files\"} 0", "hotpath_blocking_queue_capacity{pool=\"files\"} 0",
          "hotpath_blocking_completed_total{pool=\"files\"} 1", "hotpath_blocking_rejected_total{pool=\"files\"} 0",
          "hotpath_blocking_queue_wait_seconds_count{pool=\"files\"} 1"}) {
        EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
    }
    if (!test::have_promtool()) {
        GTEST_SKIP() << "promtool not installed";
    }
    const auto verdict = test::promtool_check(text);
    EXPECT_TRUE(verdict.passed) << verdict.said << "\n" << text;
}

// Many loops, many calls at once, some cancelled, some coroutines destroyed, a queue that overflows: every call
// ends exactly once, and the pool's counts add up. Meant for ThreadSanitizer as much as for its checks.
TEST(blocking_pool_test, many_loops_many_calls_every_call_ends_once) {
    constexpr int loops_n = 4;
    constexpr int rounds = 6;
    constexpr int per_round = 40;
    blocking_pool pool({.threads = 3, .queue_capacity = 24, .name = "t"});
    std::atomic<int> ran{0};
    struct tally {
        std::atomic<int> values{0}, refused{0}, cancelled{0}, ended{0};
    };
    tally tallies[loops_n];
    {
        std::vector<std::unique_ptr<loop_thread>> loops;
        for (int i = 0; i < loops_n; ++i) {
            loops.push_back(std::make_unique<loop_thread>());
        }
        std::vector<std::thread> drivers;
        for (int i = 0; i < loops_n; ++i) {
            drivers.emplace_back([&, i] {
                loop_thread& l = *loops[static_cast<std::size_t>(i)];
                tally& t = tallies[i];
                std::minstd_rand rng(static_cast<unsigned>(i + 1));
                for (int round = 0; round < rounds; ++round) {
                    auto signals = std::make_shared<std::vector<std::unique_ptr<cancel_signal>>>();
                    l.call([&] {
                        for (int k = 0; k < per_round; ++k) {
                            signals->push_back(std::make_unique<cancel_signal>());
                        }
                    });
                    for (int k = 0; k < per_round; ++k) {
                        l.spawn([](blocking_pool& p, cancel_signal& s, std::atomic<int>& r, tally& out,
                                   int us) -> task<void> {
                            const auto got = co_await p.run(
                                [&r, us] {
                                    std::this_thread::sleep_for(std::chrono::microseconds{us});
                                    ++r;
                                    return us;
                                },
                                s);
                            if (got.has_value()) {
                                EXPECT_EQ(*got, us);
                                ++out.values;
                            } else if (got.error() == errc::overloaded) {
                                ++out.refused;
                            } else if (got.error() == errc::cancelled) {
                                ++out.cancelled;
                            }
                            ++out.ended;
                        }(pool, *(*signals)[static_cast<std::size_t>(k)], ran, t, static_cast<int>(rng() % 300)));
                    }
                    l.call([&] {
                        for (int k = 0; k < per_round; k += 3) {
                            (*signals)[static_cast<std::size_t>(k)]->cancel();
                        }
                    });
                    const int target = (round + 1) * per_round;
                    EXPECT_TRUE(eventually([&] { return t.ended.load() == target; })) << t.ended;
                    l.drop_tasks(); // the finished frames, before their signals
                }
            });
        }
        for (auto& d : drivers) {
            d.join();
        }
    }
    int values = 0;
    int refused = 0;
    int cancelled = 0;
    for (const auto& t : tallies) {
        EXPECT_EQ(t.values + t.refused + t.cancelled, rounds * per_round);
        values += t.values;
        refused += t.refused;
        cancelled += t.cancelled;
    }
    const auto s = pool.stats();
    EXPECT_EQ(s.completed, static_cast<std::uint64_t>(values));
    EXPECT_EQ(s.completed, static_cast<std::uint64_t>(ran.load()));
    EXPECT_EQ(s.rejected, static_cast<std::uint64_t>(refused));
    EXPECT_EQ(s.cancelled, static_cast<std::uint64_t>(cancelled));
    EXPECT_EQ(s.dropped + s.abandoned, 0U);
    EXPECT_EQ(s.busy + s.queued, 0U);
    EXPECT_GT(refused, 0) << "the queue overflowed at times";
    EXPECT_GT(values, 0);
}

} // namespace
} // namespace hotpath
