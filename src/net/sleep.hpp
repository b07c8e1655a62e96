// co_await sleep_for(d): suspends a coroutine on its own event loop's timer, without blocking the thread.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>

namespace hotpath::net {

// An awaitable timer on the current thread's loop (loop::current(); must be awaited on a loop thread).
// The timer lives inside the awaitable, so a sleep allocates nothing beyond Asio's recycled handler memory.
class sleep_awaitable {
public:
    static constexpr std::size_t timer_bytes = 128; // holds a boost::asio::steady_timer
    explicit sleep_awaitable(std::chrono::nanoseconds duration) noexcept : duration_(duration) {}
    ~sleep_awaitable();
    sleep_awaitable(const sleep_awaitable&) = delete;
    sleep_awaitable& operator=(const sleep_awaitable&) = delete;

    bool await_ready() const noexcept { return duration_.count() <= 0; }
    void await_suspend(std::coroutine_handle<> waiting);
    void await_resume() const noexcept {}

private:
    std::chrono::nanoseconds duration_;
    bool constructed_ = false;
    alignas(16) std::byte timer_[timer_bytes];
};

inline sleep_awaitable sleep_for(std::chrono::nanoseconds duration) noexcept {
    return sleep_awaitable{duration};
}

} // namespace hotpath::net
