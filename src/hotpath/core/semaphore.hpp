// An async semaphore for coroutines on one event loop: co_await acquire() waits without blocking the thread.
#pragma once

#include <coroutine>
#include <cstddef>

namespace hotpath {

// Not thread-safe: acquire and release on the loop that owns it. Waiters are resumed in FIFO order, inline
// from release(). Allocates nothing: each waiter's node lives in its awaiting coroutine's frame. A waiter is not
// taken off the queue when its coroutine is destroyed: a task must not be destroyed (cancelled, see task.hpp)
// while it waits in acquire(), or release() resumes a freed frame.
class async_semaphore {
public:
    explicit async_semaphore(std::size_t permits) noexcept : permits_(permits) {}
    async_semaphore(const async_semaphore&) = delete;
    async_semaphore& operator=(const async_semaphore&) = delete;

    struct acquire_awaiter {
        async_semaphore& owner;
        std::coroutine_handle<> waiting{};
        acquire_awaiter* next = nullptr;

        bool await_ready() const noexcept { return owner.try_acquire(); }
        void await_suspend(std::coroutine_handle<> h) noexcept {
            waiting = h;
            owner.enqueue(this);
        }
        void await_resume() const noexcept {}
    };

    // Takes a permit, waiting for one if none is free.
    acquire_awaiter acquire() noexcept { return acquire_awaiter{*this}; }
    bool try_acquire() noexcept {
        if (permits_ == 0) {
            return false;
        }
        --permits_;
        return true;
    }
    // Returns a permit: hands it straight to the oldest waiter (resuming it now), or keeps it.
    void release() noexcept {
        if (acquire_awaiter* w = head_) {
            head_ = w->next;
            if (head_ == nullptr) {
                tail_ = nullptr;
            }
            w->waiting.resume();
            return;
        }
        ++permits_;
    }

    std::size_t available() const noexcept { return permits_; }

private:
    void enqueue(acquire_awaiter* w) noexcept {
        if (tail_ != nullptr) {
            tail_->next = w;
        } else {
            head_ = w;
        }
        tail_ = w;
    }

    std::size_t permits_;
    acquire_awaiter* head_ = nullptr;
    acquire_awaiter* tail_ = nullptr;
};

} // namespace hotpath
