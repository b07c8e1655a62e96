// One io_uring per loop: batched submissions, multishot receives into a provided-buffer ring, and the loop's
// thread asleep in io_uring_enter.
#pragma once

#include <hotpath/core/result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include <sys/socket.h>

struct io_uring_sqe;

namespace hotpath::net {

class loop;

// An operation in flight: its completion calls fn(op, res, flags). Lives as long as the operation.
struct uring_op {
    void (*fn)(uring_op* op, int res, unsigned flags) = nullptr;
};

// Owned by a loop and used only on its thread. Preparing operations never makes a system call: they are
// submitted together, with the wait for the next completions, in one io_uring_enter per loop turn, which is
// where the saving over one recv and one send system call per request comes from.
class uring {
public:
    // `entries` completions fit the completion queue, an eighth of that the submission queue. Receive
    // buffers: `buffer_count` (a power of two) of `buffer_bytes` each, shared by all receives. Fails (ENOSYS)
    // without the kernel features hotpath uses, and then available() says false.
    static result<std::unique_ptr<uring>> open(unsigned entries = 4096, unsigned buffer_count = 256,
                                               unsigned buffer_bytes = 4096);
    ~uring();
    uring(const uring&) = delete;
    uring& operator=(const uring&) = delete;

    // Whether io_uring with multishot receive and buffer rings works here (kernel 6.0+, not blocked by a
    // sandbox, not turned off with HOTPATH_IO_URING=off in the environment). Probed once per process on a small
    // ring of its own.
    static bool available() noexcept;

    // Multishot receive on `fd` into the buffer ring. Each completion with res > 0 carries a buffer: read it
    // with buffer_data(flags, res), then give it back with recycle(flags). Without IORING_CQE_F_MORE in
    // flags the receive has ended (EOF, error, cancel, or -ENOBUFS when buffers ran out) and must be re-armed.
    void recv_multishot(int fd, uring_op* op);
    void send(int fd, const void* data, std::size_t bytes, uring_op* op);
    // Multishot accept on a listening socket: each completion's res is a new connected fd (SOCK_CLOEXEC), or
    // -errno; without IORING_CQE_F_MORE the accept has ended and must be re-armed.
    void accept_multishot(int fd, uring_op* op);
    // Connects the non-blocking socket `fd` to `to` (which must stay valid until `op` completes; res is 0 or -errno).
    void connect(int fd, const sockaddr* to, socklen_t length, uring_op* op);
    // Cancels every operation whose op is `target`; `op` completes when the cancel is done.
    void cancel(uring_op* target, uring_op* op);
    // Closes `fd`: inside a batch of completions with the batch's submission instead of a system call of its
    // own, otherwise at once. Nothing may refer to it after.
    void close(int fd);

    std::string_view buffer_data(unsigned flags, int res) const noexcept;
    void recycle(unsigned flags) noexcept;

    // The loop's turn (loop.cpp): reap() dispatches every completion that has arrived, each to its operation;
    // wait() submits what was prepared and, when `sleep`, sleeps in one io_uring_enter until a completion arrives
    // (without, it only collects completions, running their task work); flush() submits without waiting. On the
    // loop's thread.
    void reap();
    void wait(bool sleep);
    void flush();
    // Lets the loop's thread submit (the ring is created disabled, IORING_SETUP_R_DISABLED): called by the loop
    // before its first turn, so that its first turn's work can submit as much as it prepares; wait() also calls it.
    void enable();
    // Ends wait()'s sleep at `at` (time_point::max(): never) through a timerfd read on the ring: a deadline costs
    // a system call only when it changes, not one timer set up and torn down in the kernel per sleep.
    void set_alarm(std::chrono::steady_clock::time_point at);
    // Ends wait()'s sleep; from any thread.
    void wake() noexcept;

private:
    uring();
    io_uring_sqe* get_sqe();
    struct read_watch;
    void watch(read_watch& w);
    static void on_wake(uring_op* o, int res, unsigned flags);
    static void on_alarm(uring_op* o, int res, unsigned flags);

    struct state;
    std::unique_ptr<state> state_;
};

} // namespace hotpath::net
