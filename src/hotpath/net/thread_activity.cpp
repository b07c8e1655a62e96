// A thread's CPU clock and its /proc syscall file read from another thread, the table of system call names, and
// the judgement of a stall from the looks.
#include <hotpath/net/thread_activity.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

namespace hotpath::net {

namespace {

struct named_call {
    long number;
    std::string_view name;
};

// The blocking system calls a handler is most often found in, by the numbers of the platform built for (x86_64 and
// aarch64 number them differently, and aarch64 lacks the older ones: each is here only where <sys/syscall.h> has it).
// futex is not among them: it is a lock (waits_lock).
constexpr named_call named_calls[] = {
#ifdef SYS_read
    {SYS_read, "read"},
#endif
#ifdef SYS_write
    {SYS_write, "write"},
#endif
#ifdef SYS_pread64
    {SYS_pread64, "pread64"},
#endif
#ifdef SYS_pwrite64
    {SYS_pwrite64, "pwrite64"},
#endif
#ifdef SYS_readv
    {SYS_readv, "readv"},
#endif
#ifdef SYS_writev
    {SYS_writev, "writev"},
#endif
#ifdef SYS_recvfrom
    {SYS_recvfrom, "recvfrom"},
#endif
#ifdef SYS_recvmsg
    {SYS_recvmsg, "recvmsg"},
#endif
#ifdef SYS_sendto
    {SYS_sendto, "sendto"},
#endif
#ifdef SYS_sendmsg
    {SYS_sendmsg, "sendmsg"},
#endif
#ifdef SYS_connect
    {SYS_connect, "connect"},
#endif
#ifdef SYS_accept
    {SYS_accept, "accept"},
#endif
#ifdef SYS_accept4
    {SYS_accept4, "accept4"},
#endif
#ifdef SYS_poll
    {SYS_poll, "poll"},
#endif
#ifdef SYS_ppoll
    {SYS_ppoll, "ppoll"},
#endif
#ifdef SYS_select
    {SYS_select, "select"},
#endif
#ifdef SYS_pselect6
    {SYS_pselect6, "pselect6"},
#endif
#ifdef SYS_epoll_wait
    {SYS_epoll_wait, "epoll_wait"},
#endif
#ifdef SYS_epoll_pwait
    {SYS_epoll_pwait, "epoll_pwait"},
#endif
#ifdef SYS_nanosleep
    {SYS_nanosleep, "nanosleep"},
#endif
#ifdef SYS_clock_nanosleep
    {SYS_clock_nanosleep, "clock_nanosleep"},
#endif
#ifdef SYS_fsync
    {SYS_fsync, "fsync"},
#endif
#ifdef SYS_fdatasync
    {SYS_fdatasync, "fdatasync"},
#endif
#ifdef SYS_sync_file_range
    {SYS_sync_file_range, "sync_file_range"},
#endif
#ifdef SYS_open
    {SYS_open, "open"},
#endif
#ifdef SYS_openat
    {SYS_openat, "openat"},
#endif
#ifdef SYS_flock
    {SYS_flock, "flock"},
#endif
#ifdef SYS_fcntl
    {SYS_fcntl, "fcntl"},
#endif
#ifdef SYS_wait4
    {SYS_wait4, "wait4"},
#endif
#ifdef SYS_waitid
    {SYS_waitid, "waitid"},
#endif
#ifdef SYS_io_uring_enter
    {SYS_io_uring_enter, "io_uring_enter"},
#endif
#ifdef SYS_getrandom
    {SYS_getrandom, "getrandom"},
#endif
#ifdef SYS_msgrcv
    {SYS_msgrcv, "msgrcv"},
#endif
#ifdef SYS_semop
    {SYS_semop, "semop"},
#endif
#ifdef SYS_semtimedop
    {SYS_semtimedop, "semtimedop"},
#endif
};

constexpr std::string_view judged[] = {"computes", "lock", "unknown", "system_call"};
constexpr std::size_t judged_count = std::size(judged);

bool is_futex(long call) noexcept {
#ifdef SYS_futex_waitv
    if (call == SYS_futex_waitv) {
        return true;
    }
#endif
    return call == SYS_futex;
}

} // namespace

thread_ids this_thread_ids() noexcept {
    thread_ids ids;
    ids.tid = static_cast<int>(::gettid());
    if (pthread_getcpuclockid(pthread_self(), &ids.cpu_clock) != 0) {
        ids.tid = 0;
    }
    return ids;
}

std::optional<std::chrono::nanoseconds> thread_cpu_time(clockid_t cpu_clock) noexcept {
    timespec t{};
    if (::clock_gettime(cpu_clock, &t) != 0) {
        return std::nullopt;
    }
    return std::chrono::seconds{t.tv_sec} + std::chrono::nanoseconds{t.tv_nsec};
}

syscall_sample parse_syscall_sample(std::string_view text) noexcept {
    // "running", or "NR ARG1 ... ARG6 SP PC" in a call, or "-1 SP PC" blocked outside one (proc(5)).
    if (text.starts_with("running")) {
        return {syscall_sample::state::running, -1};
    }
    long call = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), call);
    if (r.ec != std::errc{} || (r.ptr != text.data() + text.size() && *r.ptr != ' ' && *r.ptr != '\n')) {
        return {};
    }
    if (call < 0) {
        return {syscall_sample::state::blocked, -1};
    }
    return {syscall_sample::state::in_call, call};
}

syscall_sample look_at_thread(int tid) noexcept {
    if (tid <= 0) {
        return {};
    }
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return {};
    }
    char text[160];
    const ssize_t n = ::read(fd, text, sizeof(text));
    ::close(fd);
    if (n <= 0) {
        return {};
    }
    return parse_syscall_sample(std::string_view(text, static_cast<std::size_t>(n)));
}

std::size_t waiting_count() noexcept {
    return judged_count + std::size(named_calls);
}

std::string_view waiting_name(waiting_index w) noexcept {
    if (w < judged_count) {
        return judged[w];
    }
    return w < waiting_count() ? named_calls[w - judged_count].name : std::string_view();
}

std::size_t waiting_of(std::string_view name) noexcept {
    for (std::size_t w = 0; w < waiting_count(); ++w) {
        if (waiting_name(static_cast<waiting_index>(w)) == name) {
            return w;
        }
    }
    return waiting_count();
}

waiting_index waiting_of_call(long call) noexcept {
    if (is_futex(call)) {
        return waits_lock;
    }
    for (std::size_t i = 0; i < std::size(named_calls); ++i) {
        if (named_calls[i].number == call) {
            return static_cast<waiting_index>(judged_count + i);
        }
    }
    return waits_system_call;
}

void syscall_tally::add(const syscall_sample& s) noexcept {
    switch (s.what) {
    case syscall_sample::state::unreadable:
        return;
    case syscall_sample::state::running:
        ++running;
        return;
    case syscall_sample::state::blocked:
        ++blocked;
        return;
    case syscall_sample::state::in_call:
        break;
    }
    if (is_futex(s.call)) {
        ++futex;
        return;
    }
    for (std::size_t i = 0; i < max_calls; ++i) {
        if (call_counts[i] == 0) {
            calls[i] = s.call;
        }
        if (calls[i] == s.call) {
            ++call_counts[i];
            return;
        }
    }
    ++other_calls;
}

std::uint32_t syscall_tally::total() const noexcept {
    std::uint32_t n = running + futex + blocked + other_calls;
    for (const std::uint32_t c : call_counts) {
        n += c;
    }
    return n;
}

waiting_index judge(const syscall_tally& looks, std::optional<double> cpu_share) noexcept {
    if (cpu_share && *cpu_share >= computes_share) {
        return waits_computes;
    }
    const std::uint64_t n = looks.total();
    const auto most = [n](std::uint64_t count) { return n > 0 && 2 * count >= n; };
    if (most(looks.running)) {
        return waits_computes;
    }
    if (most(looks.futex)) {
        return waits_lock;
    }
    // In system calls other than futex most of the time: the one seen most (a handler's I/O may alternate two).
    std::uint64_t in_calls = looks.other_calls;
    std::size_t top = 0;
    for (std::size_t i = 0; i < syscall_tally::max_calls; ++i) {
        in_calls += looks.call_counts[i];
        if (looks.call_counts[i] > looks.call_counts[top]) {
            top = i;
        }
    }
    if (most(in_calls)) {
        return looks.call_counts[top] >= looks.other_calls && looks.call_counts[top] > 0
                   ? waiting_of_call(looks.calls[top])
                   : waits_system_call;
    }
    return waits_unknown;
}

} // namespace hotpath::net
