// The timer behind sleep_for, on the awaiting coroutine's loop.
#include "net/sleep.hpp"

#include "net/loop.hpp"

namespace hotpath::net {

void sleep_awaitable::await_suspend(std::coroutine_handle<> waiting) {
    timer_.emplace(*loop::current());
    timer_->arm_after(duration_, [waiting] { waiting.resume(); });
}

} // namespace hotpath::net
