// task<T>: a lazy C++20 coroutine that an event loop or another coroutine awaits; frames are recycled.
#pragma once

#include <hotpath/core/frame_allocator.hpp>

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace hotpath {

template <typename T = void>
class task;

struct time_attribution; // core/attribution.hpp

namespace detail {

// Shared by every task promise: the continuation to resume when done, or a callback for a top-level task
// started by non-coroutine code (a connection), and the exception that escaped the body, if any.
struct promise_base {
    std::coroutine_handle<> continuation;
    void (*on_done)(void* context) noexcept = nullptr;
    void* on_done_context = nullptr;
    std::exception_ptr error;
    // The request this task works for, if any: inherited by every task it awaits (see core/attribution.hpp).
    time_attribution* attribution = nullptr;

    static void* operator new(std::size_t bytes) { return frame_allocator::allocate(bytes); }
    static void operator delete(void* frame, std::size_t bytes) noexcept { frame_allocator::deallocate(frame, bytes); }

    std::suspend_always initial_suspend() const noexcept { return {}; }

    struct final_awaiter {
        bool await_ready() const noexcept { return false; }
        template <typename Promise>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> self) const noexcept {
            promise_base& p = self.promise();
            if (p.continuation) {
                return p.continuation;
            }
            if (p.on_done != nullptr) {
                // The callback may destroy this frame: nothing below touches it.
                p.on_done(p.on_done_context);
            }
            return std::noop_coroutine();
        }
        void await_resume() const noexcept {}
    };
    final_awaiter final_suspend() const noexcept { return {}; }

    void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <typename T>
struct promise final : promise_base {
    std::optional<T> value;

    task<T> get_return_object() noexcept;
    template <typename U>
    void return_value(U&& v) {
        value.emplace(std::forward<U>(v));
    }
};

template <>
struct promise<void> final : promise_base {
    task<void> get_return_object() noexcept;
    void return_void() const noexcept {}
};

// What co_await of a task<T> returns: starts the task by symmetric transfer, with the awaiting task's request.
template <typename T>
struct task_awaiter {
    std::coroutine_handle<promise<T>> handle;
    bool await_ready() const noexcept { return false; }
    template <typename Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> awaiting) noexcept {
        handle.promise().continuation = awaiting;
        if constexpr (std::is_base_of_v<promise_base, Promise>) {
            handle.promise().attribution = awaiting.promise().attribution;
        }
        return handle;
    }
    T await_resume() {
        if (handle.promise().error) {
            std::rethrow_exception(handle.promise().error);
        }
        if constexpr (!std::is_void_v<T>) {
            return std::move(*handle.promise().value);
        }
    }
};

} // namespace detail

// A unique owner of a coroutine frame. Started by co_await (symmetric transfer, no stack growth) or by
// start() from non-coroutine code. Destroying a task (or reset()) destroys its frame: done, never started, or
// suspended.
//
// Destroying a task while it is suspended is how a request is cancelled (a connection whose peer went away
// drops its handler's task). What runs: the destructors of everything alive in the frame, innermost first —
// its locals and parameters, and the awaitable it is suspended on, which undoes its wait (net::sleep_awaitable
// destroys its timer, whose handler then sees operation_aborted and resumes nothing); a task it awaits is a
// temporary in its frame, so that task's frame is destroyed too, and so on down the chain. What does not run:
// the coroutine is never resumed, nothing after the suspension point runs (no co_return, no catch), and
// on_done is never called. Who may do it: only the task's owner (the holder of the task object; for a task
// being awaited, the awaiting coroutine, by being destroyed itself), on the event loop's thread that resumes
// the task, and only while it is suspended: never from code running inside the task or inside anything it
// awaits. An awaitable that a task may be destroyed in must undo its wait in its own destructor, as
// sleep_awaitable does; one that does not (async_semaphore::acquire_awaiter, see semaphore.hpp) must not be
// pending when the task is destroyed.
template <typename T>
class [[nodiscard]] task {
public:
    using value_type = T;
    using promise_type = detail::promise<T>;
    using handle_type = std::coroutine_handle<promise_type>;

    task() noexcept = default;
    explicit task(handle_type h) noexcept : handle_(h) {}
    task(task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
    task& operator=(task&& other) noexcept {
        if (this != &other) {
            reset();
            handle_ = std::exchange(other.handle_, {});
        }
        return *this;
    }
    task(const task&) = delete;
    task& operator=(const task&) = delete;
    ~task() { reset(); }

    bool valid() const noexcept { return static_cast<bool>(handle_); }
    bool done() const noexcept { return handle_ && handle_.done(); }

    // Runs the coroutine until its first suspension. Returns true when it already finished; otherwise
    // `on_done(context)` is called once it finishes (from the event loop that resumes it), and never if the
    // task is destroyed first.
    bool start(void (*on_done)(void*) noexcept, void* context) noexcept {
        handle_.resume();
        if (handle_.done()) {
            return true;
        }
        handle_.promise().on_done = on_done;
        handle_.promise().on_done_context = context;
        return false;
    }

    // Makes the task work for the request whose waits `a` records, and every task it awaits with it (before start).
    void attribute_to(time_attribution* a) noexcept { handle_.promise().attribution = a; }

    // The exception that escaped the coroutine body, if any (valid once done).
    std::exception_ptr error() const noexcept { return handle_.promise().error; }

    void reset() noexcept {
        if (handle_) {
            handle_.destroy();
            handle_ = {};
        }
    }

    // Awaiting a task starts it and resumes the awaiter when it finishes; exceptions propagate.
    detail::task_awaiter<T> operator co_await() && noexcept { return detail::task_awaiter<T>{handle_}; }

private:
    handle_type handle_;
};

// `co_await this_attribution{}` in a task: the time_attribution of the request it works for (null when none),
// without suspending.
struct this_attribution {
    time_attribution* value = nullptr;
    bool await_ready() const noexcept { return false; }
    template <typename Promise>
    bool await_suspend(std::coroutine_handle<Promise> self) noexcept {
        static_assert(std::is_base_of_v<detail::promise_base, Promise>, "only a task knows its request");
        value = self.promise().attribution;
        return false;
    }
    time_attribution* await_resume() const noexcept { return value; }
};

namespace detail {

template <typename T>
task<T> promise<T>::get_return_object() noexcept {
    return task<T>{std::coroutine_handle<promise<T>>::from_promise(*this)};
}

inline task<void> promise<void>::get_return_object() noexcept {
    return task<void>{std::coroutine_handle<promise<void>>::from_promise(*this)};
}

} // namespace detail

} // namespace hotpath
