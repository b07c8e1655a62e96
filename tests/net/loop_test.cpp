// The event loop owns its timers, its cross-thread queue and its connects, and wakes for every kind of work while
// it sleeps. Each wake-up case is checked against the loop's 1 s tick, which would otherwise be the next thing to
// wake it: a missed wake-up shows as a delay near a second.
#include "support/test_server.hpp"
#include <hotpath/net/blocking.hpp>
#include <hotpath/net/connect.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/timer.hpp>
#include <hotpath/net/transport.hpp>
#include <hotpath/net/watchdog.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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
    // Starts the loop and returns once it has run a first function (so it is now waiting for work).
    void start() {
        std::atomic<bool> up{false};
        loop_.post([&up] { up = true; });
        thread_ = std::thread([this] { loop_.run(); });
        while (!up) {
            std::this_thread::sleep_for(1ms);
        }
    }
    void join() { thread_.join(); }
    // Runs `fn` on the loop and waits for it.
    void call(std::function<void()> fn) {
        std::atomic<bool> done{false};
        loop_.post([&] {
            fn();
            done = true;
        });
        while (!done) {
            std::this_thread::sleep_for(1ms);
        }
    }

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

// ----- the timer heap alone -----

TEST(timer_test, the_heap_fires_in_deadline_order_then_arming_order) {
    net::loop l(0);
    std::vector<int> fired;
    std::vector<std::unique_ptr<net::timer>> timers;
    std::mt19937 rng(7);
    const auto base = steady::now() + 1h;
    std::vector<std::pair<steady::time_point, int>> expected;
    for (int i = 0; i < 1000; ++i) {
        const auto at = base + std::chrono::milliseconds{rng() % 50}; // many ties
        timers.push_back(std::make_unique<net::timer>(l));
        timers.back()->arm(at, [&fired, i] { fired.push_back(i); });
        expected.emplace_back(at, i);
    }
    // Cancel every third, re-arm every fifth to the end: both must show in the order.
    for (int i = 0; i < 1000; i += 3) {
        timers[static_cast<std::size_t>(i)]->cancel();
    }
    for (int i = 1; i < 1000; i += 5) {
        timers[static_cast<std::size_t>(i)]->rearm(base + 1min);
    }
    std::vector<std::pair<std::pair<steady::time_point, int>, int>> order; // ((deadline, arming), id)
    int arming = 1000;
    for (auto& [at, i] : expected) {
        if (i % 3 == 0) {
            continue;
        }
        if (i % 5 == 1) {
            order.push_back({{base + 1min, arming++}, i});
        } else {
            order.push_back({{at, i}, i});
        }
    }
    std::sort(order.begin(), order.end());
    EXPECT_EQ(l.timers().size(), order.size());
    EXPECT_EQ(l.timers().run_due(base - 1s), 0u) << "nothing is due before its deadline";
    EXPECT_EQ(l.timers().run_due(base + 2min), order.size());
    ASSERT_EQ(fired.size(), order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        EXPECT_EQ(fired[k], order[k].second) << k;
    }
    EXPECT_TRUE(l.timers().empty());
}

TEST(timer_test, callbacks_may_arm_and_cancel_timers_including_their_own) {
    net::loop l(0);
    net::timer a(l);
    net::timer b(l);
    net::timer c(l);
    const auto t = steady::now();
    int a_runs = 0;
    bool b_ran = false;
    bool c_ran = false;
    std::function<void()> again = [&] {
        if (++a_runs < 3) {
            a.arm(t, again); // due at once: fires in the same run_due
        }
    };
    a.arm(t, again);
    b.arm(t + 1ms, [&] {
        b_ran = true;
        c.cancel();
    });
    c.arm(t + 2ms, [&] { c_ran = true; });
    l.timers().run_due(t + 5ms);
    EXPECT_EQ(a_runs, 3);
    EXPECT_TRUE(b_ran);
    EXPECT_FALSE(c_ran) << "cancelled by an earlier timer's callback";
    {
        net::timer gone(l);
        gone.arm(t, [] { FAIL() << "a destroyed timer fired"; });
    }
    EXPECT_EQ(l.timers().run_due(t + 1s), 0u);
}

// ----- the running loop -----

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

TEST(loop_test, timers_fire_on_time) {
    running_loop l;
    std::atomic<bool> fired{false};
    std::optional<net::timer> timer;
    steady::time_point t0;
    l.get().post([&] {
        t0 = steady::now();
        timer.emplace(l.get());
        timer->arm_after(100ms, [&fired] { fired = true; });
    });
    l.start();
    const auto took = wait_for(fired, t0);
    EXPECT_TRUE(fired);
    EXPECT_GE(took, 100ms);
    EXPECT_LT(took, 100ms + prompt);
    l.call([&] { timer.reset(); });
}

TEST(loop_test, ten_thousand_timers_fire_each_once_in_order) {
    running_loop l;
    constexpr int count = 10'000;
    std::vector<std::unique_ptr<net::timer>> timers;
    std::vector<int> fired;
    std::atomic<bool> all{false};
    l.start();
    l.call([&] {
        const auto base = steady::now();
        for (int i = 0; i < count; ++i) {
            timers.push_back(std::make_unique<net::timer>(l.get()));
            // Deadlines spread over 200 ms, armed out of order.
            const int slot = (i * 7919) % count;
            timers.back()->arm(base + std::chrono::microseconds{slot * 20}, [&, slot] {
                fired.push_back(slot);
                all = fired.size() == count;
            });
        }
    });
    EXPECT_LT(wait_for(all, steady::now()), 200ms + prompt);
    l.call([&] {
        ASSERT_EQ(fired.size(), static_cast<std::size_t>(count));
        EXPECT_TRUE(std::is_sorted(fired.begin(), fired.end()));
        timers.clear();
    });
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
        transport_ = net::make_transport(l, fd, *this);
        transport_->start_reading();
    }
    void on_transport_data(std::string_view) override { on_data_(); }
    void on_transport_end(std::error_code) override {}
    void on_transport_written(std::error_code) override {}
    void on_transport_closed() override { closed = true; }
    // A transport is destroyed only once closed (transport.hpp): close, wait for `closed`, then reset.
    void close() { transport_->close(); }
    void reset() { transport_.reset(); }
    std::atomic<bool> closed{false};

private:
    std::function<void()> on_data_;
    std::unique_ptr<net::transport> transport_;
};

// Work a completion creates (a deferred function, a timer armed, a timer cancelled) is seen before the loop
// sleeps again: none waits for the next tick.
TEST(loop_test, work_queued_by_a_completion_runs_at_once) {
    for (const char* how : {"defer", "post", "timer armed", "timer cancelled"}) {
        SCOPED_TRACE(how);
        running_loop l;
        const auto sockets = tcp_pair(); // no structured binding: lambdas capture `ours` (clang 14)
        const int ours = sockets.first;
        const int theirs = sockets.second;
        ASSERT_GE(ours, 0);
        std::atomic<bool> ran{false};
        std::optional<net::timer> timer;
        std::optional<net::timer> other;
        const std::string_view what = how;
        reader r([&] {
            if (what == "defer") {
                l.get().defer([&ran] { ran = true; });
            } else if (what == "post") {
                l.get().post([&ran] { ran = true; });
            } else if (what == "timer armed") {
                timer->arm_after(10ms, [&ran] { ran = true; });
            } else {
                // The long timer goes; the next deadline is now a short one armed earlier.
                timer->cancel();
                other->arm_after(5ms, [&ran] { ran = true; });
            }
        });
        l.get().post([&] {
            timer.emplace(l.get());
            other.emplace(l.get());
            timer->arm_after(1h, [&ran] { ran = false; });
            r.attach(l.get(), ours);
        });
        l.start();
        std::this_thread::sleep_for(50ms);
        const auto t0 = steady::now();
        ASSERT_EQ(::write(theirs, "x", 1), 1);
        EXPECT_LT(wait_for(ran, t0), prompt);
        EXPECT_TRUE(ran);
        l.call([&] { r.close(); });
        EXPECT_LT(wait_for(r.closed, steady::now()), prompt);
        l.call([&] {
            r.reset();
            timer.reset();
            other.reset();
        });
        l.get().stop();
        l.join();
        ::close(theirs);
    }
}

// Posts from many threads at once, while the loop sleeps and wakes between them: none is lost, each wakes it.
TEST(loop_test, posts_from_many_threads_are_never_lost) {
    running_loop l;
    l.start();
    constexpr int threads = 8;
    constexpr int each = 10'000;
    std::atomic<int> ran{0};
    std::vector<std::thread> posters;
    for (int t = 0; t < threads; ++t) {
        posters.emplace_back([&, t] {
            for (int i = 0; i < each; ++i) {
                l.get().post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
                if ((i + t) % 1000 == 0) {
                    std::this_thread::sleep_for(1ms); // let the loop fall asleep now and then
                }
            }
        });
    }
    for (auto& p : posters) {
        p.join();
    }
    const auto limit = steady::now() + 5s;
    while (ran.load() != threads * each && steady::now() < limit) {
        std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(ran.load(), threads * each);
    // And one more after a quiet moment: still prompt.
    std::this_thread::sleep_for(50ms);
    std::atomic<bool> last{false};
    const auto t0 = steady::now();
    l.get().post([&last] { last = true; });
    EXPECT_LT(wait_for(last, t0), prompt);
}

// Blocking work runs on the pool: the loop's timers keep their time meanwhile, and the answer comes back
// through the mailbox at once.
TEST(loop_test, blocking_work_does_not_stall_the_loop) {
    running_loop l;
    l.start();
    std::atomic<int> ticks{0};
    std::atomic<bool> answered{false};
    net::timer* periodic = nullptr;
    std::function<void()> tick;
    const auto t0 = steady::now();
    l.call([&] {
        periodic = new net::timer(l.get());
        tick = [&] {
            ticks.fetch_add(1);
            periodic->arm_after(10ms, tick);
        };
        periodic->arm_after(10ms, tick);
        net::run_blocking([mailbox = l.get().mailbox(), &answered] {
            std::this_thread::sleep_for(300ms); // a resolver that blocks
            mailbox->post([&answered] { answered = true; });
        });
    });
    EXPECT_GT(wait_for(answered, t0), 250ms);
    EXPECT_TRUE(answered);
    EXPECT_GE(ticks.load(), 10) << "the loop's 10 ms timer kept firing while the pool blocked";
    l.call([&] { delete periodic; });
}

TEST(loop_test, a_mailbox_drops_posts_once_its_loop_is_gone) {
    std::shared_ptr<net::loop_mailbox> mailbox;
    {
        net::loop l(0);
        mailbox = l.mailbox();
    }
    EXPECT_FALSE(mailbox->post([] { FAIL() << "ran on a destroyed loop"; }));
}

// A listening socket on 127.0.0.1 (port 0) and its port.
std::pair<int, std::uint16_t> listening() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
    ::listen(fd, 16);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    return {fd, ntohs(addr.sin_port)};
}

TEST(loop_test, connects_to_addresses_and_names_and_reports_failures) {
    running_loop l;
    l.start();
    const auto server_socket = listening(); // no structured bindings: lambdas capture the port (clang 14)
    const int server = server_socket.first;
    const std::uint16_t port = server_socket.second;
    ASSERT_GE(server, 0);
    struct outcome {
        std::atomic<bool> done{false};
        int fd = -1;
        std::error_code error;
    };
    auto attempt = [&](std::function<void(net::connector&, net::connector::done_fn)> start) {
        auto o = std::make_shared<outcome>();
        auto c = std::make_shared<net::connector>();
        l.call([&] {
            start(*c, [o](int fd, std::error_code e) {
                o->fd = fd;
                o->error = e;
                o->done = true;
            });
        });
        EXPECT_LT(wait_for(o->done, steady::now()), 3s);
        l.call([&] { c.reset(); });
        return o;
    };
    const auto literal = attempt([&](net::connector& c, net::connector::done_fn done) {
        c.start(l.get(), *net::endpoint::from_literal("127.0.0.1", port), std::move(done));
    });
    EXPECT_FALSE(literal->error) << literal->error.message();
    EXPECT_GE(literal->fd, 0);
    const auto named = attempt(
        [&](net::connector& c, net::connector::done_fn done) { c.start(l.get(), "localhost", port, std::move(done)); });
    EXPECT_FALSE(named->error) << named->error.message() << " (localhost may resolve to ::1 first; then 127.0.0.1)";
    EXPECT_GE(named->fd, 0);
    const auto closed_socket = listening();
    const std::uint16_t closed_port = closed_socket.second;
    ::close(closed_socket.first); // nothing listens there now
    const auto refused = attempt([&](net::connector& c, net::connector::done_fn done) {
        c.start(l.get(), "127.0.0.1", closed_port, std::move(done));
    });
    EXPECT_EQ(refused->error, std::error_code(ECONNREFUSED, std::system_category())) << refused->error.message();
    EXPECT_LT(refused->fd, 0);
    const auto unknown = attempt([&](net::connector& c, net::connector::done_fn done) {
        c.start(l.get(), "no-such-host.invalid", port, std::move(done));
    });
    EXPECT_EQ(unknown->error, std::errc::host_unreachable) << unknown->error.message();
    for (int fd : {literal->fd, named->fd}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    ::close(server);
}

TEST(loop_test, a_cancelled_connect_calls_back_once_and_a_destroyed_one_never) {
    running_loop l;
    l.start();
    std::atomic<int> calls{0};
    std::atomic<bool> done{false};
    std::error_code error;
    net::connector c;
    // A name on the blocking pool, then cancelled before it resolves: the callback still comes, once.
    l.call([&] {
        c.start(l.get(), "localhost", 9, [&](int fd, std::error_code e) {
            if (fd >= 0) {
                ::close(fd);
            }
            error = e;
            calls.fetch_add(1);
            done = true;
        });
        c.cancel();
    });
    EXPECT_LT(wait_for(done, steady::now()), 3s);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(error, std::errc::operation_canceled);
    // Destroyed while connecting: no callback, nothing leaks (the sanitizer build checks).
    l.call([&] {
        auto doomed = std::make_unique<net::connector>();
        doomed->start(l.get(), "localhost", 9, [&](int, std::error_code) { calls.fetch_add(1); });
        auto direct = std::make_unique<net::connector>();
        direct->start(l.get(), *net::endpoint::from_literal("127.0.0.1", 9),
                      [&](int, std::error_code) { calls.fetch_add(1); });
        doomed.reset();
        l.get().defer([d = std::shared_ptr<net::connector>(std::move(direct))]() mutable { d.reset(); });
    });
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(calls.load(), 1);
}

// ----- transports -----

// Counts what a transport delivers and reports; its callbacks run on the loop, the test reads the atomics.
class stream final : public net::transport_owner {
public:
    void attach(net::loop& l, int fd, bool read = true) {
        transport_ = net::make_transport(l, fd, *this);
        if (read) {
            transport_->start_reading();
        }
    }
    net::transport& get() { return *transport_; }
    void on_transport_data(std::string_view bytes) override {
        received += bytes.size();
        if (first.empty()) {
            first.assign(bytes.substr(0, std::min<std::size_t>(bytes.size(), 16)));
        }
    }
    void on_transport_end(std::error_code error) override {
        end_error = error;
        ++ends;
    }
    void on_transport_written(std::error_code error) override {
        write_error = error;
        written_at = steady::now();
        ++writes;
    }
    // As a connection does: on_transport_closed destroys the transport when destroy_when_closed is set.
    void on_transport_closed() override {
        if (destroy_when_closed) {
            transport_.reset();
        }
        closed = true;
    }
    void reset() { transport_.reset(); }

    bool destroy_when_closed = false;
    std::atomic<std::size_t> received{0};
    std::atomic<int> ends{0};
    std::atomic<int> writes{0};
    std::atomic<bool> closed{false};
    std::error_code end_error;
    std::error_code write_error;
    steady::time_point written_at{};
    std::string first;

private:
    std::unique_ptr<net::transport> transport_;
};

// Waits up to 5 s for `done()`.
template <typename Done>
bool eventually(Done done) {
    const auto limit = steady::now() + 5s;
    while (!done() && steady::now() < limit) {
        std::this_thread::sleep_for(1ms);
    }
    return done();
}

// Closes the transport on its loop, waits for on_transport_closed, then destroys it there (transport.hpp).
void close_stream(running_loop& l, stream& s) {
    l.call([&s] { s.get().close(); });
    EXPECT_TRUE(eventually([&s] { return s.closed.load(); }));
    l.call([&s] { s.reset(); });
}

// Megabytes sent at once and the end right behind them (the end may come with the same readiness as the last
// bytes): every byte is delivered, then the end, once.
TEST(loop_test, a_transport_delivers_a_burst_then_the_end_once) {
    running_loop l;
    l.start();
    const auto [ours, theirs] = tcp_pair();
    ASSERT_GE(ours, 0);
    stream s;
    l.call([&, fd = ours] { s.attach(l.get(), fd); });
    constexpr std::size_t total = 4 << 20;
    std::thread peer([fd = theirs] {
        const std::string chunk(64 * 1024, 'x');
        for (std::size_t sent = 0; sent < total;) {
            const ssize_t n = ::send(fd, chunk.data(), std::min(chunk.size(), total - sent), MSG_NOSIGNAL);
            if (n <= 0) {
                return;
            }
            sent += static_cast<std::size_t>(n);
        }
        ::shutdown(fd, SHUT_WR);
    });
    peer.join();
    EXPECT_TRUE(eventually([&s] { return s.ends.load() > 0; }));
    EXPECT_EQ(s.received.load(), total);
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(s.ends.load(), 1);
    EXPECT_FALSE(s.end_error) << s.end_error.message();
    close_stream(l, s);
    ::close(theirs);
}

// A write far larger than the socket buffers waits for the peer to read, then completes once, every byte
// acknowledged.
TEST(loop_test, a_write_larger_than_the_socket_buffers_completes_once_the_peer_reads) {
    running_loop l;
    l.start();
    const auto [ours, theirs] = tcp_pair();
    ASSERT_GE(ours, 0);
    stream s;
    const std::string big(16 << 20, 'y');
    const auto t0 = steady::now();
    l.call([&, fd = ours] {
        s.attach(l.get(), fd, false);
        s.get().write(big);
    });
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(s.writes.load(), 0) << "the peer has read nothing yet";
    std::size_t got = 0;
    std::vector<char> buffer(256 * 1024);
    while (got < big.size()) {
        const ssize_t n = ::recv(theirs, buffer.data(), buffer.size(), 0);
        if (n <= 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    EXPECT_EQ(got, big.size());
    EXPECT_TRUE(eventually([&s] { return s.writes.load() > 0; }));
    EXPECT_EQ(s.writes.load(), 1);
    EXPECT_FALSE(s.write_error) << s.write_error.message();
    EXPECT_GE(s.written_at - t0, 200ms);
    std::uint64_t acknowledged = 0;
    l.call([&] { acknowledged = s.get().bytes_acknowledged(); });
    EXPECT_EQ(acknowledged, big.size());
    close_stream(l, s);
    ::close(theirs);
}

// Bytes that arrive while reading is paused wait in the socket, and come once reading resumes.
TEST(loop_test, bytes_sent_while_reading_is_paused_come_when_it_resumes) {
    running_loop l;
    l.start();
    const auto [ours, theirs] = tcp_pair();
    ASSERT_GE(ours, 0);
    stream s;
    l.call([&, fd = ours] {
        s.attach(l.get(), fd);
        s.get().stop_reading();
    });
    std::this_thread::sleep_for(50ms);
    ASSERT_EQ(::send(theirs, "hello", 5, MSG_NOSIGNAL), 5);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(s.received.load(), 0u);
    l.call([&] { s.get().start_reading(); });
    EXPECT_TRUE(eventually([&s] { return s.received.load() == 5; }));
    l.call([&] { EXPECT_EQ(s.first, "hello"); });
    close_stream(l, s);
    ::close(theirs);
}

// A peer that resets the connection ends the stream with the error, once; a write after it fails.
TEST(loop_test, a_reset_ends_the_stream_with_its_error) {
    running_loop l;
    l.start();
    const auto [ours, theirs] = tcp_pair();
    ASSERT_GE(ours, 0);
    stream s;
    l.call([&, fd = ours] { s.attach(l.get(), fd); });
    const linger hard{1, 0};
    ASSERT_EQ(::setsockopt(theirs, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard)), 0);
    ::close(theirs); // RST
    EXPECT_TRUE(eventually([&s] { return s.ends.load() > 0; }));
    EXPECT_EQ(s.end_error, std::error_code(ECONNRESET, std::system_category())) << s.end_error.message();
    l.call([&] { s.get().write("after"); });
    EXPECT_TRUE(eventually([&s] { return s.writes.load() > 0; }));
    EXPECT_TRUE(s.write_error);
    EXPECT_EQ(s.ends.load(), 1);
    close_stream(l, s);
}

// A connection may still call its transport between close() and on_transport_closed (a handler finishing, a
// timer): those calls do nothing, and nothing of them outlives the transport (ASan watches).
TEST(loop_test, calls_after_close_do_nothing_and_leave_nothing_behind) {
    running_loop l;
    l.start();
    for (int round = 0; round < 20; ++round) {
        const auto sockets = tcp_pair();
        ASSERT_GE(sockets.first, 0);
        ASSERT_EQ(::send(sockets.second, "bytes waiting", 13, MSG_NOSIGNAL), 13);
        stream s;
        s.destroy_when_closed = true;
        l.call([&, fd = sockets.first] { s.attach(l.get(), fd, false); });
        std::this_thread::sleep_for(5ms); // the bytes' readiness reaches the loop
        l.call([&] {
            s.get().close();
            s.get().start_reading();
            s.get().write("never sent");
            s.get().stop_reading();
            s.get().start_reading();
        });
        EXPECT_TRUE(eventually([&s] { return s.closed.load(); }));
        l.call([] {}); // a turn after the transport is gone: anything it left queued would run now
        EXPECT_EQ(s.writes.load(), 0);
        EXPECT_EQ(s.received.load(), 0u);
        ::close(sockets.second);
    }
}

// A child forked by anything in the process (system(), popen()) holds every descriptor until its exec: a socket
// the loop closed meanwhile stays open in the kernel, and with it any epoll registration it still had. The
// transport leaves the epoll before closing, so the peer's later bytes and end call nothing (ASan watches).
TEST(loop_test, a_socket_closed_while_a_forked_child_holds_it_reports_nothing) {
    running_loop l;
    l.start();
    const auto sockets = tcp_pair();
    ASSERT_GE(sockets.first, 0);
    stream s;
    s.destroy_when_closed = true;
    l.call([&, fd = sockets.first] { s.attach(l.get(), fd); });
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::usleep(400'000); // holds every descriptor, as a child before its exec does
        ::_exit(0);
    }
    l.call([&] { s.get().close(); });
    EXPECT_TRUE(eventually([&s] { return s.closed.load(); }));
    ASSERT_EQ(::send(sockets.second, "late", 4, MSG_NOSIGNAL), 4);
    ::shutdown(sockets.second, SHUT_WR);
    std::this_thread::sleep_for(100ms);
    l.call([] {}); // the loop has had its turns: nothing was called for the gone transport
    EXPECT_EQ(s.received.load(), 0u);
    int status = 0;
    ::waitpid(child, &status, 0);
    ::close(sockets.second);
}

// ----- the watchdog -----

struct stall_report {
    unsigned loop;
    std::chrono::nanoseconds length;
    bool ended;
    net::thread_activity activity;
};

// A turn blocked for 150 ms is one stall, told when seen and when over, with its length; a loop asleep (for
// longer than the threshold) and a loop busy with many short turns are not.
TEST(watchdog_test, a_blocked_turn_is_a_stall_sleep_and_short_turns_are_not) {
    running_loop l;
    l.start();
    std::mutex m;
    std::vector<stall_report> reports;
    net::watchdog dog({&l.get()}, 25ms,
                      [&](unsigned index, std::chrono::nanoseconds length, bool ended, const net::thread_activity& a) {
                          const std::lock_guard lock(m);
                          reports.push_back({index, length, ended, a});
                      });
    std::this_thread::sleep_for(300ms); // asleep between ticks: not a stall
    for (int i = 0; i < 2000; ++i) {    // many short turns
        l.call([] {});
    }
    {
        const std::lock_guard lock(m);
        EXPECT_TRUE(reports.empty());
    }
    l.call([] { std::this_thread::sleep_for(150ms); });
    ASSERT_TRUE(eventually([&] {
        const std::lock_guard lock(m);
        return reports.size() == 2;
    }));
    const std::lock_guard lock(m);
    EXPECT_FALSE(reports[0].ended);
    EXPECT_GT(reports[0].length, 25ms);
    EXPECT_TRUE(reports[1].ended);
    EXPECT_GE(reports[1].length, 150ms);
    EXPECT_LT(reports[1].length, 1s);
    EXPECT_EQ(reports[1].loop, 0u);
    // What the thread did meanwhile, measured from the watchdog's thread: asleep in clock_nanosleep, off its CPU.
    EXPECT_FALSE(reports[0].activity.cpu_share) << "nothing to measure when the stall is first seen";
    const net::thread_activity& a = reports[1].activity;
    EXPECT_EQ(net::waiting_name(a.waiting), "clock_nanosleep");
    ASSERT_TRUE(a.cpu_share);
    EXPECT_LT(*a.cpu_share, 0.5);
    EXPECT_GT(a.measured, 50ms); // from the first notice (within 25 ms + 12.5 ms) to the look after the end
}

// A turn held for 2.3 s is told of when seen, again each second it goes on (a loop working through a queue of
// blocking handlers never ends its turn: without these it is told of minutes later), and once when over.
TEST(watchdog_test, a_long_stall_is_told_of_each_second_while_it_goes_on) {
    running_loop l;
    l.start();
    std::mutex m;
    std::vector<stall_report> reports;
    net::watchdog dog({&l.get()}, 25ms,
                      [&](unsigned index, std::chrono::nanoseconds length, bool ended, const net::thread_activity& a) {
                          const std::lock_guard lock(m);
                          reports.push_back({index, length, ended, a});
                      });
    l.call([] { std::this_thread::sleep_for(2300ms); });
    ASSERT_TRUE(eventually([&] {
        const std::lock_guard lock(m);
        return !reports.empty() && reports.back().ended;
    }));
    const std::lock_guard lock(m);
    ASSERT_EQ(reports.size(), 4u); // begins, still at ~1 s, still at ~2 s, ends
    for (std::size_t i = 0; i + 1 < reports.size(); ++i) {
        EXPECT_FALSE(reports[i].ended);
        EXPECT_LT(reports[i].length, reports[i + 1].length);
    }
    EXPECT_GE(reports[1].length, 1s);
    EXPECT_GE(reports[2].length, 2s);
    EXPECT_GE(reports[3].length, 2300ms);
}

TEST(loop_test, turns_are_counted_for_a_watchdog) {
    running_loop l;
    l.start();
    const auto before = l.get().stats().turns.load();
    for (int i = 0; i < 20; ++i) {
        l.call([] {});
    }
    EXPECT_GE(l.get().stats().turns.load(), before + 20);
    EXPECT_GT(l.get().stats().asleep_ns.load(), 0u);
    const auto beat = std::chrono::nanoseconds{l.get().stats().heartbeat_ns.load()};
    EXPECT_LT(steady::now().time_since_epoch() - beat, 2s) << "the tick turns the loop at least once a second";
}

} // namespace
} // namespace hotpath
