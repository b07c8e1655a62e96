// Capacity shapes planted for `hotpath lab capacity` to find (docs/capacity.md): each route waits asynchronously, so
// the shape is the route's and not the CPU's, with parameters given in the query.
#include "apps/apps.hpp"

#include <hotpath/net/sleep.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace hotpath::apps {
namespace {

// A query parameter as a number in [low, high]; `fallback` when absent. False for anything else.
bool number(request& req, std::string_view name, double low, double high, double fallback, double& out) {
    if (!req.has_query_param(name)) {
        out = fallback;
        return true;
    }
    const std::string_view text = req.query_param(name);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size() && out >= low && out <= high;
}

// The route's ?ms= (its wait, `fallback` when absent), or none after answering 400.
std::optional<double> wait_ms(request& req, response& res, double fallback) {
    double ms = 0;
    if (!number(req, "ms", 0, 60'000, fallback, ms)) {
        res.problem(http::status::bad_request, "ms must be a number of milliseconds from 0 to 60000");
        return std::nullopt;
    }
    return ms;
}

std::chrono::nanoseconds of_ms(double ms) {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6));
}

// The state of one event loop: when each of its pool's workers (or its lock) is next free, and the /usl requests in
// flight on it. A request takes the worker free first, from then for `ms`, and waits until its work would be done:
// a queue served in turn without waiters to wake, so a request whose client left (its handler destroyed) leaves its
// turn taken, as a server's worker goes on after the client has gone.
struct loop_state {
    std::chrono::steady_clock::time_point lock_free{};
    std::vector<std::chrono::steady_clock::time_point> pool_free;
    std::vector<std::chrono::steady_clock::time_point> grow_free; // /grow's pool, never smaller than --pool
    std::chrono::steady_clock::time_point grown_at{};             // ... and when it last took a worker more
    unsigned usl_in_flight = 0;
};

// The most workers /grow's pool takes.
constexpr std::size_t most_grown = 1024;

loop_state& state_of(unsigned workers) {
    thread_local loop_state state;
    if (state.pool_free.size() != workers) {
        state.pool_free.assign(workers, {});
    }
    return state;
}

// Takes the earliest free of `free` for `ms`: how long the request waits for its turn and its work.
std::chrono::nanoseconds take_turn(std::span<std::chrono::steady_clock::time_point> free, double ms) {
    const auto now = std::chrono::steady_clock::now();
    auto& earliest = *std::min_element(free.begin(), free.end());
    earliest = std::max(earliest, now) + of_ms(ms);
    return earliest - now;
}

} // namespace

void map_shapes(app& routes, unsigned pool_workers) {
    // Scales: every request waits alone.
    routes.get("/scale", [](request& req, response& res) -> task<void> {
        const auto ms = wait_ms(req, res, 10);
        if (!ms) {
            co_return;
        }
        co_await net::sleep_for(of_ms(*ms));
        res.text("scale\n", "text/plain");
    });
    // A serialised section: one request at a time holds the loop's lock for `ms` (σ = 1), the others wait in turn.
    routes.get("/lock", [pool_workers](request& req, response& res) -> task<void> {
        const auto ms = wait_ms(req, res, 5);
        if (!ms) {
            co_return;
        }
        co_await net::sleep_for(take_turn(std::span(&state_of(pool_workers).lock_free, 1), *ms));
        res.text("lock\n", "text/plain");
    });
    // A fixed pool: `--pool` requests at a time for `ms` each, the others wait their turn.
    routes.get("/pool", [pool_workers](request& req, response& res) -> task<void> {
        const auto ms = wait_ms(req, res, 10);
        if (!ms) {
            co_return;
        }
        co_await net::sleep_for(take_turn(state_of(pool_workers).pool_free, *ms));
        res.text("pool\n", "text/plain");
    });
    // A pool that grows while it is short, as .NET's thread pool adds threads when its threads block: `--pool`
    // workers at first, and one more each `every` ms (1000 by default) in which a request found them all busy.
    routes.get("/grow", [pool_workers](request& req, response& res) -> task<void> {
        double ms = 0, every = 0;
        if (!number(req, "ms", 0, 60'000, 10, ms) || !number(req, "every", 1, 60'000, 1000, every)) {
            res.problem(http::status::bad_request,
                        "ms must be a number of milliseconds from 0 to 60000, every one from 1 to 60000");
            co_return;
        }
        loop_state& s = state_of(pool_workers);
        if (s.grow_free.size() < pool_workers) {
            s.grow_free.resize(pool_workers);
        }
        const auto now = std::chrono::steady_clock::now();
        const bool short_of_workers =
            std::all_of(s.grow_free.begin(), s.grow_free.end(), [&](const auto& free) { return free > now; });
        if (short_of_workers && now - s.grown_at >= of_ms(every) && s.grow_free.size() < most_grown) {
            s.grow_free.emplace_back();
            s.grown_at = now;
        }
        co_await net::sleep_for(take_turn(s.grow_free, ms));
        res.text("grow\n", "text/plain");
    });
    // The law itself: with n requests in flight on the loop when one arrives (itself among them), it waits
    // ms·(1 + σ(n−1) + κn(n−1)); n closed-model users then get X(n) = (1000/ms)·n / (1 + σ(n−1) + κn(n−1)).
    routes.get("/usl", [pool_workers](request& req, response& res) -> task<void> {
        double ms = 0, sigma = 0, kappa = 0;
        if (!number(req, "ms", 0, 60'000, 10, ms) || !number(req, "sigma", 0, 1, 0, sigma) ||
            !number(req, "kappa", 0, 1, 0, kappa)) {
            res.problem(http::status::bad_request,
                        "ms must be a number of milliseconds from 0 to 60000, sigma and kappa numbers from 0 to 1");
            co_return;
        }
        loop_state& s = state_of(pool_workers);
        const double n = ++s.usl_in_flight;
        struct leaving {
            unsigned& count;
            ~leaving() { --count; }
        } l{s.usl_in_flight};
        co_await net::sleep_for(of_ms(ms * (1 + sigma * (n - 1) + kappa * n * (n - 1))));
        res.text("usl\n", "text/plain");
    });
}

} // namespace hotpath::apps
