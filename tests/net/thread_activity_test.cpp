// What a thread did, seen from another: the /proc syscall file read, the system calls named, the judgement on fixed
// sets of looks, and real threads looked at while they spin, sleep and wait on a lock.
#include <hotpath/net/thread_activity.hpp>

#include <gtest/gtest.h>

#include <sys/syscall.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hotpath::net {
namespace {

using namespace std::chrono_literals;
using state = syscall_sample::state;

TEST(thread_activity_test, the_syscall_file_reads_as_the_kernel_writes_it) {
    const struct {
        const char* label;
        const char* text;
        syscall_sample want;
    } cases[] = {
        {"on a CPU", "running\n", {state::running, -1}},
        {"in a call", "230 0x1 0x0 0x7ffd1c 0x7ffd1c 0x0 0x0 0x7ffd10 0x7f3a2b\n", {state::in_call, 230}},
        {"in a call, no newline", "202 0x1 0x0 0x0 0x0 0x0 0x0 0x7ffd10 0x7f3a2b", {state::in_call, 202}},
        {"blocked outside a call", "-1 0x7ffd10 0x7f3a2b\n", {state::blocked, -1}},
        {"empty", "", {}},
        {"not a number", "x 0x1\n", {}},
        {"a number run into text", "12ab 0x1\n", {}},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(parse_syscall_sample(c.text), c.want) << c.label;
    }
}

TEST(thread_activity_test, system_calls_are_named_from_the_platform_table) {
    EXPECT_EQ(waiting_name(waiting_of_call(SYS_clock_nanosleep)), "clock_nanosleep");
    EXPECT_EQ(waiting_name(waiting_of_call(SYS_read)), "read");
    EXPECT_EQ(waiting_name(waiting_of_call(SYS_connect)), "connect");
    EXPECT_EQ(waiting_name(waiting_of_call(SYS_fsync)), "fsync");
    EXPECT_EQ(waiting_of_call(SYS_futex), waits_lock);
    EXPECT_EQ(waiting_of_call(SYS_getpid), waits_system_call); // not a blocking call: not named
    EXPECT_EQ(waiting_of_call(100'000), waits_system_call);
    // Every name reads back as its index; a name not in the table is none.
    for (std::size_t w = 0; w < waiting_count(); ++w) {
        const std::string_view name = waiting_name(static_cast<waiting_index>(w));
        EXPECT_FALSE(name.empty()) << w;
        EXPECT_EQ(name.find(' '), std::string_view::npos) << name;
        EXPECT_EQ(waiting_of(name), w) << name;
    }
    EXPECT_EQ(waiting_of("futex"), waiting_count());
    EXPECT_EQ(waiting_name(static_cast<waiting_index>(waiting_count())), "");
}

syscall_sample in(long call) {
    return {state::in_call, call};
}
constexpr syscall_sample running{state::running, -1};
constexpr syscall_sample blocked{state::blocked, -1};
constexpr syscall_sample unreadable{};

TEST(thread_activity_test, the_judgement_of_fixed_looks) {
    const struct {
        const char* label;
        std::vector<syscall_sample> looks;
        std::optional<double> cpu_share;
        std::string_view want;
    } cases[] = {
        {"on its CPU", {running, running, running}, 0.97, "computes"},
        {"on its CPU, no looks", {}, 0.85, "computes"},
        {"the share decides past 0.8, whatever the looks", {in(SYS_read), in(SYS_read)}, 0.9, "computes"},
        {"running, on a crowded machine", {running, running, running, in(SYS_futex)}, 0.4, "computes"},
        {"running, unmeasured", {running, running}, std::nullopt, "computes"},
        {"asleep", {in(SYS_clock_nanosleep), in(SYS_clock_nanosleep), running}, 0.02, "clock_nanosleep"},
        {"reading", {in(SYS_read), in(SYS_read), in(SYS_read), in(SYS_read)}, 0.01, "read"},
        {"on a lock", {in(SYS_futex), in(SYS_futex), in(SYS_futex), running}, 0.01, "lock"},
        {"mostly on a lock", {in(SYS_futex), in(SYS_futex), in(SYS_read), blocked}, std::nullopt, "lock"},
        {"I/O of two calls: the one seen most", {in(SYS_read), in(SYS_write), in(SYS_read), running}, 0.1, "read"},
        {"a call the table does not name", {in(SYS_getpid), in(SYS_getpid)}, 0.0, "system_call"},
        {"no majority", {running, in(SYS_futex), in(SYS_read), blocked, blocked}, 0.3, "unknown"},
        {"blocked outside calls", {blocked, blocked}, 0.0, "unknown"},
        {"nothing readable", {unreadable, unreadable}, std::nullopt, "unknown"},
        {"unreadable looks are not counted", {unreadable, unreadable, unreadable, in(SYS_futex)}, 0.0, "lock"},
    };
    for (const auto& c : cases) {
        syscall_tally t;
        for (const syscall_sample& s : c.looks) {
            t.add(s);
        }
        EXPECT_EQ(waiting_name(judge(t, c.cpu_share)), c.want) << c.label;
    }
}

TEST(thread_activity_test, more_distinct_calls_than_the_tally_holds_are_counted_apart) {
    syscall_tally t;
    for (long call = 1'000; call < 1'000 + static_cast<long>(syscall_tally::max_calls) + 3; ++call) {
        t.add(in(call));
    }
    EXPECT_EQ(t.other_calls, 3u);
    EXPECT_EQ(t.total(), syscall_tally::max_calls + 3);
    EXPECT_EQ(judge(t, 0.0), waits_system_call); // in calls all along, none of them most
}

// Looks at `tid` every 10 ms, `n` times.
syscall_tally look_at(int tid, int n) {
    syscall_tally t;
    for (int i = 0; i < n; ++i) {
        t.add(look_at_thread(tid));
        std::this_thread::sleep_for(10ms);
    }
    return t;
}

// A thread that records its ids, then does `work`.
template <typename Work>
std::thread watched_thread(std::promise<thread_ids>& ids, Work work) {
    return std::thread([&ids, work] {
        ids.set_value(this_thread_ids());
        work();
    });
}

TEST(thread_activity_test, real_threads_seen_spinning_sleeping_and_waiting_on_a_lock) {
    { // sleeping: in clock_nanosleep, next to no CPU time
        std::promise<thread_ids> p;
        std::thread t = watched_thread(p, [] { std::this_thread::sleep_for(150ms); });
        const thread_ids ids = p.get_future().get();
        ASSERT_NE(ids.tid, 0);
        const auto cpu_before = thread_cpu_time(ids.cpu_clock);
        const auto looks = look_at(ids.tid, 6);
        const auto cpu_after = thread_cpu_time(ids.cpu_clock);
        t.join();
        ASSERT_TRUE(cpu_before && cpu_after);
        EXPECT_LT(*cpu_after - *cpu_before, 20ms);
        EXPECT_EQ(waiting_name(judge(looks, std::nullopt)), "clock_nanosleep");
    }
    { // waiting on a std::mutex another thread holds: in futex
        std::mutex m;
        std::unique_lock held(m);
        std::promise<thread_ids> p;
        std::thread t = watched_thread(p, [&m] { const std::lock_guard wait(m); });
        const thread_ids ids = p.get_future().get();
        const auto looks = look_at(ids.tid, 6);
        held.unlock();
        t.join();
        EXPECT_EQ(waiting_name(judge(looks, std::nullopt)), "lock");
    }
    { // spinning: running, and its CPU clock advances
        std::atomic<bool> stop{false};
        std::promise<thread_ids> p;
        std::thread t = watched_thread(p, [&stop] {
            while (!stop.load(std::memory_order_relaxed)) {
            }
        });
        const thread_ids ids = p.get_future().get();
        const auto cpu_before = thread_cpu_time(ids.cpu_clock);
        const auto looks = look_at(ids.tid, 6);
        const auto cpu_after = thread_cpu_time(ids.cpu_clock);
        stop = true;
        t.join();
        ASSERT_TRUE(cpu_before && cpu_after);
        EXPECT_GT(*cpu_after - *cpu_before, 5ms); // a share of ~60 ms, whatever else the machine runs
        EXPECT_EQ(waiting_name(judge(looks, std::nullopt)), "computes");
    }
    EXPECT_EQ(look_at_thread(0), syscall_sample{});
}

} // namespace
} // namespace hotpath::net
