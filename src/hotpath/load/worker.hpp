// One load worker: an event loop with its connections, its share of the plan, and its own results.
#pragma once

#include <hotpath/http/h2_session.hpp>
#include <hotpath/http/response_reader.hpp>
#include <hotpath/load/live.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/load/results.hpp>
#include <hotpath/net/connect.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/timer.hpp>
#include <hotpath/net/tls.hpp>
#include <hotpath/net/transport.hpp>

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hotpath::load {

// Updated by workers, read by the progress display from another thread.
struct live_counters {
    std::atomic<std::uint64_t> responses{0}; // every response, warm-up included (the display's req/s)
    std::atomic<std::uint64_t> errors{0};    // failed requests in the measured window
    std::atomic<std::uint64_t> connections_opened{0};
    std::atomic<std::uint64_t> connect_failures{0};
    std::atomic<std::uint64_t> last_second_p95_ns{0};
    std::atomic<std::uint64_t> seconds_published{0}; // 0 until a whole measured second has a p95
};

class worker;

// A client connection of a worker. Over HTTP/1.1 it sends the plan's request (or `pipeline` copies at once in the
// closed model) and reads responses with the project's response reader; over HTTP/2 (load_connection_h2.cpp) it
// keeps up to `streams` requests in flight, each on its stream, through an h2_session. It reports each response to
// the worker, and reconnects when the server closes or on an error. Lives on its worker's loop for the worker's life.
class load_connection final : public net::transport_owner, private http::h2_events {
public:
    explicit load_connection(worker& owner);
    ~load_connection();

    void open();
    // Sends `count` copies of the next request of the plan (picked by weight) in one write; `scheduled` is when
    // the plan wanted the first sent, `now` the time read by the caller (one clock reading serves a whole event).
    void send(clock::time_point scheduled, unsigned count, clock::time_point now);
    // Closes now, failing what is in flight with `why` (not counted when `why` is count_).
    void abort(error_class why);

    // Whether send() may take a request now, and how many (HTTP/1.1: one batch of `pipeline` when nothing is in
    // flight; HTTP/2: a free stream each, up to `streams` and the server's SETTINGS_MAX_CONCURRENT_STREAMS).
    // A held user (think time, Retry-After) takes none until released.
    bool ready() const noexcept {
        return !held_ && (h2_on_ ? h2_room() != 0 : connected_ && in_flight_.empty() && !closing_);
    }
    unsigned room() const noexcept {
        return held_ ? 0 : h2_on_ ? h2_room() : connected_ && in_flight_.empty() && !closing_ ? pipeline_ : 0;
    }
    bool busy() const noexcept { return h2_on_ ? h2_->in_flight != 0 : !in_flight_.empty(); }
    // Connecting, or over TLS handshaking: not yet ready, within the connect's timeout.
    bool connecting() const noexcept { return connecting_ || handshaking_; }
    // When the connect in progress began, for its timeout (the plan's request timeout).
    clock::time_point connect_started() const noexcept { return connect_started_; }
    // Gives up the connect in progress: it counts as a failed connection attempt ("Connection timed out").
    void time_out_connect();
    bool gone() const noexcept { return !connected_ && !connecting_ && !handshaking_ && !closing_; }
    // Fails what has waited past `timeout` (timeout errors): HTTP/1.1 closes the connection, HTTP/2 resets each
    // late stream, and closes the connection only when nothing at all arrived since the oldest was sent.
    void check_timeout(clock::time_point now, clock::duration timeout);

    bool retire = false; // closed-model ramp-down: close after the current responses

    // Closed model: the user this connection is holds off its next request until `until` (its think time, or a
    // Retry-After), across reconnections; the worker releases it.
    void hold(clock::time_point until) noexcept {
        held_ = true;
        held_until_ = until;
    }
    void release() noexcept { held_ = false; }
    bool held() const noexcept { return held_; }
    clock::time_point held_until() const noexcept { return held_until_; }

private:
    struct request_times {
        clock::time_point scheduled;
        clock::time_point sent;
        std::uint32_t index; // which request of the scenario
    };

    void on_transport_data(std::string_view bytes) override;
    void on_transport_end(std::error_code error) override;
    void on_transport_written(std::error_code error) override;
    void on_transport_closed() override;
    void on_transport_ready() override;
    void on_connected(int fd, std::error_code ec);
    void connected(clock::time_point now);
    void handshake_failed(std::error_code error);
    void confirm_handshake();
    void complete_response(clock::time_point now);
    void keep_body(std::string_view bytes);
    void close_transport();

    // HTTP/2 (load_connection_h2.cpp).
    static constexpr std::uint32_t no_slot = ~std::uint32_t{0};
    struct stream_slot {
        request_times times{};
        std::int32_t id = 0;
        unsigned status = 0;
        http::h2_error error = http::h2_error::no_error;
        bool linked = false;    // in the in-flight list (not once its timeout was counted)
        bool timed_out = false; // reset for its timeout, which was counted; its close counts nothing more
        std::uint32_t prev = no_slot;
        std::uint32_t next = no_slot;                    // in flight, in send order; or the next free slot
        std::optional<std::chrono::seconds> retry_after; // a 429's or 503's Retry-After, read
        std::string body;                                // the response body's start, for a body check
        std::string upload;                              // a templated request's body, rendered for this stream
        http::h2_body sending;                           // the request body as nghttp2 reads it
    };
    struct h2_state {
        std::unique_ptr<http::h2_session> session;
        std::vector<stream_slot> slots; // one per stream the plan allows
        std::uint32_t free = no_slot;   // free slots, linked by `next`
        std::uint32_t oldest = no_slot; // in flight, oldest first
        std::uint32_t newest = no_slot;
        std::uint32_t in_flight = 0;         // streams open (timed-out ones until they close too)
        std::vector<std::uint32_t> closed;   // slots whose streams closed during the current receive
        std::string out;                     // frames being written
        bool writing = false;                // `out` is with the transport
        bool receiving = false;              // inside on_transport_data: writes wait for its end
        bool goaway = false;                 // the server's GOAWAY came: no new streams
        std::int32_t goaway_last = 0;        // ... and the last stream it may have processed
        clock::time_point last_received{};   // when bytes last came
        std::vector<http::h2_field> scratch; // a templated request's fields
        std::vector<std::pair<std::string, std::string>> scratch_text;
    };
    void h2_start();
    void h2_send(clock::time_point scheduled, unsigned count, clock::time_point now);
    void h2_data(std::string_view bytes, clock::time_point now);
    void h2_flush();
    // Closes the connection once nothing is in flight and it takes no more streams (GOAWAY, retired, session over).
    void h2_settle();
    void h2_finish_closed(clock::time_point now);
    void h2_unlink(std::uint32_t slot) noexcept;
    void h2_release(std::uint32_t slot) noexcept;
    // The connection ends: what is in flight fails with `why` (count_: not counted), or is sent again elsewhere
    // when past a GOAWAY's last stream; the session goes.
    void h2_end(error_class why);
    void h2_check_timeout(clock::time_point now, clock::duration timeout);
    unsigned h2_room() const noexcept;
    stream_slot* slot_of(std::int32_t stream) const noexcept;
    void on_h2_field(std::int32_t stream, std::string_view name, std::string_view value) override;
    void on_h2_headers(std::int32_t) override {}
    void on_h2_data(std::int32_t stream, std::string_view bytes) override;
    void on_h2_end(std::int32_t) override {}
    void on_h2_closed(std::int32_t stream, http::h2_error error) override;
    void on_h2_goaway(std::int32_t last_stream, http::h2_error error) override;

    worker& owner_;
    net::connector connector_;
    std::unique_ptr<net::transport> transport_;
    std::string in_;
    http::response_reader reader_;
    std::deque<request_times> in_flight_;
    std::string rendered_; // the bytes of a request with placeholders, until written
    std::string body_;     // the body of the current response, kept only for a body check (capped)
    clock::time_point connect_started_{};
    clock::time_point handshake_started_{};
    bool connecting_ = false;
    bool handshaking_ = false;      // TLS: the socket is connected, the session not yet
    bool handshake_failed_ = false; // ... and it failed: the close that follows is a failed attempt
    bool unconfirmed_ = false;      // done on the client's side, not yet answered over (see on_transport_ready)
    bool handshake_resumed_ = false;
    clock::duration handshake_took_{};
    bool connect_timed_out_ = false;
    bool connected_ = false;
    bool closing_ = false;
    bool server_closes_ = false;
    bool held_ = false;
    clock::time_point held_until_{};
    std::unique_ptr<h2_state> h2_; // when HTTP/2 may be spoken; kept across reconnections (a session per connection)
    bool h2_on_ = false;           // this connection speaks HTTP/2 (h2c, or h2 agreed through ALPN)
    unsigned pipeline_;            // HTTP/1.1: requests sent at once (the plan's pipeline, at least 1)
};

// A 429's or 503's Retry-After field as a wait (http::parse_retry_after at the wall clock's now); nullopt when
// absent or unreadable.
std::optional<std::chrono::seconds> retry_after_of(std::string_view value) noexcept;

// Runs its share of the plan on its own loop: `index` of `count` workers. Not thread-safe except stop().
class worker {
public:
    // `tls`: the client context for an https:// plan (null for http://), shared by the workers. `watched`: this
    // worker's live totals when the run is watched (live.hpp), else null (nothing more is counted).
    worker(const plan& p, net::endpoint endpoint, std::shared_ptr<net::tls_context> tls, unsigned index, unsigned count,
           clock::time_point start, live_counters& live, live_totals* watched = nullptr);
    ~worker();

    // Runs the loop on the calling thread until this worker's share is done.
    void run();
    // Ends the run early (Ctrl-C); safe from any thread.
    void stop();
    results& result() noexcept { return results_; }
    // When this worker's loop began the run (its first tick at or past the start), if it has.
    std::optional<clock::time_point> began() const noexcept { return started_ ? std::optional(began_) : std::nullopt; }

private:
    friend class load_connection;

    // The clock is read once per event (bytes arrived, a connection ready) and `now` handed down: a response, the
    // request sent in its place and the end check share one reading.
    // `retry_after`: a 429's or 503's Retry-After as read (nullopt: none, or not one a client can read).
    void on_response(load_connection& c, clock::time_point scheduled, clock::time_point sent, std::uint32_t index,
                     unsigned status, std::string_view body, std::optional<std::chrono::seconds> retry_after,
                     clock::time_point now);
    void on_bytes(std::size_t bytes, clock::time_point now);
    // `requests` requests of `bytes` handed to the transport (the request count for the in-flight gauge).
    void on_sent(std::size_t bytes, unsigned requests) noexcept {
        results_.bytes_sent += bytes;
        if (watched_ != nullptr) {
            watched_->bytes_sent.add(bytes);
            watched_->sent.add(requests);
        }
    }
    // A socket connected (`open`), or closed after it was.
    void on_socket(bool open) noexcept {
        if (watched_ != nullptr) {
            (open ? watched_->sockets_opened : watched_->sockets_closed).add();
        }
    }
    // `lost_requests` requests failed with `e`; 0 counts nothing (a connection-level event with none in flight).
    // `e` == error_class::count_: they ended without an outcome (the run's end, a retired user, a handshake the
    // server refused late): not failures, only no longer in flight.
    void on_error(load_connection& c, error_class e, std::size_t lost_requests);
    // HTTP/2: a request the server's GOAWAY left unprocessed, to be sent again (on another connection).
    void on_unprocessed(clock::time_point scheduled);
    void on_connect_result(std::error_code ec);
    // Over TLS: a handshake done in `took` (resumed or full), or failed with `error` (a net::tls_errc, or the
    // socket's error).
    void on_handshake(clock::duration took, bool resumed);
    void on_handshake_failed(std::error_code error);
    void on_ready(load_connection& c, clock::time_point now);
    void on_gone(load_connection& c, bool failed);
    void do_tick();
    void schedule_tick(clock::time_point now);
    // Closed model: holds the user `c` until `until` (cut at the run's end); `asked`: a Retry-After's wait.
    void hold(load_connection& c, clock::time_point until, clock::time_point now, bool asked);
    // Releases the users whose hold has ended, and sends their next requests.
    void release_held(clock::time_point now);
    clock::duration think_for(std::uint32_t index) noexcept;
    std::uint64_t next_random() noexcept;
    // Open model: sets next_send_ to this worker's next arrival (time_point::max() when the plan has no more).
    void schedule_next_arrival();
    void dispatch(clock::time_point scheduled);
    bool may_send() const noexcept;
    // Closed model: how many gone connections may be reopened now (one per request left with -n).
    std::uint64_t connections_wanted() const noexcept;
    void send_closed(load_connection& c, clock::time_point now);
    void adjust_users(clock::time_point now);
    void check_timeouts(clock::time_point now);
    void check_done(clock::time_point now);
    void publish_second(clock::time_point now);
    load_connection* add_connection();
    // Picks the next request by weight; sets its bytes (rendering placeholders into `scratch` if needed).
    std::uint32_t pick(std::string& scratch, std::string_view& bytes, unsigned count);
    // The same for HTTP/2: its fields (rendered into `scratch`/`text` if needed) and its body (rendered into
    // `upload` if needed; else the plan's own, which outlives every stream).
    std::uint32_t pick_h2(std::vector<http::h2_field>& scratch, std::vector<std::pair<std::string, std::string>>& text,
                          std::span<const http::h2_field>& fields, std::string& upload, std::string_view& body);
    std::uint32_t pick_index() noexcept;
    request_spec filled(std::uint32_t index);
    bool wants_body(std::uint32_t index) const noexcept { return prepared_[index].keeps_body; }
    bool is_head(std::uint32_t index) const noexcept { return prepared_[index].head; }
    // Of the whole plan's first `whole` users (connections), those of this run's segment (all without --segment).
    unsigned segment_users(unsigned whole) const noexcept {
        return static_cast<unsigned>(plan_.part.count_below(whole));
    }

    const plan& plan_;
    http::limits limits_; // for parsing responses: the server defaults, generous enough for any sane server
    net::endpoint endpoint_;
    unsigned index_;
    unsigned count_; // workers in the run
    double share_;   // this worker's fraction of the rate, the users and the request count
    net::loop loop_;
    // What the connections get their transports from: sockets on the loop's backend, or TLS sessions over them.
    std::unique_ptr<net::tls_transports> tls_;
    net::transport_factory* transports_ = &net::socket_transports();
    net::timer timer_;
    // Each scenario request, ready to send: its bytes (with `pipeline` copies for the closed model), or
    // its spec when placeholders must be filled per send.
    struct prepared {
        request_spec spec;
        std::string bytes;
        std::string pipelined;
        std::vector<std::pair<std::string, std::string>> h2_text; // HTTP/2: the fields' names and values
        std::vector<http::h2_field> h2_fields;                    // ... as nghttp2 is given them
        bool templated = false;
        bool keeps_body = false;
        bool head = false;      // a HEAD request: its response has no body whatever its head says
        bool json_body = false; // placeholders in the body are JSON-escaped (feed.hpp: is_json_body)
        double cumulative_weight = 0;
    };
    std::vector<prepared> prepared_;
    std::uint64_t rng_state_;
    std::size_t feed_row_ = 0;
    std::vector<std::unique_ptr<load_connection>> connections_;
    std::deque<clock::time_point> pending_; // open model: due requests waiting for a connection
    // Closed model: users held (think time, Retry-After), a min-heap by the end of their hold; an entry whose
    // connection was held again since is stale and skipped. Reserved for one entry per connection.
    struct held_user {
        clock::time_point until;
        load_connection* user;
    };
    std::vector<held_user> held_;
    // HTTP/2: the server's SETTINGS_MAX_CONCURRENT_STREAMS as its last connection announced (0: none yet).
    std::uint32_t h2_peer_streams_ = 0;
    std::size_t max_connections_ = 0;
    unsigned users_ = 0;         // closed model without stages: this worker's virtual users
    unsigned most_users_ = 0;    // closed model with stages: this worker's share of the plan's largest stage
    std::uint64_t arrivals_ = 0; // open model: arrivals of this worker scheduled so far

    clock::time_point start_;
    clock::time_point warmup_end_;
    clock::time_point end_;
    clock::time_point next_send_;
    clock::time_point next_timeout_check_;
    std::uint64_t to_send_ = 0; // -n: requests this worker still has to send
    bool counted_ = false;      // -n mode
    clock::time_point began_{};
    bool started_ = false;  // the common start time has come: sending may begin
    bool stopping_ = false; // end of plan: no new requests
    bool finished_ = false;
    std::atomic<bool> stop_requested_{false};
    std::size_t published_seconds_ = 0;
    bool reopen_pending_ = false;    // a connection went away and may be reopened by the tick
    bool resend_pending_ = false;    // HTTP/2: a request a GOAWAY left unprocessed waits for a free stream
    std::size_t done_scan_from_ = 0; // check_done: connections before this one were idle when the run was ending
                                     // (back to 0 when a request goes again after a GOAWAY)

    results results_;
    live_counters& live_;
    live_totals* watched_;
};

} // namespace hotpath::load
