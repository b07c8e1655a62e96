// co_await sleep_for(d): suspends a coroutine on its own event loop's timer, without blocking the thread.
#pragma once

#include "net/timer.hpp"

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
    void await_suspend(std::coroutine_handle<> waiting);
    void await_resume() const noexcept {}

private:
    std::chrono::nanoseconds duration_;
    std::optional<timer> timer_;
};

inline sleep_awaitable sleep_for(std::chrono::nanoseconds duration) noexcept {
    return sleep_awaitable{duration};
}

} // namespace hotpath::net
