// cancel_signal: tells the operations a piece of work started that it was abandoned (a peer went away).
#pragma once

namespace hotpath {

// A one-shot signal on one event loop. Operations attach a cancel_slot while they wait; cancel() calls each
// attached slot once, in attachment order, and leaves the signal cancelled until reset(). Not thread-safe;
// allocates nothing (slots are intrusive and live in the waiting operation). A slot's callback runs inside
// cancel(), so it should only record the cancellation and schedule the real work (see client's calls).
class cancel_slot {
public:
    using callback = void (*)(cancel_slot& self) noexcept;

    explicit cancel_slot(callback fn) noexcept : fn_(fn) {}
    ~cancel_slot();
    cancel_slot(const cancel_slot&) = delete;
    cancel_slot& operator=(const cancel_slot&) = delete;

    bool attached() const noexcept { return signal_ != nullptr; }
    void detach() noexcept;

private:
    friend class cancel_signal;
    callback fn_;
    class cancel_signal* signal_ = nullptr;
    cancel_slot* prev_ = nullptr;
    cancel_slot* next_ = nullptr;
};

class cancel_signal {
public:
    cancel_signal() noexcept = default;
    ~cancel_signal() {
        while (head_ != nullptr) {
            head_->detach();
        }
    }
    cancel_signal(const cancel_signal&) = delete;
    cancel_signal& operator=(const cancel_signal&) = delete;

    bool cancelled() const noexcept { return cancelled_; }

    // Attaches `slot` (detaching it from any other signal). On a signal already cancelled, the slot's callback
    // runs now, and it stays detached.
    void attach(cancel_slot& slot) noexcept {
        slot.detach();
        if (cancelled_) {
            slot.fn_(slot);
            return;
        }
        slot.signal_ = this;
        slot.prev_ = tail_;
        slot.next_ = nullptr;
        if (tail_ != nullptr) {
            tail_->next_ = &slot;
        } else {
            head_ = &slot;
        }
        tail_ = &slot;
    }

    // Cancels: detaches every slot and calls it. Later cancel() calls do nothing until reset().
    void cancel() noexcept {
        if (cancelled_) {
            return;
        }
        cancelled_ = true;
        while (cancel_slot* s = head_) {
            s->detach();
            s->fn_(*s);
        }
    }

    // Ready for the next piece of work (a connection's next request); attached slots stay attached.
    void reset() noexcept { cancelled_ = false; }

private:
    friend class cancel_slot;
    void unlink(cancel_slot& s) noexcept {
        (s.prev_ != nullptr ? s.prev_->next_ : head_) = s.next_;
        (s.next_ != nullptr ? s.next_->prev_ : tail_) = s.prev_;
        s.prev_ = s.next_ = nullptr;
        s.signal_ = nullptr;
    }

    cancel_slot* head_ = nullptr;
    cancel_slot* tail_ = nullptr;
    bool cancelled_ = false;
};

// Passes `from`'s cancellation on to `to` while it lives (a fan-out's own signal following the inbound
// request's): attached to `from` at construction, so a `from` already cancelled cancels `to` at once. Both
// signals must outlive it and belong to one loop. `to`'s slots then run inside `from`'s cancel(), so they too
// should only record and schedule. Allocates nothing.
class cancel_forward {
public:
    cancel_forward(cancel_signal& from, cancel_signal& to) noexcept : slot_(to) { from.attach(slot_); }
    cancel_forward(const cancel_forward&) = delete;
    cancel_forward& operator=(const cancel_forward&) = delete;

private:
    struct forward_slot : cancel_slot {
        explicit forward_slot(cancel_signal& t) noexcept
            : cancel_slot([](cancel_slot& s) noexcept { static_cast<forward_slot&>(s).to.cancel(); }), to(t) {}
        cancel_signal& to;
    } slot_;
};

inline cancel_slot::~cancel_slot() {
    detach();
}

inline void cancel_slot::detach() noexcept {
    if (signal_ != nullptr) {
        signal_->unlink(*this);
    }
}

} // namespace hotpath
