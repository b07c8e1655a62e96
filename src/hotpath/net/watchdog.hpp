// A thread that watches event loops from outside: a loop whose current turn has been working longer than a
// threshold is stalled (a handler blocking its thread, a loop of CPU work), which a busy but healthy loop, many
// short turns, never is. Reads only the loops' turn_stats (relaxed atomics): it costs the loops nothing. While a
// stall lasts it also measures what the loop's thread does (net/thread_activity.hpp), from its own thread: the
// thread's CPU clock when the stall is first seen and at each report, and its /proc syscall file at each look.
#pragma once

#include <hotpath/net/loop.hpp>
#include <hotpath/net/thread_activity.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace hotpath::net {

class watchdog {
public:
    // What the watchdog tells of a stall, on its own thread: `loop` has been in one turn for `length`; `ended`
    // says the turn is over (length is then the turn's whole length when the loop recorded it, else the last
    // seen). Called once when the stall begins (not ended), again (not ended, with the length so far) each
    // `still_every` it goes on, so that a loop held for minutes is told of while it is held, and once when it ends.
    // `activity`: what the loop's thread did from the stall's first notice to this report (with no CPU share when
    // it begins: nothing to measure yet), judged from the looks so far.
    static constexpr std::chrono::seconds still_every{1};
    using report_fn = std::function<void(unsigned loop, std::chrono::nanoseconds length, bool ended,
                                         const thread_activity& activity)>;

    // Watches `loops` (which must outlive it) every threshold / 2 (at least every millisecond).
    watchdog(std::vector<const loop*> loops, std::chrono::nanoseconds threshold, report_fn report);
    ~watchdog();
    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

    std::chrono::nanoseconds threshold() const noexcept { return threshold_; }

private:
    struct watched {
        const loop* l = nullptr;
        std::int64_t flagged_since = 0; // working_since_ns of the stalled turn, 0 when none
        std::int64_t seen_ns = 0;       // the stall's length at the latest look
        std::int64_t told_ns = 0;       // the stall's length when last told
        // What its thread does in the stall: the thread, its CPU time and the time when the stall was first seen,
        // and a look at its system call each time the watchdog looks.
        int tid = 0;
        clockid_t cpu_clock{};
        std::optional<std::chrono::nanoseconds> cpu_at_start{};
        std::int64_t measured_since_ns = 0;
        syscall_tally looks{};
    };
    void run();
    void look(watched& w, std::int64_t now_ns);
    // At a stall's first notice: which thread, its CPU time now, and its first look.
    static void start_measure(watched& w);
    // What the thread did since start_measure(), with its CPU time read now.
    static thread_activity activity_of(const watched& w);

    std::vector<watched> loops_;
    std::chrono::nanoseconds threshold_;
    report_fn report_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace hotpath::net
