// The event loop: io_context run on one thread, with a 1 s tick for the Date cache and timeouts.
#include "net/loop.hpp"

#include "core/http_date.hpp"
#include "net/uring.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstring>

#include <sys/eventfd.h>
#include <unistd.h>

namespace hotpath::net {
namespace {

thread_local loop* current_loop = nullptr;

} // namespace

struct loop::ticker {
    explicit ticker(boost::asio::io_context& io) : timer(io) {}
    boost::asio::steady_timer timer;
};

// One thread runs each context, so Asio's internal locking is disabled: the loop's objects are single-threaded
// by design, and post() from other threads goes through the scheduler's own (still locked) queue.
loop::loop(unsigned index)
    : index_(index), context_(std::make_unique<boost::asio::io_context>(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO)),
      reactor_fd_hint_(lowest_free_fd()), ticker_(std::make_unique<ticker>(*context_)) {
    now_ = clock::now();
    refresh_date();
}

int loop::lowest_free_fd() noexcept {
    const int fd = ::eventfd(0, EFD_CLOEXEC); // the kernel hands out the lowest free number
    if (fd >= 0) {
        ::close(fd);
    }
    return fd < 0 ? 0 : fd;
}

loop::~loop() {
    // Locals may own sockets on the ring and timers on the context: they go first, on this thread's terms.
    loop* previous = current_loop;
    current_loop = this;
    locals_.clear();
    current_loop = previous;
    wakeable_.store(nullptr, std::memory_order_release);
    ring_.reset();
}

loop_local* loop::local(const void* key) const noexcept {
    for (const auto& [k, v] : locals_) {
        if (k == key) {
            return v.get();
        }
    }
    return nullptr;
}

void loop::erase_local(const void* key) {
    for (auto it = locals_.begin(); it != locals_.end(); ++it) {
        if (it->first == key) {
            auto doomed = std::move(it->second); // destroyed after the vector no longer lists it
            locals_.erase(it);
            return;
        }
    }
}

loop_local& loop::set_local(const void* key, std::unique_ptr<loop_local> state) {
    for (auto& [k, v] : locals_) {
        if (k == key) {
            v = std::move(state);
            return *v;
        }
    }
    locals_.emplace_back(key, std::move(state));
    return *locals_.back().second;
}

uring* loop::ring() {
    if (!ring_tried_) {
        ring_tried_ = true;
        if (auto r = uring::open(*this)) {
            ring_ = std::move(*r);
            wakeable_.store(ring_.get(), std::memory_order_release);
        }
    }
    return ring_.get();
}

loop* loop::current() noexcept {
    return current_loop;
}

void loop::run() {
    loop* previous = current_loop;
    current_loop = this;
    now_ = clock::now();
    refresh_date();
    ticker_->timer.expires_at(now_ + std::chrono::seconds{1});
    ticker_->timer.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) {
            do_tick();
        }
    });
    // With io_uring the ring's loop runs Asio too; without it, Asio's reactor runs alone.
    if (uring* r = ring()) {
        r->run();
    } else {
        context_->run();
    }
    current_loop = previous;
}

void loop::stop() {
    context_->stop();
    if (uring* r = wakeable_.load(std::memory_order_acquire)) {
        r->wake();
    }
}

void loop::post(std::function<void()> fn) {
    boost::asio::post(*context_, std::move(fn));
    if (current_loop != this) {
        if (uring* r = wakeable_.load(std::memory_order_acquire)) {
            r->wake(); // a loop asleep in io_uring_enter hears of Asio's queue only this way
        }
    }
}

std::size_t loop::add_tick(std::function<void(clock::time_point)> fn) {
    for (std::size_t i = 0; i < ticks_.size(); ++i) {
        if (!ticks_[i]) {
            ticks_[i] = std::move(fn);
            return i;
        }
    }
    ticks_.push_back(std::move(fn));
    return ticks_.size() - 1;
}

void loop::remove_tick(std::size_t id) {
    if (id < ticks_.size()) {
        ticks_[id] = nullptr;
    }
}

void loop::do_tick() {
    now_ = clock::now();
    refresh_date();
    // Index loop: a tick may add or remove ticks.
    for (std::size_t i = 0; i < ticks_.size(); ++i) {
        if (ticks_[i]) {
            ticks_[i](now_);
        }
    }
    ticker_->timer.expires_at(ticker_->timer.expiry() + std::chrono::seconds{1});
    ticker_->timer.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) {
            do_tick();
        }
    });
}

void loop::refresh_date() {
    char buf[date_length];
    format_http_date(std::time(nullptr), buf);
    std::memcpy(date_, buf, date_length);
}

} // namespace hotpath::net
