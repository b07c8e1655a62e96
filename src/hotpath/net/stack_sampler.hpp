// A backtrace of an event loop's thread taken from outside while it is stalled: the watchdog's thread signals it,
// and the signal handler records where the thread is, so a stall line can say which code held the loop.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace hotpath::net {

// Handles one signal (SIGRTMIN + 1, installed on first attach with SA_RESTART). Being signalled interrupts what the
// thread is doing for a few microseconds: system calls restart (SA_RESTART), except those POSIX says return EINTR
// whatever the flag (nanosleep, poll, epoll_wait), which a blocking handler then sees as an early return. The
// watchdog asks at most once per loop per second, only for stalls it will report.
class stack_sampler {
public:
    static constexpr int max_frames = 24;

    // On the thread to be sampled, before and after its work. A sampler watches one thread at a time.
    void attach_this_thread() noexcept;
    void detach_this_thread() noexcept;
    // From another thread: signals the attached thread to record its stack; false when none is attached.
    bool request() noexcept;
    // The frames the thread recorded since the latest request, innermost first, as "0x1a2b libc.so.6+0x3c4d ...":
    // offsets into the program (for `addr2line -Cfpe PROGRAM`), or into a shared library named before its offset;
    // "" when the thread has not answered (yet).
    std::string frames() const;
    // The program's path, for the addr2line hint.
    static std::string program_path();
    // The signal's handler (installed by the first attach).
    static void on_signal(int) noexcept;

private:
    std::mutex mutex_; // request() and detach_this_thread(): a thread is never signalled after it left
    pthread_t thread_{};
    bool attached_ = false;
    void* frames_[max_frames] = {};
    // Released by request() before it signals, acquired by the handler before it writes frames_: the reader's
    // earlier look at frames_ happens before the next write (a signal alone orders nothing for the memory model).
    std::atomic<std::uint64_t> requests_{0};
    std::atomic<int> depth_{-1}; // released by the handler after it wrote frames_
};

} // namespace hotpath::net
