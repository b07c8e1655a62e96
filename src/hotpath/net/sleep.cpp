// The timer behind sleep_for, on the awaiting coroutine's loop.
#include <hotpath/net/sleep.hpp>

#include <hotpath/net/loop.hpp>

namespace hotpath::net {

void sleep_awaitable::start(std::coroutine_handle<> waiting, time_attribution* attribution) {
    timer_.emplace(*loop::current());
    wait_.emplace(attribution, wait_kind::timer);
    timer_->arm_after(duration_, [this, waiting] {
        wait_->end();
        waiting.resume();
    });
}

} // namespace hotpath::net
