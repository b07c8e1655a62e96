// Where a request's time goes while its handler is suspended: the waits it awaits (downstream calls, timers),
// recorded by the awaitables themselves into the request's time_attribution, found through the coroutine chain.
#pragma once

#include <hotpath/core/alloc_count.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace hotpath {

enum class wait_kind : std::uint8_t {
    downstream, // a client call: from its start to its result
    timer,      // sleep_for
    client,     // the client: the next piece of a streamed request body, or room to write a streamed response
    blocking,   // a call on a blocking pool (net/blocking_pool.hpp): from its queueing to its result
};

// One request's waits, as intervals: the union of all waits (the handler was suspended on something known),
// the union of downstream calls, the sum of each call's own length (their mean concurrency is that sum over
// the union), and how many calls were in flight at most. The server owns one per request in flight (in its
// request state) and hands it to the handler's task (task::attribute_to); every task the handler awaits, and
// every child of when_all or bounded_fan_out, inherits it. Written on the request's loop only; never allocates.
//
// The handler's own time is what is left of its wall time after the waits: on the loop, or suspended on
// something this does not know of (an awaitable of the application's own).
struct time_attribution {
    using clock = std::chrono::steady_clock;

    std::uint32_t waits_in_flight = 0;
    std::uint32_t calls_in_flight = 0;
    std::uint32_t calls = 0;
    std::uint32_t max_calls_in_flight = 0;
    std::int64_t waiting_since_ns = 0; // when waits_in_flight went from 0 to 1
    std::int64_t calls_since_ns = 0;   // when calls_in_flight went from 0 to 1
    std::uint64_t waited_ns = 0;       // union of all waits, ended ones
    std::uint64_t downstream_ns = 0;   // union of downstream calls, ended ones
    std::uint64_t call_ns = 0;         // sum of each downstream call's length
    // With the allocation counter linked in (core/alloc_count.hpp): the loop thread's allocations while the
    // request was not waiting, from dispatch on. Counted at the edges of waits.
    alloc::counts allocated;
    alloc::counts allocated_at; // the thread's counts when the latest stretch of not waiting began
    // Who runs now, for a stall watchdog: at each wait's end (the request's code runs next), `running` is set to
    // the loop's turn number (`turns`: turns ended, so the running turn's number) in the high half and `route` in
    // the low half. Set by the server after start(); null: not told.
    std::atomic<std::uint64_t>* running = nullptr;
    const std::atomic<std::uint64_t>* turns = nullptr;
    std::uint32_t route = 0;

    static std::int64_t now_ns() noexcept {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
    }

    // A new request, dispatched now: everything at zero (who runs included), allocations counted from here.
    void start() noexcept {
        *this = {};
        if (alloc::counting()) {
            allocated_at = alloc::this_thread();
        }
    }

    void begin_wait(wait_kind kind, std::int64_t now) noexcept {
        if (waits_in_flight++ == 0) {
            waiting_since_ns = now;
            take_allocations();
        }
        if (kind == wait_kind::downstream) {
            ++calls;
            if (calls_in_flight++ == 0) {
                calls_since_ns = now;
            }
            max_calls_in_flight = std::max(max_calls_in_flight, calls_in_flight);
        }
    }

    void end_wait(wait_kind kind, std::int64_t started, std::int64_t now) noexcept {
        if (running != nullptr) {
            running->store(turns->load(std::memory_order_relaxed) << 32 | route, std::memory_order_relaxed);
        }
        if (kind == wait_kind::downstream) {
            call_ns += static_cast<std::uint64_t>(now - started);
            if (--calls_in_flight == 0) {
                downstream_ns += static_cast<std::uint64_t>(now - calls_since_ns);
            }
        }
        if (--waits_in_flight == 0) {
            waited_ns += static_cast<std::uint64_t>(now - waiting_since_ns);
            if (alloc::counting()) {
                allocated_at = alloc::this_thread();
            }
        }
    }

    // The request's handler is done: the allocations since its latest wait (or its dispatch) are its own.
    void finish() noexcept { take_allocations(); }

private:
    void take_allocations() noexcept {
        if (alloc::counting()) {
            const alloc::counts now = alloc::this_thread();
            allocated.allocations += now.allocations - allocated_at.allocations;
            allocated.bytes += now.bytes - allocated_at.bytes;
            allocated_at = now;
        }
    }
};

// A wait of one kind by the request behind `a` (none when null: a call from a load worker, a test, a loop of
// the application's own), from construction to destruction. Lives in the frame of the coroutine that waits,
// so that destroying a suspended request (its peer went away) ends its waits with it.
class attributed_wait {
public:
    attributed_wait(time_attribution* a, wait_kind kind) noexcept : attribution_(a), kind_(kind) {
        if (attribution_ != nullptr) {
            started_ns_ = time_attribution::now_ns();
            attribution_->begin_wait(kind_, started_ns_);
        }
    }
    ~attributed_wait() { end(); }
    attributed_wait(const attributed_wait&) = delete;
    attributed_wait& operator=(const attributed_wait&) = delete;

    // Ends the wait now (once; the destructor then does nothing).
    void end() noexcept {
        if (attribution_ != nullptr) {
            attribution_->end_wait(kind_, started_ns_, time_attribution::now_ns());
            attribution_ = nullptr;
        }
    }

private:
    time_attribution* attribution_;
    wait_kind kind_;
    std::int64_t started_ns_ = 0;
};

} // namespace hotpath
