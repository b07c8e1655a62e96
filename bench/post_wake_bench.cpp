// How long a post from another thread takes to run on a sleeping loop: p50, p99 and max over 10,000 posts, each
// sent once the loop has been asleep a moment, on both backends. Usage: post_wake_bench [posts]
#include <hotpath/net/loop.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using steady = std::chrono::steady_clock;

void measure(const char* name, bool ring, int posts) {
    hotpath::net::loop loop(0);
    if (!ring) {
        loop.disable_ring();
    }
    std::thread runner([&loop] { loop.run(); });
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(posts));
    for (int i = 0; i < posts; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds{200}); // the loop falls asleep
        std::atomic<std::int64_t> ran_at{0};
        const auto sent = steady::now();
        loop.post([&ran_at] { ran_at.store(steady::now().time_since_epoch().count(), std::memory_order_release); });
        while (ran_at.load(std::memory_order_acquire) == 0) {
            std::this_thread::yield();
        }
        us.push_back(static_cast<double>(ran_at.load() - sent.time_since_epoch().count()) / 1e3);
    }
    loop.stop();
    runner.join();
    std::sort(us.begin(), us.end());
    const auto at = [&](double p) {
        return us[std::min(us.size() - 1, static_cast<std::size_t>(p / 100 * static_cast<double>(us.size())))];
    };
    std::printf("%-8s posts %d: p50 %.1f us  p99 %.1f us  p99.9 %.1f us  max %.1f us\n", name, posts, at(50), at(99),
                at(99.9), us.back());
}

} // namespace

int main(int argc, char** argv) {
    const int posts = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10'000;
    measure("io_uring", true, posts);
    measure("epoll", false, posts);
    return 0;
}
