// The blocking pool: one mutex over an intrusive FIFO of calls (in their coroutines' frames), a table of slots that
// names each admitted call until it resumes, and threads that take calls from the FIFO.
#include <hotpath/net/blocking_pool.hpp>

#include <hotpath/core/counter.hpp>
#include <hotpath/metrics/duration_buckets.hpp>
#include <hotpath/metrics/gauge.hpp>
#include <hotpath/metrics/prometheus.hpp>
#include <hotpath/metrics/source.hpp>
#include <hotpath/net/loop.hpp>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <thread>
#include <vector>

namespace hotpath {
namespace blocking_detail {

void write_blocking_metrics(metrics::prometheus_writer& out, std::span<const metrics::source* const> group);

// Everything a pool shares with its threads, its calls and its metrics page. Lives as long as the pool or a page
// that exposes it, whichever is longer. Every member but the options, the gauges and counters (relaxed atomics read
// by stats() and scrapes) is guarded by mutex.
class pool_state final : public metrics::source {
public:
    explicit pool_state(blocking_pool_options o)
        : metrics::source(&write_blocking_metrics), options(std::move(o)), bounds_ns(metrics::latency_bounds_ns()),
          queue_wait(bounds_ns) {
        options.threads = std::max(options.threads, 1u);
        // A slot per call admitted and not yet resumed: at most every thread's plus a full queue.
        slots.resize(options.threads + options.queue_capacity);
        free_slots.reserve(slots.size());
        for (std::size_t i = slots.size(); i-- > 0;) {
            free_slots.push_back(static_cast<std::uint32_t>(i));
        }
    }

    // ---- under mutex ----
    struct slot {
        call_base* call = nullptr; // null while free, or once its coroutine is gone (a running call then drops)
        std::uint32_t generation = 0;
    };
    void release(std::uint32_t index) noexcept {
        slot& s = slots[index];
        s.call = nullptr;
        ++s.generation;
        free_slots.push_back(index); // never grows: reserved for every slot
    }
    void push(call_base& c) noexcept {
        c.prev_ = tail;
        c.next_ = nullptr;
        (tail != nullptr ? tail->next_ : head) = &c;
        tail = &c;
        queued.add();
    }
    void unlink(call_base& c) noexcept {
        (c.prev_ != nullptr ? c.prev_->next_ : head) = c.next_;
        (c.next_ != nullptr ? c.next_->prev_ : tail) = c.prev_;
        c.prev_ = c.next_ = nullptr;
        queued.sub();
    }

    // Posts "deliver slot `index` of generation `generation`" to `mailbox`'s loop. The function holds a pointer and
    // two integers: trivially copyable and 16 bytes, std::function keeps it without allocating.
    void post_delivery(net::loop_mailbox& mailbox, std::uint32_t index, std::uint32_t generation) noexcept {
        mailbox.post([this, index, generation] { deliver(index, generation); });
    }

    // On the call's loop: resumes the call in slot `index` unless its coroutine went away meanwhile.
    void deliver(std::uint32_t index, std::uint32_t generation) noexcept {
        call_base* c = nullptr;
        {
            const std::lock_guard lock(mutex);
            const slot& s = slots[index];
            if (s.generation != generation || s.call == nullptr) {
                return; // the coroutine was destroyed after the post
            }
            c = s.call;
            c->state_ = call_base::state::finished;
            release(index);
        }
        c->in_pool_ = false;
        c->slot_.detach();
        c->wait_.reset();
        c->waiting_.resume();
    }

    void serve() {
        std::unique_lock lock(mutex);
        for (;;) {
            ready.wait(lock, [this] { return head != nullptr || stopping; });
            if (head == nullptr) {
                return; // stopping, and nothing queued
            }
            call_base& c = *head;
            unlink(c);
            c.state_ = call_base::state::running;
            busy.add();
            const std::int64_t waited = time_attribution::now_ns() - c.queued_ns_;
            queue_wait.record_ns(static_cast<std::uint64_t>(std::max<std::int64_t>(waited, 0)));
            c.execute_(c, lock); // returns unlocked
            lock.lock();
        }
    }

    blocking_pool_options options;
    const std::vector<std::uint64_t> bounds_ns;

    std::mutex mutex;
    std::condition_variable ready;
    call_base* head = nullptr;
    call_base* tail = nullptr;
    std::vector<slot> slots;
    std::vector<std::uint32_t> free_slots;
    bool stopping = false;
    std::vector<std::thread> threads;

    // Written under mutex, read by anyone.
    metrics::gauge busy;
    metrics::gauge queued;
    counter completed;
    counter rejected;
    counter cancelled;
    counter abandoned;
    counter dropped;
    metrics::duration_buckets queue_wait; // from admission to a thread taking the call
};

// ---- call_base ----

call_base::cancel_hook::cancel_hook(call_base& c) noexcept
    : cancel_slot([](cancel_slot& s) noexcept {
          // Inside cancel_signal::cancel(), on the call's loop: a queued call leaves the queue and its coroutine is
          // resumed from a fresh handler (a post to its own loop runs after this turn's work), never from here.
          call_base& self = static_cast<cancel_hook&>(s).owner;
          pool_state& pool = self.pool_;
          const std::lock_guard lock(pool.mutex);
          if (self.state_ != state::queued) {
              return; // running: its result is delivered when it ends
          }
          pool.unlink(self);
          pool.cancelled.add();
          self.failure_ = make_error_code(errc::cancelled);
          self.state_ = state::posted;
          pool.post_delivery(*self.mailbox_, self.index_, self.generation_);
      }),
      owner(c) {}

bool call_base::submit(std::coroutine_handle<> waiting, time_attribution* attribution) {
    net::loop* const loop = net::loop::current();
    if (loop == nullptr) {
        failure_ = std::make_error_code(std::errc::operation_not_permitted); // not on an event loop's thread
        return false;
    }
    if (cancel_ != nullptr && cancel_->cancelled()) {
        failure_ = make_error_code(errc::cancelled);
        return false;
    }
    pool_state& pool = pool_;
    {
        const std::lock_guard lock(pool.mutex);
        // Idle threads take queued calls at once: the queue holds queue_capacity calls beyond them.
        const std::uint64_t idle = pool.options.threads - pool.busy.get();
        if (pool.queued.get() >= pool.options.queue_capacity + idle || pool.free_slots.empty() || pool.stopping) {
            pool.rejected.add();
            failure_ = make_error_code(errc::overloaded);
            return false;
        }
        index_ = pool.free_slots.back();
        pool.free_slots.pop_back();
        pool.slots[index_].call = this;
        generation_ = pool.slots[index_].generation;
        waiting_ = waiting;
        mailbox_ = loop->mailbox(); // a reference count, not an allocation
        queued_ns_ = time_attribution::now_ns();
        state_ = state::queued;
        in_pool_ = true;
        wait_.emplace(attribution, wait_kind::blocking);
        pool.push(*this);
    }
    pool.ready.notify_one();
    if (cancel_ != nullptr) {
        cancel_->attach(slot_); // its callback takes the pool's lock: attached after the lock is released
    }
    return true;
}

call_base* call_base::finish(pool_state& pool, std::uint32_t index) noexcept {
    pool.busy.sub();
    pool.completed.add();
    call_base* c = pool.slots[index].call;
    if (c == nullptr) {
        pool.dropped.add(); // its coroutine was destroyed while it ran
        pool.release(index);
        return nullptr;
    }
    c->state_ = state::posted;
    return c;
}

void call_base::post_result(call_base& self) noexcept {
    self.pool_.post_delivery(*self.mailbox_, self.index_, self.generation_);
}

void call_base::abandon() noexcept {
    if (!in_pool_) {
        return; // never admitted, or delivered: the pool knows nothing of this call
    }
    in_pool_ = false;
    pool_state& pool = pool_;
    const std::lock_guard lock(pool.mutex);
    switch (state_) {
    case state::queued:
        pool.unlink(*this);
        pool.abandoned.add();
        pool.release(index_);
        break;
    case state::running:
        pool.slots[index_].call = nullptr; // the thread drops the result and frees the slot
        break;
    case state::posted:
        pool.release(index_); // the posted delivery finds another generation and does nothing
        break;
    case state::idle:
    case state::finished:
        break;
    }
    state_ = state::finished;
}

// ---- metrics ----

void write_blocking_metrics(metrics::prometheus_writer& out, std::span<const metrics::source* const> group) {
    using metrics::metric_type;
    auto each = [&](auto&& fn) {
        for (const metrics::source* s : group) {
            fn(static_cast<const pool_state&>(*s));
        }
    };
    auto gauge = [&](std::string_view name, std::string_view help, auto value) {
        out.family(name, help, metric_type::gauge);
        each([&](const pool_state& p) {
            out.sample(name, {{"pool", p.options.name}}, static_cast<std::uint64_t>(value(p)));
        });
    };
    auto count = [&](std::string_view name, std::string_view help, auto value) {
        out.family(name, help, metric_type::counter);
        each([&](const pool_state& p) {
            out.sample(name, {{"pool", p.options.name}}, static_cast<std::uint64_t>(value(p)));
        });
    };
    gauge("hotpath_blocking_threads", "Threads of the blocking pool",
          [](const pool_state& p) { return p.options.threads; });
    gauge("hotpath_blocking_threads_busy", "Threads of the blocking pool running a call now",
          [](const pool_state& p) { return p.busy.get(); });
    gauge("hotpath_blocking_queue_capacity", "Calls the blocking pool's queue holds at most",
          [](const pool_state& p) { return p.options.queue_capacity; });
    gauge("hotpath_blocking_queue_length", "Calls waiting for a thread of the blocking pool now",
          [](const pool_state& p) { return p.queued.get(); });
    count("hotpath_blocking_completed_total", "Blocking calls that ran to their end (value or exception)",
          [](const pool_state& p) { return p.completed.get(); });
    count("hotpath_blocking_rejected_total", "Blocking calls refused at once because the queue was full (503s)",
          [](const pool_state& p) { return p.rejected.get(); });
    count("hotpath_blocking_cancelled_total",
          "Blocking calls removed from the queue, never run: cancelled (the client went away) or their coroutine "
          "destroyed",
          [](const pool_state& p) { return p.cancelled.get() + p.abandoned.get(); });
    count("hotpath_blocking_dropped_total",
          "Blocking calls that ran while their coroutine was destroyed: the result was dropped",
          [](const pool_state& p) { return p.dropped.get(); });

    const std::string_view wait = "hotpath_blocking_queue_wait_seconds";
    out.family(wait, "Time blocking calls waited in the queue for a thread", metric_type::histogram);
    std::vector<double> bounds;
    std::vector<std::uint64_t> counts;
    each([&](const pool_state& p) {
        bounds.clear();
        for (const std::uint64_t b : p.bounds_ns) {
            bounds.push_back(static_cast<double>(b) / 1e9);
        }
        counts.assign(p.bounds_ns.size() + 1, 0);
        for (std::size_t i = 0; i < counts.size(); ++i) {
            counts[i] = p.queue_wait.count_in(i);
        }
        out.histogram(wait, {{"pool", p.options.name}}, bounds, counts,
                      static_cast<double>(p.queue_wait.sum_ns()) / 1e9);
    });
}

} // namespace blocking_detail

// ---- blocking_pool ----

blocking_pool::blocking_pool(blocking_pool_options options)
    : state_(std::make_shared<blocking_detail::pool_state>(std::move(options))) {
    auto& s = *state_;
    s.threads.reserve(s.options.threads);
    for (unsigned i = 0; i < s.options.threads; ++i) {
        s.threads.emplace_back([state = state_.get()] {
            ::pthread_setname_np(::pthread_self(), "hotpath-block");
            state->serve();
        });
    }
}

blocking_pool::~blocking_pool() {
    {
        const std::lock_guard lock(state_->mutex);
        state_->stopping = true;
    }
    state_->ready.notify_all();
    for (auto& t : state_->threads) {
        t.join();
    }
}

const blocking_pool_options& blocking_pool::options() const noexcept {
    return state_->options;
}

blocking_pool_stats blocking_pool::stats() const noexcept {
    const auto& s = *state_;
    return {s.busy.get(),      s.queued.get(),    s.completed.get(), s.rejected.get(),
            s.cancelled.get(), s.abandoned.get(), s.dropped.get()};
}

std::shared_ptr<const metrics::source> blocking_pool::metrics() const {
    return state_;
}

namespace {

std::mutex shared_mutex; // guards making the shared pool and its options
blocking_pool_options shared_options;
std::atomic<blocking_pool*> shared_pool{nullptr};

} // namespace

blocking_pool& blocking_pool::shared() {
    if (blocking_pool* p = shared_pool.load(std::memory_order_acquire)) {
        return *p; // every call after the first: one load
    }
    const std::lock_guard lock(shared_mutex);
    blocking_pool* p = shared_pool.load(std::memory_order_relaxed);
    if (p == nullptr) {
        p = new blocking_pool(shared_options); // never destroyed: see the header
        shared_pool.store(p, std::memory_order_release);
    }
    return *p;
}

bool blocking_pool::configure_shared(blocking_pool_options options) {
    const std::lock_guard lock(shared_mutex);
    if (shared_pool.load(std::memory_order_relaxed) != nullptr) {
        return false;
    }
    shared_options = std::move(options);
    return true;
}

} // namespace hotpath
