// Concurrency helpers for task<T>: run many at once (when_all), or at most K at once (bounded_fan_out).
#pragma once

#include "core/semaphore.hpp"
#include "core/task.hpp"

#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace hotpath {

namespace detail {

// Shared by the children of one when_all: counts them down and resumes the parent after the last.
struct when_all_state {
    std::size_t remaining = 0;
    std::coroutine_handle<> parent;
    std::exception_ptr first_error;

    static void on_child_done(void* self) noexcept {
        auto* s = static_cast<when_all_state*>(self);
        if (--s->remaining == 0) {
            s->parent.resume();
        }
    }
};

template <typename T>
task<void> when_all_child(task<T> t, std::optional<T>& slot, when_all_state& state) {
    try {
        slot.emplace(co_await std::move(t));
    } catch (...) {
        if (!state.first_error) {
            state.first_error = std::current_exception();
        }
    }
}

inline task<void> when_all_child(task<void> t, when_all_state& state) {
    try {
        co_await std::move(t);
    } catch (...) {
        if (!state.first_error) {
            state.first_error = std::current_exception();
        }
    }
}

} // namespace detail

// Starts every task at once (on the current loop) and completes when all have; results keep the order of
// `tasks`. If any threw, the first exception is rethrown after all have finished (none is left running).
template <typename T>
task<std::vector<T>> when_all(std::vector<task<T>> tasks) {
    std::vector<std::optional<T>> slots(tasks.size());
    detail::when_all_state state;
    state.remaining = tasks.size() + 1; // +1: the parent's own suspension, released below
    std::vector<task<void>> children;
    children.reserve(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        children.push_back(detail::when_all_child(std::move(tasks[i]), slots[i], state));
    }
    struct wait_all {
        detail::when_all_state& state;
        std::vector<task<void>>& children;
        bool await_ready() const noexcept { return false; }
        bool await_suspend(std::coroutine_handle<> parent) noexcept {
            state.parent = parent;
            for (auto& child : children) {
                if (child.start(&detail::when_all_state::on_child_done, &state)) {
                    --state.remaining; // finished without suspending
                }
            }
            // Drop the parent's own count; if every child is done, continue without suspending.
            return --state.remaining != 0;
        }
        void await_resume() const noexcept {}
    };
    co_await wait_all{state, children};
    if (state.first_error) {
        std::rethrow_exception(state.first_error);
    }
    std::vector<T> results;
    results.reserve(slots.size());
    for (auto& s : slots) {
        results.push_back(std::move(*s));
    }
    co_return results;
}

// Runs make(0) .. make(n - 1), each returning task<T>, with at most `limit` in flight at any time ("a
// bouncer"); results in index order. limit 0 is taken as 1.
template <typename F, typename T = typename std::invoke_result_t<F&, std::size_t>::value_type>
task<std::vector<T>> bounded_fan_out(std::size_t n, std::size_t limit, F make) {
    async_semaphore gate(limit == 0 ? 1 : limit);
    std::vector<task<T>> calls;
    calls.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        calls.push_back([](async_semaphore& g, F& f, std::size_t index) -> task<T> {
            co_await g.acquire();
            struct release_on_exit {
                async_semaphore& g;
                ~release_on_exit() { g.release(); }
            } guard{g};
            co_return co_await f(index);
        }(gate, make, i));
    }
    co_return co_await when_all(std::move(calls));
}

} // namespace hotpath
