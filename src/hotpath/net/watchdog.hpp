// A thread that watches event loops from outside: a loop whose current turn has been working longer than a
// threshold is stalled (a handler blocking its thread, a loop of CPU work), which a busy but healthy loop, many
// short turns, never is. Reads only the loops' turn_stats (relaxed atomics): it costs the loops nothing.
#pragma once

#include <hotpath/net/loop.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hotpath::net {

class watchdog {
public:
    // What the watchdog tells of a stall, on its own thread: `loop` has been in one turn for `length`; `ended`
    // says the turn is over (length is then the turn's whole length when the loop recorded it, else the last
    // seen). Called once when the stall begins (not ended), again (not ended, with the length so far) each
    // `still_every` it goes on, so that a loop held for minutes is told of while it is held, and once when it ends.
    static constexpr std::chrono::seconds still_every{1};
    using report_fn = std::function<void(unsigned loop, std::chrono::nanoseconds length, bool ended)>;

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
    };
    void run();
    void look(watched& w, std::int64_t now_ns);

    std::vector<watched> loops_;
    std::chrono::nanoseconds threshold_;
    report_fn report_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace hotpath::net
