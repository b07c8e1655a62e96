// A pooled client connection over HTTP/2: each call on a stream of its own of one h2_session, side by side. What the
// session tells from inside receive() is recorded on the stream, and told to the calls once receive() has returned.
#include <hotpath/client/client_connection.hpp>

#include <hotpath/client/pool.hpp>
#include <hotpath/core/error.hpp>
#include <hotpath/http/char_class.hpp>
#include <hotpath/http/h2_fields.hpp>

#include <algorithm>
#include <charconv>

namespace hotpath::client_detail {

namespace {

// The receive windows: Go's transport's for a stream (4 MiB), and room for a few such streams on the connection, so
// that a response is not held back by a window over a long round trip. A response past max_response_bytes fails its
// call whatever the window.
constexpr std::uint32_t stream_window = 4u << 20;
constexpr std::uint32_t connection_window = 32u << 20;

} // namespace

bool client_connection::has_room(std::uint32_t assumed) const noexcept {
    if (h2_ == nullptr || closing_ || phase_ == phase::connecting || h2_->goaway || !h2_->session->may_open_stream()) {
        return false;
    }
    std::uint32_t limit = h2_->session->peer_max_concurrent_streams(); // nghttp2 assumes 100 until SETTINGS
    if (assumed != 0 && !h2_->session->peer_settings_received()) {
        limit = std::min(limit, assumed);
    }
    return h2_->in_use < limit;
}

std::uint32_t client_connection::peer_streams() const noexcept {
    return h2_ != nullptr && h2_->session->peer_settings_received() ? h2_->session->peer_max_concurrent_streams() : 0;
}

void client_connection::h2_start() {
    h2_ = std::make_unique<h2_state>();
    http::h2_settings settings;
    settings.initial_window_size = stream_window;
    settings.connection_window = connection_window;
    settings.max_header_list_size = static_cast<std::uint32_t>(pool_.owner().options.limits.max_header_bytes);
    h2_->session = http::h2_session::make(http::h2_session::role::client, *this, settings);
    if (h2_->session == nullptr) {
        h2_.reset();
        fail(make_error_code(std::errc::not_enough_memory));
        return;
    }
    h2_flush(); // the preface and SETTINGS go out with (or before) the first request
}

std::error_code client_connection::h2_begin(call_state& c, const request_parts& parts, client_response& out) {
    h2_state& h = *h2_;
    stream* s = h.free;
    if (s != nullptr) {
        h.free = s->next_free;
    } else {
        s = h.streams.emplace_back(std::make_unique<stream>()).get();
    }
    s->call = &c;
    s->out = &out;
    s->status = 0;
    s->head_done = false;
    s->ended = false;
    s->queued = false;
    s->closed = false;
    s->unprocessed = false;
    s->failed = {};
    s->body.assign(parts.body);
    s->sending = {s->body, 0, false};
    out.status_ = 0;
    out.reason_ = {};
    out.head_.clear();
    out.fields_.clear();
    out.body_.clear();

    // RFC 9113 §8.3.1: the pseudo-fields, then the caller's fields with their names in lower case (§8.2.1), less
    // those HTTP/2 forbids (§8.2.2) and Host (:authority says it), then the body's length.
    h.names.clear();
    char digits[24];
    const std::size_t length_digits =
        parts.send_length || !parts.body.empty()
            ? static_cast<std::size_t>(std::to_chars(digits, digits + sizeof(digits), parts.body.size()).ptr - digits)
            : 0;
    h.fields.clear();
    h.fields.push_back({":method", parts.method});
    h.fields.push_back({":scheme", pool_.tls() ? "https" : "http"});
    h.fields.push_back({":authority", parts.host_field});
    h.fields.push_back({":path", parts.target});
    // The lower-cased names are written first, then viewed: h.names does not move once whole.
    std::size_t total = length_digits;
    if (parts.headers != nullptr) {
        for (const auto& [name, value] : *parts.headers) {
            total += name.size();
        }
    }
    h.names.reserve(total);
    if (parts.headers != nullptr) {
        for (const auto& [name, value] : *parts.headers) {
            if (http::is_connection_specific(name) || http::iequals(name, "host") ||
                (length_digits != 0 && http::iequals(name, "content-length"))) {
                continue;
            }
            const std::size_t at = h.names.size();
            for (const char ch : name) {
                h.names.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch);
            }
            h.fields.push_back({std::string_view(h.names).substr(at, name.size()), value});
        }
    }
    if (length_digits != 0) {
        const std::size_t at = h.names.size();
        h.names.append(digits, length_digits);
        h.fields.push_back({"content-length", std::string_view(h.names).substr(at, length_digits)});
    }

    const std::int32_t id = h.session->request(h.fields, s->body.empty() ? nullptr : &s->sending, s);
    if (id < 0) {
        // Not sent: the server's GOAWAY (or the last stream id) came first.
        s->call = nullptr;
        s->out = nullptr;
        s->id = 0;
        s->next_free = h.free;
        h.free = s;
        --h.in_use;
        c.unprocessed = true;
        return make_error_code(errc::reset);
    }
    s->id = id;
    h.carried = true;
    c.stream = s;
    h2_flush();
    return {};
}

void client_connection::h2_abandon(call_state& c) noexcept {
    auto* s = static_cast<stream*>(c.stream);
    c.stream = nullptr;
    if (s == nullptr || s->call != &c) {
        return;
    }
    s->call = nullptr;
    s->out = nullptr;
    if (!s->closed && !closing_) {
        (void)h2_->session->reset(s->id, http::h2_error::cancel); // its record is free once the stream closes
        h2_flush();
    }
}

void client_connection::h2_receive(std::string_view bytes) {
    h2_state& h = *h2_;
    h.receiving = true;
    const std::error_code broken = h.session->receive(bytes);
    h.receiving = false;
    if (broken) {
        // The server broke HTTP/2 (a bad frame or header block; an HTTP/1.1 server answering the preface).
        h2_fail_all(make_error_code(errc::malformed_response));
        return;
    }
    h2_settle();
    h2_flush();
}

void client_connection::h2_flush() {
    h2_state& h = *h2_;
    if (h.writing || h.receiving || closing_ || transport_ == nullptr) {
        return;
    }
    h.out.clear();
    if (h.session->produce(h.out)) {
        h2_fail_all(make_error_code(errc::malformed_response));
        return;
    }
    if (!h.out.empty()) {
        h.writing = true;
        transport_->write(h.out);
    } else if (!h.session->wants_read() && !h.session->wants_write()) {
        h2_fail_all(make_error_code(errc::closed)); // both sides said GOAWAY: nothing more will come
        return;
    }
    // Streams reset here close once their RST_STREAM is made.
    if (!h.closed.empty() || !h.done.empty()) {
        h2_settle();
    }
}

void client_connection::h2_end_stream(stream& s, std::error_code e) noexcept {
    if (s.queued || s.call == nullptr) {
        return;
    }
    s.failed = e;
    s.queued = true;
    h2_->done.push_back(&s);
}

void client_connection::h2_settle() {
    h2_state& h = *h2_;
    if (h.settling) {
        return; // a call told below began a stream whose flush came back here: the loop below sees it
    }
    h.settling = true;
    for (;;) {
        if (!h.done.empty()) {
            // The calls first: one that resumes may begin another stream here (its room is counted until the
            // frees below), or give up others (their streams reset).
            for (std::size_t i = 0; i < h.done.size(); ++i) {
                stream& s = *h.done[i];
                s.queued = false;
                call_state* c = s.call;
                if (c == nullptr) {
                    continue; // it went away meanwhile
                }
                if (s.failed && !s.closed && !closing_) {
                    (void)h.session->reset(s.id, http::h2_error::cancel); // a response refused (too large, malformed)
                }
                s.call = nullptr;
                s.out = nullptr;
                c->stream = nullptr;
                c->unprocessed = s.unprocessed;
                c->finish(s.failed);
            }
            h.done.clear();
            continue;
        }
        if (!h.closed.empty() && !closing_) {
            for (stream* s : h.closed) {
                h2_free(*s);
            }
            h.closed.clear();
            pool_.on_room(*this, net::clock::now());
            continue;
        }
        h.closed.clear();
        break;
    }
    h.settling = false;
}

void client_connection::h2_free(stream& s) noexcept {
    s.id = 0;
    s.call = nullptr;
    s.out = nullptr;
    s.next_free = h2_->free;
    h2_->free = &s;
    --h2_->in_use;
}

void client_connection::h2_fail_all(std::error_code e) {
    h2_state& h = *h2_;
    close(); // no stream is offered from here
    for (const auto& s : h.streams) {
        if (s->id != 0 && s->call != nullptr && !s->queued) {
            s->unprocessed = h.goaway && s->id > h.goaway_last;
            h2_end_stream(*s, e);
        }
    }
    h.closed.clear();
    h2_settle();
    h.in_use = 0;
}

client_connection::stream* client_connection::stream_of(std::int32_t id) const noexcept {
    return static_cast<stream*>(h2_->session->stream_user(id));
}

void client_connection::on_h2_field(std::int32_t id, std::string_view name, std::string_view value) {
    stream* s = stream_of(id);
    if (s == nullptr || s->call == nullptr || s->queued || s->head_done) {
        return; // a stream given up, or trailers: not kept
    }
    s->call->got_response_bytes = true;
    client_response& out = *s->out;
    if (name == ":status") {
        unsigned status = 0;
        for (const char ch : value) {
            status = ch >= '0' && ch <= '9' && status < 1000 ? status * 10 + static_cast<unsigned>(ch - '0') : 1000;
        }
        s->status = value.size() == 3 && status < 1000 ? status : 0;
        return;
    }
    if (!name.empty() && name.front() == ':') {
        return;
    }
    if (out.head_.size() + name.size() + value.size() > pool_.owner().options.limits.max_header_bytes ||
        out.fields_.size() >= pool_.owner().options.limits.max_header_count) {
        h2_end_stream(*s, make_error_code(errc::malformed_response));
        return;
    }
    const auto at = static_cast<std::uint32_t>(out.head_.size());
    out.head_.append(name).append(value);
    out.fields_.emplace_back(
        client_response::span{at, static_cast<std::uint32_t>(name.size())},
        client_response::span{static_cast<std::uint32_t>(at + name.size()), static_cast<std::uint32_t>(value.size())});
}

void client_connection::on_h2_headers(std::int32_t id) {
    stream* s = stream_of(id);
    if (s == nullptr || s->call == nullptr || s->queued || s->head_done) {
        return;
    }
    if (s->status == 0) {
        h2_end_stream(*s, make_error_code(errc::malformed_response));
        return;
    }
    if (s->status < 200) {
        // An interim response (100 Continue, 103 Early Hints): the final one follows.
        s->out->head_.clear();
        s->out->fields_.clear();
        s->status = 0;
        return;
    }
    s->head_done = true;
    s->out->status_ = s->status;
}

void client_connection::on_h2_data(std::int32_t id, std::string_view bytes) {
    stream* s = stream_of(id);
    if (s == nullptr || s->call == nullptr || s->queued) {
        return;
    }
    std::string& body = s->out->body_;
    if (body.size() + bytes.size() > pool_.owner().options.max_response_bytes) {
        h2_end_stream(*s, make_error_code(errc::response_too_large));
        return;
    }
    body.append(bytes);
}

void client_connection::on_h2_end(std::int32_t id) {
    stream* s = stream_of(id);
    if (s == nullptr || s->call == nullptr || s->queued) {
        return;
    }
    s->ended = true;
    h2_end_stream(*s, s->head_done ? std::error_code{} : make_error_code(errc::malformed_response));
}

void client_connection::on_h2_closed(std::int32_t id, http::h2_error error) {
    stream* s = stream_of(id);
    if (s == nullptr) {
        return;
    }
    s->closed = true;
    if (s->call != nullptr && !s->queued) {
        // Reset before its response ended. REFUSED_STREAM, or a stream above the GOAWAY's last, was not processed
        // (RFC 9113 §8.7): the call may be sent again, whatever its method.
        h2_state& h = *h2_;
        s->unprocessed = error == http::h2_error::refused_stream ||
                         (h.goaway && id > h.goaway_last && error != http::h2_error::no_error);
        h2_end_stream(*s, make_error_code(errc::reset));
    }
    h2_->closed.push_back(s);
}

void client_connection::on_h2_goaway(std::int32_t last_stream, http::h2_error) {
    // Told before nghttp2 closes the streams past `last_stream` (each then closes with REFUSED_STREAM).
    h2_->goaway = true;
    h2_->goaway_last = last_stream;
}

} // namespace hotpath::client_detail
