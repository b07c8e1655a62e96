// The epoll transport: edge-triggered readiness, reads into the loop's shared buffer, sends made at once.
#pragma once

#include <hotpath/net/epoll.hpp>
#include <hotpath/net/transport.hpp>

namespace hotpath::net {

class loop;

class epoll_transport final : public transport {
public:
    // Takes ownership of the connected socket `fd` (used without blocking whatever its mode) and registers it with
    // `poller` (readable and writable, edge-triggered: one registration for the socket's life, no epoll_ctl per
    // request).
    epoll_transport(loop& on, epoll& poller, int fd, transport_owner& owner);
    ~epoll_transport() override;

    void start_reading() override;
    void stop_reading() override { want_read_ = false; }
    void write(std::string_view bytes) override;
    std::uint64_t bytes_acknowledged() noexcept override;
    void shutdown_send() override;
    void close() override;
    int native_handle() const noexcept override { return fd_; }
    peeked peek() noexcept override;

private:
    struct op : epoll_op {
        epoll_transport* self = nullptr;
    };

    static void on_event(epoll_op* o, std::uint32_t events);
    void do_read();
    void do_send();
    void do_progress();
    void schedule();
    void maybe_closed();

    loop& loop_;
    epoll& poller_;
    int fd_;
    transport_owner& owner_;
    op op_;
    std::string_view writing_;
    std::size_t sent_ = 0;
    std::uint64_t bytes_sent_ = 0; // taken by the kernel, over the transport's life
    std::error_code write_error_;
    std::error_code register_error_; // add() failed: reading ends with it
    bool want_read_ = false;
    bool readable_ = false;      // an edge said bytes or an end are waiting, and no read has drained them
    bool peer_done_ = false;     // the peer shut down its side or the socket failed: the end is waiting
    bool writable_ = true;       // no send has met a full socket buffer since the last EPOLLOUT edge
    bool write_pending_ = false; // write() bytes not all sent yet
    bool written_unreported_ = false;
    bool scheduled_ = false; // made ready on the epoll, not yet run
    bool ended_ = false;
    bool closed_ = false;
    bool close_reported_ = false;
};

} // namespace hotpath::net
