// The one socket check both transports share: a non-consuming look at what the peer has sent.
#include "net/transport.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace hotpath::net {

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

} // namespace hotpath::net
