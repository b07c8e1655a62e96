// A pooled client connection: resolve, connect (agree on the protocol by ALPN), then HTTP/1.1's one request and one
// response at a time; HTTP/2's streams are in client_connection_h2.cpp.
#include <hotpath/client/client_connection.hpp>

#include <hotpath/client/pool.hpp>
#include <hotpath/core/error.hpp>
#include <hotpath/net/tls.hpp>
#include <hotpath/net/transport.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <unistd.h>

namespace hotpath::client_detail {

namespace {

// Socket errors the caller branches on become the project's codes; others stay as the system reported them.
std::error_code map_error(std::error_code e) {
    if (e.category() == std::system_category() || e.category() == std::generic_category()) {
        switch (e.value()) {
        case ECONNREFUSED:
            return make_error_code(errc::refused);
        case ECONNRESET:
            return make_error_code(errc::reset);
        case EPIPE:
            return make_error_code(errc::closed);
        default:
            break;
        }
    }
    return e;
}

// A connection attempt's failure as the project's codes.
std::error_code map_connect_error(std::error_code e) {
    if (e == std::errc::host_unreachable && e.category() == std::generic_category()) {
        return make_error_code(errc::resolve_failed); // the name has no address
    }
    return map_error(e);
}

} // namespace

client_connection::client_connection(host_pool& pool, net::loop& loop)
    : pool_(pool), loop_(loop), reader_(std::make_unique<http::response_reader>(pool.owner().options.limits)) {}

client_connection::~client_connection() = default;

void client_connection::async_connect(call_state& c) {
    call_ = &c;
    phase_ = phase::connecting;
    // A name is resolved on the blocking pool, so the loop never waits in getaddrinfo.
    connector_.start(loop_, pool_.host(), pool_.port(), [this](int fd, std::error_code ec) { on_connected(fd, ec); });
}

void client_connection::on_connected(int fd, std::error_code ec) {
    downstream_metrics& counters = pool_.metrics();
    if (closing_ || ec) {
        if (fd >= 0) {
            ::close(fd);
        }
        call_state* c = std::exchange(call_, nullptr);
        const std::error_code error = closing_ ? make_error_code(errc::cancelled) : map_connect_error(ec);
        if (!closing_) {
            counters.connect_failures.add();
        }
        closing_ = true;
        host_pool& pool = pool_;
        pool.on_gone(*this); // deletes this
        if (c != nullptr) {
            c->finish(error);
        }
        return;
    }
    counters.connections_opened.add();
    transport_ = pool_.transports().make(loop_, fd, *this);
    created_ = net::clock::now();
    transport_->start_reading();
    const client_protocol asked = pool_.owner().options.protocol;
    if (pool_.tls() && asked != client_protocol::http1) {
        handshaking_ = true; // the step ends once TLS has agreed on the protocol
        return;
    }
    connected(!pool_.tls() && asked == client_protocol::http2);
}

void client_connection::on_transport_ready() {
    if (!std::exchange(handshaking_, false) || closing_) {
        return;
    }
    const bool h2 = static_cast<const net::tls_transport&>(*transport_).alpn() == "h2";
    if (!h2 && pool_.owner().options.protocol == client_protocol::http2) {
        pool_.metrics().connect_failures.add(); // a server that ignores ALPN would speak HTTP/1.1
        fail(make_error_code(net::tls_errc::no_common_protocol));
        return;
    }
    connected(h2);
}

void client_connection::connected(bool h2) {
    phase_ = phase::leased;
    if (h2) {
        h2_start();
        if (closing_) {
            return; // no session could be made: the call has failed
        }
    }
    call_state* c = std::exchange(call_, nullptr);
    pool_.connected(*this);
    c->finish({});
}

std::error_code client_connection::begin(call_state& c, const request_parts& parts, client_response& out) {
    if (h2_ != nullptr) {
        return h2_begin(c, parts, out);
    }
    call_ = &c;
    out_ = &out;
    reader_->expect(parts.method == "HEAD");
    reusable_ = false;
    // RFC 9112 §3: request-line, Host first (§3.2), the caller's fields, then the framing.
    out_bytes_.clear();
    out_bytes_.append(parts.method).append(" ").append(parts.target).append(" HTTP/1.1\r\nHost: ");
    out_bytes_.append(parts.host_field).append("\r\n");
    if (parts.headers != nullptr) {
        for (const auto& [name, value] : *parts.headers) {
            out_bytes_.append(name).append(": ").append(value).append("\r\n");
        }
    }
    if (parts.send_length || !parts.body.empty()) {
        char digits[24];
        const auto end = std::to_chars(digits, digits + sizeof(digits), parts.body.size()).ptr;
        out_bytes_.append("Content-Length: ").append(digits, end).append("\r\n");
    }
    out_bytes_.append("\r\n").append(parts.body);
    in_.clear();
    phase_ = phase::head;
    writing_ = true;
    transport_->write(out_bytes_);
    return {};
}

void client_connection::make_idle(net::clock::time_point now) noexcept {
    phase_ = phase::idle;
    idle_since_ = now;
}

bool client_connection::stale() noexcept {
    return closing_ || !transport_ || transport_->peek() != net::peeked::nothing;
}

void client_connection::abandon(call_state& c) noexcept {
    if (h2_ != nullptr && phase_ != phase::connecting) {
        h2_abandon(c);
        return;
    }
    call_ = nullptr;
    out_ = nullptr;
    close();
}

void client_connection::close() noexcept {
    if (closing_) {
        return;
    }
    closing_ = true;
    reusable_ = false;
    if (transport_) {
        transport_->close(); // on_transport_closed follows
        return;
    }
    // Still resolving or connecting: on_connected follows with operation_canceled.
    connector_.cancel();
}

void client_connection::on_transport_written(std::error_code error) {
    if (h2_ != nullptr) {
        h2_->writing = false;
        if (error) {
            h2_fail_all(map_error(error));
            return;
        }
        h2_flush();
        return;
    }
    writing_ = false;
    if (error && call_ != nullptr && !closing_) {
        fail(map_error(error));
    }
}

void client_connection::on_transport_data(std::string_view bytes) {
    if (closing_) {
        return;
    }
    if (h2_ != nullptr) {
        h2_receive(bytes);
        return;
    }
    if (call_ == nullptr) {
        // Idle (or between calls): the peer may not speak now (RFC 9112 §9.3: no unsolicited responses).
        if (phase_ == phase::idle) {
            pool_.on_idle_end(*this);
        }
        close();
        return;
    }
    call_->got_response_bytes = true;
    in_.append(bytes);
    do_parse();
}

// Reads what is buffered; ends the call when its response is complete or broken.
void client_connection::do_parse() {
    const std::uint64_t max_bytes = pool_.owner().options.max_response_bytes;
    for (;;) {
        const http::read_step step = reader_->read(in_.data(), in_.size());
        switch (step.status) {
        case http::read_status::error:
            fail(make_error_code(errc::malformed_response));
            return;
        case http::read_status::head: {
            const http::response_head& head = reader_->head();
            client_response& out = *out_;
            out.status_ = head.status;
            // The bytes consumed (interim heads first, if any) hold the head: its views become offsets into them.
            out.head_.assign(in_, 0, step.consumed);
            const auto offset = [this](std::string_view v) {
                return client_response::span{static_cast<std::uint32_t>(v.data() - in_.data()),
                                             static_cast<std::uint32_t>(v.size())};
            };
            out.reason_ = head.reason.empty() ? client_response::span{} : offset(head.reason);
            out.fields_.clear();
            for (std::size_t i = 0; i < head.field_count; ++i) {
                const auto& f = head.fields[i];
                out.fields_.emplace_back(offset(f.name), f.value.empty() ? client_response::span{} : offset(f.value));
            }
            out.body_.clear();
            in_.erase(0, step.consumed);
            reusable_ = head.keep_alive;
            if (head.framing == http::body_framing::content_length) {
                if (head.content_length > max_bytes) {
                    fail(make_error_code(errc::response_too_large));
                    return;
                }
                out.body_.reserve(static_cast<std::size_t>(head.content_length));
            }
            phase_ = phase::body;
            continue;
        }
        case http::read_status::need_more:
        case http::read_status::done:
            if (!keep_body(step.body)) {
                return;
            }
            in_.erase(0, step.consumed);
            if (step.status == http::read_status::done) {
                complete();
            }
            return;
        }
    }
}

bool client_connection::keep_body(std::string_view bytes) {
    if (out_->body_.size() + bytes.size() > pool_.owner().options.max_response_bytes) {
        fail(make_error_code(errc::response_too_large));
        return false;
    }
    out_->body_.append(bytes);
    return true;
}

void client_connection::complete() {
    phase_ = phase::leased;
    // Bytes after the response, or a request still being written, leave the connection in an unknown state.
    if (!in_.empty() || writing_) {
        reusable_ = false;
    }
    out_ = nullptr;
    std::exchange(call_, nullptr)->finish({});
}

void client_connection::fail(std::error_code e) {
    call_state* c = std::exchange(call_, nullptr);
    out_ = nullptr;
    close();
    if (c != nullptr) {
        c->finish(e);
    }
}

void client_connection::on_transport_end(std::error_code error) {
    if (closing_) {
        return;
    }
    if (phase_ == phase::connecting) {
        // The TLS handshake failed (or the peer closed during it): a failed connect.
        pool_.metrics().connect_failures.add();
        fail(error ? map_error(error) : make_error_code(errc::closed));
        return;
    }
    if (h2_ != nullptr) {
        if (h2_->in_use == 0 && !error) {
            pool_.metrics().closed_by_peer.add();
        }
        h2_fail_all(error ? map_error(error) : make_error_code(errc::closed));
        return;
    }
    if (call_ == nullptr) {
        if (phase_ == phase::idle) {
            pool_.metrics().closed_by_peer.add();
            pool_.on_idle_end(*this);
        }
        close();
        return;
    }
    if (!error && reader_->end_of_input() == http::end_status::complete) {
        reusable_ = false;
        complete();
        return;
    }
    fail(error ? map_error(error) : make_error_code(errc::closed));
}

void client_connection::on_transport_closed() {
    pool_.on_gone(*this); // deletes this
}

} // namespace hotpath::client_detail
