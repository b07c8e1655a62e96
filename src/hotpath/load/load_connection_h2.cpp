// A load connection over HTTP/2: up to `streams` requests in flight, each on its stream of one h2_session; responses
// complete in any order. Callbacks from the session only record; what they tell is acted on once receive() returns.
#include <hotpath/load/worker.hpp>

#include <algorithm>

namespace hotpath::load {

namespace {

// The client's receive windows: h2load's (2^30 - 1 for a stream and for the connection), so that a load generator
// never holds the server back with flow control of its own.
constexpr std::uint32_t client_window = (1u << 30) - 1;

// The start of a response body kept for a body check.
constexpr std::size_t max_kept_bytes = 64 * 1024;

} // namespace

void load_connection::h2_start() {
    h2_state& h = *h2_;
    http::h2_settings settings;
    settings.initial_window_size = client_window;
    settings.connection_window = client_window;
    h.session = http::h2_session::make(http::h2_session::role::client, *this, settings);
    h.goaway = false;
    h.goaway_last = 0;
    h.writing = false;
    h.receiving = false;
    h.last_received = clock::now();
}

unsigned load_connection::h2_room() const noexcept {
    const h2_state& h = *h2_;
    if (!connected_ || closing_ || h.session == nullptr || h.goaway || !h.session->may_open_stream()) {
        return 0;
    }
    // Until the server's SETTINGS arrive, the limit its last connection announced (none known: nghttp2's 100), so
    // that a server allowing fewer streams does not refuse the excess on each new connection.
    std::uint32_t peer = h.session->peer_max_concurrent_streams();
    if (h.session->peer_settings_received()) {
        owner_.h2_peer_streams_ = peer;
    } else if (owner_.h2_peer_streams_ != 0) {
        peer = std::min(peer, owner_.h2_peer_streams_);
    }
    const std::uint32_t most = std::min<std::uint32_t>(static_cast<std::uint32_t>(h.slots.size()), peer);
    return most > h.in_flight ? most - h.in_flight : 0;
}

void load_connection::h2_send(clock::time_point scheduled, unsigned count, clock::time_point now) {
    h2_state& h = *h2_;
    for (unsigned i = 0; i < count && h.free != no_slot && h.session != nullptr; ++i) {
        const std::uint32_t index = h.free;
        stream_slot& s = h.slots[index];
        std::span<const http::h2_field> fields;
        std::string_view body;
        const std::uint32_t request = owner_.pick_h2(h.scratch, h.scratch_text, fields, s.upload, body);
        s.sending = {body, 0};
        owner_.on_sent(0, 1); // its bytes are counted as the frames are written
        const std::int32_t id = h.session->request(fields, body.empty() ? nullptr : &s.sending, &s);
        if (id < 0) {
            owner_.on_error(*this, error_class::write, 1); // nghttp2 refused it (stream ids exhausted)
            continue;
        }
        h.free = s.next;
        s.times = {scheduled, now, request};
        s.id = id;
        s.status = 0;
        s.error = http::h2_error::no_error;
        s.timed_out = false;
        s.body.clear();
        s.linked = true;
        s.prev = h.newest;
        s.next = no_slot;
        (h.newest == no_slot ? h.oldest : h.slots[h.newest].next) = index;
        h.newest = index;
        ++h.in_flight;
    }
    if (!h.receiving) {
        h2_flush();
    }
}

void load_connection::h2_flush() {
    h2_state& h = *h2_;
    if (h.writing || closing_ || h.session == nullptr || transport_ == nullptr) {
        return;
    }
    h.out.clear();
    if (h.session->produce(h.out)) {
        abort(error_class::malformed);
        return;
    }
    if (!h.out.empty()) {
        h.writing = true;
        owner_.on_sent(h.out.size(), 0);
        transport_->write(h.out);
    }
    // Streams reset for their timeout close once the reset is sent.
    if (!h.closed.empty() && !h.receiving) {
        h2_finish_closed(clock::now());
    }
}

void load_connection::h2_data(std::string_view bytes, clock::time_point now) {
    h2_state& h = *h2_;
    h.last_received = now;
    h.receiving = true;
    const std::error_code broken = h.session->receive(bytes);
    h2_finish_closed(now);
    if (closing_ || !connected_) {
        return;
    }
    h.receiving = false;
    if (broken || (h.in_flight != 0 && !h.session->wants_read())) {
        // The server broke HTTP/2 (a bad frame, a bad header block; an HTTP/1.1 server answering h2c's preface): the
        // session ended itself, and what is in flight is lost.
        abort(error_class::malformed);
        return;
    }
    h2_flush();
    h2_settle();
}

void load_connection::h2_settle() {
    const h2_state& h = *h2_;
    if (closing_ || !connected_ || h.session == nullptr || h.in_flight != 0) {
        return;
    }
    if (h.goaway || retire || (!h.session->wants_read() && !h.session->wants_write())) {
        close_transport(); // the worker opens another in its place when the plan wants one
    }
}

void load_connection::h2_finish_closed(clock::time_point now) {
    h2_state& h = *h2_;
    const bool was_receiving = h.receiving;
    h.receiving = true; // sends made by the worker from here go out in one write, below
    bool freed = false;
    for (std::size_t i = 0; i < h.closed.size(); ++i) {
        const std::uint32_t index = h.closed[i];
        stream_slot& s = h.slots[index];
        if (s.linked) {
            h2_unlink(index);
        }
        --h.in_flight;
        freed = true;
        if (!s.timed_out) {
            if (s.error == http::h2_error::no_error && s.status != 0) {
                owner_.on_response(*this, s.times.scheduled, s.times.sent, s.times.index, s.status, s.body,
                                   s.retry_after, now);
            } else if (h.goaway && s.id > h.goaway_last) {
                owner_.on_unprocessed(s.times.scheduled);
            } else {
                const error_class why = s.error == http::h2_error::refused_stream ? error_class::refused
                                        : s.error == http::h2_error::no_error     ? error_class::malformed
                                                                                  : error_class::reset;
                owner_.on_error(*this, why, 1);
            }
        }
        h2_release(index);
        if (closing_ || !connected_) {
            h.closed.clear();
            return; // the worker ended the connection (the run is over): h2_end freed the rest
        }
    }
    h.closed.clear();
    if (freed && !retire && room() != 0) {
        owner_.on_ready(*this, now);
    }
    if (closing_ || !connected_) {
        return;
    }
    h.receiving = was_receiving;
    if (!was_receiving) {
        h2_flush();
    }
}

void load_connection::h2_unlink(std::uint32_t index) noexcept {
    h2_state& h = *h2_;
    stream_slot& s = h.slots[index];
    (s.prev == no_slot ? h.oldest : h.slots[s.prev].next) = s.next;
    (s.next == no_slot ? h.newest : h.slots[s.next].prev) = s.prev;
    s.prev = s.next = no_slot;
    s.linked = false;
}

void load_connection::h2_release(std::uint32_t index) noexcept {
    h2_state& h = *h2_;
    stream_slot& s = h.slots[index];
    s.id = 0;
    s.next = h.free;
    h.free = index;
}

void load_connection::h2_end(error_class why) {
    h2_state& h = *h2_;
    std::size_t lost = 0;
    for (std::uint32_t i = h.oldest; i != no_slot; i = h.slots[i].next) {
        const stream_slot& s = h.slots[i];
        if (why != error_class::count_ && h.goaway && s.id > h.goaway_last) {
            owner_.on_unprocessed(s.times.scheduled);
        } else {
            ++lost;
        }
    }
    h.session.reset(); // nghttp2 tells nothing as it goes
    h.closed.clear();
    h.oldest = h.newest = no_slot;
    h.in_flight = 0;
    h.free = no_slot;
    for (std::uint32_t i = static_cast<std::uint32_t>(h.slots.size()); i-- > 0;) {
        h.slots[i].linked = false;
        h.slots[i].prev = no_slot;
        h.slots[i].id = 0;
        h.slots[i].next = h.free;
        h.free = i;
    }
    if (lost != 0) {
        owner_.on_error(*this, why, lost);
    }
}

void load_connection::h2_check_timeout(clock::time_point now, clock::duration timeout) {
    h2_state& h = *h2_;
    bool reset_any = false;
    while (h.oldest != no_slot && now - h.slots[h.oldest].times.sent > timeout) {
        const std::uint32_t index = h.oldest;
        stream_slot& s = h.slots[index];
        if (h.last_received < s.times.sent) {
            abort(error_class::timeout); // nothing came since it was sent: the connection, not a stream, is stuck
            return;
        }
        h2_unlink(index);
        s.timed_out = true;
        owner_.on_error(*this, error_class::timeout, 1);
        (void)h.session->reset(s.id, http::h2_error::cancel); // its slot is free once the stream closes
        reset_any = true;
    }
    if (reset_any) {
        h2_flush();
    }
}

load_connection::stream_slot* load_connection::slot_of(std::int32_t stream) const noexcept {
    return h2_->session == nullptr ? nullptr : static_cast<stream_slot*>(h2_->session->stream_user(stream));
}

void load_connection::on_h2_field(std::int32_t stream, std::string_view name, std::string_view value) {
    stream_slot* s = slot_of(stream);
    if (s != nullptr && name == "retry-after" && (s->status == 429 || s->status == 503)) {
        s->retry_after = retry_after_of(value);
    }
    if (s == nullptr || name != ":status" || value.size() != 3) {
        return;
    }
    s->retry_after.reset(); // the head's first field: what a stream before on this slot read goes
    unsigned status = 0;
    for (const char c : value) {
        status = c >= '0' && c <= '9' ? status * 10 + static_cast<unsigned>(c - '0') : 1000;
    }
    s->status = status < 1000 ? status : 0; // nghttp2 checked it already; 0 reads as malformed
}

void load_connection::on_h2_data(std::int32_t stream, std::string_view bytes) {
    stream_slot* s = slot_of(stream);
    if (s != nullptr && owner_.wants_body(s->times.index) && s->body.size() < max_kept_bytes) {
        s->body.append(bytes.substr(0, max_kept_bytes - s->body.size()));
    }
}

void load_connection::on_h2_closed(std::int32_t stream, http::h2_error error) {
    stream_slot* s = slot_of(stream);
    if (s == nullptr) {
        return;
    }
    s->error = error;
    h2_->closed.push_back(static_cast<std::uint32_t>(s - h2_->slots.data()));
}

void load_connection::on_h2_goaway(std::int32_t last_stream, http::h2_error) {
    // Told before nghttp2 closes the streams past `last_stream` (each then closes with REFUSED_STREAM).
    h2_->goaway = true;
    h2_->goaway_last = last_stream;
}

} // namespace hotpath::load
