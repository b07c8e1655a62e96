// A service's capacity from the outside: Gunther's Universal Scalability Law fitted to a closed-model step load,
// and the shape it names (docs/capacity.md). Pure functions: no I/O (lab/capacity.cpp measures).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hotpath::lab {

// One measured step: `users` closed-model users (connections, each with one request at a time, no think time).
struct capacity_step {
    unsigned users = 0;
    double throughput = 0;     // answers per second (successes and failures alike)
    double mean_latency_s = 0; // over the step's measured window
    // The latencies' standard deviation over the window, where known: how evenly the users' requests end, which sets
    // how much the window's count moves by chance (capacity_recheck::change).
    std::optional<double> latency_sd_s;
    double p50_s = 0, p90_s = 0, p99_s = 0;
    double error_share = 0;   // failed requests over requests
    std::size_t requests = 0; // answered in the measured window
    double measured_s = 0;    // the window's length
    // The whole machine's CPU busy share over the step (0 to 1), where read (/proc/stat, this machine): a plateau
    // with every core busy is the CPU's, the load generator's own share among it when it runs on the same machine.
    std::optional<double> machine_cpu_busy;
    // Little's law: the mean number in flight, throughput x mean latency, against `users`. Far below (under 0.8x),
    // the users' requests spent part of the step outside the service (the load generator or the client side was
    // the bottleneck); far above (over 1.25x), the window was too short for its latency (its edges, requests begun
    // before it, weigh). Either way the step is flagged and left out of the fit.
    double in_flight() const noexcept { return throughput * mean_latency_s; }
    // How finely the window knows its rate, in answers per second: one answer per user over the window. Each user
    // ends one request per latency, and one may fall either side of each edge; where the users' requests end together
    // (a blocked event loop sends a batch's answers at once), the whole step's count moves by that much.
    double resolution() const noexcept { return measured_s > 0 ? users / measured_s : 0; }
    bool little_holds() const noexcept {
        return users == 0 || (in_flight() >= 0.8 * users && in_flight() <= 1.25 * users);
    }
};

// X(N) = λN / (1 + σ(N−1) + κN(N−1)): λ a single user's throughput, σ contention (the serialised share: a lock, a
// single thread, a pool), κ coherency (work that grows with every pair of users).
struct usl_fit {
    double lambda = 0, sigma = 0, kappa = 0;
    // Standard errors (from the residuals and the Jacobian at the fit); a parameter held at its bound (σ at 0 or 1,
    // κ at 0) has none.
    std::optional<double> lambda_se, sigma_se, kappa_se;
    double r_squared = 0; // 1 − residual / total sum of squares (1 when both are 0)
    std::size_t points = 0;
    unsigned iterations = 0;

    double throughput_at(double users) const noexcept;
    // Where the curve peaks: √((1−σ)/κ) users, when κ > 0; none for a curve that never falls.
    std::optional<double> peak_users() const noexcept;
    std::optional<double> peak_throughput() const noexcept;
};

// Non-linear least squares (Levenberg-Marquardt, with σ held in [0, 1] and κ ≥ 0) over the points (users,
// throughput) of the steps that answered and that Little's law does not flag; none with fewer than three distinct
// user counts.
std::optional<usl_fit> fit_usl(std::span<const capacity_step> steps);

// One step measured again once the steps are done: a service whose capacity moved with time during the run (a pool
// that adds threads while its threads block, as .NET's thread pool does; an autoscaler; a leak) draws a curve of
// the clock, not of the users, which the second look tells.
struct capacity_recheck {
    capacity_step first; // as measured in its turn
    capacity_step again; // at the end
    capacity_step alone; // one user's step, where measured: its latencies are the service's own times, no queueing
    // +1 the service answers faster now, -1 slower, 0 the same: more than 20 % apart, and more than counting noise
    // allows (three standard deviations of the difference). A look's count moves by chance as much as its answers
    // end unevenly: a closed loop's count over a window has the variance count × CV² (a renewal process; CV the
    // standard deviation of the time between answers over its mean), plus one per user for where each user's last
    // request falls against the window's edges. The CV is the larger of the look's latencies' and one user's alone:
    // users queueing behind one another wait for sums of service times, whose spread is smaller than one service
    // time's, while their answers still leave as unevenly as the service times do. Poisson's √count (CV = 1) where
    // either spread is not known.
    int change() const noexcept;
};

// The users to measure again: those of the first step of 4 users or more that queued (its mean latency past 1.25
// times one user's, among the steps Little's law does not flag), where a capacity that moved shows most; none when
// no such step came before the last (a service that scaled throughout, or that queued only at the top step just
// measured). Fewer users would measure where a server's threads happened to get the connections more than time.
std::optional<unsigned> recheck_users(std::span<const capacity_step> steps);

// The shape the steps show, in the words of the verdict.
enum class capacity_shape {
    linear,       // throughput still grows near one user's rate times the users at the top step
    contention,   // grows, less and less per user, without a plateau in range
    pool,         // grows, then flat: a fixed number of requests served at once, the rest wait (or a pool that
                  // grew during the run: the step measured again answers faster)
    cpu_bound,    // grows, then flat with every core of the machine busy
    serialised,   // flat from the start: one at a time
    coherency,    // grows, then falls
    failing,      // errors past the limit before any shape showed
    undetermined, // too few steps
};
const char* to_string(capacity_shape s) noexcept;

struct capacity_verdict {
    capacity_shape shape = capacity_shape::undetermined;
    std::string text;                   // one sentence with its figures
    std::optional<unsigned> knee_users; // the latency curve's knee: the step of most throughput per latency
    double peak_throughput = 0;         // the most measured, and at how many users
    unsigned peak_users = 0;
    std::optional<double> pool_size; // pool: the requests served at once (plateau x one user's latency; grown:
                                     // the most seen)
    bool pool_grew = false;          // pool: it grew during the run (the step measured again answered faster)
};

// Names the shape from the measured steps (those Little's law flags are left out), the fit, if any, and the step
// measured again, if any.
capacity_verdict judge_capacity(std::span<const capacity_step> steps, const std::optional<usl_fit>& fit,
                                const std::optional<capacity_recheck>& recheck = std::nullopt);

} // namespace hotpath::lab
