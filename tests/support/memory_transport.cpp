// The memory pair: a shared pipe between the transport a connection holds and the peer a test holds. Every callback
// to the connection is deferred to the loop, never made from inside a call to the transport, as the socket
// transports promise.
#include "support/memory_transport.hpp"

#include <algorithm>
#include <cerrno>
#include <unistd.h>

namespace hotpath::test {

struct memory_pipe {
    net::loop* loop = nullptr;
    net::transport_owner* owner = nullptr; // null once the transport is destroyed

    // Toward the connection.
    std::deque<std::string> pieces;
    bool ended = false; // the peer ended its stream
    std::error_code end_error;
    bool end_told = false;
    bool reading = false;

    // Toward the peer.
    std::string received;
    std::size_t read = 0; // of received, read by the peer
    std::size_t window = std::numeric_limits<std::size_t>::max();
    std::string_view writing; // the write in progress (the connection keeps its bytes)
    std::size_t written = 0;  // of writing, moved to received
    bool write_pending = false;
    bool write_told = true;
    std::uint64_t moved = 0; // bytes of all writes moved to received (acknowledged)
    bool shut = false;
    bool closed = false;
    bool closed_told = false;

    bool scheduled = false;
    std::function<void()> on_change;

    void schedule(const std::shared_ptr<memory_pipe>& self) {
        if (scheduled || closed_told) {
            return;
        }
        scheduled = true;
        loop->defer([self] {
            self->scheduled = false;
            self->pump();
        });
    }

    void changed() const {
        if (on_change) {
            on_change();
        }
    }

    // Whatever the state allows: the write's bytes into the peer's window, telling of a finished write, the
    // pieces to a reading connection, the end, and the close. The owner may close from any callback.
    void pump() {
        if (closed) {
            tell_closed();
            return;
        }
        move_written();
        if (!write_told && !closed && owner != nullptr) {
            write_told = true;
            owner->on_transport_written({});
        }
        while (reading && !pieces.empty() && !closed && owner != nullptr) {
            const std::string piece = std::move(pieces.front());
            pieces.pop_front();
            owner->on_transport_data(piece);
        }
        if (reading && pieces.empty() && ended && !end_told && !closed && owner != nullptr) {
            end_told = true;
            owner->on_transport_end(end_error);
        }
    }

    // The write's bytes into the peer's window, as a socket's send takes what its buffer holds at once.
    void move_written() {
        if (!write_pending) {
            return;
        }
        const std::size_t room = window - std::min(window, received.size() - read);
        const std::size_t take = std::min(room, writing.size() - written);
        if (take != 0) {
            received.append(writing.substr(written, take));
            written += take;
            moved += take;
            changed();
        }
        if (written == writing.size()) {
            write_pending = false;
            write_told = false;
        }
    }

    void tell_closed() {
        if (closed_told || owner == nullptr) {
            return;
        }
        closed_told = true;
        changed();
        owner->on_transport_closed(); // the owner may destroy the transport now
    }
};

namespace {

class memory_transport final : public net::transport {
public:
    explicit memory_transport(std::shared_ptr<memory_pipe> pipe) : pipe_(std::move(pipe)) {}
    // Destroyed without close() (a server's forced stop): nothing may refer to the owner's bytes or the owner after.
    ~memory_transport() override {
        pipe_->owner = nullptr;
        pipe_->closed = true;
        pipe_->shut = true;
        pipe_->write_pending = false;
        pipe_->writing = {};
    }

    void start_reading() override {
        if (!pipe_->closed) {
            pipe_->reading = true;
            pipe_->schedule(pipe_);
        }
    }
    void stop_reading() override { pipe_->reading = false; }
    void write(std::string_view bytes) override {
        if (pipe_->closed) {
            return;
        }
        pipe_->writing = bytes;
        pipe_->written = 0;
        pipe_->write_pending = true;
        pipe_->move_written(); // told of from the loop, never from inside this call
        pipe_->schedule(pipe_);
    }
    std::uint64_t bytes_acknowledged() noexcept override { return pipe_->moved; }
    void shutdown_send() override {
        if (!pipe_->shut) {
            pipe_->shut = true;
            pipe_->changed();
        }
    }
    void close() override {
        if (pipe_->closed) {
            return;
        }
        pipe_->closed = true;
        pipe_->shut = true;
        pipe_->write_pending = false;
        pipe_->schedule(pipe_);
    }
    int native_handle() const noexcept override { return -1; }
    net::peeked peek() noexcept override {
        if (pipe_->closed || (pipe_->ended && pipe_->pieces.empty())) {
            return net::peeked::end;
        }
        return pipe_->pieces.empty() ? net::peeked::nothing : net::peeked::data;
    }

private:
    std::shared_ptr<memory_pipe> pipe_;
};

} // namespace

void memory_peer::send(std::string_view bytes) {
    pipe_->pieces.emplace_back(bytes);
    pipe_->schedule(pipe_);
}

void memory_peer::end(std::error_code error) {
    pipe_->ended = true;
    pipe_->end_error = error;
    pipe_->schedule(pipe_);
}

const std::string& memory_peer::received() const noexcept {
    return pipe_->received;
}

bool memory_peer::send_shut() const noexcept {
    return pipe_->shut;
}

bool memory_peer::closed() const noexcept {
    return pipe_->closed;
}

void memory_peer::set_window(std::size_t bytes) {
    pipe_->window = bytes;
    pipe_->schedule(pipe_);
}

void memory_peer::read_all() {
    pipe_->read = pipe_->received.size();
    pipe_->schedule(pipe_);
}

void memory_peer::on_change(std::function<void()> fn) {
    pipe_->on_change = std::move(fn);
}

std::unique_ptr<net::transport> memory_transports::make(net::loop& l, int fd, net::transport_owner& user) {
    if (fd >= 0) {
        ::close(fd); // a memory transport has no socket: one given is not used
    }
    auto pipe = std::make_shared<memory_pipe>();
    pipe->loop = &l;
    pipe->owner = &user;
    peers_.emplace_back(pipe);
    return std::make_unique<memory_transport>(std::move(pipe));
}

} // namespace hotpath::test
