// An event loop: one thread, one io_context, a once-a-second tick, and the cached Date header.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace hotpath::net {

class uring;

// State a library keeps per loop (a client's connection pools, counters): see loop::local().
class loop_local {
public:
    virtual ~loop_local() = default;
};

using clock = std::chrono::steady_clock;

// Everything a loop owns is touched only by its own thread; other threads may only post() to it.
// Objects bound to a loop (connections, timers, handlers' coroutines) never change thread.
class loop {
public:
    explicit loop(unsigned index);
    ~loop();
    loop(const loop&) = delete;
    loop& operator=(const loop&) = delete;

    unsigned index() const noexcept { return index_; }
    // For objects of this loop, used on its thread only: other threads go through post() and stop(), which
    // wake a loop asleep in io_uring_enter (Asio's own wake-up is not heard there).
    boost::asio::io_context& context() noexcept { return *context_; }

    // The loop running on this thread, or nullptr off a loop thread.
    static loop* current() noexcept;

    // Runs the loop on the calling thread until stop(). Opens the loop's io_uring first unless disable_ring()
    // was called.
    void run();
    // Stops the loop; safe from any thread.
    void stop();
    // Runs `fn` on the loop's thread; safe from any thread while the loop exists (not during ~loop).
    void post(std::function<void()> fn);

    // The current time as an HTTP date (IMF-fixdate, RFC 9110 §5.6.7), refreshed each tick: 29 bytes.
    std::string_view http_date() const noexcept { return {date_, date_length}; }
    // The time of the latest tick; coarse, for timeouts.
    clock::time_point now() const noexcept { return now_; }

    // Where a search for Asio's epoll instance starts: the lowest descriptor number that was free just before
    // the loop made Asio open it.
    int reactor_fd_hint() const noexcept { return reactor_fd_hint_; }

    // This loop's io_uring, opened on first use; nullptr when io_uring is unavailable here (see
    // uring::available()). Call on the loop's thread, or before it runs.
    uring* ring();
    // From now on ring() returns nullptr: everything on this loop uses Asio's reactor (a server run with
    // --io epoll says so for the clients its handlers use). Call before the loop runs.
    void disable_ring() noexcept { ring_tried_ = true; }

    // Work that Asio completes from a thread of its own (a name resolution) cannot wake a loop asleep in
    // io_uring_enter: while any is counted here, the loop looks for it every millisecond.
    void foreign_work_started() noexcept { ++foreign_work_; }
    void foreign_work_finished() noexcept { --foreign_work_; }
    unsigned foreign_work() const noexcept { return foreign_work_; }

    // The state `key` keeps on this loop, or nullptr. Looked up linearly: a loop holds a handful.
    loop_local* local(const void* key) const noexcept;
    // Stores `state` under `key` (replacing any); it lives until the loop is destroyed, and is destroyed on
    // the loop's thread before the loop's io_uring and io_context, so it may own sockets and timers.
    loop_local& set_local(const void* key, std::unique_ptr<loop_local> state);
    // Destroys the state under `key`, if any. Not from inside that state's own code (post it instead).
    void erase_local(const void* key);

    // Calls `fn(now)` once a second on this loop until the loop stops. Returns an id for remove_tick.
    std::size_t add_tick(std::function<void(clock::time_point)> fn);
    void remove_tick(std::size_t id);

private:
    static constexpr std::size_t date_length = 29;

    void do_tick();
    void refresh_date();

    static int lowest_free_fd() noexcept;

    unsigned index_;
    std::unique_ptr<boost::asio::io_context> context_;
    int reactor_fd_hint_; // the lowest free descriptor before the ticker made Asio open its reactor
    struct ticker;
    std::unique_ptr<ticker> ticker_;
    std::unique_ptr<uring> ring_;           // declared after context_: destroyed before it
    std::atomic<uring*> wakeable_{nullptr}; // ring_, for other threads' post() and stop()
    bool ring_tried_ = false;
    unsigned foreign_work_ = 0;
    std::vector<std::pair<const void*, std::unique_ptr<loop_local>>> locals_; // destroyed first (~loop)
    std::vector<std::function<void(clock::time_point)>> ticks_;
    clock::time_point now_;
    char date_[date_length + 1] = {};
};

} // namespace hotpath::net
