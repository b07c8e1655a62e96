// Connection attempts: resolution on the blocking pool, then connect on the ring or a non-blocking connect the
// epoll reports writable.
#include <hotpath/net/connect.hpp>

#include <hotpath/net/blocking.hpp>
#include <hotpath/net/epoll.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/uring.hpp>

#include <sys/epoll.h>

#include <arpa/inet.h>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <utility>

namespace hotpath::net {

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

result<std::vector<endpoint>, problem> resolve_now(const std::string& host, std::uint16_t port) {
    if (auto literal = endpoint::from_literal(host, port)) {
        return std::vector<endpoint>{*literal};
    }
    resolved r = resolve_blocking(host, port);
    if (r.gai_error != 0 || r.addresses.empty()) {
        return problem{errc::resolve_failed, "cannot resolve " + host + ": " +
                                                 (r.gai_error != 0 ? ::gai_strerror(r.gai_error) : "no address")};
    }
    return std::move(r.addresses);
}

// One attempt: the addresses left to try, the socket of the try in flight, and what completes it. Shared by the
// connector and whatever is in flight (a ring operation, an epoll registration, a resolution), so that it outlives
// a connector destroyed meanwhile; `owner` is then null and nothing calls back.
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
    struct poll_op : epoll_op {
        attempt* self = nullptr;
    };
    poll_op writable;     // the epoll's registration while a connect is in progress
    bool on_poll = false; // registered with the epoll (kept alive by the loop meanwhile)

    ~attempt() {
        if (fd >= 0) {
            ::close(fd);
        }
    }

    void try_next(std::error_code last);
    void finish(int connected, std::error_code error);
    static void on_connected(uring_op* op, int res, unsigned flags);
    static void on_writable(epoll_op* op, std::uint32_t events);
    void end_poll() noexcept;
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
    // On epoll: a non-blocking connect, finished when the socket turns writable (SO_ERROR says how).
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&to.address), to.length) == 0) {
        const int connected = std::exchange(fd, -1);
        finish(connected, {});
        return;
    }
    if (errno != EINPROGRESS) {
        const int error = errno;
        ::close(std::exchange(fd, -1));
        try_next(errno_code(error));
        return;
    }
    epoll& poller = *on->poller();
    writable.fn = &attempt::on_writable;
    writable.self = this;
    if (const auto ec = poller.add(fd, EPOLLOUT | EPOLLONESHOT, &writable)) {
        ::close(std::exchange(fd, -1));
        try_next(ec);
        return;
    }
    on_poll = true;
    on->keep_alive(owner->attempt_);
}

void connector::attempt::end_poll() noexcept {
    on->poller()->remove(fd, &writable);
    on_poll = false;
}

void connector::attempt::on_writable(epoll_op* op, std::uint32_t) {
    auto* a = static_cast<poll_op*>(op)->self;
    a->end_poll();
    const auto self = a->on->take_kept(a);
    int error = 0;
    socklen_t length = sizeof(error);
    if (::getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
        error = errno;
    }
    const int connected = std::exchange(a->fd, -1);
    if (error == 0 && !a->cancelled && a->owner != nullptr) {
        a->finish(connected, {});
        return;
    }
    ::close(connected);
    a->try_next(error == 0 ? std::make_error_code(std::errc::operation_canceled) : errno_code(error));
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
    } else if (a.on_poll) { // no event will come: the attempt ends in its own call, never inside cancel()
        a.end_poll();
        ::close(std::exchange(a.fd, -1));
        a.on->defer([self = a.on->take_kept(&a)] {
            static_cast<attempt*>(self.get())->try_next(std::make_error_code(std::errc::operation_canceled));
        });
    }
    // A resolution in flight or a try deferred checks `cancelled` when it comes back.
}

} // namespace hotpath::net
