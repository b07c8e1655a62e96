// co_await sleep_for(d): suspends a coroutine on its own event loop's timer, without blocking the thread.
#pragma once

#include <hotpath/core/attribution.hpp>
#include <hotpath/core/task.hpp>
#include <hotpath/net/timer.hpp>

#include <chrono>
#include <coroutine>
#include <optional>

namespace hotpath::net {

// An awaitable timer on the current thread's loop (loop::current(); must be awaited on a loop thread). The timer
// lives inside the awaitable, in the coroutine's frame: a sleep allocates nothing. Destroying the suspended
// coroutine (how a request is cancelled) cancels the timer with it.
class sleep_awaitable {
public:
    explicit sleep_awaitable(std::chrono::nanoseconds duration) noexcept : duration_(duration) {}
    sleep_awaitable(const sleep_awaitable&) = delete;
    sleep_awaitable& operator=(const sleep_awaitable&) = delete;

    bool await_ready() const noexcept { return duration_.count() <= 0; }
    // A task's sleep counts as a wait of the request it works for (core/attribution.hpp).
    template <typename Promise>
    void await_suspend(std::coroutine_handle<Promise> waiting) {
        if constexpr (std::is_base_of_v<detail::promise_base, Promise>) {
            start(waiting, waiting.promise().attribution);
        } else {
            start(waiting, nullptr);
        }
    }
    void await_resume() const noexcept {}

private:
    void start(std::coroutine_handle<> waiting, time_attribution* attribution);

    std::chrono::nanoseconds duration_;
    std::optional<attributed_wait> wait_; // before timer_: ended after the timer is gone
    std::optional<timer> timer_;
};

inline sleep_awaitable sleep_for(std::chrono::nanoseconds duration) noexcept {
    return sleep_awaitable{duration};
}

} // namespace hotpath::net
