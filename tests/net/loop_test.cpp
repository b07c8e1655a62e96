// The event loop wakes for every kind of work while it sleeps: posts from other threads, stop(), Asio's
// timers, and handlers queued by the loop's own completions. Each case is checked against the loop's 1 s tick,
// which would otherwise be the next thing to wake it: a missed wake-up shows as a delay near a second.
#include "net/asio_transport.hpp"
#include "net/loop.hpp"
#include "net/transport.hpp"
#include "net/uring_transport.hpp"
#include "support/test_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// Well under the tick's second, well over any scheduling delay on a loaded 2-core machine.
constexpr auto prompt = 400ms;

// A loop of the backend under test, run on a thread of its own until stopped or destroyed.
class running_loop {
public:
    running_loop() : loop_(0) {
        if (test::test_io() == io_backend::epoll) {
            loop_.disable_ring();
        }
    }
    ~running_loop() {
        loop_.stop();
        if (thread_.joinable()) {
            thread_.join();
        }
    }
    net::loop& get() { return loop_; }
    // Starts the loop and returns once it has run a first handler (so it is now waiting for work).
    void start() {
        std::atomic<bool> up{false};
        loop_.post([&up] { up = true; });
        thread_ = std::thread([this] { loop_.run(); });
        while (!up) {
            std::this_thread::sleep_for(1ms);
        }
    }
    void join() { thread_.join(); }

private:
    net::loop loop_;
    std::thread thread_;
};

// Waits up to 3 s for `flag`; returns how long it took from `since`.
steady::duration wait_for(const std::atomic<bool>& flag, steady::time_point since) {
    const auto limit = since + 3s;
    while (!flag && steady::now() < limit) {
        std::this_thread::sleep_for(1ms);
    }
    return steady::now() - since;
}

TEST(loop_test, a_post_from_another_thread_wakes_the_loop) {
    running_loop l;
    l.start();
    std::this_thread::sleep_for(50ms); // asleep now
    std::atomic<bool> ran{false};
    const auto t0 = steady::now();
    l.get().post([&ran] { ran = true; });
    EXPECT_LT(wait_for(ran, t0), prompt);
}

TEST(loop_test, stop_from_another_thread_ends_run_promptly) {
    running_loop l;
    l.start();
    std::this_thread::sleep_for(50ms);
    const auto t0 = steady::now();
    l.get().stop();
    l.join();
    EXPECT_LT(steady::now() - t0, prompt);
}

TEST(loop_test, asio_timers_fire_on_time) {
    running_loop l;
    std::atomic<bool> fired{false};
    boost::asio::steady_timer timer(l.get().context());
    steady::time_point t0;
    l.get().post([&] {
        t0 = steady::now();
        timer.expires_after(100ms);
        timer.async_wait([&fired](const boost::system::error_code& ec) { fired = !ec; });
    });
    l.start();
    const auto took = wait_for(fired, t0);
    EXPECT_TRUE(fired);
    EXPECT_GE(took, 100ms);
    EXPECT_LT(took, 100ms + prompt);
}

// A connected pair of TCP sockets on 127.0.0.1: {ours, theirs}.
std::pair<int, int> tcp_pair() {
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(listener, 1) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        return {-1, -1};
    }
    const int theirs = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(theirs, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        return {-1, -1};
    }
    const int ours = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    ::close(listener);
    return {ours, theirs};
}

// Calls `on_data` from inside the transport's completion, the way a connection reacts to bytes.
class reader final : public net::transport_owner {
public:
    explicit reader(std::function<void()> on_data) : on_data_(std::move(on_data)) {}
    void attach(net::loop& l, int fd) {
        if (net::uring* ring = l.ring()) {
            transport_ = std::make_unique<net::uring_transport>(*ring, fd, *this);
        } else {
            transport_ = std::make_unique<net::asio_transport>(
                boost::asio::ip::tcp::socket(l.context(), boost::asio::ip::tcp::v4(), fd), *this);
        }
        transport_->start_reading();
    }
    void on_transport_data(std::string_view) override { on_data_(); }
    void on_transport_end(std::error_code) override {}
    void on_transport_written(std::error_code) override {}
    void on_transport_closed() override {}

private:
    std::function<void()> on_data_;
    std::unique_ptr<net::transport> transport_;
};

// What a completion queues on Asio (a post, a cancelled timer's handler) runs before the loop sleeps again.
TEST(loop_test, handlers_queued_by_a_completion_run_at_once) {
    for (const bool by_cancel : {false, true}) {
        SCOPED_TRACE(by_cancel ? "timer cancelled" : "post");
        running_loop l;
        const auto sockets = tcp_pair(); // no structured binding: lambdas capture `ours` (clang 14)
        const int ours = sockets.first;
        const int theirs = sockets.second;
        ASSERT_GE(ours, 0);
        std::atomic<bool> ran{false};
        boost::asio::steady_timer timer(l.get().context());
        reader r([&] {
            if (by_cancel) {
                timer.cancel();
            } else {
                boost::asio::post(l.get().context(), [&ran] { ran = true; });
            }
        });
        l.get().post([&] {
            r.attach(l.get(), ours);
            timer.expires_after(1h);
            timer.async_wait(
                [&ran](const boost::system::error_code& ec) { ran = ec == boost::asio::error::operation_aborted; });
        });
        l.start();
        std::this_thread::sleep_for(50ms);
        const auto t0 = steady::now();
        ASSERT_EQ(::write(theirs, "x", 1), 1);
        EXPECT_LT(wait_for(ran, t0), prompt);
        EXPECT_TRUE(ran);
        l.get().stop();
        l.join();
        ::close(theirs);
    }
}

} // namespace
} // namespace hotpath
