// The per-loop io_uring: setup, the provided-buffer ring, batched submission, and the loop that sleeps in
// io_uring_enter and dispatches completions, giving Asio's reactor a turn when it has work.
#include "net/uring.hpp"

#include "net/loop.hpp"

#include <boost/asio/detail/call_stack.hpp>
#include <boost/asio/detail/scheduler.hpp>
#include <boost/asio/detail/scheduler_thread_info.hpp>
#include <boost/asio/detail/thread_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <liburing.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

namespace hotpath::net {

namespace {

constexpr int buffer_group = 0;
// While Asio may have work no wake-up would announce (see run()), sleeps last at most this long.
constexpr long blind_sleep_ns = 1'000'000;

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

struct uring::state {
    io_uring ring{};
    bool ring_ready = false;
    io_uring_buf_ring* buffers_ring = nullptr;
    std::size_t buffers_ring_bytes = 0;
    std::unique_ptr<char[]> buffers;
    unsigned buffer_count = 0;
    unsigned buffer_bytes = 0;
    int mask = 0;
    bool enabled = false;    // IORING_SETUP_R_DISABLED until run() enables it on the loop's thread
    bool running = false;    // inside run()
    bool reaping = false;    // completions are being dispatched
    bool asio_ready = false; // Asio's reactor has events, or a wake-up came: poll it before sleeping
    bool asio_watched = false;
    bool wake_watched = false;
    int reactor_fd = -1; // Asio's epoll instance, watched through the ring; -1 when it cannot be
    int wake_fd = -1;    // eventfd written by wake()
    std::uint64_t wake_count = 0;
    struct op : uring_op {
        uring* self = nullptr;
    };
    op reactor_op; // multishot poll of reactor_fd
    op wake_op;    // read of wake_fd
};

uring::uring(loop& owner) : owner_(owner), state_(std::make_unique<state>()) {
    state_->reactor_op.fn = &uring::on_reactor;
    state_->reactor_op.self = this;
    state_->wake_op.fn = &uring::on_wake;
    state_->wake_op.self = this;
}

uring::~uring() {
    auto& s = *state_;
    if (s.wake_fd >= 0) {
        ::close(s.wake_fd);
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

bool uring::available() noexcept {
    if (const int known = known_available.load(std::memory_order_relaxed); known >= 0) {
        return known == 1;
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

result<std::unique_ptr<uring>> uring::open(loop& owner, unsigned entries, unsigned buffer_count,
                                           unsigned buffer_bytes) {
    if (known_available.load(std::memory_order_relaxed) == 0) {
        return errno_code(ENOSYS);
    }
    std::unique_ptr<uring> u(new uring(owner));
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

    s.wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s.wake_fd < 0) {
        return errno_code(errno);
    }
    return u;
}

io_uring_sqe* uring::get_sqe() {
    auto& s = *state_;
    io_uring_sqe* sqe = io_uring_get_sqe(&s.ring);
    if (sqe == nullptr) {
        io_uring_submit(&s.ring);
        sqe = io_uring_get_sqe(&s.ring);
    }
    if (sqe == nullptr && s.running) {
        std::fprintf(stderr, "hotpath: io_uring submission queue full and not submittable\n");
        std::abort();
    }
    if (sqe == nullptr) {
        // A full queue while the loop does not run (a disabled ring cannot submit, nor can another thread
        // once the loop's thread is its issuer): only when a loop ends with hundreds of connections left,
        // which are closed without the ring. The operation is written into a slot nobody reads.
        static thread_local io_uring_sqe discarded;
        sqe = &discarded;
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

void uring::cancel(uring_op* target, uring_op* op) {
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_cancel(sqe, target, IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data(sqe, op);
}

void uring::cancel_fd(int fd, uring_op* op) {
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
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
    [[maybe_unused]] const auto n = ::write(state_->wake_fd, &one, sizeof(one));
}

namespace {

// The epoll instance of Asio's reactor: the only one in the process whose interest list holds a probe
// descriptor just registered with Asio, so the only descriptor on which removing the probe succeeds (others
// answer EBADF, EINVAL or ENOENT). The search starts at `hint`, the lowest free number when Asio opened it, so
// it ends after a few system calls however many loops the process has; then it wraps around. -1 if not found.
int find_reactor_fd(boost::asio::io_context& io, int hint) {
    const int probe = ::eventfd(0, EFD_CLOEXEC);
    if (probe < 0) {
        return -1;
    }
    boost::asio::posix::stream_descriptor d(io);
    boost::system::error_code ec;
    d.assign(probe, ec);
    if (ec) {
        ::close(probe);
        return -1;
    }
    rlimit limit{};
    const int last =
        ::getrlimit(RLIMIT_NOFILE, &limit) == 0 ? static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 1 << 16)) : 1024;
    int found = -1;
    epoll_event unused{};
    hint = std::clamp(hint, 0, last);
    for (int i = 0; i < last && found < 0; ++i) {
        const int fd = (hint + i) % last;
        if (fd != probe && ::epoll_ctl(fd, EPOLL_CTL_DEL, probe, &unused) == 0) {
            found = fd;
        }
    }
    d.close(ec); // Asio's own removal finds the probe gone already: ENOENT, which it ignores
    return found;
}

// Enters the calling thread in Asio's call stack as a thread running `io`, as io_context::run does, for as long
// as it lives: handlers Asio queues meanwhile go to `info`'s private queue. What is left there at the end is
// handed to the scheduler, as run() would.
class asio_thread {
public:
    explicit asio_thread(boost::asio::io_context& io)
        : scheduler_(boost::asio::use_service<boost::asio::detail::scheduler>(io)) {
        info.private_outstanding_work = 0;
        entered_.emplace(&scheduler_, info);
    }
    ~asio_thread() {
        entered_.reset(); // out of the call stack first, so the queue goes to the scheduler's shared one
        hand_over_work();
        scheduler_.post_deferred_completions(info.private_op_queue);
    }
    asio_thread(const asio_thread&) = delete;
    asio_thread& operator=(const asio_thread&) = delete;

    // The work counted for privately queued handlers moves to the scheduler, ahead of the handlers themselves.
    void hand_over_work() noexcept {
        for (; info.private_outstanding_work > 0; --info.private_outstanding_work) {
            scheduler_.work_started();
        }
    }

    boost::asio::detail::scheduler_thread_info info;

private:
    using call_stack =
        boost::asio::detail::call_stack<boost::asio::detail::thread_context, boost::asio::detail::thread_info_base>;
    boost::asio::detail::scheduler& scheduler_;
    std::optional<call_stack::context> entered_;
};

} // namespace

void uring::watch_asio() {
    auto& s = *state_;
    if (s.reactor_fd >= 0 && !s.asio_watched) {
        s.asio_watched = true;
        io_uring_sqe* sqe = get_sqe();
        io_uring_prep_poll_multishot(sqe, s.reactor_fd, POLLIN);
        io_uring_sqe_set_data(sqe, &s.reactor_op);
    }
}

void uring::watch_wake() {
    auto& s = *state_;
    if (s.wake_watched) {
        return;
    }
    s.wake_watched = true;
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_read(sqe, s.wake_fd, &s.wake_count, sizeof(s.wake_count), 0);
    io_uring_sqe_set_data(sqe, &s.wake_op);
}

// Asio's epoll instance has events: poll Asio before sleeping again. A poll that ended is armed again, unless
// the instance cannot be polled, and then the loop looks every millisecond (blind()).
void uring::on_reactor(uring_op* o, int res, unsigned flags) {
    uring& u = *static_cast<state::op*>(o)->self;
    auto& s = *u.state_;
    s.asio_ready = true;
    if ((flags & IORING_CQE_F_MORE) == 0) {
        s.asio_watched = false;
        if (res < 0 && res != -ECANCELED) {
            s.reactor_fd = -1;
        }
        u.watch_asio();
    }
}

// Another thread posted or stopped: poll Asio, and read the next wake-up.
void uring::on_wake(uring_op* o, int, unsigned) {
    uring& u = *static_cast<state::op*>(o)->self;
    u.state_->asio_ready = true;
    u.state_->wake_watched = false;
    u.watch_wake();
}

// Whether Asio may have work that no completion would announce: its epoll instance is not watched, or a name
// resolution is pending.
bool uring::blind() const noexcept {
    return state_->reactor_fd < 0 || owner_.foreign_work() > 0;
}

// One thread, two sources of work: this ring's completions, and Asio's handlers (timers, posts, sockets Asio
// still owns while they connect). The thread sleeps in io_uring_enter, never in epoll_wait: Asio's epoll
// instance is polled through the ring, so its events end the sleep, and Asio runs (io_context::poll) only when
// it has something to do. That saves an epoll_wait per wake-up, and lets the ring defer task work.
//
// What Asio queues while completions are dispatched outside its run() (a timer cancelled, a socket closed, a
// post) would wait in its queue unseen: so this thread is entered in Asio's call stack as a thread of the
// io_context, as run() would do, and those handlers go to its private queue, which is looked at after each
// batch and handed over by the nested poll() (Asio's detail API, Boost 1.81; tests cover each path). Other
// threads reach a sleeping loop through wake(); the one exception, a name resolution Asio completes from its own
// thread, is counted by loop::foreign_work_started() and looked for every millisecond.
void uring::run() {
    auto& s = *state_;
    auto& io = owner_.context();
    if (!s.enabled) {
        // Not io_uring_enable_rings(): liburing 2.3's shared library lacks it.
        if (::syscall(__NR_io_uring_register, s.ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0) < 0) {
            std::fprintf(stderr, "hotpath: cannot enable io_uring: %s\n", std::strerror(errno));
            std::abort();
        }
        s.enabled = true;
    }
    if (s.reactor_fd < 0) {
        s.reactor_fd = find_reactor_fd(io, owner_.reactor_fd_hint());
    }
    watch_asio();
    watch_wake();

    // Asio goes first: what was queued before run(), or left by an earlier run, is not announced again.
    s.asio_ready = true;
    const flag_scope running(s.running);
    asio_thread in_asio(io);
    // The loop's 1 s tick keeps Asio's work count above zero, so poll() never stops the context on its own
    // while ring operations (which Asio does not count) are in flight.
    for (;;) {
        if (s.asio_ready || blind() || !in_asio.info.private_op_queue.empty()) {
            s.asio_ready = false;
            in_asio.hand_over_work();
            io.poll(); // takes this thread's private queue first (it supports nested calls)
        }
        if (io.stopped()) {
            io_uring_submit(&s.ring); // what the last turn prepared, closes included
            return;
        }
        do_wait();
        do_reap();
    }
}

// Submits what was prepared and sleeps until a completion arrives; with nothing to announce Asio's work, for a
// millisecond at most.
void uring::do_wait() {
    auto& s = *state_;
    int r = 0;
    if (blind()) {
        __kernel_timespec limit{0, blind_sleep_ns};
        io_uring_cqe* first = nullptr;
        r = io_uring_submit_and_wait_timeout(&s.ring, &first, 1, &limit, nullptr);
    } else {
        r = io_uring_submit_and_wait(&s.ring, 1);
    }
    if (r < 0 && r != -EINTR && r != -ETIME && r != -EBUSY && r != -EAGAIN) {
        std::fprintf(stderr, "hotpath: io_uring_enter failed: %s\n", std::strerror(-r));
        std::abort();
    }
}

// Dispatches every completion in batches, each to its operation.
void uring::do_reap() {
    auto& s = *state_;
    struct completion {
        uring_op* op;
        int res;
        unsigned flags;
    };
    std::array<completion, 256> batch;
    // An exception escaping a completion ends the loop (the rest of the batch is lost with it); closes
    // prepared later, from the loop's destructor, must then be made at once again.
    const flag_scope reaping(s.reaping);
    std::size_t n = batch.size();
    while (n == batch.size()) {
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
