// A load connection: connect, send the prepared request bytes, parse responses, report them to the worker.
#include <hotpath/load/worker.hpp>

#include <hotpath/http/retry_after.hpp>
#include <hotpath/net/transport.hpp>

#include <algorithm>
#include <ctime>
#include <utility>

namespace hotpath::load {

load_connection::load_connection(worker& owner)
    : owner_(owner), reader_(owner.limits_), pipeline_(std::max(1u, owner.plan_.pipeline)) {
    if (owner.plan_.may_h2()) {
        h2_ = std::make_unique<h2_state>();
        h2_->slots.resize(owner.plan_.streams);
        h2_->closed.reserve(owner.plan_.streams);
        for (std::uint32_t i = 0; i < h2_->slots.size(); ++i) {
            h2_->slots[i].next = i + 1 < h2_->slots.size() ? i + 1 : no_slot;
        }
        h2_->free = 0;
    }
}

void load_connection::check_timeout(clock::time_point now, clock::duration timeout) {
    if (h2_on_) {
        h2_check_timeout(now, timeout);
    } else if (!in_flight_.empty() && now - in_flight_.front().sent > timeout) {
        abort(error_class::timeout);
    }
}

load_connection::~load_connection() = default;

void load_connection::open() {
    if (connecting_ || connected_ || closing_) {
        return;
    }
    connecting_ = true;
    connect_started_ = clock::now();
    connector_.start(owner_.loop_, owner_.endpoint_, [this](int fd, std::error_code ec) { on_connected(fd, ec); });
}

void load_connection::time_out_connect() {
    if (handshaking_) {
        handshake_failed(std::make_error_code(std::errc::timed_out));
        return;
    }
    if (connecting_ && !connect_timed_out_) {
        connect_timed_out_ = true;
        connector_.cancel(); // on_connected follows with operation_canceled
    }
}

void load_connection::on_connected(int fd, std::error_code ec) {
    connecting_ = false;
    if (std::exchange(connect_timed_out_, false) && ec == std::errc::operation_canceled) {
        ec = std::make_error_code(std::errc::timed_out);
    }
    const bool tls = owner_.tls_ != nullptr;
    if (ec != std::errc::operation_canceled && (ec || !tls)) {
        owner_.on_connect_result(ec); // over TLS, a success is counted once the handshake is done
    }
    if (ec) {
        owner_.on_gone(*this, true);
        return;
    }
    server_closes_ = false;
    in_.clear();
    reader_.expect(false); // each response's HEAD-ness is its request's (is_head, below)
    if (tls) {
        // The handshake first (the client's hello goes out now); the first request once it is done, as wrk does.
        handshaking_ = true;
        handshake_started_ = clock::now();
    }
    transport_ = owner_.transports_->make(owner_.loop_, fd, *this);
    owner_.on_socket(true);
    transport_->start_reading();
    if (!tls) {
        h2_on_ = owner_.plan_.h2(); // h2c: prior knowledge
        connected(clock::now());
    }
}

void load_connection::connected(clock::time_point now) {
    connected_ = true;
    if (h2_on_) {
        ++owner_.results_.connections_h2;
        // The preface and SETTINGS go out in one write with the first requests.
        h2_start();
        h2_->receiving = true;
        owner_.on_ready(*this, now);
        h2_->receiving = false;
        h2_flush();
        return;
    }
    owner_.on_ready(*this, now);
}

void load_connection::on_transport_ready() {
    if (!handshaking_) {
        return;
    }
    handshaking_ = false;
    const auto now = clock::now();
    const auto* tls = static_cast<const net::tls_transport*>(transport_.get());
    // Counted once the server has answered over it: in TLS 1.3 the client's side ends first, and a server that
    // refuses the client's certificate says so only then, as the first thing it sends.
    unconfirmed_ = true;
    handshake_took_ = now - handshake_started_;
    handshake_resumed_ = tls->resumed();
    h2_on_ = h2_ && tls->alpn() == "h2";
    if (owner_.plan_.h2() && !h2_on_) {
        // A server that ignores ALPN: it would speak HTTP/1.1. A failed attempt, as if it had refused h2.
        unconfirmed_ = false;
        handshake_failed(make_error_code(net::tls_errc::no_common_protocol));
        return;
    }
    connected(now);
}

void load_connection::confirm_handshake() {
    if (std::exchange(unconfirmed_, false)) {
        owner_.on_handshake(handshake_took_, handshake_resumed_);
        owner_.on_connect_result({});
    }
}

// The handshake failed (or took past the timeout): a failed connection attempt, of its TLS class.
void load_connection::handshake_failed(std::error_code error) {
    handshaking_ = false;
    handshake_failed_ = true;
    owner_.on_handshake_failed(error);
    closing_ = true;
    transport_->close(); // on_transport_closed: gone, as a failed attempt
}

void load_connection::send(clock::time_point scheduled, unsigned count, clock::time_point now) {
    if (h2_on_) {
        h2_send(scheduled, count, now);
        return;
    }
    std::string_view bytes;
    const std::uint32_t index = owner_.pick(rendered_, bytes, count);
    for (unsigned i = 0; i < count; ++i) {
        in_flight_.push_back({scheduled, now, index});
    }
    owner_.on_sent(bytes.size(), count);
    transport_->write(bytes);
}

void load_connection::on_transport_written(std::error_code error) {
    if (handshaking_) {
        return; // nothing was written before the handshake: its failure comes as the end
    }
    if (error && !closing_) {
        // A write that failed before the server answered anything over a TLS connection: the server closed it right
        // after the handshake (over TLS 1.3 a server refusing the client's certificate sends its alert and closes,
        // and the write may meet the reset before the read meets the alert). Its handshake's outcome is not known:
        // counted neither way, as handshakes are counted once the server has answered over them.
        unconfirmed_ = false;
        abort(error_class::write);
        return;
    }
    if (h2_on_ && !closing_) {
        h2_->writing = false;
        h2_flush();
        h2_settle();
    }
}

void load_connection::on_transport_data(std::string_view bytes) {
    if (closing_) {
        return;
    }
    const auto now = clock::now(); // when these bytes arrived: for every response they complete
    confirm_handshake();
    owner_.on_bytes(bytes.size(), now);
    if (h2_on_) {
        h2_data(bytes, now);
        return;
    }
    in_.append(bytes);
    std::size_t pos = 0;
    for (;;) {
        // A body of no bytes completes without input: hence a read even when all input is used.
        if (!in_flight_.empty()) {
            reader_.answer_to_head(owner_.is_head(in_flight_.front().index));
        }
        const http::read_step step = reader_.read(in_.data() + pos, in_.size() - pos);
        pos += step.consumed;
        if (step.status == http::read_status::head) {
            if (in_flight_.empty()) {
                abort(error_class::malformed); // a response to no request
                return;
            }
            body_.clear();
            server_closes_ = !reader_.head().keep_alive;
            continue;
        }
        if (step.status == http::read_status::error) {
            abort(error_class::malformed);
            return;
        }
        // The body is kept only for a body check; chunked bodies are decoded in place just to find their end.
        if (!step.body.empty()) {
            keep_body(step.body);
        }
        if (step.status == http::read_status::need_more) {
            break;
        }
        complete_response(now);
        if (closing_) {
            return;
        }
    }
    in_.erase(0, pos);
}

void load_connection::complete_response(clock::time_point now) {
    const request_times times = in_flight_.front();
    in_flight_.pop_front();
    const http::response_head& head = reader_.head();
    owner_.on_response(
        *this, times.scheduled, times.sent, times.index, head.status, body_,
        head.status == 429 || head.status == 503 ? retry_after_of(head.find("retry-after")) : std::nullopt, now);
    if (closing_) {
        return;
    }
    if (server_closes_) {
        // The server ends the connection after this response; requests pipelined behind it are lost.
        const std::size_t lost = in_flight_.size();
        in_flight_.clear();
        if (lost != 0) {
            owner_.on_error(*this, error_class::read, lost);
        }
        close_transport();
        return;
    }
    if (in_flight_.empty()) {
        if (retire) {
            close_transport();
            return;
        }
        owner_.on_ready(*this, now);
    }
}

// Keeps the start of the body when the request has a body check.
void load_connection::keep_body(std::string_view bytes) {
    constexpr std::size_t max_kept_bytes = 64 * 1024;
    if (!in_flight_.empty() && owner_.wants_body(in_flight_.front().index) && body_.size() < max_kept_bytes) {
        body_.append(bytes.substr(0, max_kept_bytes - body_.size()));
    }
}

void load_connection::on_transport_end(std::error_code error) {
    if (handshaking_) {
        handshake_failed(error ? error : make_error_code(errc::closed));
        return;
    }
    if (closing_) {
        return;
    }
    if (unconfirmed_ && error.category() == net::tls_category()) {
        // The server refused the handshake after the client's side had ended (a client certificate it requires):
        // a failed connection attempt of that class; the requests written never reached HTTP.
        unconfirmed_ = false;
        const std::size_t lost = in_flight_.size();
        in_flight_.clear();
        if (h2_on_) {
            h2_end(error_class::count_);
        } else if (lost != 0) {
            owner_.on_error(*this, error_class::count_, lost); // no outcome: only the in-flight gauge hears of it
        }
        handshake_failed_ = true;
        owner_.on_handshake_failed(error);
        close_transport();
        return;
    }
    confirm_handshake();
    if (h2_on_) {
        h2_end(error_class::read);
        close_transport();
        return;
    }
    if (!in_flight_.empty() && reader_.end_of_input() == http::end_status::complete) {
        complete_response(clock::now());
        if (closing_) {
            return;
        }
    }
    if (!in_flight_.empty()) {
        abort(error_class::read);
        return;
    }
    close_transport();
}

void load_connection::abort(error_class why) {
    if (why == error_class::count_) {
        // The run is over (or the user retired): a handshake the server has not answered over yet has no known
        // outcome (a server refusing the client's certificate says so only then), so it is counted neither way.
        unconfirmed_ = false;
    }
    confirm_handshake();
    if (handshaking_) {
        // Given up mid-handshake (the run ends): not a failed attempt.
        handshaking_ = false;
        closing_ = true;
        transport_->close();
        return;
    }
    if (closing_ || (!connected_ && !connecting_)) {
        return;
    }
    const std::size_t lost = in_flight_.size();
    in_flight_.clear();
    if (h2_on_) {
        h2_end(why);
    } else {
        owner_.on_error(*this, why, lost);
    }
    if (connecting_) {
        connector_.cancel(); // on_connected follows with operation_canceled
        return;
    }
    close_transport();
}

void load_connection::close_transport() {
    if (closing_ || !connected_) {
        return;
    }
    closing_ = true;
    connected_ = false;
    transport_->close();
}

void load_connection::on_transport_closed() {
    if (h2_on_) {
        h2_end(error_class::count_); // nothing is in flight by now; the session goes with its connection
        h2_on_ = false;
    }
    transport_.reset();
    owner_.on_socket(false);
    closing_ = false;
    in_.clear();
    owner_.on_gone(*this, std::exchange(handshake_failed_, false));
}

} // namespace hotpath::load
