// Runs a coroutine on a fresh event loop in the calling thread, for tests of code that must run on a loop.
#pragma once

#include "support/test_server.hpp"
#include <hotpath/core/task.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/timer.hpp>

#include <chrono>
#include <optional>
#include <utility>

namespace hotpath::test {

// Runs `t` to completion on a new loop (io_uring or epoll as HOTPATH_TEST_IO says), then destroys the loop and
// everything it holds. Returns nullopt when `limit` passes first: the test fails instead of hanging.
template <typename T>
std::optional<T> run_on_loop(task<T> t, std::chrono::milliseconds limit = std::chrono::seconds{20}) {
    net::loop loop(0);
    if (test_io() == io_backend::epoll) {
        loop.disable_ring();
    }
    std::optional<T> out;
    auto body = [](task<T> inner, std::optional<T>& slot, net::loop& l) -> task<void> {
        slot.emplace(co_await std::move(inner));
        l.stop();
    }(std::move(t), out, loop);
    net::timer guard(loop);
    guard.arm_after(limit, [&loop] { loop.stop(); });
    loop.post([&body] { (void)body.start([](void*) noexcept {}, nullptr); });
    loop.run();
    return out;
}

} // namespace hotpath::test
