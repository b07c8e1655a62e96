// One epoll instance per loop, for kernels or sandboxes without io_uring: readiness events dispatched to the
// operations registered for them, a list of operations made ready by the loop itself, the loop's shared read
// buffer, and the loop's thread asleep in epoll_pwait2.
#pragma once

#include <hotpath/core/result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <system_error>
#include <vector>

struct epoll_event;

namespace hotpath::net {

// What a descriptor registered with the epoll calls when it is ready: fn(op, events), events being epoll's
// EPOLLIN, EPOLLOUT, EPOLLRDHUP, EPOLLHUP, EPOLLERR bits, or 0 when the loop itself made the op ready
// (epoll::make_ready). Lives as long as its registration.
struct epoll_op {
    void (*fn)(epoll_op* op, std::uint32_t events) = nullptr;
};

// Owned by a loop and used only on its thread (wake() excepted).
class epoll {
public:
    // Fails with the errno of epoll_create1 or eventfd (out of descriptors).
    static result<std::unique_ptr<epoll>> open(std::size_t read_buffer_bytes = 64 * 1024);
    ~epoll();
    epoll(const epoll&) = delete;
    epoll& operator=(const epoll&) = delete;

    // Registers `fd` for `events` (EPOLLIN, EPOLLOUT, EPOLLET, ...): each readiness calls op->fn. A descriptor
    // that is already ready reports it in the next wait. Errors are epoll_ctl's errno.
    std::error_code add(int fd, std::uint32_t events, epoll_op* op) noexcept;
    // Unregisters `fd`, and forgets `op` (see forget); `fd` stays open.
    void remove(int fd, epoll_op* op) noexcept;
    // Forgets `op`: none of its events already collected and not yet dispatched, nor a make_ready, will call it.
    // Call before destroying an op whose descriptor was registered, or when closing its descriptor (close()
    // unregisters it from epoll by itself: the descriptor is open in no other process).
    void forget(epoll_op* op) noexcept;
    // Calls op->fn(op, 0) in this turn, before the loop sleeps: how a transport resumes reading data it
    // left in its socket, or tells of a write it finished at once, without calling back from inside the call
    // that asked. Each call adds one call.
    void make_ready(epoll_op* op);

    // The loop's read buffer: a transport reads into it and hands the bytes on before returning, so one buffer
    // serves every socket of the loop and an idle connection holds none.
    std::span<char> read_buffer() noexcept { return {buffer_.get(), buffer_bytes_}; }

    // The loop's turn (loop.cpp): wait() sleeps until an event, wake() or `deadline` (time_point::min(): not at
    // all) and collects the events; dispatch() calls their ops; run_ready() calls the ops made ready, until
    // none are, and says whether it called any.
    void wait(std::chrono::steady_clock::time_point deadline);
    void dispatch();
    bool run_ready();
    bool has_ready() const noexcept { return !ready_.empty(); }
    // Ends wait()'s sleep; from any thread.
    void wake() noexcept;

private:
    epoll() = default;
    static void on_wake(epoll_op* op, std::uint32_t events);

    static constexpr int batch_size = 256;

    int fd_ = -1;
    int wake_fd_ = -1;
    epoll_op wake_op_;
    std::unique_ptr<char[]> buffer_;
    std::size_t buffer_bytes_ = 0;
    std::unique_ptr<epoll_event[]> batch_; // collected by wait(), dispatched in order; forgotten ops nulled
    int batch_count_ = 0;
    int batch_next_ = 0;
    std::vector<epoll_op*> ready_;   // made ready since run_ready() last took them
    std::vector<epoll_op*> running_; // what run_ready() is calling; forgotten ones nulled
    std::size_t running_next_ = 0;
    bool pwait2_ = true; // epoll_pwait2 (Linux 5.11) works here; else epoll_wait with milliseconds
};

} // namespace hotpath::net
