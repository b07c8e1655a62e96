// One loop's share of the server: admission, the connection list, drain and the once-a-second tick.
#include <hotpath/server/worker.hpp>

#include <hotpath/server/server_connection.hpp>

#include <unistd.h>

namespace hotpath {

server_connection* worker::accept(int fd) {
    if (tls != nullptr && options.limits.max_tls_handshakes != 0 && handshakes >= options.limits.max_tls_handshakes) {
        stats.tls_refused.add();
        if (fd >= 0) {
            ::close(fd);
        }
        return nullptr;
    }
    // The place is taken before the check, so loops accepting at the same moment cannot together pass
    // limits.max_connections; the connection gives it back when destroyed. Over the limit, a connection is still
    // taken to answer its first request 503 (with Retry-After) and close; past a margin above it (a tenth and 16:
    // each such connection lives until its first request comes, or the headers timeout), it is closed at once.
    const std::size_t open = open_connections.fetch_add(1, std::memory_order_relaxed);
    const std::size_t max = options.limits.max_connections;
    bool refuse = false;
    if (draining || (max != 0 && open >= max)) {
        if (draining || open >= max + max / 10 + 16) {
            open_connections.fetch_sub(1, std::memory_order_relaxed);
            stats.connections_rejected.add();
            if (fd >= 0) {
                ::close(fd);
            }
            return nullptr;
        }
        refuse = true;
    }
    auto* c = new server_connection(*this, fd, refuse);
    c->start();
    return c;
}

void worker::link(server_connection& c) noexcept {
    c.next = first_;
    if (first_ != nullptr) {
        first_->prev = &c;
    }
    first_ = &c;
    ++connection_count_; // open_connections was counted when accept() admitted it
}

void worker::unlink(server_connection& c) noexcept {
    if (c.prev != nullptr) {
        c.prev->next = c.next;
    } else {
        first_ = c.next;
    }
    if (c.next != nullptr) {
        c.next->prev = c.prev;
    }
    --connection_count_;
    open_connections.fetch_sub(1, std::memory_order_relaxed);
    if (draining && connection_count_ == 0) {
        loop.stop();
    }
}

void worker::begin_drain() {
    draining = true;
    if (listener) {
        listener->close();
    }
    for (server_connection* c = first_; c != nullptr;) {
        server_connection* next = c->next; // drain() may close c: it unlinks itself later, never here
        c->drain();
        c = next;
    }
    if (connection_count_ == 0) {
        loop.stop();
        return;
    }
    // At the deadline, what is still running is cut (the loop then stops as the last connection goes).
    drain_timer.arm_after(options.limits.drain_timeout, [this] {
        for (server_connection* c = first_; c != nullptr; c = c->next) {
            c->abort();
        }
    });
}

void worker::on_tick(net::clock::time_point now) {
    for (server_connection* c = first_; c != nullptr; c = c->next) {
        c->on_tick(now);
    }
    states.trim();
}

void worker::close_all() noexcept {
    while (first_ != nullptr) {
        delete first_;
    }
}

} // namespace hotpath
