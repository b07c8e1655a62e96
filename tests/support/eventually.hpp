// Waiting in a test for what another thread (a server's loop) writes after the fact: a counter settles once the
// response is out. Polls every 10 ms until `f()` holds or `limit` passes; the last look decides.
#pragma once

#include <chrono>
#include <thread>

namespace hotpath::test {

template <typename F>
bool eventually(F f, std::chrono::milliseconds limit = std::chrono::seconds{3}) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        if (f()) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return f();
}

} // namespace hotpath::test
