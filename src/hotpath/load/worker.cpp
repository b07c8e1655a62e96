// A load worker: schedules requests (closed or open model), records every response, keeps its timeouts.
#include <hotpath/load/worker.hpp>

#include <hotpath/http/request_head.hpp>
#include <hotpath/http/retry_after.hpp>
#include <hotpath/load/feed.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>

namespace hotpath::load {

namespace {

// How often a worker wakes when nothing is scheduled sooner: timeouts, stages and the end are checked then.
constexpr std::chrono::milliseconds tick_period{10};

// Worker `index` of `count`'s part of `total`: the remainder goes to the first workers.
unsigned share_of(unsigned total, unsigned index, unsigned count) noexcept {
    return total / count + (index < total % count ? 1 : 0);
}

// For the min-heap of held users: the soonest released on top.
bool later(const auto& a, const auto& b) noexcept {
    return a.until > b.until;
}

} // namespace

std::optional<std::chrono::seconds> retry_after_of(std::string_view value) noexcept {
    return value.empty() ? std::nullopt : http::parse_retry_after(value, std::time(nullptr));
}

worker::worker(const plan& p, net::endpoint endpoint, std::shared_ptr<net::tls_context> tls, unsigned index,
               unsigned count, clock::time_point start, live_counters& live, live_totals* watched)
    : plan_(p), endpoint_(endpoint), index_(index), count_(count), share_(1.0 / count), loop_(index), timer_(loop_),
      start_(start), live_(live), watched_(watched) {
    if (tls != nullptr) {
        tls_ = std::make_unique<net::tls_transports>(std::move(tls), *transports_,
                                                     p.tls.server_name.empty() ? p.to.host : p.tls.server_name);
        transports_ = tls_.get();
        results_.tls = true;
    }
    double total_weight = 0;
    for (auto& spec : requests_or_default(p)) {
        prepared r;
        r.templated = has_placeholders(spec.path_and_query) || has_placeholders(spec.body);
        for (const auto& h : spec.headers) {
            r.templated = r.templated || has_placeholders(h.second);
        }
        for (const auto& c : spec.checks) {
            r.keeps_body = r.keeps_body || c.what == check::kind::body_contains;
        }
        r.head = spec.method == "HEAD";
        std::string_view content_type;
        for (const auto& [name, value] : spec.headers) {
            content_type = http::iequals(name, "content-type") ? std::string_view(value) : content_type;
        }
        r.json_body = is_json_body(spec.body, content_type);
        if (!r.templated && p.may_h2()) {
            r.h2_text = h2_request_fields(p, spec);
        }
        if (!r.templated && !p.h2()) {
            r.bytes = build_request(p, spec);
            for (unsigned i = 0; i < std::max(1u, p.pipeline); ++i) {
                r.pipelined += r.bytes;
            }
        }
        total_weight += spec.weight;
        r.cumulative_weight = total_weight;
        results_.per_request.emplace_back().name = spec.name;
        r.spec = std::move(spec);
        prepared_.push_back(std::move(r));
    }
    // The fields view the texts in their final place (a move of a short string moves its bytes).
    for (auto& r : prepared_) {
        for (const auto& [name, value] : r.h2_text) {
            r.h2_fields.push_back({name, value});
        }
    }
    if (p.io == plan::io_choice::epoll) {
        loop_.disable_ring();
    }
    rng_state_ = 0x9e3779b97f4a7c15ULL * (index + 1) ^ static_cast<std::uint64_t>(start.time_since_epoch().count());
    warmup_end_ = start_ + p.warmup;
    end_ = start_ + p.total_time();
    // With --segment, the plan's counts are the whole's: this run takes its segment's part of each, then the
    // workers share that.
    counted_ = p.requests > 0;
    if (counted_) {
        const std::uint64_t mine = p.part.count_below(p.requests);
        to_send_ = mine / count + (index < mine % count ? 1 : 0);
    }
    users_ = share_of(segment_users(p.connections), index, count);
    most_users_ = share_of(segment_users(static_cast<unsigned>(std::lround(p.max_level()))), index, count);
    // Open model: -c connections unless --max-connections allows more; sends that find them all busy wait (and
    // are reported late) instead of opening connections that would distort what is measured.
    max_connections_ = std::max(1u, share_of(segment_users(p.open_connections()), index, count));
    schedule_next_arrival();
}

worker::~worker() = default;

// splitmix64: a fast, well-mixed generator; the choices only need to follow the weights and ranges.
std::uint64_t worker::next_random() noexcept {
    rng_state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = rng_state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

clock::duration worker::think_for(std::uint32_t index) noexcept {
    const think_time& t = prepared_[index].spec.think ? *prepared_[index].spec.think : plan_.think;
    if (t.max == t.min) {
        return std::chrono::duration_cast<clock::duration>(t.min);
    }
    const double x = static_cast<double>(next_random() >> 11) / 9007199254740992.0; // [0, 1)
    return std::chrono::duration_cast<clock::duration>(
        t.min + std::chrono::nanoseconds{static_cast<std::int64_t>(x * static_cast<double>((t.max - t.min).count()))});
}

std::uint32_t worker::pick_index() noexcept {
    std::uint32_t index = 0;
    if (prepared_.size() > 1) {
        const double x =
            static_cast<double>(next_random() >> 11) / 9007199254740992.0 * prepared_.back().cumulative_weight;
        while (index + 1 < prepared_.size() && x >= prepared_[index].cumulative_weight) {
            ++index;
        }
    }
    return index;
}

request_spec worker::filled(std::uint32_t index) {
    const prepared& r = prepared_[index];
    // Rows are dealt to workers in turn: worker i of n takes rows i, i + n, i + 2n, ...
    const std::size_t rows = std::max<std::size_t>(1, plan_.data.rows.size());
    const std::size_t workers = static_cast<std::size_t>(std::lround(1 / share_));
    const std::size_t row = (feed_row_++ * workers + index_) % rows;
    request_spec out = r.spec;
    out.path_and_query = render(r.spec.path_and_query, plan_.data, row);
    out.body = render(r.spec.body, plan_.data, row, r.json_body ? escaping::json : escaping::none);
    for (auto& h : out.headers) {
        h.second = render(h.second, plan_.data, row);
    }
    return out;
}

std::uint32_t worker::pick(std::string& scratch, std::string_view& bytes, unsigned count) {
    const std::uint32_t index = pick_index();
    const prepared& r = prepared_[index];
    if (!r.templated) {
        bytes = count == 1 ? std::string_view(r.bytes) : std::string_view(r.pipelined);
        return index;
    }
    scratch = build_request(plan_, filled(index));
    const std::size_t one = scratch.size();
    for (unsigned i = 1; i < count; ++i) {
        scratch.append(scratch.data(), one);
    }
    bytes = scratch;
    return index;
}

std::uint32_t worker::pick_h2(std::vector<http::h2_field>& scratch,
                              std::vector<std::pair<std::string, std::string>>& text,
                              std::span<const http::h2_field>& fields, std::string& upload, std::string_view& body) {
    const std::uint32_t index = pick_index();
    const prepared& r = prepared_[index];
    if (!r.templated) {
        fields = r.h2_fields;
        body = r.spec.body;
        return index;
    }
    request_spec spec = filled(index);
    text = h2_request_fields(plan_, spec);
    scratch.clear();
    for (const auto& [name, value] : text) {
        scratch.push_back({name, value});
    }
    fields = scratch;
    upload = std::move(spec.body);
    body = upload;
    return index;
}

load_connection* worker::add_connection() {
    connections_.push_back(std::make_unique<load_connection>(*this));
    if (held_.capacity() < connections_.size()) {
        held_.reserve(std::max<std::size_t>(64, 2 * connections_.size())); // at the start or a ramp, not per request
    }
    return connections_.back().get();
}

void worker::run() {
    loop_.post([this] {
        if (plan_.open_model()) {
            for (unsigned i = 0; i < std::min<std::size_t>(std::max(1u, users_), max_connections_); ++i) {
                add_connection()->open();
            }
        } else if (plan_.stages.empty()) {
            for (unsigned i = 0; i < users_; ++i) {
                add_connection()->open();
            }
        } else {
            adjust_users(clock::now());
        }
        // Connections open now; requests start at the common start time.
        schedule_tick(start_);
    });
    loop_.run();
}

void worker::stop() {
    stop_requested_.store(true, std::memory_order_relaxed);
}

bool worker::may_send() const noexcept {
    return started_ && !stopping_ && !finished_ && (!counted_ || to_send_ > 0);
}

std::uint64_t worker::connections_wanted() const noexcept {
    if (!may_send()) {
        return 0;
    }
    if (!counted_) {
        return std::numeric_limits<std::uint64_t>::max();
    }
    // Only as many connections as requests are left for (-n with --no-keepalive opens one each).
    std::uint64_t waiting = 0;
    for (const auto& c : connections_) {
        waiting += c->connecting() || c->ready() || c->held() ? 1 : 0;
    }
    return to_send_ > waiting ? to_send_ - waiting : 0;
}

void worker::send_closed(load_connection& c, clock::time_point now) {
    // Nothing new past the run's end, though the tick that ends the run may come up to a tick later: a user that
    // pauses 2 ms between requests sent 3 more in that time, answers past the measured window.
    if (!may_send() || c.retire || now >= end_) {
        return;
    }
    unsigned n = c.room();
    if (n == 0) {
        return;
    }
    if (counted_) {
        n = static_cast<unsigned>(std::min<std::uint64_t>(n, to_send_));
        to_send_ -= n;
    }
    c.send(now, n, now);
}

void worker::dispatch(clock::time_point scheduled) {
    for (auto& c : connections_) {
        if (c->ready()) {
            c->send(scheduled, 1, clock::now());
            return;
        }
    }
    pending_.push_back(scheduled);
    std::size_t live = 0;
    for (auto& c : connections_) {
        live += c->gone() ? 0 : 1;
    }
    if (live < max_connections_) {
        for (auto& c : connections_) {
            if (c->gone()) {
                c->open();
                return;
            }
        }
        add_connection()->open();
    }
}

void worker::on_ready(load_connection& c, clock::time_point now) {
    if (plan_.open_model()) {
        // Past the end nothing more is sent: what is still pending is reported as never sent. An HTTP/2
        // connection takes as many as it has free streams.
        while (!pending_.empty() && !finished_ && !stopping_ && c.ready()) {
            const auto scheduled = pending_.front();
            pending_.pop_front();
            if (scheduled >= warmup_end_) {
                ++results_.late;
                results_.send_lag.record(now - scheduled);
                if (watched_ != nullptr) {
                    watched_->late.add();
                    watched_->send_lag[live_bucket(now - scheduled)].add();
                    watched_->send_lag_sum_ns.add(static_cast<std::uint64_t>((now - scheduled).count()));
                }
            }
            c.send(scheduled, 1, now);
        }
        return;
    }
    send_closed(c, now);
    check_done(now);
}

void worker::on_bytes(std::size_t bytes, clock::time_point now) {
    if (now >= warmup_end_) {
        results_.bytes_received += bytes;
        if (watched_ != nullptr) {
            watched_->bytes_received.add(bytes);
        }
    }
}

void worker::on_response(load_connection& user, clock::time_point scheduled, clock::time_point sent,
                         std::uint32_t index, unsigned status, std::string_view body,
                         std::optional<std::chrono::seconds> retry_after, clock::time_point now) {
    live_.responses.fetch_add(1, std::memory_order_relaxed);
    if (!plan_.open_model()) {
        // The user that got this answer waits before its next request: as a Retry-After asks, else its think time.
        if (retry_after && plan_.honour_retry_after && retry_after->count() > 0) {
            hold(user, now + *retry_after, now, true);
        } else if (plan_.think.any() || prepared_[index].spec.think) {
            hold(user, now + std::min(think_for(index), end_ - now), now, false); // a day at most, cut at the end
        }
    }
    if (watched_ != nullptr) {
        watched_->ended.add();
    }
    if (now < warmup_end_) {
        return;
    }
    results_.retry_after_asked += retry_after ? 1 : 0;
    const auto latency = now - scheduled;
    results_.latency.record(latency);
    if (plan_.open_model()) {
        results_.service_time.record(now - sent);
    }
    ++results_.statuses[status < results_.statuses.size() ? status : 0];
    ++results_.responses;
    const request_spec& spec = prepared_[index].spec;
    auto& mine = results_.per_request[index];
    mine.latency.record(latency);
    ++mine.responses;
    auto& second = results_.second(static_cast<std::size_t>((now - warmup_end_) / std::chrono::seconds{1}));
    ++second.responses;
    second.latency->record(latency);
    if (watched_ != nullptr) {
        live_request& lr = watched_->per_request[index];
        lr.responses[status >= 100 && status < 600 ? status / 100 : 0].add();
        lr.latency[live_bucket(latency)].add();
        lr.latency_sum_ns.add(static_cast<std::uint64_t>(latency.count()));
        watched_->retry_after_asked.add(retry_after ? 1 : 0);
    }

    const auto listed = [status](const std::vector<unsigned>& v) {
        return std::find(v.begin(), v.end(), status) != v.end();
    };
    error_class failure = error_class::count_;
    if (status >= 400 && !listed(spec.expected_statuses) && !listed(plan_.expected_statuses)) {
        failure = error_class::status;
    }
    for (const auto& c : spec.checks) {
        const bool ok =
            c.what == check::kind::status ? listed(c.statuses) : body.find(c.text) != std::string_view::npos;
        if (!ok) {
            failure = error_class::check;
        }
    }
    if (failure == error_class::count_) {
        ++results_.successes;
        ++mine.successes;
    } else {
        ++results_.errors[static_cast<std::size_t>(failure)];
        ++mine.failures;
        ++second.errors;
        if (watched_ != nullptr) {
            watched_->errors[static_cast<std::size_t>(failure)].add();
        }
        live_.errors.fetch_add(1, std::memory_order_relaxed);
    }
}

void worker::on_error(load_connection&, error_class e, std::size_t lost_requests) {
    const auto now = clock::now();
    if (watched_ != nullptr) {
        watched_->ended.add(lost_requests);
    }
    if (now < warmup_end_ || finished_ || lost_requests == 0 || e == error_class::count_) {
        return;
    }
    const std::uint64_t n = lost_requests;
    results_.errors[static_cast<std::size_t>(e)] += n;
    if (watched_ != nullptr) {
        watched_->errors[static_cast<std::size_t>(e)].add(n);
    }
    results_.second(static_cast<std::size_t>((now - warmup_end_) / std::chrono::seconds{1})).errors += n;
    live_.errors.fetch_add(n, std::memory_order_relaxed);
}

void worker::on_unprocessed(clock::time_point scheduled) {
    if (finished_) {
        return;
    }
    ++results_.retried_unprocessed;
    if (watched_ != nullptr) {
        watched_->ended.add(); // and sent again: counted sent once more then
    }
    // The run was perhaps ending (all sent): this one goes again, maybe on a connection check_done already saw idle,
    // so its next look starts from the first connection.
    done_scan_from_ = 0;
    if (plan_.open_model()) {
        pending_.push_front(scheduled); // the oldest due: first to go on the next free stream
    } else if (counted_) {
        ++to_send_; // the closed model's users send it again
    }
    // Its connection takes no more streams, and the others may be idle: the tick hands it to one with room.
    resend_pending_ = true;
}

void worker::on_connect_result(std::error_code ec) {
    ++results_.connect_attempts;
    if (watched_ != nullptr) {
        watched_->connect_attempts.add();
        watched_->connect_failures.add(ec ? 1 : 0);
    }
    if (!ec) {
        ++results_.connections_opened;
        live_.connections_opened.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    ++results_.connect_failures;
    live_.connect_failures.fetch_add(1, std::memory_order_relaxed);
    if (const auto now = clock::now(); now >= warmup_end_ && !finished_) {
        auto& second = results_.second(static_cast<std::size_t>((now - warmup_end_) / std::chrono::seconds{1}));
        ++second.errors;
        ++second.connect_failures;
    }
    if (results_.connect_error.empty()) {
        results_.connect_error = ec.message();
    }
}

void worker::on_handshake(clock::duration took, bool resumed) {
    ++results_.handshakes.handshakes;
    results_.handshakes.resumed += resumed ? 1 : 0;
    results_.handshakes.handshake_time.record(std::chrono::duration_cast<std::chrono::nanoseconds>(took));
}

void worker::on_handshake_failed(std::error_code error) {
    if (error.category() == net::tls_category() && error.value() >= 1 &&
        error.value() <= static_cast<int>(net::tls_errcs.size())) {
        ++results_.handshakes.failures_of(static_cast<net::tls_errc>(error.value()));
    }
    on_connect_result(error); // a failed attempt, with its reason
}

void worker::on_gone(load_connection& c, bool failed) {
    if (finished_) {
        return;
    }
    // A connection the server closed normally (no keep-alive) is replaced at once; after a failed connect
    // the next tick retries, which bounds the retry rate against a server that refuses.
    // A user waiting (think time, Retry-After) connects again when it is released, as a client would.
    const bool wanted = plan_.open_model() ? !pending_.empty() : connections_wanted() > 0;
    if (!c.held() && !failed && !c.retire && wanted) {
        c.open();
    } else if (!c.held()) {
        reopen_pending_ = true; // the tick reopens it (one attempt per tick) if the plan still wants it
    }
    check_done(clock::now());
}

void worker::hold(load_connection& c, clock::time_point until, clock::time_point now, bool asked) {
    until = std::min(until, end_);
    const clock::time_point from = c.held() ? std::max(now, c.held_until()) : now;
    if (until <= from) {
        return; // a wait that ends with the run, or within one already asked
    }
    const bool already = c.held();
    if (asked && now >= warmup_end_) {
        results_.retry_after_held += already ? 0 : 1; // a wave of refusals on one user's streams is one wait
        results_.retry_after_held_for += until - from;
    }
    c.hold(until);
    if (already) {
        return; // held longer: its entry, due sooner, is put back with the new time when it comes up
    }
    held_.push_back({until, &c});
    std::push_heap(held_.begin(), held_.end(), later<held_user, held_user>);
    if (timer_.armed() && until < timer_.deadline()) {
        timer_.rearm(until); // sooner than the tick: a short think time is not rounded up to the tick's period
    }
}

void worker::release_held(clock::time_point now) {
    while (!held_.empty() && held_.front().until <= now) {
        std::pop_heap(held_.begin(), held_.end(), later<held_user, held_user>);
        const held_user h = held_.back();
        held_.pop_back();
        load_connection& c = *h.user;
        if (!c.held()) {
            continue; // released already (its user retired)
        }
        if (c.held_until() != h.until) {
            // Held for longer since (or held again): one entry per waiting user, keyed by the latest time.
            held_.push_back({c.held_until(), &c});
            std::push_heap(held_.begin(), held_.end(), later<held_user, held_user>);
            continue;
        }
        c.release();
        if (c.retire) {
            if (!c.busy() && !c.gone()) {
                c.abort(error_class::count_);
            }
            continue;
        }
        if (c.gone()) {
            if (connections_wanted() > 0) {
                c.open(); // its connection went while it waited: its next request goes on a new one
            }
        } else {
            send_closed(c, now);
        }
    }
}

void worker::adjust_users(clock::time_point now) {
    // level_at() stays within the stages' levels whatever the clock says (before the start: the first level);
    // the bound below is the plan's promise all the same: never more users than its largest stage.
    const double level = std::clamp(plan_.level_at(now - start_), 0.0, plan_.max_level());
    const unsigned target =
        std::min(share_of(segment_users(static_cast<unsigned>(std::lround(level))), index_, count_), most_users_);
    // A user is active while it has a connection or waits (think time, Retry-After) with or without one: a waiting
    // user whose connection went is connected again when it is released, not before.
    const auto user = [](const load_connection& c) { return !c.retire && (!c.gone() || c.held()); };
    unsigned active = 0;
    for (auto& c : connections_) {
        active += user(*c) ? 1 : 0;
    }
    for (auto& c : connections_) {
        if (active >= target) {
            break;
        }
        if (!user(*c)) {
            c->retire = false;
            if (c->gone() && !c->held()) {
                c->open();
            }
            ++active;
        }
    }
    while (active < target) {
        add_connection()->open();
        ++active;
    }
    for (auto it = connections_.rbegin(); it != connections_.rend() && active > target; ++it) {
        auto& c = **it;
        if (user(c)) {
            c.retire = true;
            --active;
            if (c.gone()) {
                c.release(); // a waiting user without a connection: nothing to close
            } else if ((c.ready() || c.held()) && !c.busy()) {
                c.release();
                c.abort(error_class::count_);
            }
        }
    }
}

void worker::check_timeouts(clock::time_point now) {
    if (now < next_timeout_check_) {
        return;
    }
    // A twentieth of the timeout (within 10 ms and 250 ms): a look at every connection 4 times a second for the
    // default 10 s, not 100 (9,000 connections made it a percent of the CPU).
    next_timeout_check_ =
        now + std::clamp(std::chrono::duration_cast<clock::duration>(plan_.timeout / 20), clock::duration{tick_period},
                         clock::duration{std::chrono::milliseconds{250}});
    for (auto& c : connections_) {
        if (c->busy()) {
            c->check_timeout(now, plan_.timeout);
        } else if (c->connecting() && now - c->connect_started() > plan_.timeout) {
            // A server that stopped accepting (its backlog full: the kernel drops SYNs, the client retries them
            // for minutes) must not hold a user, nor the end of the run, past the timeout.
            c->time_out_connect();
        }
    }
}

void worker::publish_second(clock::time_point now) {
    if (now < warmup_end_) {
        return;
    }
    const auto current = static_cast<std::size_t>((now - warmup_end_) / std::chrono::seconds{1});
    while (published_seconds_ < current) {
        if (published_seconds_ < results_.seconds.size()) {
            live_.last_second_p95_ns.store(results_.seconds[published_seconds_].latency->value_at_percentile(95),
                                           std::memory_order_relaxed);
            live_.seconds_published.fetch_add(1, std::memory_order_relaxed);
        }
        ++published_seconds_;
    }
}

void worker::check_done(clock::time_point now) {
    if (finished_) {
        return;
    }
    const bool all_sent = counted_ && to_send_ == 0 && pending_.empty();
    if (!stopping_ && !all_sent) {
        return; // the common case, decided without a look at every connection
    }
    // Once ending, nothing is sent or opened any more: a connection found idle stays idle, so the look resumes
    // where the last one found a busy connection (each response of the drain looked at all 9,000 before).
    for (; done_scan_from_ < connections_.size(); ++done_scan_from_) {
        const auto& c = connections_[done_scan_from_];
        if (c->busy() || c->connecting()) {
            return;
        }
    }
    finished_ = true;
    results_.unsent = pending_.size();
    pending_.clear();
    const auto measured_end = counted_ ? now : std::min(now, end_);
    results_.measured = measured_end > warmup_end_ ? measured_end - warmup_end_ : std::chrono::nanoseconds{};
    results_.close_seconds();
    timer_.cancel();
    for (auto& c : connections_) {
        c->abort(error_class::count_);
    }
    loop_.stop();
}

void worker::do_tick() {
    if (finished_) {
        return;
    }
    const auto now = clock::now();
    if (!started_ && now >= start_) {
        started_ = true;
        began_ = now;
        if (!plan_.open_model()) {
            for (auto& c : connections_) {
                if (c->ready()) {
                    send_closed(*c, now);
                }
            }
        }
    }
    if (stop_requested_.load(std::memory_order_relaxed) && !stopping_) {
        stopping_ = true;
        end_ = std::min(end_, now);
    }
    if (!stopping_ && now >= end_) {
        stopping_ = true;
    }
    if (plan_.open_model()) {
        // Every arrival due before the end, also in the tick that finds the end passed: one due at 4.9999 s of a
        // 5 s run, late by a tick, is sent late (or counted unsent), never silently left out of the plan.
        while (next_send_ <= now && next_send_ < end_ && (!counted_ || to_send_ > 0)) {
            dispatch(next_send_);
            if (counted_) {
                --to_send_;
            }
            schedule_next_arrival();
        }
    } else {
        if (!plan_.stages.empty() && !stopping_) {
            adjust_users(now);
        }
        release_held(now);
        if (!stopping_ && reopen_pending_) {
            // Reconnect what failed, one attempt per tick; a look at every connection only when one went away.
            std::uint64_t wanted = connections_wanted();
            bool left = false;
            for (auto& c : connections_) {
                if (c->gone() && !c->retire && !c->held()) {
                    if (wanted == 0) {
                        left = true;
                        break;
                    }
                    c->open();
                    --wanted;
                }
            }
            reopen_pending_ = left;
        }
    }
    if (resend_pending_ && started_ && !stopping_) {
        resend_pending_ = false;
        for (auto& c : connections_) {
            if (c->ready()) {
                on_ready(*c, now);
            }
        }
    }
    check_timeouts(now);
    publish_second(now);
    check_done(now);
    if (!finished_) {
        schedule_tick(now);
    }
}

void worker::schedule_next_arrival() {
    if (!plan_.open_model()) {
        return;
    }
    // The run's arrivals m = 0, 1, 2, ... (with --segment, its segment's of the whole plan's, which are numbered k)
    // are dealt to the workers in turn (worker i takes i, i + n, ...), each sent when the integral of the rate
    // reaches k: the workers' sends interleave and add up to the plan's.
    const std::uint64_t m = arrivals_++ * count_ + index_;
    const double k = static_cast<double>(plan_.part.whole() ? m : plan_.part.nth(m));
    const auto at = plan_.arrival_time(k);
    next_send_ = at ? start_ + *at : clock::time_point::max();
}

void worker::schedule_tick(clock::time_point now) {
    auto next = started_ ? now + tick_period : now;
    if (plan_.open_model() && !stopping_ && next_send_ < next) {
        next = next_send_;
    }
    if (!held_.empty() && held_.front().until < next) {
        next = std::max(held_.front().until, now);
    }
    timer_.arm(next, [this] { do_tick(); });
}

} // namespace hotpath::load
