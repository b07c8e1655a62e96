// A client call: pick the loop's pool for the host, get a connection (idle, new, or after waiting) or over HTTP/2 a
// stream on a shared one, exchange, retry an idempotent request once on a stale pooled connection (any request the
// server did not process over HTTP/2), give the connection back.
#include <hotpath/client/client.hpp>

#include <hotpath/client/client_connection.hpp>
#include <hotpath/client/pool.hpp>
#include <hotpath/core/attribution.hpp>
#include <hotpath/core/error.hpp>
#include <hotpath/http/char_class.hpp>
#include <hotpath/http/request_head.hpp>
#include <hotpath/http/response.hpp>
#include <hotpath/http/url.hpp>

#include <algorithm>
#include <iterator>

namespace hotpath {

using namespace client_detail;

namespace {

// RFC 9110 §5.5: field values may not hold CR, LF or NUL (no smuggling through a header the caller passes).
bool valid_field_value(std::string_view s) noexcept {
    return std::all_of(s.begin(), s.end(), [](char c) { return http::char_class::is(c, http::char_class::value_bit); });
}

bool retryable(std::error_code e) noexcept {
    return e == errc::closed || e == errc::reset;
}

// RFC 9110 §9.2.2: the methods whose repetition has the effect of one request; or a request the caller marked
// with an Idempotency-Key (draft-ietf-httpapi-idempotency-key-header; Go's transport also takes the X- form).
bool idempotent(const client_request& r) noexcept {
    constexpr std::string_view methods[] = {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"};
    if (std::find(std::begin(methods), std::end(methods), r.method) != std::end(methods)) {
        return true;
    }
    return std::any_of(r.headers.begin(), r.headers.end(), [](const auto& field) {
        return http::iequals(field.first, "Idempotency-Key") || http::iequals(field.first, "X-Idempotency-Key");
    });
}

} // namespace

client::client(client_options options) : shared_(std::make_shared<shared_state>(std::move(options))) {}

client::~client() {
    shared_->closed.store(true, std::memory_order_relaxed);
}

std::error_code client::check_url(std::string_view url) {
    return http::parse_url(url).error().code;
}

const client_options& client::options() const noexcept {
    return shared_->options;
}

task<result<client_response>> client::get(std::string url, call_options options) {
    client_request r;
    r.url = std::move(url);
    co_return co_await send(std::move(r), options);
}

task<result<client_response>> client::post(std::string url, std::string body, std::string content_type,
                                           call_options options) {
    client_request r;
    r.method = "POST";
    r.url = std::move(url);
    r.body = std::move(body);
    r.headers.emplace_back("Content-Type", std::move(content_type));
    co_return co_await send(std::move(r), options);
}

task<result<client_response>> client::send(client_request request, call_options options) {
    net::loop* loop = net::loop::current();
    if (loop == nullptr) {
        co_return std::make_error_code(std::errc::operation_not_permitted); // not awaited on an event loop
    }
    // For the server request this call is made for, if any: a downstream wait until the call's result.
    const attributed_wait downstream(co_await this_attribution{}, wait_kind::downstream);
    auto target = http::parse_url(request.url);
    if (!target) {
        co_return target.error().code;
    }
    std::shared_ptr<net::tls_context> tls;
    if (target->tls()) {
        auto made = tls_context_of(*shared_);
        if (!made) {
            co_return made.error();
        }
        tls = std::move(*made);
    }
    const std::string authority = target->authority();
    if (!http::is_token(request.method)) {
        co_return make_error_code(errc::bad_request);
    }
    for (const auto& [name, value] : request.headers) {
        if (!http::is_token(name) || !valid_field_value(value)) {
            co_return make_error_code(errc::bad_request);
        }
    }
    loop_pools& pools = loop_pools::of(shared_, *loop);
    host_pool& pool = pools.pool_for(target->host, target->port, authority, std::move(tls));
    downstream_metrics& counters = pool.metrics();
    const client_options& o = pools.options;

    call_state c(pools);
    c.pool = &pool;
    const auto start = net::clock::now();
    call_meter meter(pool, options.route, start); // in flight until it ends: then its outcome and duration
    auto deadline = start + (options.timeout.count() > 0 ? options.timeout : o.request_timeout);
    if (options.deadline != net::clock::time_point{}) {
        deadline = std::min(deadline, options.deadline);
    }
    pools.track(c, deadline, make_error_code(errc::timeout));
    if (options.cancel != nullptr) {
        options.cancel->attach(c.slot);
    }
    const request_parts parts{
        request.method, target->target,
        authority,      &request.headers,
        request.body,   request.method == "POST" || request.method == "PUT" || request.method == "PATCH"};
    const auto fail = [&meter](std::error_code e) {
        meter.failed(e);
        return e;
    };
    const bool replayable = idempotent(request);
    // A request that is not idempotent goes out on a pooled connection only after a look shows the peer has
    // not closed it meanwhile: a connection found closed has carried nothing of it, so another is taken.
    const auto usable = [&](client_connection* k) {
        if (replayable || !k->stale()) {
            return true;
        }
        counters.closed_by_peer.add();
        k->close();
        return false;
    };

    for (int attempt = 0;; ++attempt) {
        // 1. A connection: an idle one (HTTP/1.1) or a stream on one with room (HTTP/2), a new one, or the next one
        // freed when the host is at its limit.
        client_connection* conn = nullptr;
        bool reused = false;
        while (conn == nullptr) {
            if (c.stopped) {
                co_return fail(c.stopped);
            }
            const auto now = net::clock::now();
            if (pool.protocol() == host_pool::speaks::http2) {
                if ((conn = pool.take_stream(now)) != nullptr) {
                    reused = true;
                    break;
                }
            } else if ((conn = pool.take_idle(now)) != nullptr) {
                if (!usable(conn)) {
                    conn = nullptr;
                    continue;
                }
                reused = true;
                break;
            }
            // While a connection agrees on the protocol, or an HTTP/2 one opens, the others wait for it.
            const bool wait_for_it = pool.protocol() != host_pool::speaks::http1 && pool.opening();
            if (!wait_for_it && pool.can_open()) {
                conn = pool.open();
                // The connect step ends at the connect timeout or the call's deadline, whichever is first.
                const auto connect_by = net::clock::now() + o.connect_timeout;
                if (connect_by < deadline) {
                    pools.track(c, connect_by, make_error_code(errc::connect_timeout));
                }
                c.conn = conn;
                c.current = call_state::step::connecting;
                conn->async_connect(c);
                co_await c.suspend();
                if (c.error) {
                    c.conn = nullptr;
                    co_return fail(c.error);
                }
                pools.track(c, deadline, make_error_code(errc::timeout));
                break; // over HTTP/2 the pool reserved a stream on it for this call
            }
            counters.waited_for_connection.add();
            c.current = call_state::step::queued;
            pool.enqueue(c);
            co_await c.suspend();
            if (c.error) {
                co_return fail(c.error);
            }
            if ((conn = std::exchange(c.conn, nullptr)) != nullptr) {
                if (conn->h2_on() || usable(conn)) {
                    reused = true; // handed over by the call that released it, or a stream reserved on it
                } else {
                    conn = nullptr;
                }
            }
        }
        if (reused) {
            counters.reused.add();
        }

        // 2. The exchange.
        client_response response;
        const bool h2 = conn->h2_on();
        c.conn = conn;
        c.got_response_bytes = false;
        c.unprocessed = false;
        c.current = call_state::step::exchange;
        if (const std::error_code refused = conn->begin(c, parts, response)) {
            c.current = call_state::step::none;
            c.error = refused;
        } else {
            co_await c.suspend();
        }
        c.conn = nullptr;
        if (!c.error) {
            if (!h2) {
                pool.release(*conn, net::clock::now()); // an HTTP/2 stream frees itself as it closes
            }
            meter.responded(response.status());
            co_return response;
        }
        if (attempt == 0 && !c.stopped) {
            // HTTP/2: the server said it did not process the request (RFC 9113 §8.7): sent again, whatever it is.
            if (c.unprocessed) {
                counters.retries.add();
                continue;
            }
            // A pooled connection that failed before any byte of the response: most likely the peer closed it as
            // the request went out, but the request may have reached it. Sent again once, on a fresh connection,
            // only if repeating it is harmless (RFC 9110 §9.2.2; Go's transport decides the same way).
            if (reused && !c.got_response_bytes && retryable(c.error)) {
                if (replayable) {
                    counters.retries.add();
                    continue;
                }
                counters.not_retried.add();
            }
        }
        co_return fail(c.error);
    }
}

} // namespace hotpath
