// Starting the loops and listeners, accepting connections, and the graceful drain on stop.
#include <hotpath/server/server.hpp>

#include <hotpath/net/address.hpp>
#include <hotpath/net/uring.hpp>
#include <hotpath/net/watchdog.hpp>
#include <hotpath/server/access_log.hpp>
#include <hotpath/server/server_connection.hpp>
#include <hotpath/server/stall_event.hpp>
#include <hotpath/server/worker.hpp>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {

namespace {

// SIGINT and SIGTERM stop; SIGHUP reloads (server::wait_for_stop_signal). Blocked in every thread of the server,
// so that only the waiting one takes them.
sigset_t stop_signals() noexcept {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    return signals;
}

// Blocks the stop signals in the calling thread for as long as it lives, then restores its mask: threads started
// meanwhile keep them blocked.
class stop_signals_blocked {
public:
    stop_signals_blocked() noexcept {
        const sigset_t signals = stop_signals();
        pthread_sigmask(SIG_BLOCK, &signals, &previous_);
    }
    ~stop_signals_blocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
    stop_signals_blocked(const stop_signals_blocked&) = delete;
    stop_signals_blocked& operator=(const stop_signals_blocked&) = delete;

private:
    sigset_t previous_{};
};

} // namespace

struct server::impl {
    impl(const app& r, server_options o) : routes(r), options(std::move(o)) {}

    const app& routes;
    server_options options;
    std::atomic<std::size_t> open_connections{0};
    std::atomic<std::int64_t> drain_deadline_ns{0}; // steady_clock, set by stop(); 0 before
    std::unique_ptr<access_log> log;                // before the workers: outlives their connections
    std::shared_ptr<net::tls_context> tls;          // with options.tls: the context new handshakes use
    std::vector<std::unique_ptr<worker>> workers;
    std::vector<std::thread> threads;
    std::uint16_t port = 0;
    std::string address; // the bound address as text
    std::once_flag stop_once;
    bool started = false;
    bool use_uring = false;
    std::vector<std::uint64_t> latency_bounds_ns;        // shared by every route's histogram on every loop
    std::unique_ptr<net::watchdog> watchdog;             // after the workers: stopped before they go
    std::vector<net::clock::time_point> last_stall_line; // per loop, on the watchdog's thread
    std::vector<std::uint32_t> stalled_handler;          // per loop: the handler running when its stall began
    std::vector<std::uint8_t> in_stall;                  // per loop: told of a stall that has not ended

    // A stall of loop `index` named for handler `h` (none when out of range), with what its thread did, as its
    // line tells it.
    stall_event stall_of(unsigned index, std::chrono::nanoseconds length, bool ongoing, std::uint32_t h,
                         const net::thread_activity& activity) const {
        stall_event e;
        e.loop = index;
        e.length = std::chrono::duration_cast<std::chrono::milliseconds>(length);
        e.ongoing = ongoing;
        const auto& keys = routes.route_keys();
        if (h < keys.size()) {
            e.method = keys[h].method;
            e.route = keys[h].pattern;
        }
        if (activity.cpu_share) {
            e.cpu_percent = static_cast<int>(std::lround(*activity.cpu_share * 100));
        }
        e.waiting = net::waiting_name(activity.waiting);
        return e;
    }

    void write_stall_line(const std::string& line) {
        if (options.log_line) {
            options.log_line(line);
        } else {
            std::fprintf(stderr, "%s\n", line.c_str());
        }
    }

    // On the watchdog's thread: a stall that goes on (a loop that never ends its turn, such as one working through
    // a queue of blocking handlers, would otherwise be told of only when it is over, minutes later).
    void still_stalled(unsigned index, std::chrono::nanoseconds length, const net::thread_activity& activity) {
        const auto now = net::clock::now();
        if (now - last_stall_line[index] < std::chrono::seconds{1}) {
            return;
        }
        last_stall_line[index] = now;
        write_stall_line(format_stall_line(stall_of(index, length, true, stalled_handler[index], activity)));
    }

    // On the watchdog's thread.
    void on_stall(unsigned index, std::chrono::nanoseconds length, bool ended, const net::thread_activity& activity) {
        worker& w = *workers[index];
        if (!ended && in_stall[index] != 0) {
            still_stalled(index, length, activity); // the same stall, still going on
            return;
        }
        in_stall[index] = ended ? 0 : 1;
        if (!ended) {
            // Named only when set in the stalled turn: the handler whose code ran last in it.
            const std::uint64_t running = w.running_handler.load(std::memory_order_relaxed);
            const std::uint64_t turn = w.loop.stats().turns.load(std::memory_order_relaxed);
            stalled_handler[index] =
                (running >> 32) == (turn & 0xffff'ffff) ? static_cast<std::uint32_t>(running) : worker::no_handler;
            // Where the thread is, for the line, if one will be written for this stall.
            if (options.stall_backtraces && net::clock::now() - last_stall_line[index] >= std::chrono::seconds{1}) {
                w.sampler.request();
            }
            return;
        }
        w.stalls.add();
        w.stall_lengths->record_ns(static_cast<std::uint64_t>(length.count()));
        if (const std::uint32_t named = stalled_handler[index]; named < routes.route_keys().size()) {
            route_metrics& r = w.route_stats.at(named); // for GET /debug/routes: which route held the loop
            const auto ns = static_cast<std::uint64_t>(length.count());
            r.stalls.add();
            r.stall_ns.add(ns);
            if (ns > r.longest_stall_ns.get()) {
                r.longest_stall_ns.value.store(ns, std::memory_order_relaxed);
            }
            // What held the thread: a stall computing, in a system call, on a lock.
            if (activity.cpu_share) {
                r.stall_cpu_ns.add(static_cast<std::uint64_t>(activity.cpu.count()));
                r.stall_measured_ns.add(static_cast<std::uint64_t>(activity.measured.count()));
            }
            r.stall_waiting.at(activity.waiting).add();
        }
        const auto now = net::clock::now();
        if (now - last_stall_line[index] < std::chrono::seconds{1}) {
            return; // one line per loop per second at most; the metrics count them all
        }
        last_stall_line[index] = now;
        stall_event e = stall_of(index, length, false, stalled_handler[index], activity);
        if (options.stall_backtraces) {
            e.stack = w.sampler.frames();
            if (!e.stack.empty()) {
                e.program = net::stack_sampler::program_path();
            }
        }
        write_stall_line(format_stall_line(e));
    }
};

server::server(const app& routes, server_options options) : impl_(std::make_unique<impl>(routes, std::move(options))) {}

server::~server() {
    stop();
    wait();
    // Connections left by a forced stop are destroyed before their loops (their sockets and timers belong to
    // the loops' io_contexts).
    for (auto& w : impl_->workers) {
        w->close_all();
    }
}

result<void, problem> server::start() {
    auto& s = *impl_;
    if (s.started) {
        return {};
    }
    unsigned n = s.options.threads;
    if (n == 0) {
        n = std::max(1u, std::thread::hardware_concurrency());
    }
    const auto address = net::resolve_listen_address(s.options.address);
    if (!address) {
        return problem(address.error());
    }
    // The first loop's ring decides: without io_uring here, `auto` falls back to epoll on every loop.
    s.use_uring = s.options.io != io_backend::epoll;
    std::uint16_t port = s.options.port;
    s.latency_bounds_ns = metrics::latency_bounds_ns(s.options.latency_objectives);
    if (s.options.http2 &&
        std::find(s.options.tls.alpn.begin(), s.options.tls.alpn.end(), "h2") == s.options.tls.alpn.end()) {
        s.options.tls.alpn.insert(s.options.tls.alpn.begin(), "h2"); // preferred, as nginx, h2o and Kestrel do
    }
    if (s.options.tls.enabled()) {
        auto made = net::tls_context::server(s.options.tls);
        if (!made) {
            return std::move(made).error();
        }
        s.tls = std::move(*made);
    }
    if (!s.options.access_log.empty()) {
        auto opened = access_log::open(s.options.access_log, s.options.access_log_format, s.routes, n,
                                       s.options.access_log_records);
        if (!opened) {
            return problem(opened.error(),
                           "cannot open the access log " + s.options.access_log + ": " + opened.error().message());
        }
        s.log = std::move(*opened);
    }
    for (unsigned i = 0; i < n; ++i) {
        auto w = std::make_unique<worker>(i, s.routes, s.options, s.open_connections);
        w->drain_deadline_ns = &s.drain_deadline_ns;
        w->route_stats.init(s.routes.route_keys().size(), s.latency_bounds_ns);
        w->stall_lengths = std::make_unique<metrics::duration_buckets>(s.latency_bounds_ns);
        w->all = &s.workers;
        if (s.log) {
            w->log = s.log.get();
            w->log_ring = &s.log->ring(i);
        }
        if (s.use_uring && w->loop.ring() == nullptr) {
            if (i > 0 || s.options.io == io_backend::uring) {
                s.workers.clear();
                s.log.reset();
                return problem(std::make_error_code(std::errc::function_not_supported),
                               "io_uring is not available here (--io epoll, or auto, works without it)");
            }
            s.use_uring = false;
        }
        if (!s.use_uring) {
            w->loop.disable_ring(); // clients used by handlers follow the server's choice
        }
        if (s.tls) {
            w->tls = std::make_unique<net::tls_transports>(s.tls, *w->transports);
            w->transports = w->tls.get();
        }
        // The first loop claims the port, so that one held by any other socket is refused; the others join it.
        auto l = net::listener::open(w->loop, *address, port, s.options.backlog,
                                     i == 0 ? net::port_share::claim : net::port_share::join);
        if (!l) {
            s.workers.clear();
            s.log.reset();
            return problem(l.error());
        }
        port = (*l)->port();
        w->listener = std::move(*l);
        w->listener->count_pauses_in(w->stats.accept_pauses);
        s.workers.push_back(std::move(w));
    }
    s.port = port;
    s.address = address->address_text();
    // The loops never see SIGINT or SIGTERM (see block_stop_signals in server.hpp).
    const stop_signals_blocked while_starting_loops;
    for (auto& w : s.workers) {
        worker* wp = w.get();
        wp->listener->start([wp](int fd) { wp->accept(fd); });
        wp->loop.add_tick([wp](net::clock::time_point now) { wp->on_tick(now); });
        s.threads.emplace_back([wp, sample = s.options.stall_backtraces && s.options.stall_threshold.count() > 0] {
            if (sample) {
                wp->sampler.attach_this_thread();
            }
            wp->loop.run();
            if (sample) {
                wp->sampler.detach_this_thread();
            }
        });
    }
    if (s.options.stall_threshold.count() > 0) {
        std::vector<const net::loop*> loops;
        for (const auto& w : s.workers) {
            loops.push_back(&w->loop);
        }
        s.last_stall_line.assign(s.workers.size(), net::clock::time_point{});
        s.stalled_handler.assign(s.workers.size(), worker::no_handler);
        s.in_stall.assign(s.workers.size(), 0);
        s.watchdog = std::make_unique<net::watchdog>(
            std::move(loops), s.options.stall_threshold,
            [&s](unsigned index, std::chrono::nanoseconds length, bool ended, const net::thread_activity& activity) {
                s.on_stall(index, length, ended, activity);
            });
    }
    s.started = true;
    return {};
}

std::uint16_t server::port() const noexcept {
    return impl_->port;
}

const std::string& server::address() const noexcept {
    return impl_->address;
}

std::string server::url() const {
    return (impl_->tls ? "https://" : "http://") + net::host_port(impl_->address, impl_->port);
}

result<void, problem> server::reload_tls() {
    auto& s = *impl_;
    if (!s.tls) {
        return problem{errc::invalid_value, "the server does not serve TLS"};
    }
    auto made = net::tls_context::server(s.options.tls);
    if (!made) {
        return std::move(made).error(); // the running context stays
    }
    s.tls = *made;
    for (auto& w : s.workers) {
        worker* wp = w.get();
        wp->loop.post([wp, context = *made] { wp->tls->set_context(context); });
    }
    return {};
}

io_backend server::io() const noexcept {
    return impl_->use_uring ? io_backend::uring : io_backend::epoll;
}

unsigned server::threads() const noexcept {
    return static_cast<unsigned>(impl_->workers.size());
}

void server::stop() {
    auto& s = *impl_;
    if (!s.started) {
        return;
    }
    std::call_once(s.stop_once, [&s] {
        // Seen by the loops at once, even by one that is busy in a long turn (a handler blocking its thread): past
        // this, requests are refused instead of run (server_connection::overloaded).
        const auto deadline = std::chrono::steady_clock::now() + s.options.limits.drain_timeout;
        s.drain_deadline_ns.store(deadline.time_since_epoch().count(), std::memory_order_relaxed);
        for (auto& w : s.workers) {
            worker* wp = w.get();
            wp->loop.post([wp] { wp->begin_drain(); });
        }
    });
}

void server::wait() {
    for (auto& t : impl_->threads) {
        if (t.joinable()) {
            t.join();
        }
    }
    impl_->watchdog.reset(); // the loops are gone: nothing left to watch
    if (impl_->log) {
        impl_->log->flush(); // every answered request's line is written when wait() returns
    }
}

void server::block_stop_signals() noexcept {
    const sigset_t signals = stop_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

void server::wait_for_stop_signal() {
    const sigset_t signals = stop_signals();
    // Blocked before waiting: a signal left unblocked here would end the process instead of reaching sigwait.
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    sigset_t waited = signals;
    const auto& o = impl_->options;
    const bool reloads = impl_->tls != nullptr || o.on_reload;
    if (!reloads) {
        sigdelset(&waited, SIGHUP); // blocked, and left pending: nothing to reload
    }
    const auto say = [&o](const std::string& line) {
        if (o.log_line) {
            o.log_line(line);
        } else {
            std::fprintf(stderr, "%s\n", line.c_str());
        }
    };
    int received = 0;
    while (sigwait(&waited, &received) == 0 && received == SIGHUP) {
        if (impl_->tls != nullptr) {
            if (auto reloaded = reload_tls(); reloaded) {
                std::string files = o.tls.cert_file;
                for (const auto& more : o.tls.sni_certificates) {
                    files += ", " + more.cert_file;
                }
                say("hotpath: SIGHUP: reloaded the TLS certificate" +
                    std::string(o.tls.sni_certificates.empty() ? " " : "s ") + files + " for new connections");
            } else {
                say("hotpath: SIGHUP: kept the running TLS certificate: " + reloaded.error().message);
            }
        }
        if (o.on_reload) {
            o.on_reload();
        }
    }
    if (o.drain_delay.count() > 0) {
        if (o.on_draining) {
            o.on_draining();
        }
        say("hotpath: " + std::string(received == SIGINT ? "SIGINT" : "SIGTERM") + ": not ready, still serving for " +
            std::to_string(o.drain_delay.count()) + " ms (--drain-delay), then draining; a second signal stops now");
        sigset_t again;
        sigemptyset(&again);
        sigaddset(&again, SIGINT);
        sigaddset(&again, SIGTERM);
        const auto until = std::chrono::steady_clock::now() + o.drain_delay;
        for (auto left = o.drain_delay; left.count() > 0;
             left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now())) {
            const timespec wait_for{static_cast<std::time_t>(left.count() / 1000),
                                    static_cast<long>(left.count() % 1000) * 1'000'000};
            if (sigtimedwait(&again, nullptr, &wait_for) > 0) {
                break;
            }
        }
    }
    stop();
    wait();
}

result<void, problem> server::run_until_signal(const std::function<void(const server&)>& on_started) {
    block_stop_signals();
    if (auto started = start(); !started) {
        return started;
    }
    if (on_started) {
        on_started(*this);
    }
    wait_for_stop_signal();
    return {};
}

server_stats server::stats() const noexcept {
    server_stats total;
    for (const auto& w : impl_->workers) {
        const auto& s = w->stats;
        total.connections_accepted += s.connections_accepted.get();
        total.connections_rejected += s.connections_rejected.get();
        total.connections_closed += s.connections_closed.get();
        total.requests += s.requests.get();
        for (std::size_t i = 0; i < 6; ++i) {
            total.responses_by_class[i] += s.responses_by_class[i].get();
        }
        total.bad_requests += s.bad_requests.get();
        total.handler_exceptions += s.handler_exceptions.get();
        total.refused_in_flight += s.refused_in_flight.get();
        total.refused_connections += s.refused_connections.get();
        total.refused_draining += s.refused_draining.get();
        total.header_timeouts += s.header_timeouts.get();
        total.body_timeouts += s.body_timeouts.get();
        total.response_timeouts += s.response_timeouts.get();
        total.idle_timeouts += s.idle_timeouts.get();
        total.accept_pauses += s.accept_pauses.get();
        total.tls_handshakes += s.tls_handshakes.get();
        total.tls_resumed += s.tls_resumed.get();
        total.tls_failures += s.tls_failures.get();
        total.tls_timeouts += s.tls_timeouts.get();
        total.tls_refused += s.tls_refused.get();
        total.h2_connections += s.h2_connections.get();
        total.h2_streams += s.h2_streams.get();
        total.h2_resets += s.h2_resets.get();
        total.h2_refused += s.h2_refused.get();
        total.request_states_made += s.request_states_made.get();
        total.request_states_freed += s.request_states_freed.get();
    }
    total.timeouts = total.header_timeouts + total.body_timeouts + total.response_timeouts;
    if (impl_->log) {
        total.access_log_lines = impl_->log->written();
        total.access_log_dropped = impl_->log->dropped();
    }
    return total;
}

} // namespace hotpath
