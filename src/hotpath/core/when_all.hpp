// Concurrency helpers for task<T>: run many at once (when_all), or at most K at once (bounded_fan_out).
#pragma once

#include <hotpath/core/cancel.hpp>
#include <hotpath/core/error.hpp>
#include <hotpath/core/result.hpp>
#include <hotpath/core/task.hpp>

#include <algorithm>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace hotpath {

// The fail-fast mode of when_all and bounded_fan_out, as structured-concurrency libraries have it (a failing
// child cancels its siblings): at the first failure — a task whose result<U> holds an error, or that threw —
// `signal` is cancelled and no further task is started. The fan-out still completes only once every task it
// started has finished (none is left running), so the tasks end early only if they observe `signal`: the
// caller owns it and hands it to them (call_options::cancel for client calls). A task not started because
// `signal` was cancelled (by a failure, or by its owner) has the result errc::cancelled. For task<result<U>>
// only. The owner may chain `signal` to a wider one (cancel_forward) so that either ends the group.
struct fail_fast {
    cancel_signal& signal;
};

namespace detail {

template <typename T>
struct is_result : std::false_type {};
template <typename U>
struct is_result<result<U>> : std::true_type {};

// A failed task's value, in fail-fast mode: an error in a result (other types fail only by throwing).
template <typename T>
bool failed(const T& value) noexcept {
    if constexpr (is_result<T>::value) {
        return !value.has_value();
    } else {
        return false;
    }
}

// Shared by the children of one when_all: counts them down and resumes the parent after the last.
struct when_all_state {
    std::size_t remaining = 0;
    std::coroutine_handle<> parent;
    std::exception_ptr first_error;
    cancel_signal* stop = nullptr; // fail-fast: cancelled at the first failure

    void on_failure() noexcept {
        if (stop != nullptr) {
            stop->cancel();
        }
    }
    bool stopped() const noexcept { return stop != nullptr && stop->cancelled(); }

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
        if (failed(*slot)) {
            state.on_failure();
        }
    } catch (...) {
        if (!state.first_error) {
            state.first_error = std::current_exception();
        }
        state.on_failure();
    }
}

inline task<void> when_all_child(task<void> t, when_all_state& state) {
    try {
        co_await std::move(t);
    } catch (...) {
        if (!state.first_error) {
            state.first_error = std::current_exception();
        }
        state.on_failure();
    }
}

// Starts each child on the current loop (unless fail-fast has stopped the group) and waits for all it started.
struct wait_all {
    when_all_state& state;
    std::vector<task<void>>& children;
    bool await_ready() const noexcept { return false; }
    template <typename Promise>
    bool await_suspend(std::coroutine_handle<Promise> parent) noexcept {
        state.parent = parent;
        for (auto& child : children) {
            if constexpr (std::is_base_of_v<promise_base, Promise>) {
                child.attribute_to(parent.promise().attribution); // the children work for the parent's request
            }
            if (state.stopped() || child.start(&when_all_state::on_child_done, &state)) {
                --state.remaining; // not started, or finished without suspending
            }
        }
        // Drop the parent's own count; if every child is done, continue without suspending.
        return --state.remaining != 0;
    }
    void await_resume() const noexcept {}
};

// The slots in order; a slot left empty (a task not started in fail-fast mode) is errc::cancelled.
template <typename T>
std::vector<T> take_results(std::vector<std::optional<T>>& slots) {
    std::vector<T> results;
    results.reserve(slots.size());
    for (auto& s : slots) {
        if constexpr (is_result<T>::value) {
            results.push_back(s ? std::move(*s) : T(make_error_code(errc::cancelled)));
        } else {
            results.push_back(std::move(*s)); // filled: only fail-fast (result types only) leaves one empty
        }
    }
    return results;
}

template <typename T>
task<std::vector<T>> when_all(std::vector<task<T>> tasks, cancel_signal* stop) {
    std::vector<std::optional<T>> slots(tasks.size());
    when_all_state state;
    state.stop = stop;
    state.remaining = tasks.size() + 1; // +1: the parent's own suspension, released in wait_all
    std::vector<task<void>> children;
    children.reserve(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        children.push_back(when_all_child(std::move(tasks[i]), slots[i], state));
    }
    co_await wait_all{state, children};
    if (state.first_error) {
        std::rethrow_exception(state.first_error);
    }
    co_return take_results(slots);
}

// One of bounded_fan_out's `limit` workers: takes the next index and awaits its call, until none is left (or
// fail-fast stopped the group). Never recursive: a call that finishes at once just lets the loop go on.
template <typename T, typename F>
task<void> fan_out_worker(F& make, std::vector<std::optional<T>>& slots, std::size_t& next, when_all_state& state) {
    while (next < slots.size() && !state.stopped()) {
        const std::size_t i = next++;
        try {
            slots[i].emplace(co_await make(i));
            if (failed(*slots[i])) {
                state.on_failure();
            }
        } catch (...) {
            if (!state.first_error) {
                state.first_error = std::current_exception();
            }
            state.on_failure();
        }
    }
}

template <typename T, typename F>
task<std::vector<T>> bounded_fan_out(std::size_t n, std::size_t limit, F make, cancel_signal* stop) {
    std::vector<std::optional<T>> slots(n);
    std::size_t next = 0;
    when_all_state state;
    state.stop = stop;
    const std::size_t workers = std::min(n, limit == 0 ? std::size_t{1} : limit);
    state.remaining = workers + 1;
    std::vector<task<void>> children;
    children.reserve(workers);
    for (std::size_t w = 0; w < workers; ++w) {
        children.push_back(fan_out_worker(make, slots, next, state));
    }
    co_await wait_all{state, children};
    if (state.first_error) {
        std::rethrow_exception(state.first_error);
    }
    co_return take_results(slots);
}

} // namespace detail

// Starts every task at once (on the current loop) and completes when all have; results keep the order of
// `tasks`. If any threw, the first exception is rethrown after all have finished (none is left running).
// Waits for every task whatever the others return: see the fail_fast overload for stopping at the first error.
template <typename T>
task<std::vector<T>> when_all(std::vector<task<T>> tasks) {
    return detail::when_all(std::move(tasks), nullptr);
}

// when_all in fail-fast mode (see fail_fast): a task that fails cancels `policy.signal`, which the others
// observe; the tasks after it in `tasks` are not started if it failed before they were.
template <typename T>
task<std::vector<T>> when_all(std::vector<task<T>> tasks, fail_fast policy) {
    static_assert(detail::is_result<T>::value, "fail_fast needs task<result<U>>: a task not started is cancelled");
    return detail::when_all(std::move(tasks), &policy.signal);
}

// Runs make(0) .. make(n - 1), each returning task<T>, with at most `limit` in flight at any time, started in
// index order as earlier ones finish; results in index order. limit 0 is taken as 1. Runs all n whatever they
// return; if any threw, the first exception is rethrown once all have finished.
template <typename F, typename T = typename std::invoke_result_t<F&, std::size_t>::value_type>
task<std::vector<T>> bounded_fan_out(std::size_t n, std::size_t limit, F make) {
    return detail::bounded_fan_out<T>(n, limit, std::move(make), nullptr);
}

// bounded_fan_out in fail-fast mode (see fail_fast): after the first failure, the calls in flight are cancelled
// through `policy.signal` and make() is not called again; the calls never started are errc::cancelled.
template <typename F, typename T = typename std::invoke_result_t<F&, std::size_t>::value_type>
task<std::vector<T>> bounded_fan_out(std::size_t n, std::size_t limit, F make, fail_fast policy) {
    static_assert(detail::is_result<T>::value, "fail_fast needs task<result<U>>: a call not started is cancelled");
    return detail::bounded_fan_out<T>(n, limit, std::move(make), &policy.signal);
}

} // namespace hotpath
