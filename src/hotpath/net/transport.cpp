// What both transports share: choosing one for a socket, and a non-consuming look at what the peer has sent.
#include <hotpath/net/transport.hpp>

#include <hotpath/net/epoll_transport.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/uring.hpp>
#include <hotpath/net/uring_transport.hpp>

#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace hotpath::net {

std::unique_ptr<transport> make_transport(loop& owner, int fd, transport_owner& user) {
    if (uring* ring = owner.ring()) {
        return std::make_unique<uring_transport>(owner, *ring, fd, user);
    }
    return std::make_unique<epoll_transport>(owner, *owner.poller(), fd, user);
}

std::uint64_t acknowledged_bytes(int fd, std::uint64_t sent) noexcept {
    int queued = 0;
    if (fd < 0 || ::ioctl(fd, SIOCOUTQ, &queued) != 0 || queued < 0) {
        return sent;
    }
    return sent - std::min<std::uint64_t>(sent, static_cast<std::uint64_t>(queued));
}

bool wait_for_socket(int fd, short events, std::chrono::steady_clock::time_point deadline) noexcept {
    for (;;) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return false;
        }
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 60'000)));
        if (n > 0) {
            return true;
        }
        if (n < 0 && errno != EINTR) {
            return true; // the next call on the socket reports the error
        }
    }
}

peeked peek_socket(int fd) noexcept {
    char byte = 0;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) {
        return peeked::data;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return peeked::nothing;
    }
    return peeked::end; // 0: EOF; any other error (ECONNRESET, ...): the stream is over too
}

namespace {

class socket_factory final : public transport_factory {
public:
    std::unique_ptr<transport> make(loop& l, int fd, transport_owner& user) override {
        return make_transport(l, fd, user);
    }
};

} // namespace

transport_factory& socket_transports() noexcept {
    static socket_factory instance;
    return instance;
}

} // namespace hotpath::net
