// The per-loop io_uring: setup, the provided-buffer ring, batched submission and completion dispatch.
#include "net/uring.hpp"

#include "net/loop.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include <liburing.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>

namespace hotpath::net {

namespace {

constexpr int buffer_group = 0;
// Completions handled per wake-up before Asio's own handlers (timers, posts) get a turn.
constexpr int max_rounds = 8;

std::error_code errno_code(int e) {
    return {e, std::system_category()};
}

} // namespace

struct uring::state {
    explicit state(boost::asio::io_context& io) : ring_fd(io) {}

    io_uring ring{};
    bool ring_ready = false;
    io_uring_buf_ring* buffers_ring = nullptr;
    std::size_t buffers_ring_bytes = 0;
    std::unique_ptr<char[]> buffers;
    unsigned buffer_count = 0;
    unsigned buffer_bytes = 0;
    int mask = 0;
    boost::asio::posix::stream_descriptor ring_fd;
    bool waiting = false;
    bool reaping = false;
    bool flush_posted = false;
};

uring::uring(loop& owner) : owner_(owner), state_(std::make_unique<state>(owner.context())) {}

uring::~uring() {
    auto& s = *state_;
    boost::system::error_code ignored;
    s.ring_fd.close(ignored);
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
    // COOP_TASKRUN: completions need no interrupt of the loop thread; it runs their task work on its next
    // io_uring_enter or wake-up. Not SINGLE_ISSUER/DEFER_TASKRUN: the loop sleeps in epoll_wait on the ring's
    // fd, which deferred task work would not wake. The submission queue is flushed whenever it fills, so a
    // small one does; the completion queue is sized for a burst from every connection (the kernel keeps
    // overflowing completions rather than dropping them, IORING_FEAT_NODROP).
    params.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE;
    params.cq_entries = entries;
    if (const int r = io_uring_queue_init_params(std::max(8u, entries / 8), &s.ring, &params); r < 0) {
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
    if (const int r = io_uring_register_buf_ring(&s.ring, &reg, 0); r < 0) {
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

    const int fd = ::dup(s.ring.ring_fd);
    if (fd < 0) {
        return errno_code(errno);
    }
    s.ring_fd.assign(fd);
    u->do_wait();
    return u;
}

io_uring_sqe* uring::get_sqe() {
    auto& s = *state_;
    io_uring_sqe* sqe = io_uring_get_sqe(&s.ring);
    if (sqe == nullptr) {
        io_uring_submit(&s.ring);
        sqe = io_uring_get_sqe(&s.ring);
    }
    request_flush();
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

// Operations prepared outside a completion batch (from a timer, a tick, a posted function) are submitted
// once at the end of the current loop turn.
void uring::request_flush() {
    auto& s = *state_;
    if (s.reaping || s.flush_posted) {
        return;
    }
    s.flush_posted = true;
    boost::asio::post(owner_.context(), [this] {
        state_->flush_posted = false;
        flush();
    });
}

void uring::flush() {
    auto& s = *state_;
    if (io_uring_sq_ready(&s.ring) > 0) {
        io_uring_submit(&s.ring);
    }
}

void uring::do_wait() {
    auto& s = *state_;
    if (s.waiting) {
        return;
    }
    s.waiting = true;
    s.ring_fd.async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
        state_->waiting = false;
        if (!ec) {
            on_ready();
        }
    });
}

// Reaps completions in batches, dispatching each to its operation; what the handlers prepared is submitted
// with one system call per batch.
void uring::on_ready() {
    auto& s = *state_;
    struct completion {
        uring_op* op;
        int res;
        unsigned flags;
    };
    std::array<completion, 256> batch;
    s.reaping = true;
    for (int round = 0; round < max_rounds; ++round) {
        std::size_t n = 0;
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
        flush();
        if (io_uring_cq_ready(&s.ring) == 0) {
            break;
        }
    }
    s.reaping = false;
    do_wait();
}

} // namespace hotpath::net
