// Timers of one event loop: each a deadline and a callback, kept in one min-heap per loop; none allocates.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace hotpath::net {

using clock = std::chrono::steady_clock;

class loop;
class timer_queue;

// A deadline on its loop: arm() makes it fire once at `at` (callbacks run on the loop's thread, in deadline
// order, never from inside arm() or cancel()); cancel() or the destructor disarm it. Re-arming replaces the
// earlier deadline. A callback may arm or cancel any timer of its loop, itself included. Arming moves no memory
// of its own: the callback is a std::function whose small captures (a pointer or two) are stored inline, and the
// heap's slot array grows only to the largest number of timers ever armed at once.
class timer {
public:
    // A timer of `owner`, which must outlive it; use it on that loop's thread only.
    explicit timer(loop& owner) noexcept;
    ~timer();
    timer(const timer&) = delete;
    timer& operator=(const timer&) = delete;

    void arm(clock::time_point at, std::function<void()> fn);
    void arm_after(clock::duration after, std::function<void()> fn) { arm(clock::now() + after, std::move(fn)); }
    // Changes the deadline of an armed timer, keeping its callback; a no-op when disarmed.
    void rearm(clock::time_point at);
    void cancel() noexcept;
    bool armed() const noexcept { return slot_ != not_queued; }
    clock::time_point deadline() const noexcept { return at_; }

private:
    friend class timer_queue;
    static constexpr std::size_t not_queued = static_cast<std::size_t>(-1);

    timer_queue& queue_;
    clock::time_point at_{};
    std::size_t slot_ = not_queued;
    std::uint64_t order_ = 0; // ties between equal deadlines go to the earlier armed
    std::function<void()> fn_;
};

// A loop's timers: a binary min-heap on (deadline, arming order); push, pop and removal are O(log n).
class timer_queue {
public:
    timer_queue() = default;
    ~timer_queue();
    timer_queue(const timer_queue&) = delete;
    timer_queue& operator=(const timer_queue&) = delete;

    // The earliest deadline, or time_point::max() with none armed.
    clock::time_point next() const noexcept { return heap_.empty() ? clock::time_point::max() : heap_.front()->at_; }
    bool empty() const noexcept { return heap_.empty(); }
    std::size_t size() const noexcept { return heap_.size(); }
    // Fires every timer due at `now`, in order; timers armed by those callbacks for `now` or earlier fire in the
    // same call. Returns how many fired.
    std::size_t run_due(clock::time_point now);

private:
    friend class timer;
    void push(timer& t);
    void remove(timer& t) noexcept;
    void sift_up(std::size_t i) noexcept;
    void sift_down(std::size_t i) noexcept;
    bool before(const timer* a, const timer* b) const noexcept {
        return a->at_ < b->at_ || (a->at_ == b->at_ && a->order_ < b->order_);
    }
    void place(std::size_t i, timer* t) noexcept {
        heap_[i] = t;
        t->slot_ = i;
    }

    std::vector<timer*> heap_;
    std::uint64_t armed_ = 0;
};

} // namespace hotpath::net
