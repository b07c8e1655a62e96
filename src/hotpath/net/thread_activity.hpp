// What a thread of this process did over a stretch of time, seen from another of its threads: its CPU time (its
// CPU-time clock) and the system call it waited in (/proc/self/task/TID/syscall), judged into what held it: it
// computed, it waited in a blocking system call, or it waited on a lock. The stall watchdog's measure of a stall.
#pragma once

#include <time.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hotpath::net {

// A thread as another thread of the process watches it: its kernel id and its CPU-time clock, recorded by the
// thread itself (this_thread_ids()). tid 0: none.
struct thread_ids {
    int tid = 0;
    clockid_t cpu_clock{};
};
thread_ids this_thread_ids() noexcept;

// The CPU time the thread of `cpu_clock` has used so far; nullopt when it cannot be read (the thread is gone).
std::optional<std::chrono::nanoseconds> thread_cpu_time(clockid_t cpu_clock) noexcept;

// One look at what a thread is doing, as /proc/self/task/TID/syscall tells it: on (or waiting for) a CPU
// ("running"), in a system call (its number first), blocked outside one ("-1 ..."), or unreadable.
struct syscall_sample {
    enum class state : std::uint8_t { unreadable, running, in_call, blocked };
    state what = state::unreadable;
    long call = -1; // in_call: the system call's number

    friend bool operator==(const syscall_sample&, const syscall_sample&) = default;
};
// The sample the file's text `text` tells (no I/O).
syscall_sample parse_syscall_sample(std::string_view text) noexcept;
// Reads /proc/self/task/`tid`/syscall: one open, read and close, on the calling thread. The kernel reads another
// thread's registers only once it is off its CPU; the look never stops or signals it.
syscall_sample look_at_thread(int tid) noexcept;

// What held a thread, as stall lines and route reports name it (`waiting`): an index into a fixed table of names,
// the same in every build of one platform (the system calls it has: SYS_* of <sys/syscall.h>).
//   "computes"     on its CPU (or waiting for one) most of the time
//   "lock"         waiting in futex: on a lock (a std::mutex, a condition variable) another thread holds
//   "unknown"      nothing told it: no majority, no look possible
//   "system_call"  in a blocking system call the table does not name
//   "read", "clock_nanosleep", "connect", ...: in that blocking system call
using waiting_index = std::uint8_t;
inline constexpr waiting_index waits_computes = 0;
inline constexpr waiting_index waits_lock = 1;
inline constexpr waiting_index waits_unknown = 2;
inline constexpr waiting_index waits_system_call = 3;
// The number of names: 4, then the system calls the table names.
std::size_t waiting_count() noexcept;
// The name of `w` ("" past the table); the index of `name` (waiting_count() when none).
std::string_view waiting_name(waiting_index w) noexcept;
std::size_t waiting_of(std::string_view name) noexcept;
// The waiting index of system call `call`: its name's, or waits_system_call outside the table.
waiting_index waiting_of_call(long call) noexcept;

// Looks at one thread over a stretch: how many times it was seen doing what. Fixed size, no allocation.
struct syscall_tally {
    static constexpr std::size_t max_calls = 8; // distinct system calls told apart; more go to `other_calls`
    std::uint32_t running = 0;
    std::uint32_t futex = 0;
    std::uint32_t blocked = 0;     // blocked outside a system call (a page fault, a stop)
    std::uint32_t other_calls = 0; // past max_calls distinct ones
    std::array<long, max_calls> calls{};
    std::array<std::uint32_t, max_calls> call_counts{};

    void add(const syscall_sample& s) noexcept;
    // Every readable look.
    std::uint32_t total() const noexcept;
};

// What a thread did over a stall.
struct thread_activity {
    // Its CPU time over the wall time it was measured for (from the stall's first notice to the latest look), in
    // [0, 1]; nullopt when not measured (the thread's clock unreadable, no time between the two readings).
    std::optional<double> cpu_share;
    std::chrono::nanoseconds cpu{};      // its CPU time over `measured`
    std::chrono::nanoseconds measured{}; // the wall time between the two readings
    waiting_index waiting = waits_unknown;

    friend bool operator==(const thread_activity&, const thread_activity&) = default;
};

// The judgement, from the CPU share and the looks: "computes" when the thread was on its CPU at least
// computes_share of the time, or seen running in at least half the looks (a thread that waits for a CPU on a
// crowded machine still wants to compute); else what held at least half the looks: futex ("lock"), another system
// call (its name); else "unknown". No I/O.
inline constexpr double computes_share = 0.8;
waiting_index judge(const syscall_tally& looks, std::optional<double> cpu_share) noexcept;

} // namespace hotpath::net
