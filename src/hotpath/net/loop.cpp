// The event loop: timers, posted and deferred work, the 1 s tick, and a turn that sleeps in the backend.
#include <hotpath/net/loop.hpp>

#include <hotpath/core/http_date.hpp>
#include <hotpath/net/epoll.hpp>
#include <hotpath/net/thread_activity.hpp>
#include <hotpath/net/uring.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace hotpath::net {
namespace {

thread_local loop* current_loop = nullptr;

std::uint64_t ns_between(clock::time_point from, clock::time_point to) noexcept {
    return static_cast<std::uint64_t>(std::max<std::int64_t>(0, (to - from).count()));
}

// Only the loop's thread writes its stats: a plain add, no locked instruction; readers see whole values.
void add(std::atomic<std::uint64_t>& counter, std::uint64_t v) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}

} // namespace

bool loop_mailbox::post(std::function<void()> fn) {
    const std::lock_guard lock(mutex_);
    if (target_ == nullptr) {
        return false;
    }
    target_->post(std::move(fn));
    return true;
}

loop::loop(unsigned index) : index_(index), mailbox_(std::make_shared<loop_mailbox>()) {
    mailbox_->target_ = this;
    ticker_ = std::make_unique<timer>(*this);
    now_ = clock::now();
    turn_started_ = now_;
    refresh_date();
}

loop::~loop() {
    {
        const std::lock_guard lock(mailbox_->mutex_);
        mailbox_->target_ = nullptr;
    }
    // Locals may own sockets on the ring and timers: they go first, on this thread's terms.
    loop* previous = current_loop;
    current_loop = this;
    locals_.clear();
    current_loop = previous;
    ticker_.reset();
    wake_ring_.store(nullptr, std::memory_order_release);
    wake_poller_.store(nullptr, std::memory_order_release);
    ring_.reset();
    poller_.reset();
    kept_.clear(); // no completion can refer to them any more
}

void loop::keep_alive(std::shared_ptr<void> thing) {
    kept_.push_back(std::move(thing));
}

std::shared_ptr<void> loop::take_kept(const void* thing) noexcept {
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
        if (it->get() == thing) {
            auto out = std::move(*it);
            *it = std::move(kept_.back());
            kept_.pop_back();
            return out;
        }
    }
    return nullptr;
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

void loop::choose_backend() {
    if (chosen_) {
        return;
    }
    chosen_ = true;
    if (!ring_disabled_) {
        if (auto r = uring::open()) {
            ring_ = std::move(*r);
            wake_ring_.store(ring_.get(), std::memory_order_release);
            return;
        }
    }
    auto p = epoll::open();
    if (!p) {
        std::fprintf(stderr, "hotpath: cannot open an event loop (epoll): %s\n", p.error().message().c_str());
        std::abort();
    }
    poller_ = std::move(*p);
    wake_poller_.store(poller_.get(), std::memory_order_release);
}

uring* loop::ring() {
    choose_backend();
    return ring_.get();
}

epoll* loop::poller() {
    choose_backend();
    return poller_.get();
}

loop* loop::current() noexcept {
    return current_loop;
}

void loop::run() {
    loop* previous = current_loop;
    current_loop = this;
    const thread_ids ids = this_thread_ids(); // once per run: a watchdog reads what the thread does in a stall
    stats_.thread_cpu_clock.store(ids.cpu_clock, std::memory_order_relaxed);
    stats_.thread_id.store(ids.tid, std::memory_order_release);
    now_ = clock::now();
    refresh_date();
    ticker_->arm(now_ + std::chrono::seconds{1}, [this] { do_tick(); });
    if (uring* r = ring()) {
        run_on_ring(*r);
    } else {
        run_on_epoll(*poller_);
    }
    ticker_->cancel();
    stats_.thread_id.store(0, std::memory_order_release);
    current_loop = previous;
    stopping_.store(false, std::memory_order_release); // ready to run again (a test drives its loop in rounds)
}

// A turn: dispatch what the ring completed, run due timers and posted and deferred work, then submit what that
// prepared and sleep until the next completion or deadline, in one io_uring_enter.
void loop::run_on_ring(uring& r) {
    r.enable(); // the first turn's work (posted before run(): a load opening thousands of connections) may fill
                // the submission queue, which can only be submitted from here on
    auto start = clock::now();
    for (;;) {
        stats_.heartbeat_ns.store(start.time_since_epoch().count(), std::memory_order_relaxed);
        stats_.working_since_ns.store(start.time_since_epoch().count(), std::memory_order_relaxed);
        turn_started_ = start;
        r.reap();
        if (!work(start)) {
            break;
        }
        const auto done = count_turn(start);
        if (deferred_.empty()) {
            r.set_alarm(timers_.next());
            r.wait(true);
        } else {
            r.wait(false); // work is waiting: collect completions without sleeping
        }
        start = clock::now();
        add(stats_.asleep_ns, ns_between(done, start));
    }
    r.flush(); // what the last turn prepared, closes included
}

// Without a ring, the epoll sleeps for the loop: the same turn, with the dispatch of the events it collected
// first; a make_ready()'d operation keeps the loop awake as deferred work does.
void loop::run_on_epoll(epoll& p) {
    auto start = clock::now();
    for (;;) {
        stats_.heartbeat_ns.store(start.time_since_epoch().count(), std::memory_order_relaxed);
        stats_.working_since_ns.store(start.time_since_epoch().count(), std::memory_order_relaxed);
        turn_started_ = start;
        p.dispatch();
        if (!work(start)) {
            break;
        }
        const auto done = count_turn(start);
        p.wait(deferred_.empty() && !p.has_ready() ? timers_.next() : clock::time_point::min());
        start = clock::now();
        add(stats_.asleep_ns, ns_between(done, start));
    }
}

clock::time_point loop::count_turn(clock::time_point start) noexcept {
    const auto done = clock::now();
    const std::uint64_t busy = ns_between(start, done);
    stats_.last_turn_ns.store(busy, std::memory_order_relaxed);
    if (busy > 1'000'000) {
        stats_.long_turn_ns.store(busy, std::memory_order_relaxed);
        stats_.long_turn_start_ns.store(start.time_since_epoch().count(), std::memory_order_relaxed);
    }
    stats_.working_since_ns.store(0, std::memory_order_relaxed);
    add(stats_.busy_ns, busy);
    add(stats_.turns, 1);
    return done;
}

bool loop::work(clock::time_point now) {
    timers_.run_due(now);
    if (has_posted_.load(std::memory_order_acquire)) {
        run_posted();
    }
    do {
        while (!deferred_.empty()) {
            running_.swap(deferred_);
            for (auto& fn : running_) {
                fn();
            }
            running_.clear();
        }
    } while (poller_ && poller_->run_ready());
    return !stopping_.load(std::memory_order_acquire);
}

void loop::run_posted() {
    {
        const std::lock_guard lock(posted_mutex_);
        has_posted_.store(false, std::memory_order_relaxed);
        deferred_.insert(deferred_.end(), std::make_move_iterator(posted_.begin()),
                         std::make_move_iterator(posted_.end()));
        posted_.clear();
    }
}

void loop::stop() {
    stopping_.store(true, std::memory_order_release);
    wake();
}

void loop::post(std::function<void()> fn) {
    if (current_loop == this) {
        deferred_.push_back(std::move(fn));
        return;
    }
    {
        const std::lock_guard lock(posted_mutex_);
        posted_.push_back(std::move(fn));
        has_posted_.store(true, std::memory_order_release);
    }
    wake();
}

void loop::defer(std::function<void()> fn) {
    deferred_.push_back(std::move(fn));
}

void loop::wake() noexcept {
    if (uring* r = wake_ring_.load(std::memory_order_acquire)) {
        r->wake();
    } else if (epoll* p = wake_poller_.load(std::memory_order_acquire)) {
        p->wake();
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
    stats_.tick_lag_ns.store(ns_between(ticker_->deadline(), now_), std::memory_order_relaxed);
    refresh_date();
    ticker_->arm(ticker_->deadline() + std::chrono::seconds{1}, [this] { do_tick(); });
    // Index loop: a tick may add or remove ticks.
    for (std::size_t i = 0; i < ticks_.size(); ++i) {
        if (ticks_[i]) {
            ticks_[i](now_);
        }
    }
}

void loop::refresh_date() {
    char buf[date_length];
    format_http_date(std::time(nullptr), buf);
    std::memcpy(date_, buf, date_length);
}

} // namespace hotpath::net
