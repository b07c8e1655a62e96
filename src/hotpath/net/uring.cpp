// The per-loop io_uring: setup, the provided-buffer ring, batched submission, the sleep in io_uring_enter and the
// dispatch of completions.
#include <hotpath/net/uring.hpp>

#include <hotpath/net/loop.hpp>

#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace hotpath::net {

namespace {

constexpr int buffer_group = 0;

std::error_code errno_code(int e) {
    return {e, std::system_category()};
}

// Sets a flag for as long as it lives, exceptions included.
class flag_scope {
public:
    explicit flag_scope(bool& flag) noexcept : flag_(flag) { flag_ = true; }
    ~flag_scope() { flag_ = false; }
    flag_scope(const flag_scope&) = delete;
    flag_scope& operator=(const flag_scope&) = delete;

private:
    bool& flag_;
};

} // namespace

// A read kept armed on an eventfd or timerfd: its completion ends the loop's sleep.
struct uring::read_watch : uring_op {
    uring* self = nullptr;
    int fd = -1;
    std::uint64_t count = 0;
    bool armed = false;
};

struct uring::state {
    io_uring ring{};
    bool ring_ready = false;
    io_uring_buf_ring* buffers_ring = nullptr;
    std::size_t buffers_ring_bytes = 0;
    std::unique_ptr<char[]> buffers;
    unsigned buffer_count = 0;
    unsigned buffer_bytes = 0;
    int mask = 0;
    bool enabled = false; // IORING_SETUP_R_DISABLED until the loop's thread enables it
    bool reaping = false; // completions are being dispatched
    // Completions taken off a full completion queue so that a submission could go on (get_sqe): dispatched by
    // the next reap(), before the ring's, in their order. Empty but for bursts (thousands of connects at once).
    struct completion {
        uring_op* op;
        int res;
        unsigned flags;
    };
    std::vector<completion> deferred;
    read_watch wake;  // eventfd written by wake()
    read_watch alarm; // timerfd (CLOCK_MONOTONIC, steady_clock's) set to the loop's next deadline
    std::chrono::steady_clock::time_point alarm_at = std::chrono::steady_clock::time_point::max();
};

uring::uring() : state_(std::make_unique<state>()) {
    state_->wake.fn = &uring::on_wake;
    state_->wake.self = this;
    state_->alarm.fn = &uring::on_alarm;
    state_->alarm.self = this;
}

uring::~uring() {
    auto& s = *state_;
    for (const int fd : {s.wake.fd, s.alarm.fd}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    if (s.ring_ready) {
        if (s.buffers_ring != nullptr) {
            io_uring_unregister_buf_ring(&s.ring, buffer_group);
        }
        io_uring_queue_exit(&s.ring);
    }
    if (s.buffers_ring != nullptr) {
        ::munmap(s.buffers_ring, s.buffers_ring_bytes);
    }
}

namespace {

// Multishot receive and provided-buffer rings came with Linux 6.0, as did IORING_OP_SEND_ZC: its presence
// stands for the rest.
bool supports_what_we_use(io_uring& ring) noexcept {
    bool ok = false;
    if (io_uring_probe* probe = io_uring_get_probe_ring(&ring)) {
        ok = io_uring_opcode_supported(probe, IORING_OP_SEND_ZC) != 0;
        io_uring_free_probe(probe);
    }
    return ok;
}

// -1 unknown, 0 no, 1 yes: set by the first open() or available(), whichever comes first.
std::atomic<int> known_available{-1};

} // namespace

// HOTPATH_IO_URING=off makes the process behave as if the kernel had no io_uring: how the automatic fallback to
// epoll is tested, and a way out should a kernel's io_uring misbehave.
static bool disabled_by_environment() noexcept {
    const char* v = std::getenv("HOTPATH_IO_URING");
    return v != nullptr && std::strcmp(v, "off") == 0;
}

bool uring::available() noexcept {
    if (const int known = known_available.load(std::memory_order_relaxed); known >= 0) {
        return known == 1;
    }
    if (disabled_by_environment()) {
        known_available.store(0, std::memory_order_relaxed);
        return false;
    }
    io_uring ring{};
    bool ok = false;
    if (io_uring_queue_init(8, &ring, 0) == 0) {
        ok = supports_what_we_use(ring);
        io_uring_queue_exit(&ring);
    }
    known_available.store(ok ? 1 : 0, std::memory_order_relaxed);
    return ok;
}

result<std::unique_ptr<uring>> uring::open(unsigned entries, unsigned buffer_count, unsigned buffer_bytes) {
    const int known = known_available.load(std::memory_order_relaxed);
    if (known == 0 || (known < 0 && disabled_by_environment())) {
        known_available.store(0, std::memory_order_relaxed);
        return errno_code(ENOSYS);
    }
    std::unique_ptr<uring> u(new uring());
    auto& s = *u->state_;
    io_uring_params params{};
    // The loop sleeps in io_uring_enter on its own thread (run()), so completions' task work can wait for it
    // there: DEFER_TASKRUN with SINGLE_ISSUER (Linux 6.1) runs it inside that call, with no interrupt of the
    // thread and no trip through signal delivery; without them, COOP_TASKRUN still spares the interrupt. The
    // ring is opened disabled and enabled by run(), so its single issuer is the loop's thread even when the
    // ring was opened on another. The submission queue is flushed whenever it fills, so a small one does; the
    // completion queue is sized for a burst from every connection (the kernel keeps overflowing completions
    // rather than dropping them, IORING_FEAT_NODROP).
    params.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE |
                   IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED;
    params.cq_entries = entries;
    int r = io_uring_queue_init_params(std::max(8u, entries / 8), &s.ring, &params);
    if (r == -EINVAL) {
        params = {};
        params.flags =
            IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE | IORING_SETUP_R_DISABLED;
        params.cq_entries = entries;
        r = io_uring_queue_init_params(std::max(8u, entries / 8), &s.ring, &params);
    }
    if (r < 0) {
        if (r == -ENOSYS || r == -EPERM) {
            known_available.store(0, std::memory_order_relaxed);
        }
        return errno_code(-r);
    }
    s.ring_ready = true;
    const bool ok = supports_what_we_use(s.ring);
    known_available.store(ok ? 1 : 0, std::memory_order_relaxed);
    if (!ok) {
        return errno_code(ENOSYS);
    }

    s.buffer_count = buffer_count;
    s.buffer_bytes = buffer_bytes;
    s.mask = io_uring_buf_ring_mask(buffer_count);
    s.buffers_ring_bytes = buffer_count * sizeof(io_uring_buf);
    void* mem = ::mmap(nullptr, s.buffers_ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mem == MAP_FAILED) {
        return errno_code(errno);
    }
    s.buffers_ring = static_cast<io_uring_buf_ring*>(mem);
    io_uring_buf_ring_init(s.buffers_ring);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<unsigned long>(s.buffers_ring);
    reg.ring_entries = buffer_count;
    reg.bgid = buffer_group;
    if (r = io_uring_register_buf_ring(&s.ring, &reg, 0); r < 0) {
        ::munmap(s.buffers_ring, s.buffers_ring_bytes);
        s.buffers_ring = nullptr;
        return errno_code(-r);
    }
    // Untouched pages cost no memory: only buffers the kernel has filled become resident.
    s.buffers.reset(new char[static_cast<std::size_t>(buffer_count) * buffer_bytes]);
    for (unsigned i = 0; i < buffer_count; ++i) {
        io_uring_buf_ring_add(s.buffers_ring, s.buffers.get() + static_cast<std::size_t>(i) * buffer_bytes,
                              buffer_bytes, static_cast<unsigned short>(i), s.mask, static_cast<int>(i));
    }
    io_uring_buf_ring_advance(s.buffers_ring, static_cast<int>(buffer_count));

    s.wake.fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s.wake.fd < 0) {
        return errno_code(errno);
    }
    s.alarm.fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (s.alarm.fd < 0) {
        return errno_code(errno);
    }
    return u;
}

// A full submission queue is submitted to make room: back-pressure, not an error. The kernel refuses to take more
// (-EBUSY, -EAGAIN) while completions wait that its completion queue cannot hold; those are then moved off the
// ring into `deferred` (reap() dispatches them first) and the submission tried again, so a burst of thousands of
// operations in one turn (a load opening 3,000 connections) goes through instead of ending the process. Before
// the loop's thread has enabled the ring nothing can be submitted; the queue holds far more than is prepared
// before a loop runs (its listener's accept), so a full one there ends the process with a message.
io_uring_sqe* uring::get_sqe() {
    auto& s = *state_;
    io_uring_sqe* sqe = io_uring_get_sqe(&s.ring);
    for (int tries = 0; sqe == nullptr && s.enabled && tries < 64; ++tries) {
        const int r = io_uring_submit(&s.ring);
        if (r < 0 && r != -EAGAIN && r != -EBUSY && r != -EINTR) {
            std::fprintf(stderr, "hotpath: io_uring submission failed: %s\n", std::strerror(-r));
            std::abort();
        }
        sqe = io_uring_get_sqe(&s.ring);
        if (sqe == nullptr && (r == -EBUSY || r == -EAGAIN)) {
            unsigned head = 0;
            unsigned n = 0;
            io_uring_cqe* cqe = nullptr;
            io_uring_for_each_cqe(&s.ring, head, cqe) {
                s.deferred.push_back({static_cast<uring_op*>(io_uring_cqe_get_data(cqe)), cqe->res, cqe->flags});
                ++n;
            }
            io_uring_cq_advance(&s.ring, n);
        }
    }
    if (sqe == nullptr) {
        std::fprintf(stderr, "hotpath: io_uring submission queue full and not submittable\n");
        std::abort();
    }
    return sqe;
}

void uring::recv_multishot(int fd, uring_op* op) {
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_recv_multishot(sqe, fd, nullptr, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = buffer_group;
    io_uring_sqe_set_data(sqe, op);
}

void uring::send(int fd, const void* data, std::size_t bytes, uring_op* op) {
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_send(sqe, fd, data, bytes, MSG_NOSIGNAL);
    io_uring_sqe_set_data(sqe, op);
}

void uring::accept_multishot(int fd, uring_op* op) {
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_multishot_accept(sqe, fd, nullptr, nullptr, SOCK_CLOEXEC);
    io_uring_sqe_set_data(sqe, op);
}

void uring::connect(int fd, const sockaddr* to, socklen_t length, uring_op* op) {
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_connect(sqe, fd, to, length);
    io_uring_sqe_set_data(sqe, op);
}

void uring::cancel(uring_op* target, uring_op* op) {
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_cancel(sqe, target, IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data(sqe, op);
}

void uring::close(int fd) {
    // Outside a batch of completions the close would need a submission of its own, which costs the same system
    // call, and a posted flush could be dropped by a loop that stops first: close at once.
    if (!state_->reaping) {
        ::close(fd);
        return;
    }
    // A close fails only for a descriptor that is not open, which would be a bug here: nothing to report.
    static uring_op ignore{[](uring_op*, int, unsigned) {}};
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_close(sqe, fd);
    sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
    io_uring_sqe_set_data(sqe, &ignore);
}

std::string_view uring::buffer_data(unsigned flags, int res) const noexcept {
    const unsigned id = flags >> IORING_CQE_BUFFER_SHIFT;
    return {state_->buffers.get() + static_cast<std::size_t>(id) * state_->buffer_bytes, static_cast<std::size_t>(res)};
}

void uring::recycle(unsigned flags) noexcept {
    auto& s = *state_;
    const unsigned id = flags >> IORING_CQE_BUFFER_SHIFT;
    io_uring_buf_ring_add(s.buffers_ring, s.buffers.get() + static_cast<std::size_t>(id) * s.buffer_bytes,
                          s.buffer_bytes, static_cast<unsigned short>(id), s.mask, 0);
    io_uring_buf_ring_advance(s.buffers_ring, 1);
}

void uring::wake() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(state_->wake.fd, &one, sizeof(one));
}

void uring::watch(read_watch& w) {
    if (w.armed) {
        return;
    }
    w.armed = true;
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_read(sqe, w.fd, &w.count, sizeof(w.count), 0);
    io_uring_sqe_set_data(sqe, &w);
}

// Another thread posted or stopped: the loop's turn looks at its queue; read the next wake-up.
void uring::on_wake(uring_op* o, int, unsigned) {
    auto& w = *static_cast<read_watch*>(o);
    w.armed = false;
    w.self->watch(w);
}

// The deadline passed: the loop's turn runs its due timers and sets the next one.
void uring::on_alarm(uring_op* o, int, unsigned) {
    auto& w = *static_cast<read_watch*>(o);
    w.armed = false;
    w.self->state_->alarm_at = std::chrono::steady_clock::time_point::max();
    w.self->watch(w);
}

void uring::set_alarm(std::chrono::steady_clock::time_point at) {
    auto& s = *state_;
    if (at == s.alarm_at) {
        return;
    }
    s.alarm_at = at;
    itimerspec when{};
    if (at != std::chrono::steady_clock::time_point::max()) {
        const auto ns = std::max<std::int64_t>(1, at.time_since_epoch().count()); // 0 would disarm
        when.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
        when.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    }
    ::timerfd_settime(s.alarm.fd, TFD_TIMER_ABSTIME, &when, nullptr);
}

// The single issuer of a ring opened with SINGLE_ISSUER is the thread that enables it: the loop's, even when the
// ring was opened by server::start on the main thread.
void uring::enable() {
    auto& s = *state_;
    if (s.enabled) {
        return;
    }
    // Not io_uring_enable_rings(): liburing 2.3's shared library lacks it.
    if (::syscall(__NR_io_uring_register, s.ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0) < 0) {
        std::fprintf(stderr, "hotpath: cannot enable io_uring: %s\n", std::strerror(errno));
        std::abort();
    }
    s.enabled = true;
    watch(s.wake);
    watch(s.alarm);
}

void uring::wait(bool sleep) {
    auto& s = *state_;
    enable();
    sleep = sleep && s.deferred.empty(); // completions already here: no sleep
    int r = 0;
    for (int tries = 0; tries < 3; ++tries) {
        if (sleep) {
            r = io_uring_submit_and_wait(&s.ring, 1);
        } else {
            __kernel_timespec now{0, 0}; // no sleep, but the kernel still runs the completions' task work
            io_uring_cqe* first = nullptr;
            r = io_uring_submit_and_wait_timeout(&s.ring, &first, 1, &now, nullptr);
        }
        // A signal, a deadline, or the kernel short of memory for a moment: the turn goes on (it reaps what
        // there is and comes back). Anything else means the ring is broken.
        if (r >= 0 || r == -EINTR || r == -ETIME || r == -EBUSY || r == -EAGAIN) {
            return;
        }
        if (r != -ENOMEM) {
            break;
        }
    }
    std::fprintf(stderr, "hotpath: io_uring_enter failed: %s\n", std::strerror(-r));
    std::abort();
}

void uring::flush() {
    auto& s = *state_;
    if (s.enabled) {
        io_uring_submit(&s.ring);
    }
}

// Dispatches every completion in batches, each to its operation: those get_sqe() took off a full queue first.
void uring::reap() {
    auto& s = *state_;
    std::array<state::completion, 256> batch;
    // An exception escaping a completion ends the loop (the rest of the batch is lost with it); closes
    // prepared later, from the loop's destructor, must then be made at once again.
    const flag_scope reaping(s.reaping);
    std::size_t n = batch.size();
    while (n == batch.size() || !s.deferred.empty()) {
        if (!s.deferred.empty()) {
            // Swapped out first: a completion dispatched here may defer more (they wait for the next round).
            std::vector<state::completion> now;
            now.swap(s.deferred);
            for (const auto& c : now) {
                c.op->fn(c.op, c.res, c.flags);
            }
            now.clear();
            if (s.deferred.empty()) {
                s.deferred.swap(now); // keep the capacity
            }
        }
        n = 0;
        unsigned head = 0;
        io_uring_cqe* cqe = nullptr;
        io_uring_for_each_cqe(&s.ring, head, cqe) {
            batch[n++] = {static_cast<uring_op*>(io_uring_cqe_get_data(cqe)), cqe->res, cqe->flags};
            if (n == batch.size()) {
                break;
            }
        }
        io_uring_cq_advance(&s.ring, static_cast<unsigned>(n));
        for (std::size_t i = 0; i < n; ++i) {
            batch[i].op->fn(batch[i].op, batch[i].res, batch[i].flags);
        }
    }
}

} // namespace hotpath::net
