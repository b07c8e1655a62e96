// The io_uring transport: a multishot receive into the loop's buffer ring, sends batched with other sockets'.
#pragma once

#include <hotpath/net/transport.hpp>
#include <hotpath/net/uring.hpp>

namespace hotpath::net {

class loop;

class uring_transport final : public transport {
public:
    // Takes ownership of the connected, non-blocking socket `fd`.
    uring_transport(loop& on, uring& ring, int fd, transport_owner& owner);
    ~uring_transport() override;

    void start_reading() override;
    void stop_reading() override;
    void write(std::string_view bytes) override;
    std::uint64_t bytes_acknowledged() noexcept override;
    void shutdown_send() override;
    void close() override;
    int native_handle() const noexcept override { return fd_; }
    peeked peek() noexcept override;

private:
    struct op : uring_op {
        uring_transport* self = nullptr;
    };

    static void on_recv(uring_op* o, int res, unsigned flags);
    static void on_send(uring_op* o, int res, unsigned flags);
    static void on_cancel(uring_op* o, int res, unsigned flags);
    void arm();
    void maybe_closed();

    loop& loop_;
    uring& ring_;
    int fd_;
    transport_owner& owner_;
    op recv_op_;
    op send_op_;
    op cancel_op_;
    std::string_view writing_;
    std::size_t sent_ = 0;
    std::uint64_t bytes_sent_ = 0; // taken by the kernel, over the transport's life
    bool want_read_ = false;
    bool recv_armed_ = false;
    bool send_pending_ = false;
    // Cancels in flight, each completing through cancel_op_: a receive's (stop_reading, close) and a send's (close).
    std::uint8_t cancels_ = 0;
    bool ended_ = false;
    bool closed_ = false;
    bool close_reported_ = false;
};

} // namespace hotpath::net
