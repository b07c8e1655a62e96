// An event loop: one thread, its timers, a queue other threads post to (which always wakes it), a once-a-second
// tick with the cached Date header, and the backend it sleeps in: its io_uring, or its epoll without one.
#pragma once

#include <hotpath/net/timer.hpp>

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

namespace hotpath::net {

class uring;
class epoll;

// State a library keeps per loop (a client's connection pools, counters): see loop::local().
class loop_local {
public:
    virtual ~loop_local() = default;
};

// What a loop has done, updated once per turn on its thread and readable from any (relaxed atomics): a watchdog
// sees a loop that stopped turning, or whose turns grew long.
struct turn_stats {
    std::atomic<std::uint64_t> turns{0};
    std::atomic<std::uint64_t> last_turn_ns{0};    // time spent working in the latest turn, sleep excluded
    std::atomic<std::uint64_t> busy_ns{0};         // all turns' work
    std::atomic<std::uint64_t> asleep_ns{0};       // time asleep waiting for work
    std::atomic<std::int64_t> heartbeat_ns{0};     // steady_clock time of the latest turn's start
    std::atomic<std::int64_t> working_since_ns{0}; // the start of the turn now working; 0 while asleep (a stall
                                                   // is a turn working for long: see net/watchdog.hpp)
    // The latest turn that worked over 1 ms: its start (as working_since_ns gave it) and its length, so that a
    // watchdog that saw it begin learns its exact length however many turns followed before it looked again.
    std::atomic<std::int64_t> long_turn_start_ns{0};
    std::atomic<std::uint64_t> long_turn_ns{0};
    // How late the latest once-a-second tick ran after its deadline: the loop's lag, which grows when turns are
    // long or the thread waits for a CPU.
    std::atomic<std::uint64_t> tick_lag_ns{0};
    // The thread running the loop, set once as run() starts (the clock first, then the id, released) and 0 once it
    // returns: its kernel id and CPU-time clock, for a watchdog measuring what the thread does in a stall
    // (net/thread_activity.hpp).
    std::atomic<int> thread_id{0};
    std::atomic<clockid_t> thread_cpu_clock{};
};

class loop;

// A way to post to a loop that may be gone: posts after the loop's destruction are dropped. For threads that
// outlive what they work for (the blocking pool).
class loop_mailbox {
public:
    // Runs `fn` on the loop's thread, as loop::post does; returns false (dropping `fn`) when the loop is gone.
    bool post(std::function<void()> fn);

private:
    friend class loop;
    std::mutex mutex_;
    loop* target_ = nullptr;
};

// Everything a loop owns is touched only by its own thread; other threads may only post() to it or stop() it.
// Objects bound to a loop (connections, timers, handlers' coroutines) never change thread.
class loop {
public:
    explicit loop(unsigned index);
    ~loop();
    loop(const loop&) = delete;
    loop& operator=(const loop&) = delete;

    unsigned index() const noexcept { return index_; }

    // The loop running on this thread, or nullptr off a loop thread.
    static loop* current() noexcept;

    // Runs the loop on the calling thread until stop(), on its io_uring, or its epoll when disable_ring() was
    // called or io_uring is unavailable (see ring()). A stop() made before run() ends it after its first turn; once
    // run() returns, the loop may run again.
    void run();
    // Stops the loop after the current turn; safe from any thread.
    void stop();
    // Runs `fn` on the loop's thread, after what runs now; safe from any thread while the loop exists (not
    // during ~loop), and always wakes a sleeping loop at once. From the loop's own thread it is defer().
    void post(std::function<void()> fn);
    // On the loop's thread: runs `fn` in this turn, after the callback that called it, before the loop sleeps.
    void defer(std::function<void()> fn);
    // For threads that may outlive the loop.
    std::shared_ptr<loop_mailbox> mailbox() const noexcept { return mailbox_; }

    // This loop's timers (timer.hpp); used on its thread.
    timer_queue& timers() noexcept { return timers_; }

    // The current time as an HTTP date (IMF-fixdate, RFC 9110 §5.6.7), refreshed each tick: 29 bytes.
    std::string_view http_date() const noexcept { return {date_, date_length}; }
    // The time of the latest tick; coarse, for timeouts.
    clock::time_point now() const noexcept { return now_; }
    // When the running turn began: the loop woke with what it is handling then (a request read in this turn was
    // in the kernel by this time, and waited behind this turn's earlier work since). Fine-grained.
    clock::time_point turn_started() const noexcept { return turn_started_; }

    // The backend is chosen once, on the first call of ring() or poller() or run(): io_uring unless it is
    // unavailable here (see uring::available()) or disable_ring() came first, else epoll. Call these on the
    // loop's thread, or before it runs.
    //
    // This loop's io_uring, or nullptr when the loop runs on epoll.
    uring* ring();
    // This loop's epoll, or nullptr when the loop runs on io_uring. Without either (no descriptor left for an
    // epoll at the choice) the process ends with a message: a loop cannot run without a backend.
    epoll* poller();
    // The loop will run on epoll (a server run with --io epoll says so for the clients its handlers use).
    // Call before anything chose the backend.
    void disable_ring() noexcept { ring_disabled_ = true; }

    // The state `key` keeps on this loop, or nullptr. Looked up linearly: a loop holds a handful.
    loop_local* local(const void* key) const noexcept;
    // Stores `state` under `key` (replacing any); it lives until the loop is destroyed, and is destroyed on
    // the loop's thread before the loop's io_uring and timers, so it may own sockets and timers.
    loop_local& set_local(const void* key, std::unique_ptr<loop_local> state);
    // Destroys the state under `key`, if any. Not from inside that state's own code (defer it instead).
    void erase_local(const void* key);

    // Calls `fn(now)` once a second on this loop until the loop stops. Returns an id for remove_tick.
    std::size_t add_tick(std::function<void(clock::time_point)> fn);
    void remove_tick(std::size_t id);

    const turn_stats& stats() const noexcept { return stats_; }

    // Keeps `thing` alive until take_kept() hands it back or the loop ends (after its ring is gone): for an object
    // that an operation in flight refers to, whatever happens to its owner meanwhile. On the loop's thread.
    void keep_alive(std::shared_ptr<void> thing);
    std::shared_ptr<void> take_kept(const void* thing) noexcept;

private:
    static constexpr std::size_t date_length = 29;

    void do_tick();
    void refresh_date();
    // One turn's work before sleeping: due timers, posted and deferred functions. Returns false once stopped.
    bool work(clock::time_point now);
    // Records a turn that began at `start` and whose work is done now; returns now.
    clock::time_point count_turn(clock::time_point start) noexcept;
    void run_posted();
    void choose_backend();
    void run_on_ring(uring& ring);
    void run_on_epoll(epoll& poller);
    void wake() noexcept;

    unsigned index_;
    timer_queue timers_; // declared before everything that holds timers: destroyed after them
    std::unique_ptr<uring> ring_;
    std::unique_ptr<epoll> poller_;
    std::atomic<uring*> wake_ring_{nullptr};   // ring_, for other threads' post() and stop()
    std::atomic<epoll*> wake_poller_{nullptr}; // poller_, likewise
    bool chosen_ = false;
    bool ring_disabled_ = false;
    std::atomic<bool> stopping_{false};

    std::mutex posted_mutex_;
    std::vector<std::function<void()>> posted_;
    std::atomic<bool> has_posted_{false};
    std::vector<std::function<void()>> deferred_;
    std::vector<std::function<void()>> running_; // the batch being run, kept for its capacity
    std::shared_ptr<loop_mailbox> mailbox_;

    std::vector<std::pair<const void*, std::unique_ptr<loop_local>>> locals_; // destroyed first (~loop)
    std::vector<std::shared_ptr<void>> kept_;                                 // released after the ring
    std::vector<std::function<void(clock::time_point)>> ticks_;
    std::unique_ptr<timer> ticker_;
    clock::time_point now_;
    clock::time_point turn_started_;
    char date_[date_length + 1] = {};
    turn_stats stats_;
};

} // namespace hotpath::net
