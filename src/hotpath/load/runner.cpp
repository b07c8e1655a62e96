// Worker threads, the progress display and the final merge.
#include <hotpath/load/runner.hpp>

#include <hotpath/load/report.hpp>
#include <hotpath/load/worker.hpp>

#include <hotpath/net/connect.hpp>
#include <hotpath/net/tls.hpp>
#include <hotpath/net/uring.hpp>

#include <fmt/core.h>

#include <csignal>
#include <ctime>
#include <memory>
#include <pthread.h>
#include <thread>
#include <vector>

namespace hotpath::load {

namespace {

std::string bar(double fraction, int width) {
    const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * width);
    return std::string(static_cast<std::size_t>(filled), '=') + (filled < width ? ">" : "") +
           std::string(static_cast<std::size_t>(std::max(0, width - filled - 1)), ' ');
}

// Waits for the run's start: --start-at's time, or a paused run's release (SIGUSR1, or `control`). Returns the
// steady-clock time the workers' schedules start at: the wall-clock time itself, woken a little before so that the
// workers are made and their threads running by then; 20 ms after a release. None when SIGINT, SIGTERM or the
// control's stop came first, with the signal in `signal`.
std::optional<clock::time_point> wait_for_start(const plan& p, const sigset_t& signals, run_control& control,
                                                progress_mode mode, std::FILE* out, int& signal) {
    using namespace std::chrono_literals;
    const auto refresh = mode == progress_mode::terminal ? std::chrono::milliseconds{250} : std::chrono::seconds{5};
    auto next_line = clock::now();
    for (;;) {
        const auto now = clock::now();
        auto wait = std::chrono::nanoseconds{5ms};
        if (p.start_at) {
            const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(*p.start_at - wall_clock::now());
            if (left <= 30ms) {
                return now + std::max(left, std::chrono::nanoseconds{0});
            }
            wait = std::min(std::chrono::nanoseconds{50ms}, left - 30ms);
        } else if (control.released()) {
            return now + 20ms;
        }
        if (control.stop_asked()) {
            signal = SIGTERM;
            return std::nullopt;
        }
        if (mode != progress_mode::none && now >= next_line) {
            next_line = now + refresh;
            const std::string what =
                p.start_at ? fmt::format("starts at {}, in {:.1f}s", wall_clock_text(*p.start_at),
                                         std::chrono::duration<double>(*p.start_at - wall_clock::now()).count())
                           : "paused: waiting for its release (SIGUSR1, or POST /start to the control endpoint)";
            if (mode == progress_mode::terminal) {
                fmt::print(out, "\r{}\x1b[K", what);
            } else {
                fmt::print(out, "hotpath load: {}\n", what);
            }
            std::fflush(out);
        }
        const auto whole = std::chrono::duration_cast<std::chrono::seconds>(wait);
        timespec ts{static_cast<std::time_t>(whole.count()), static_cast<long>((wait - whole).count())};
        const int got = sigtimedwait(&signals, nullptr, &ts);
        if (got == SIGUSR1) {
            control.release();
        } else if (got > 0) {
            signal = got;
            return std::nullopt;
        }
    }
}

} // namespace

result<results, problem> run(const plan& p, progress_mode mode, std::FILE* progress_out, int* stopped_by,
                             run_control* control, live_watch* watch) {
    if (stopped_by != nullptr) {
        *stopped_by = 0;
    }
    auto found = net::resolve_now(p.to.host, p.to.port);
    if (!found) {
        return std::move(found).error();
    }
    const net::endpoint endpoint = found->front();
    std::shared_ptr<net::tls_context> tls; // one for the run: its sessions resume on any worker's connections
    if (p.to.tls()) {
        tls = p.tls_context;  // make_plan's
        if (tls == nullptr) { // a plan built by hand
            auto made = net::tls_context::client(p.tls);
            if (!made) {
                return std::move(made).error();
            }
            tls = std::move(*made);
        }
    }
    if (p.io == plan::io_choice::uring && !net::uring::available()) {
        return problem{std::make_error_code(std::errc::function_not_supported),
                       "io_uring is not available here (--io uring); use --io auto or epoll"};
    }

    // SIGINT/SIGTERM end the run early; blocked before the workers start so only this thread sees them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    if (p.paused) {
        sigaddset(&signals, SIGUSR1); // the release
    }
    sigset_t previous;
    pthread_sigmask(SIG_BLOCK, &signals, &previous);

    run_control own;
    run_control& ctl = control != nullptr ? *control : own;
    ctl.wait_for(p.paused, p.start_at);
    auto start = clock::now() + std::chrono::milliseconds{20}; // every worker starts on the same schedule
    if (p.paused || p.start_at) {
        int signal = 0;
        const auto begun = wait_for_start(p, signals, ctl, mode, progress_out, signal);
        if (mode == progress_mode::terminal) {
            fmt::print(progress_out, "\r\x1b[K");
            std::fflush(progress_out);
        }
        if (!begun) {
            pthread_sigmask(SIG_SETMASK, &previous, nullptr);
            ctl.finish();
            if (stopped_by != nullptr) {
                *stopped_by = signal;
            }
            return problem{errc::cancelled,
                           fmt::format("interrupted before the start ({})", signal == SIGINT ? "SIGINT" : "SIGTERM")};
        }
        start = *begun;
    }
    const auto began = wall_clock::now() + std::chrono::duration_cast<wall_clock::duration>(start - clock::now());
    ctl.begin(began);

    live_counters live;
    const unsigned thread_count = resolve_threads(p);
    const auto requests = requests_or_default(p);
    std::vector<std::unique_ptr<live_totals>> totals;
    std::vector<std::unique_ptr<worker>> workers;
    for (unsigned i = 0; i < thread_count; ++i) {
        if (watch != nullptr) {
            totals.push_back(std::make_unique<live_totals>(requests.size()));
        }
        workers.push_back(std::make_unique<worker>(p, endpoint, tls, i, thread_count, start, live,
                                                   watch != nullptr ? totals.back().get() : nullptr));
    }
    if (watch != nullptr) {
        std::vector<const live_totals*> watched;
        std::vector<std::string> names;
        for (const auto& t : totals) {
            watched.push_back(t.get());
        }
        for (const auto& r : requests) {
            names.push_back(r.name);
        }
        watch->attach(std::move(watched), std::move(names), start, began);
    }
    std::vector<std::thread> threads;
    std::atomic<unsigned> running{thread_count};
    for (auto& w : workers) {
        threads.emplace_back([&w, &running] {
            w->run();
            running.fetch_sub(1);
        });
    }

    const auto planned = p.requests > 0 ? std::chrono::nanoseconds{} : p.total_time();
    const auto refresh = mode == progress_mode::terminal ? std::chrono::milliseconds{250} : std::chrono::seconds{5};
    auto next_line = clock::now() + refresh;
    std::uint64_t last_responses = 0;
    auto last_time = clock::now();
    bool stopped = false;
    int signal = 0;
    bool unreachable = false;
    const auto stop_all = [&] {
        stopped = true;
        for (auto& w : workers) {
            w->stop();
        }
    };
    while (running.load() != 0) {
        timespec wait{0, 50'000'000};
        int got = sigtimedwait(&signals, nullptr, &wait);
        got = got == SIGUSR1 ? 0 : got; // a release that came late
        if (got <= 0 && ctl.stop_asked()) {
            got = SIGTERM;
        }
        if (got > 0 && !stopped) {
            signal = got;
            if (stopped_by != nullptr) {
                *stopped_by = got;
            }
            stop_all();
        }
        const auto now = clock::now();
        // Nothing connected within the grace, and attempts failed: the target is down or refuses, and waiting the
        // whole run would only say so later (wrk stops at once). A target that comes up within the grace, or a
        // run asked to keep trying, goes on.
        if (!stopped && !p.keep_trying && now >= start + plan::connect_grace &&
            live.connections_opened.load(std::memory_order_relaxed) == 0 &&
            live.connect_failures.load(std::memory_order_relaxed) != 0) {
            unreachable = true;
            stop_all();
        }
        if (mode == progress_mode::none || now < next_line) {
            continue;
        }
        next_line = now + refresh;
        const std::uint64_t responses = live.responses.load();
        const double rps =
            static_cast<double>(responses - last_responses) / std::chrono::duration<double>(now - last_time).count();
        last_responses = responses;
        last_time = now;
        const double elapsed = std::max(0.0, std::chrono::duration<double>(now - start).count());
        const std::uint64_t mine = p.part.count_below(p.requests); // a segment's part of -n
        const std::string where =
            p.requests > 0 ? fmt::format("{}/{} requests", responses, mine)
                           : fmt::format("{:.0f}s/{:.0f}s", elapsed, std::chrono::duration<double>(planned).count());
        const double fraction =
            p.requests > 0 ? static_cast<double>(responses) / static_cast<double>(std::max<std::uint64_t>(mine, 1))
                           : elapsed / std::chrono::duration<double>(planned).count();
        // Only what is true so far: no p95 before a whole second has been measured, and the warm-up says so.
        const bool warming_up = now < start + p.warmup;
        const std::string p95 = warming_up ? "warming up"
                                : live.seconds_published.load() == 0
                                    ? "p95 -"
                                    : "p95 " + format_duration_ns(static_cast<double>(live.last_second_p95_ns.load()));
        const std::string status = fmt::format("{} {:.0f} req/s  {}  errors {}", where, rps, p95, live.errors.load());
        if (mode == progress_mode::terminal) {
            fmt::print(progress_out, "\r[{}] {}\x1b[K", bar(fraction, 30), status);
        } else {
            fmt::print(progress_out, "hotpath load: {}\n", status);
        }
        std::fflush(progress_out);
    }
    if (mode == progress_mode::terminal) {
        fmt::print(progress_out, "\r\x1b[K");
        std::fflush(progress_out);
    }
    for (auto& t : threads) {
        t.join();
    }
    if (watch != nullptr) {
        watch->detach();
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);

    results merged;
    for (auto& w : workers) {
        merged.merge(w->result());
    }
    merged.signal = signal;
    // When each worker's loop began, on the wall clock: the earliest and the latest.
    const auto wall_now = wall_clock::now();
    const auto steady_now = clock::now();
    const auto unix_ns = [&](clock::time_point t) {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(wall_now.time_since_epoch() + (t - steady_now))
            .count();
    };
    for (auto& w : workers) {
        if (const auto b = w->began()) {
            const std::int64_t ns = unix_ns(*b);
            merged.started_unix_ns = merged.started_unix_ns == 0 ? ns : std::min(merged.started_unix_ns, ns);
            merged.last_started_unix_ns = std::max(merged.last_started_unix_ns, ns);
        }
    }
    ctl.finish();
    merged.ended = signal != 0   ? results::ending::interrupted
                   : unreachable ? results::ending::unreachable
                                 : results::ending::completed;
    return merged;
}

} // namespace hotpath::load
