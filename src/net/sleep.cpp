// The timer behind sleep_for, built in place inside the awaitable.
#include "net/sleep.hpp"

#include "net/loop.hpp"

#include <boost/asio/steady_timer.hpp>

#include <new>

namespace hotpath::net {

using timer_type = boost::asio::steady_timer;
static_assert(sizeof(timer_type) <= sleep_awaitable::timer_bytes && alignof(timer_type) <= 16,
              "grow sleep_awaitable::timer_");

sleep_awaitable::~sleep_awaitable() {
    if (constructed_) {
        std::launder(reinterpret_cast<timer_type*>(timer_))->~timer_type();
    }
}

void sleep_awaitable::await_suspend(std::coroutine_handle<> waiting) {
    auto* timer = new (timer_) timer_type(loop::current()->context(), duration_);
    constructed_ = true;
    timer->async_wait([waiting](const boost::system::error_code& ec) {
        // Aborted: the awaitable (and so the coroutine frame) is being destroyed; there is nothing to resume.
        if (ec != boost::asio::error::operation_aborted) {
            waiting.resume();
        }
    });
}

} // namespace hotpath::net
