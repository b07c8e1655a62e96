// co_await hotpath::blocking(fn): a call that blocks (a synchronous-only library, a file system, a sleep) runs on a
// fixed set of threads with a bounded queue, and the awaiting coroutine resumes on its own event loop.
#pragma once

#include <hotpath/core/attribution.hpp>
#include <hotpath/core/cancel.hpp>
#include <hotpath/core/result.hpp>
#include <hotpath/core/task.hpp>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace hotpath {

namespace metrics {
class source;
}
namespace net {
class loop_mailbox;
}

struct blocking_pool_options {
    // Threads that run the calls, all started with the pool: never more calls than this run at once.
    unsigned threads = 4;
    // Calls that may wait for a thread; one more is rejected at once (errc::overloaded). 0: a call is rejected
    // unless a thread is free. The bound is the point: a queue without one turns a slow library into requests
    // that wait without end (case 4 of ../shared/CASES.md).
    std::size_t queue_capacity = 64;
    // The pool="..." label of its metrics.
    std::string name = "default";
};

// What a pool has done, summed since it started; read from any thread.
struct blocking_pool_stats {
    std::uint64_t busy = 0;      // threads running a call now
    std::uint64_t queued = 0;    // calls waiting for a thread now
    std::uint64_t completed = 0; // calls that ran to their end (value or exception), delivered or dropped
    std::uint64_t rejected = 0;  // calls refused with errc::overloaded (queue full)
    std::uint64_t cancelled = 0; // calls removed from the queue by their cancel_signal: never ran
    std::uint64_t abandoned = 0; // calls whose coroutine was destroyed while queued: never ran
    std::uint64_t dropped = 0;   // calls that ran while their coroutine was destroyed: result dropped
};

namespace blocking_detail {

class pool_state;

// The part of an awaited call that the pool links into its queue: it lives in the awaiting coroutine's frame, so a
// call allocates nothing. Touched under the pool's mutex by the pool's threads; otherwise by the awaiting loop.
class call_base {
public:
    call_base(const call_base&) = delete;
    call_base& operator=(const call_base&) = delete;

protected:
    // Runs the call on a pool thread: entered with `lock` held (the frame is alive), returns with it released.
    using execute_fn = void (*)(call_base& self, std::unique_lock<std::mutex>& lock) noexcept;

    call_base(pool_state& pool, execute_fn execute, cancel_signal* cancel) noexcept
        : pool_(pool), execute_(execute), cancel_(cancel), slot_(*this) {}
    ~call_base() { abandon(); }

    // Queues the call; false (resume now, failure_ says why) when it is rejected or already cancelled.
    bool submit(std::coroutine_handle<> waiting, time_attribution* attribution);
    // On a pool thread, under the lock, after the call in slot `index` ran: the call if its coroutine still waits
    // (the caller stores the result in it, then calls post_result), else nullptr (the caller drops the result).
    static call_base* finish(pool_state& pool, std::uint32_t index) noexcept;
    // Under the lock: posts the stored result to the call's loop, which resumes the coroutine.
    static void post_result(call_base& self) noexcept;
    // The coroutine is going away: a queued call leaves the queue, a running one will be dropped by its thread.
    // The derived destructor calls it first, while the fn and result a pool thread may touch still live.
    void abandon() noexcept;

    pool_state& pool_;
    std::uint32_t index_ = 0;   // the pool's slot this call holds from admission to resumption
    std::error_code failure_;   // overloaded, cancelled: no value
    std::exception_ptr thrown_; // what the call threw, rethrown by await_resume

private:
    friend class pool_state;
    enum class state : std::uint8_t { idle, queued, running, posted, finished };
    struct cancel_hook : cancel_slot {
        explicit cancel_hook(call_base& c) noexcept;
        call_base& owner;
    };

    execute_fn execute_;
    cancel_signal* cancel_;
    cancel_hook slot_;
    std::coroutine_handle<> waiting_;
    std::shared_ptr<net::loop_mailbox> mailbox_; // the awaiting loop's: where the result is posted
    std::optional<attributed_wait> wait_;        // the request's wait, from queueing to resumption
    state state_ = state::idle;                  // under the pool's mutex once submitted (the pool's threads change it)
    bool in_pool_ = false;         // the loop's own: from admission to delivery (abandon() looks without the lock)
    std::uint32_t generation_ = 0; // the slot's generation then: a posted delivery for a gone call is ignored
    std::int64_t queued_ns_ = 0;
    call_base* prev_ = nullptr; // the pool's FIFO
    call_base* next_ = nullptr;
};

} // namespace blocking_detail

// The awaitable of pool.run(fn) and blocking(fn): co_await gives result<T>, T being what fn returns (void
// included): fn's value, or errc::overloaded (the queue was full: rejected at once, fn never runs), or
// errc::cancelled (the cancel signal fired while the call waited in the queue: removed, fn never runs). An
// exception thrown by fn is rethrown by co_await on the loop (a handler's one catch site makes it a 500).
//
// The awaiting coroutine always resumes on its own loop's thread, never on the pool's (a rejection resumes it at
// once, without suspending). Await it on an event loop thread. The call lives in the coroutine's frame: the pool
// allocates nothing per call. fn is moved to a pool thread when the call starts, run and destroyed there.
// Destroying the suspended coroutine (a connection closed under its handler) removes a queued call (it never runs);
// a running call finishes on its thread and its result is destroyed there, unseen. A cancellation while the call
// runs changes nothing: the call's result is delivered when it ends.
template <typename F>
class [[nodiscard]] blocking_call final : private blocking_detail::call_base {
public:
    using value_type = std::invoke_result_t<F&>;

    template <typename G>
    blocking_call(blocking_detail::pool_state& pool, G&& fn, cancel_signal* cancel)
        : call_base(pool, &execute, cancel), fn_(std::in_place, std::forward<G>(fn)) {}
    // Leaves the pool before fn_ and value_ go: a pool thread takes fn_ and writes value_ under the pool's lock.
    ~blocking_call() { abandon(); }
    blocking_call(const blocking_call&) = delete;
    blocking_call& operator=(const blocking_call&) = delete;

    bool await_ready() const noexcept { return false; }
    template <typename Promise>
    bool await_suspend(std::coroutine_handle<Promise> waiting) {
        if constexpr (std::is_base_of_v<detail::promise_base, Promise>) {
            return submit(waiting, waiting.promise().attribution);
        } else {
            return submit(waiting, nullptr);
        }
    }
    result<value_type> await_resume() {
        if (thrown_) {
            std::rethrow_exception(std::exchange(thrown_, nullptr));
        }
        if (failure_) {
            return failure_;
        }
        if constexpr (std::is_void_v<value_type>) {
            return {};
        } else {
            return std::move(*value_);
        }
    }

private:
    struct no_value {};
    using stored = std::conditional_t<std::is_void_v<value_type>, no_value, value_type>;

    static void execute(call_base& base, std::unique_lock<std::mutex>& lock) noexcept {
        auto& self = static_cast<blocking_call&>(base);
        // Under the lock the frame is alive (its destructor takes the lock): take fn out of it.
        F fn(std::move(*self.fn_));
        self.fn_.reset();
        blocking_detail::pool_state& pool = self.pool_;
        const std::uint32_t index = self.index_;
        lock.unlock();
        std::optional<stored> value;
        std::exception_ptr thrown;
        try {
            if constexpr (std::is_void_v<value_type>) {
                std::invoke(fn);
                value.emplace();
            } else {
                value.emplace(std::invoke(fn));
            }
        } catch (...) {
            thrown = std::current_exception();
        }
        lock.lock();
        if (call_base* alive = finish(pool, index)) {
            auto& me = static_cast<blocking_call&>(*alive);
            me.value_ = std::move(value);
            me.thrown_ = std::move(thrown);
            post_result(*alive);
        }
        lock.unlock();
        // fn, and a value no one waits for, are destroyed here, on the pool's thread, outside the lock.
    }

    std::optional<F> fn_;
    std::optional<stored> value_;
};

// A fixed set of threads for blocking calls and a bounded FIFO of calls waiting for one. The threads start with
// the pool; its destructor lets them finish the calls running and queued, then joins them. Destroy a pool only
// once no coroutine awaits one of its calls and the loops they ran on are stopped (a posted result refers to the
// pool). run() is safe from any loop thread; the pool is shared by all loops. A call holds one of the pool's
// threads + queue_capacity places from admission until its coroutine resumes, so that the pool never holds more.
// Costs per call: one mutex acquisition to queue it, one on a pool thread to take it and one to hand back its
// result, one post to the awaiting loop (a wake-up); no allocation (the post's function fits std::function's
// inline buffer and the loop's queue keeps its capacity).
class blocking_pool {
public:
    explicit blocking_pool(blocking_pool_options options = {});
    ~blocking_pool();
    blocking_pool(const blocking_pool&) = delete;
    blocking_pool& operator=(const blocking_pool&) = delete;

    // co_await pool.run(fn[, cancel]): see blocking_call. fn is copied or moved into the awaitable; it takes no
    // argument. `cancel` (e.g. &request.aborted()) must outlive the await.
    //
    // With GCC 12, name a lambda that captures anything with a destructor (a string, a shared_ptr) before the
    // co_await: written inside the co_await expression, GCC 12 destroys the lambda temporary twice (a double free
    // seen here under ASan; clang is fine). `auto write = [file, n] {...}; auto r = co_await pool.run(std::move(
    // write));` is safe (apps/storage/files.cpp does so); captures of plain values (an int, a duration) are too.
    template <typename F>
    blocking_call<std::decay_t<F>> run(F&& fn, cancel_signal* cancel = nullptr) {
        return blocking_call<std::decay_t<F>>(*state_, std::forward<F>(fn), cancel);
    }
    template <typename F>
    blocking_call<std::decay_t<F>> run(F&& fn, cancel_signal& cancel) {
        return run(std::forward<F>(fn), &cancel);
    }

    const blocking_pool_options& options() const noexcept;
    blocking_pool_stats stats() const noexcept;
    // The hotpath_blocking_... families for a metrics page (app.expose(pool.metrics())); valid after the pool.
    std::shared_ptr<const metrics::source> metrics() const;

    // The process's pool behind blocking(fn): made on first use with the options configure_shared() gave (the
    // defaults otherwise), never destroyed (its threads may be inside a call when the process exits).
    static blocking_pool& shared();
    // Sets the shared pool's options; false (and nothing changes) once the shared pool exists.
    static bool configure_shared(blocking_pool_options options);

private:
    std::shared_ptr<blocking_detail::pool_state> state_;
};

// co_await blocking(fn[, cancel]): fn on the process's shared pool (blocking_pool::shared()).
template <typename F>
blocking_call<std::decay_t<F>> blocking(F&& fn, cancel_signal* cancel = nullptr) {
    return blocking_pool::shared().run(std::forward<F>(fn), cancel);
}
template <typename F>
blocking_call<std::decay_t<F>> blocking(F&& fn, cancel_signal& cancel) {
    return blocking_pool::shared().run(std::forward<F>(fn), &cancel);
}

} // namespace hotpath
