// An in-memory transport pair for driving a real connection without sockets (as Beast's test::stream and seastar's
// loopback sockets do): the connection holds a memory_transport, the test holds its memory_peer, and bytes cross
// between them on the loop's thread, in the pieces the test chooses.
#pragma once

#include <hotpath/net/loop.hpp>
#include <hotpath/net/transport.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace hotpath::test {

struct memory_pipe;

// The test's end of a pair. Every call is made on the loop's thread (from a function posted to it). What it sends
// reaches the connection as one on_transport_data per send(), in order, once the connection reads; what the
// connection writes lands in received().
class memory_peer {
public:
    explicit memory_peer(std::shared_ptr<memory_pipe> pipe) : pipe_(std::move(pipe)) {}

    // Bytes for the connection, delivered as one piece.
    void send(std::string_view bytes);
    // The end of the stream after what was sent: EOF (no code), or an error such as ECONNRESET.
    void end(std::error_code error = {});

    // Everything the connection wrote so far.
    const std::string& received() const noexcept;
    // The connection sent its FIN (shutdown_send) or closed the transport.
    bool send_shut() const noexcept;
    bool closed() const noexcept;

    // A reader that stops reading: the connection's writes complete only while the bytes received and not yet read
    // fit in `bytes` (a socket buffer); past it a write waits, as on a socket a peer does not read. Unlimited at
    // first.
    void set_window(std::size_t bytes);
    // Reads what was received: room for as much more in the window.
    void read_all();

    // Called after anything the connection did (wrote, shut, closed): where a test checks its condition.
    void on_change(std::function<void()> fn);

private:
    std::shared_ptr<memory_pipe> pipe_;
};

// Makes memory transports: each make() pairs a new transport with a peer, kept in peers() in order (references stay
// valid as more are made).
class memory_transports final : public net::transport_factory {
public:
    std::unique_ptr<net::transport> make(net::loop& l, int fd, net::transport_owner& user) override;
    std::deque<memory_peer>& peers() noexcept { return peers_; }

private:
    std::deque<memory_peer> peers_; // stable references
};

} // namespace hotpath::test
