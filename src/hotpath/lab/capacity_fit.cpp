// The Universal Scalability Law's fit (Levenberg-Marquardt over three parameters, with their bounds) and the shape
// the steps show. Three parameters and a closed-form Jacobian: the normal equations are 3x3, solved here.
#include <hotpath/lab/capacity_fit.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>

namespace hotpath::lab {

namespace {

using vec3 = std::array<double, 3>;
using mat3 = std::array<vec3, 3>;

// A step's users and throughput; residuals are relative (divided by the throughput measured), as a step's noise is
// a share of its rate: a fit in absolute terms would hear only the busiest steps.
struct point {
    double n;
    double x;
    double weight() const noexcept { return 1 / x; }
};

double model(const vec3& p, double n) noexcept {
    return p[0] * n / (1 + p[1] * (n - 1) + p[2] * n * (n - 1));
}

// ∂X/∂λ, ∂X/∂σ, ∂X/∂κ at n.
vec3 gradient(const vec3& p, double n) noexcept {
    const double d = 1 + p[1] * (n - 1) + p[2] * n * (n - 1);
    return {n / d, -p[0] * n * (n - 1) / (d * d), -p[0] * n * n * (n - 1) / (d * d)};
}

double residual_sum(const vec3& p, std::span<const point> pts) noexcept {
    double s = 0;
    for (const point& q : pts) {
        const double r = (q.x - model(p, q.n)) * q.weight();
        s += r * r;
    }
    return s;
}

vec3 clamp_bounds(vec3 p) noexcept {
    p[0] = std::max(p[0], 1e-12);
    p[1] = std::clamp(p[1], 0.0, 1.0);
    p[2] = std::max(p[2], 0.0);
    return p;
}

// Solves a x = b for the first k unknowns (Gaussian elimination with partial pivoting); false when singular.
bool solve(mat3 a, vec3 b, std::size_t k, vec3& x) noexcept {
    for (std::size_t c = 0; c < k; ++c) {
        std::size_t pivot = c;
        for (std::size_t r = c + 1; r < k; ++r) {
            pivot = std::abs(a[r][c]) > std::abs(a[pivot][c]) ? r : pivot;
        }
        if (!(std::abs(a[pivot][c]) > 0)) {
            return false;
        }
        std::swap(a[c], a[pivot]);
        std::swap(b[c], b[pivot]);
        for (std::size_t r = c + 1; r < k; ++r) {
            const double f = a[r][c] / a[c][c];
            for (std::size_t j = c; j < k; ++j) {
                a[r][j] -= f * a[c][j];
            }
            b[r] -= f * b[c];
        }
    }
    for (std::size_t c = k; c-- > 0;) {
        double s = b[c];
        for (std::size_t j = c + 1; j < k; ++j) {
            s -= a[c][j] * x[j];
        }
        x[c] = s / a[c][c];
    }
    return true;
}

// Levenberg-Marquardt from `start`, the parameters clamped to their bounds after each step.
vec3 descend(vec3 p, std::span<const point> pts, unsigned& iterations) noexcept {
    p = clamp_bounds(p);
    double rss = residual_sum(p, pts);
    double mu = 1e-3;
    for (iterations = 0; iterations < 500 && mu < 1e12; ++iterations) {
        mat3 jtj{};
        vec3 jtr{};
        for (const point& q : pts) {
            const double w = q.weight();
            const vec3 g = gradient(p, q.n);
            const double r = (q.x - model(p, q.n)) * w;
            for (std::size_t i = 0; i < 3; ++i) {
                jtr[i] += g[i] * w * r;
                for (std::size_t j = 0; j < 3; ++j) {
                    jtj[i][j] += g[i] * g[j] * w * w;
                }
            }
        }
        mat3 a = jtj;
        for (std::size_t i = 0; i < 3; ++i) {
            a[i][i] += mu * std::max(jtj[i][i], 1e-30);
        }
        vec3 step{};
        if (!solve(a, jtr, 3, step)) {
            mu *= 10;
            continue;
        }
        const vec3 next = clamp_bounds({p[0] + step[0], p[1] + step[1], p[2] + step[2]});
        const double next_rss = residual_sum(next, pts);
        if (next_rss < rss) {
            const double gain = rss - next_rss;
            p = next;
            rss = next_rss;
            mu = std::max(mu / 3, 1e-12);
            if (gain <= 1e-14 * std::max(rss, 1e-300)) {
                break;
            }
        } else {
            mu *= 4;
        }
    }
    return p;
}

std::string per_second(double x) {
    return x >= 100 ? fmt::format("{:.0f}/s", x) : fmt::format("{:.3g}/s", x);
}

std::string seconds_text(double s) {
    return s >= 1 ? fmt::format("{:.2f} s", s) : fmt::format("{:.3g} ms", s * 1000);
}

} // namespace

double usl_fit::throughput_at(double users) const noexcept {
    return model({lambda, sigma, kappa}, users);
}

std::optional<double> usl_fit::peak_users() const noexcept {
    if (!(kappa > 0)) {
        return std::nullopt;
    }
    return std::sqrt((1 - sigma) / kappa);
}

std::optional<double> usl_fit::peak_throughput() const noexcept {
    const auto n = peak_users();
    if (!n) {
        return std::nullopt;
    }
    return throughput_at(std::max(*n, 1.0));
}

std::optional<usl_fit> fit_usl(std::span<const capacity_step> steps) {
    std::vector<point> pts;
    for (const capacity_step& s : steps) {
        if (s.users > 0 && s.requests > 0 && s.little_holds() && std::isfinite(s.throughput) && s.throughput > 0) {
            pts.push_back({static_cast<double>(s.users), s.throughput});
        }
    }
    std::sort(pts.begin(), pts.end(), [](const point& a, const point& b) { return a.n < b.n; });
    std::size_t distinct = 0;
    for (std::size_t i = 0; i < pts.size(); ++i) {
        distinct += i == 0 || pts[i].n != pts[i - 1].n ? 1 : 0;
    }
    if (distinct < 3 || !(pts.front().x > 0)) {
        return std::nullopt;
    }
    // Starts: one user's rate from the fewest users, σ and κ from the law made linear in them
    // (λN/X − 1 = σ(N−1) + κN(N−1)), and a few fixed ones; the best fit wins.
    const double lambda0 = pts.front().x / pts.front().n;
    double s11 = 0, s12 = 0, s22 = 0, b1 = 0, b2 = 0;
    for (const point& q : pts) {
        if (!(q.x > 0)) {
            continue;
        }
        const double y = lambda0 * q.n / q.x - 1;
        const double u = q.n - 1;
        const double v = q.n * (q.n - 1);
        s11 += u * u;
        s12 += u * v;
        s22 += v * v;
        b1 += u * y;
        b2 += v * y;
    }
    const double det = s11 * s22 - s12 * s12;
    vec3 linear{lambda0, 0, 0};
    if (std::abs(det) > 0) {
        linear[1] = (b1 * s22 - b2 * s12) / det;
        linear[2] = (s11 * b2 - s12 * b1) / det;
    }
    const std::array<vec3, 5> starts{linear, vec3{lambda0, 0, 0}, vec3{lambda0, 0.5, 0}, vec3{lambda0, 0.99, 0},
                                     vec3{lambda0, 0.05, 1e-4}};
    vec3 best{};
    double best_rss = std::numeric_limits<double>::infinity();
    unsigned best_iterations = 0;
    for (const vec3& start : starts) {
        unsigned iterations = 0;
        const vec3 p = descend(start, pts, iterations);
        const double rss = residual_sum(p, pts);
        if (rss < best_rss) {
            best = p;
            best_rss = rss;
            best_iterations = iterations;
        }
    }

    usl_fit f;
    f.lambda = best[0];
    f.sigma = best[1];
    f.kappa = best[2];
    f.points = pts.size();
    f.iterations = best_iterations;
    double mean = 0;
    for (const point& q : pts) {
        mean += q.x;
    }
    mean /= static_cast<double>(pts.size());
    double total = 0;
    for (const point& q : pts) {
        total += (q.x - mean) * (q.x - mean);
    }
    double absolute = 0;
    for (const point& q : pts) {
        absolute += (q.x - model(best, q.n)) * (q.x - model(best, q.n));
    }
    const double scale = std::max(total, mean * mean) * 1e-18;
    f.r_squared = total > scale ? 1 - absolute / total : (absolute <= scale ? 1.0 : 0.0);

    // Standard errors of the parameters off their bounds: s²(JᵀJ)⁻¹ over those, s² = RSS / (n − free).
    std::array<std::size_t, 3> free{};
    std::size_t k = 0;
    free[k++] = 0;
    if (f.sigma > 1e-9 && f.sigma < 1 - 1e-9) {
        free[k++] = 1;
    }
    if (f.kappa > 1e-15) {
        free[k++] = 2;
    }
    if (pts.size() > k) {
        mat3 jtj{};
        for (const point& q : pts) {
            const double w = q.weight();
            const vec3 g = gradient(best, q.n);
            for (std::size_t i = 0; i < k; ++i) {
                for (std::size_t j = 0; j < k; ++j) {
                    jtj[i][j] += g[free[i]] * g[free[j]] * w * w;
                }
            }
        }
        const double s2 = best_rss / static_cast<double>(pts.size() - k);
        for (std::size_t i = 0; i < k; ++i) {
            vec3 unit{};
            unit[i] = 1;
            vec3 column{};
            if (!solve(jtj, unit, k, column) || !(column[i] >= 0)) {
                continue;
            }
            const double se = std::sqrt(s2 * column[i]);
            (free[i] == 0 ? f.lambda_se : free[i] == 1 ? f.sigma_se : f.kappa_se) = se;
        }
    }
    return f;
}

const char* to_string(capacity_shape s) noexcept {
    switch (s) {
    case capacity_shape::linear:
        return "linear";
    case capacity_shape::contention:
        return "contention";
    case capacity_shape::pool:
        return "pool";
    case capacity_shape::cpu_bound:
        return "cpu_bound";
    case capacity_shape::serialised:
        return "serialised";
    case capacity_shape::coherency:
        return "coherency";
    case capacity_shape::failing:
        return "failing";
    case capacity_shape::undetermined:
        break;
    }
    return "undetermined";
}

namespace {

// The steps a verdict may rest on: answered, and not flagged by Little's law; by users.
std::vector<capacity_step> usable_steps(std::span<const capacity_step> steps) {
    std::vector<capacity_step> ok;
    for (const capacity_step& s : steps) {
        if (s.users > 0 && s.requests > 0 && s.little_holds()) {
            ok.push_back(s);
        }
    }
    std::sort(ok.begin(), ok.end(), [](const auto& a, const auto& b) { return a.users < b.users; });
    return ok;
}

} // namespace

namespace {

// The fewest users measured again: with fewer, where a server's threads happened to get the connections (a server
// that binds each connection to one thread) changes the answer more than time does.
constexpr unsigned min_recheck_users = 4;

} // namespace

int capacity_recheck::change() const noexcept {
    const double a = first.throughput;
    const double b = again.throughput;
    if (!(a > 0) || !(b > 0) || !(first.measured_s > 0) || !(again.measured_s > 0)) {
        return 0;
    }
    // The squared coefficient of variation of a step's latencies, none where not known.
    const auto cv2_of = [](const capacity_step& s) -> std::optional<double> {
        if (!s.latency_sd_s || !(s.mean_latency_s > 0)) {
            return std::nullopt;
        }
        const double cv = *s.latency_sd_s / s.mean_latency_s;
        return cv * cv;
    };
    const std::optional<double> service = alone.users == 1 ? cv2_of(alone) : std::nullopt;
    // A rate's chance variance, for each look: (count × CV² + users) / window².
    const auto variance = [&](const capacity_step& s) {
        const std::optional<double> look = cv2_of(s);
        const double cv2 = look && service ? std::max(*look, *service) : 1.0;
        return (static_cast<double>(s.requests) * cv2 + s.users) / (s.measured_s * s.measured_s);
    };
    const double noise = 3 * std::sqrt(variance(first) + variance(again));
    if (std::abs(b - a) <= std::max(0.2 * std::max(a, b), noise)) {
        return 0;
    }
    return b > a ? 1 : -1;
}

std::optional<unsigned> recheck_users(std::span<const capacity_step> steps) {
    const std::vector<capacity_step> ok = usable_steps(steps);
    if (ok.size() < 3) {
        return std::nullopt;
    }
    const double alone = ok.front().mean_latency_s;
    for (std::size_t i = 1; i + 1 < ok.size(); ++i) {
        if (ok[i].users >= min_recheck_users && ok[i].mean_latency_s > 1.25 * alone) {
            return ok[i].users;
        }
    }
    return std::nullopt;
}

capacity_verdict judge_capacity(std::span<const capacity_step> steps, const std::optional<usl_fit>& fit,
                                const std::optional<capacity_recheck>& recheck) {
    capacity_verdict v;
    const std::vector<capacity_step> ok = usable_steps(steps);
    if (ok.size() < 3) {
        const bool errors = std::any_of(steps.begin(), steps.end(), [](const auto& s) { return s.error_share > 0; });
        v.shape = errors ? capacity_shape::failing : capacity_shape::undetermined;
        v.text =
            errors ? "failing: too many requests failed to measure a curve (see the steps' errors)"
                   : fmt::format("undetermined: {} usable steps of {}, at least 3 are needed", ok.size(), steps.size());
        return v;
    }
    const capacity_step& first = ok.front();
    const capacity_step& top = ok.back();
    const auto peak = std::max_element(ok.begin(), ok.end(),
                                       [](const auto& a, const auto& b) { return a.throughput < b.throughput; });
    v.peak_throughput = peak->throughput;
    v.peak_users = peak->users;
    // The knee: the most throughput per second of latency (Kleinrock's power), past which users add waiting more
    // than answers.
    const auto knee = std::max_element(ok.begin(), ok.end(), [](const auto& a, const auto& b) {
        return a.throughput / std::max(a.mean_latency_s, 1e-12) < b.throughput / std::max(b.mean_latency_s, 1e-12);
    });
    v.knee_users = knee->users;

    const double one_user = first.throughput / first.users;
    const double efficiency = top.throughput / (top.users * one_user);
    const std::string law =
        fit ? fmt::format("σ = {:.3g}, κ = {:.3g}, R² = {:.3f}", fit->sigma, fit->kappa, fit->r_squared) : "no fit";
    // Flat at the top: the last two steps near the most measured (within 15 %, where falling further is coherency's),
    // and the last doubling of users adding (almost) nothing, where contention alone still adds a little at every
    // doubling.
    const auto from =
        std::find_if(ok.begin(), ok.end(), [&](const auto& s) { return s.throughput >= 0.9 * peak->throughput; });
    const capacity_step& before_top = ok[ok.size() - 2];
    // Below a share of the peak by more than the step's own resolution (a long latency over a short window).
    const auto below = [&](const capacity_step& s, double share) {
        return s.throughput + s.resolution() < share * peak->throughput;
    };
    // The last doubling adding at most 8 %, or no more than the two steps' resolutions can tell from nothing.
    const bool flat_at_top = !below(before_top, 0.85) && !below(top, 0.85) &&
                             (top.throughput <= 1.08 * before_top.throughput ||
                              top.throughput - before_top.throughput <= top.resolution() + before_top.resolution());

    if (below(top, 0.85) && peak->users < top.users) {
        v.shape = capacity_shape::coherency;
        std::string fitted;
        if (fit && fit->peak_users()) {
            fitted = fmt::format("; the fit peaks at {:.0f} users", *fit->peak_users());
        }
        v.text =
            fmt::format("coherency: throughput falls past {} users ({} at {} users, {} at {}; {}{})", peak->users,
                        per_second(peak->throughput), peak->users, per_second(top.throughput), top.users, law, fitted);
    } else if (peak->throughput < 1.5 * first.throughput && first.users == 1) {
        v.shape = capacity_shape::serialised;
        v.text = fmt::format("a serialised section: throughput stays near one user's whatever the load ({} at 1 user, "
                             "{} at {}; {})",
                             per_second(first.throughput), per_second(top.throughput), top.users, law);
    } else if (flat_at_top && efficiency < 0.7 && peak->machine_cpu_busy && *peak->machine_cpu_busy >= 0.9) {
        v.shape = capacity_shape::cpu_bound;
        v.text = fmt::format("CPU-bound: {} from {} users on, with the machine's cores {:.0f}% busy there (the load "
                             "generator's share among them when it runs on the same machine; {})",
                             per_second(peak->throughput), peak->users, *peak->machine_cpu_busy * 100, law);
    } else if (flat_at_top && efficiency < 0.7) {
        v.shape = capacity_shape::pool;
        // Little's law inside the service: answers per second times one request's time alone.
        v.pool_size = peak->throughput * first.mean_latency_s;
        v.text = fmt::format("a fixed pool: {} at a {} latency from {} users on, the pool holds {:.0f} (answers per "
                             "second times one request's {} alone; {})",
                             per_second(peak->throughput), seconds_text(top.mean_latency_s), from->users, *v.pool_size,
                             seconds_text(first.mean_latency_s), law);
    } else if (efficiency >= 0.7) {
        v.shape = capacity_shape::linear;
        v.text = fmt::format("scales linearly to {} users: no limit found in range ({} there, {:.0f}% of {} users' "
                             "share at one user's rate; {})",
                             top.users, per_second(top.throughput), efficiency * 100, top.users, law);
    } else {
        v.shape = capacity_shape::contention;
        std::string toward;
        if (fit && fit->kappa <= 0 && fit->sigma > 0) {
            toward = fmt::format("; levelling off toward {}", per_second(fit->lambda / fit->sigma));
        } else if (fit && fit->peak_users()) {
            toward = fmt::format("; the fit peaks at {:.0f} users", *fit->peak_users());
        }
        // Where it stopped scaling: the last step still within 10 % of linear, when one past the first few was.
        const auto linear_to = std::find_if(
            ok.rbegin(), ok.rend(), [&](const capacity_step& s) { return s.throughput >= 0.9 * s.users * one_user; });
        std::string cpu;
        if (top.machine_cpu_busy && *top.machine_cpu_busy >= 0.5) {
            cpu = fmt::format("; the machine's cores {:.0f}% busy there, the load generator's share among them",
                              *top.machine_cpu_busy * 100);
        }
        if (linear_to != ok.rend() && linear_to->users >= 4 && linear_to->users < top.users) {
            v.text = fmt::format("contention past {} users: linear up to there ({}), then less and less per user ({} "
                                 "at {} users, {:.0f}% of linear{}; {}{})",
                                 linear_to->users, per_second(linear_to->throughput), per_second(top.throughput),
                                 top.users, efficiency * 100, cpu, law, toward);
        } else {
            v.text = fmt::format("contention: throughput grows less and less per user ({} at {} users, {:.0f}% of "
                                 "linear{}; {}{})",
                                 per_second(top.throughput), top.users, efficiency * 100, cpu, law, toward);
        }
    }

    const int moved = recheck ? recheck->change() : 0;
    // Grown: faster, and its users all served at once now (no longer queueing). Faster but still queueing may be
    // where the connections landed on the server's threads: the curve's verdict stands.
    if (moved > 0 && recheck->again.mean_latency_s <= 1.25 * first.mean_latency_s) {
        // Queueing at first, faster when asked again: the requests served at once grew with the run's time.
        const double alone = first.mean_latency_s;
        double most = recheck->again.throughput * alone;
        for (const capacity_step& s : ok) {
            most = std::max(most, s.throughput * alone);
        }
        v.shape = capacity_shape::pool;
        v.pool_grew = true;
        v.pool_size = most;
        v.text = fmt::format("a pool that grew under load: {} users got {} at first and {} again at the end; the "
                             "requests in service at once rose from {:.1f} to {:.0f} over the run (answers per second "
                             "times one request's {} alone), so the curve follows the clock, not the users (a thread "
                             "pool adding threads while its threads block, as .NET's does, or an autoscaler; {})",
                             recheck->first.users, per_second(recheck->first.throughput),
                             per_second(recheck->again.throughput), recheck->first.throughput * alone, most,
                             seconds_text(alone), law);
    } else if (moved < 0) {
        v.text += fmt::format("; but it slowed under load: {} users got {} at first and {} again at the end (a leak, "
                              "a filling cache or queue, throttling, or connections spread unevenly over the server's "
                              "threads), so the curve may mix the users with the clock",
                              recheck->first.users, per_second(recheck->first.throughput),
                              per_second(recheck->again.throughput));
    }
    return v;
}

} // namespace hotpath::lab
