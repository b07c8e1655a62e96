// The per-loop timer heap.
#include <hotpath/net/timer.hpp>

#include <hotpath/net/loop.hpp>

#include <utility>

namespace hotpath::net {

timer::timer(loop& owner) noexcept : queue_(owner.timers()) {}

timer::~timer() {
    cancel();
}

void timer::arm(clock::time_point at, std::function<void()> fn) {
    fn_ = std::move(fn);
    if (armed()) {
        queue_.remove(*this);
    }
    at_ = at;
    queue_.push(*this);
}

void timer::rearm(clock::time_point at) {
    if (!armed()) {
        return;
    }
    queue_.remove(*this);
    at_ = at;
    queue_.push(*this);
}

void timer::cancel() noexcept {
    if (armed()) {
        queue_.remove(*this);
    }
}

timer_queue::~timer_queue() {
    for (timer* t : heap_) {
        t->slot_ = timer::not_queued;
    }
}

void timer_queue::push(timer& t) {
    t.order_ = armed_++;
    heap_.push_back(&t);
    t.slot_ = heap_.size() - 1;
    sift_up(t.slot_);
}

void timer_queue::remove(timer& t) noexcept {
    const std::size_t i = t.slot_;
    t.slot_ = timer::not_queued;
    timer* last = heap_.back();
    heap_.pop_back();
    if (last == &t) {
        return;
    }
    place(i, last);
    sift_up(i);
    sift_down(last->slot_);
}

void timer_queue::sift_up(std::size_t i) noexcept {
    timer* t = heap_[i];
    while (i > 0) {
        const std::size_t parent = (i - 1) / 2;
        if (!before(t, heap_[parent])) {
            break;
        }
        place(i, heap_[parent]);
        i = parent;
    }
    place(i, t);
}

void timer_queue::sift_down(std::size_t i) noexcept {
    timer* t = heap_[i];
    const std::size_t n = heap_.size();
    for (;;) {
        std::size_t child = 2 * i + 1;
        if (child >= n) {
            break;
        }
        if (child + 1 < n && before(heap_[child + 1], heap_[child])) {
            ++child;
        }
        if (!before(heap_[child], t)) {
            break;
        }
        place(i, heap_[child]);
        i = child;
    }
    place(i, t);
}

std::size_t timer_queue::run_due(clock::time_point now) {
    std::size_t fired = 0;
    while (!heap_.empty() && heap_.front()->at_ <= now) {
        timer& t = *heap_.front();
        remove(t);
        ++fired;
        // Moved out first: the callback may re-arm this timer with a new callback, or destroy its owner.
        auto fn = std::move(t.fn_);
        fn();
    }
    return fired;
}

} // namespace hotpath::net
