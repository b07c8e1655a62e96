// The per-loop epoll: registration, the sleep in epoll_pwait2, the dispatch of events and of ops made ready.
#include <hotpath/net/epoll.hpp>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hotpath::net {

namespace {

std::error_code errno_code(int e) noexcept {
    return {e, std::system_category()};
}

} // namespace

result<std::unique_ptr<epoll>> epoll::open(std::size_t read_buffer_bytes) {
    std::unique_ptr<epoll> e(new epoll());
    e->fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (e->fd_ < 0) {
        return errno_code(errno);
    }
    e->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (e->wake_fd_ < 0) {
        return errno_code(errno);
    }
    e->wake_op_.fn = &epoll::on_wake;
    // Edge-triggered: a wake-up is one event however many posts wrote before the loop looked, and the counter
    // is read back (on_wake) only to keep it from overflowing.
    if (auto ec = e->add(e->wake_fd_, EPOLLIN | EPOLLET, &e->wake_op_)) {
        return ec;
    }
    // Untouched pages cost no memory: only what the largest read filled becomes resident.
    e->buffer_.reset(new char[read_buffer_bytes]);
    e->buffer_bytes_ = read_buffer_bytes;
    e->batch_.reset(new epoll_event[batch_size]);
    return e;
}

epoll::~epoll() {
    if (wake_fd_ >= 0) {
        ::close(wake_fd_);
    }
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

std::error_code epoll::add(int fd, std::uint32_t events, epoll_op* op) noexcept {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = op;
    if (::epoll_ctl(fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        return errno_code(errno);
    }
    return {};
}

void epoll::remove(int fd, epoll_op* op) noexcept {
    ::epoll_ctl(fd_, EPOLL_CTL_DEL, fd, nullptr);
    forget(op);
}

// Events collected in this turn and ops made ready may name an op whose owner is gone by the time they come up:
// they are nulled here. The lists are short (a batch of at most 256), and ops are forgotten when a descriptor
// closes, not per request.
void epoll::forget(epoll_op* op) noexcept {
    for (int i = batch_next_; i < batch_count_; ++i) {
        if (batch_[i].data.ptr == op) {
            batch_[i].data.ptr = nullptr;
        }
    }
    for (std::size_t i = running_next_; i < running_.size(); ++i) {
        if (running_[i] == op) {
            running_[i] = nullptr;
        }
    }
    std::erase(ready_, op);
}

void epoll::make_ready(epoll_op* op) {
    ready_.push_back(op);
}

void epoll::on_wake(epoll_op*, std::uint32_t) {
    // Nothing to do here: the loop's turn looks at its posted queue after every wait.
}

void epoll::wake() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof(one));
}

void epoll::wait(std::chrono::steady_clock::time_point deadline) {
    using clock = std::chrono::steady_clock;
    int n = 0;
    for (;;) {
        if (pwait2_) {
            timespec timeout{};
            timespec* wait_for = nullptr;
            if (deadline == clock::time_point::min()) {
                wait_for = &timeout;
            } else if (deadline != clock::time_point::max()) {
                const auto left = std::max<std::int64_t>(0, (deadline - clock::now()).count());
                timeout.tv_sec = static_cast<time_t>(left / 1'000'000'000);
                timeout.tv_nsec = static_cast<long>(left % 1'000'000'000);
                wait_for = &timeout;
            }
            n = ::epoll_pwait2(fd_, batch_.get(), batch_size, wait_for, nullptr);
            if (n < 0 && errno == ENOSYS) {
                pwait2_ = false;
                continue;
            }
        } else {
            int ms = -1;
            if (deadline == clock::time_point::min()) {
                ms = 0;
            } else if (deadline != clock::time_point::max()) {
                // Rounded up: waking before the deadline would only make the loop wait again.
                const auto left = std::max<std::int64_t>(0, (deadline - clock::now()).count());
                ms = static_cast<int>(std::min<std::int64_t>((left + 999'999) / 1'000'000, 1'000'000));
            }
            n = ::epoll_wait(fd_, batch_.get(), batch_size, ms);
        }
        if (n >= 0) {
            break;
        }
        // A signal ends the sleep: the turn goes on. Anything else means the epoll is broken.
        if (errno == EINTR) {
            n = 0;
            break;
        }
        std::fprintf(stderr, "hotpath: epoll_wait failed: %s\n", std::strerror(errno));
        std::abort();
    }
    batch_count_ = n;
    batch_next_ = 0;
}

void epoll::dispatch() {
    while (batch_next_ < batch_count_) {
        const epoll_event& ev = batch_[batch_next_++];
        if (auto* op = static_cast<epoll_op*>(ev.data.ptr)) {
            op->fn(op, ev.events);
        }
    }
    batch_count_ = 0;
    batch_next_ = 0;
}

bool epoll::run_ready() {
    if (ready_.empty()) {
        return false;
    }
    while (!ready_.empty()) {
        running_.swap(ready_);
        running_next_ = 0;
        while (running_next_ < running_.size()) {
            epoll_op* op = running_[running_next_++];
            if (op != nullptr) {
                op->fn(op, 0);
            }
        }
        running_.clear();
        running_next_ = 0;
    }
    return true;
}

} // namespace hotpath::net
