// Connection attempts: resolution on the blocking pool, then connect on the ring or through Asio.
#include "net/connect.hpp"

#include "net/blocking.hpp"
#include "net/loop.hpp"
#include "net/uring.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <arpa/inet.h>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

namespace hotpath::net {

std::optional<endpoint> endpoint::from_literal(std::string_view host, std::uint16_t port) noexcept {
    char text[INET6_ADDRSTRLEN + 1] = {};
    if (host.empty() || host.size() > INET6_ADDRSTRLEN) {
        return std::nullopt;
    }
    std::memcpy(text, host.data(), host.size());
    endpoint e;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&e.address);
    if (::inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        e.length = sizeof(sockaddr_in);
        return e;
    }
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&e.address);
    if (::inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        e.length = sizeof(sockaddr_in6);
        return e;
    }
    return std::nullopt;
}

namespace {

struct resolved {
    std::vector<endpoint> addresses;
    int gai_error = 0;
};

resolved resolve_blocking(const std::string& host, std::uint16_t port) {
    resolved out;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV;
    char service[8];
    *std::to_chars(service, service + sizeof(service) - 1, port).ptr = '\0';
    addrinfo* list = nullptr;
    out.gai_error = ::getaddrinfo(host.c_str(), service, &hints, &list);
    if (out.gai_error != 0) {
        return out;
    }
    for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
        if (a->ai_addrlen <= sizeof(sockaddr_storage) && (a->ai_family == AF_INET || a->ai_family == AF_INET6)) {
            endpoint e;
            std::memcpy(&e.address, a->ai_addr, a->ai_addrlen);
            e.length = a->ai_addrlen;
            out.addresses.push_back(e);
        }
    }
    ::freeaddrinfo(list);
    return out;
}

std::error_code errno_code(int e) noexcept {
    return {e, std::system_category()};
}

} // namespace

result<std::vector<endpoint>> resolve_now(const std::string& host, std::uint16_t port, std::string& why) {
    if (auto literal = endpoint::from_literal(host, port)) {
        return std::vector<endpoint>{*literal};
    }
    resolved r = resolve_blocking(host, port);
    if (r.gai_error != 0 || r.addresses.empty()) {
        why = r.gai_error != 0 ? ::gai_strerror(r.gai_error) : "no address";
        return std::make_error_code(std::errc::host_unreachable);
    }
    return std::move(r.addresses);
}

// One attempt: the addresses left to try, the socket of the try in flight, and what completes it. Shared by the
// connector and whatever is in flight (a ring operation, an Asio handler, a resolution), so that it outlives a
// connector destroyed meanwhile; `owner` is then null and nothing calls back.
struct connector::attempt : uring_op {
    connector* owner = nullptr;
    loop* on = nullptr;
    done_fn done;
    std::vector<endpoint> addresses;
    std::size_t next = 0;
    endpoint to;
    int fd = -1;
    bool cancelled = false;
    bool on_ring = false; // the ring holds a pointer to this (kept alive by the loop meanwhile)
    std::optional<boost::asio::ip::tcp::socket> socket;

    ~attempt() {
        if (fd >= 0) {
            ::close(fd);
        }
    }

    void try_next(std::error_code last);
    void finish(int connected, std::error_code error);
    static void on_connected(uring_op* op, int res, unsigned flags);
};

void connector::attempt::finish(int connected, std::error_code error) {
    connector* c = owner;
    if (c == nullptr) { // the connector is gone: nobody takes the socket
        if (connected >= 0) {
            ::close(connected);
        }
        return;
    }
    auto self = std::move(c->attempt_); // the connector may start another attempt from the callback
    owner = nullptr;
    auto callback = std::move(done);
    callback(connected, error);
}

void connector::attempt::try_next(std::error_code last) {
    if (cancelled || owner == nullptr) {
        finish(-1, std::make_error_code(std::errc::operation_canceled));
        return;
    }
    if (next >= addresses.size()) {
        finish(-1, last ? last : std::make_error_code(std::errc::host_unreachable));
        return;
    }
    to = addresses[next++];
    fd = ::socket(to.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0) {
        try_next(errno_code(errno));
        return;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (uring* ring = on->ring()) {
        fn = &attempt::on_connected;
        on_ring = true;
        on->keep_alive(owner->attempt_);
        ring->connect(fd, reinterpret_cast<const sockaddr*>(&to.address), to.length, this);
        return;
    }
    // Without a ring Asio's reactor waits for the connect. TODO(#12): the project's own epoll backend.
    namespace asio = boost::asio;
    boost::system::error_code ec;
    socket.emplace(on->context());
    socket->assign(to.family() == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), fd, ec);
    if (ec) {
        ::close(fd);
        fd = -1;
        socket.reset();
        try_next(ec);
        return;
    }
    fd = -1;
    asio::ip::tcp::endpoint target;
    std::memcpy(target.data(), &to.address, to.length);
    socket->async_connect(target, [self = owner->attempt_](const boost::system::error_code& e) {
        if (!self->socket) { // cancelled: the socket was closed and destroyed
            self->try_next(std::make_error_code(std::errc::operation_canceled));
            return;
        }
        if (!e && !self->cancelled && self->owner != nullptr) {
            const int connected = self->socket->release();
            self->socket.reset();
            self->finish(connected, {});
            return;
        }
        self->socket.reset();
        self->try_next(e == asio::error::operation_aborted ? std::make_error_code(std::errc::operation_canceled)
                                                           : std::error_code(e.value(), std::system_category()));
    });
}

void connector::attempt::on_connected(uring_op* op, int res, unsigned) {
    auto* a = static_cast<attempt*>(op);
    a->on_ring = false;
    const auto self = a->on->take_kept(a);
    const int connected = a->fd;
    a->fd = -1;
    if (res == 0 && !a->cancelled && a->owner != nullptr) {
        a->finish(connected, {});
        return;
    }
    ::close(connected);
    a->try_next(res == -ECANCELED ? std::make_error_code(std::errc::operation_canceled) : errno_code(-res));
}

connector::~connector() {
    abandon();
}

void connector::abandon() {
    if (attempt_) {
        attempt_->owner = nullptr; // nothing calls back; what is in flight ends on its own
        cancel();
    }
}

void connector::start(loop& owner, const endpoint& to, done_fn done) {
    start_with(owner, std::move(done));
    attempt_->addresses.push_back(to);
    owner.defer([a = attempt_] { a->try_next({}); });
}

void connector::start(loop& owner, std::string host, std::uint16_t port, done_fn done) {
    start_with(owner, std::move(done));
    if (auto literal = endpoint::from_literal(host, port)) {
        attempt_->addresses.push_back(*literal);
        owner.defer([a = attempt_] { a->try_next({}); });
        return;
    }
    run_blocking([a = attempt_, mailbox = owner.mailbox(), host = std::move(host), port]() mutable {
        auto found = std::make_shared<resolved>(resolve_blocking(host, port));
        mailbox->post([a = std::move(a), found] {
            a->addresses = std::move(found->addresses);
            if (found->gai_error != 0 && found->gai_error != EAI_NONAME && found->gai_error != EAI_NODATA) {
                a->try_next(std::make_error_code(std::errc::host_unreachable));
                return;
            }
            a->try_next({});
        });
    });
}

void connector::start_with(loop& owner, done_fn done) {
    abandon(); // its callback would otherwise take the new attempt's place
    attempt_ = std::make_shared<attempt>();
    attempt_->owner = this;
    attempt_->on = &owner;
    attempt_->done = std::move(done);
}

void connector::cancel() {
    if (!attempt_) {
        return;
    }
    attempt& a = *attempt_;
    a.cancelled = true;
    if (a.on_ring) { // its completion follows, with ECANCELED
        if (uring* ring = a.on->ring()) {
            // The cancel's own completion may come after the attempt is gone: it refers to nothing of it.
            static uring_op ignored{[](uring_op*, int, unsigned) {}};
            ring->cancel(&a, &ignored);
        }
    } else if (a.socket) { // Asio's handler follows with operation_aborted; the socket goes now, while its
                           // io_context surely exists
        a.socket.reset();
    }
    // A resolution in flight or a try deferred checks `cancelled` when it comes back.
}

} // namespace hotpath::net
