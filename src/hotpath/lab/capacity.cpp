// `hotpath lab capacity URL`: the step load (src/hotpath/load, in-process), the fit and the verdict
// (lab/capacity_fit.cpp), the result's lines and JSON.
#include <hotpath/lab/capacity.hpp>

#include <hotpath/core/units.hpp>
#include <hotpath/lab/html_report.hpp>
#include <hotpath/lab/services.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/load/runner.hpp>
#include <hotpath/metrics/histogram.hpp>

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string_view>

namespace hotpath::lab {

namespace {

using namespace std::chrono_literals;

// The whole machine's CPU time so far, busy and all, in clock ticks (the first line of /proc/stat).
struct cpu_ticks {
    double busy = 0;
    double total = 0;
};

std::optional<cpu_ticks> read_cpu() {
    std::ifstream in("/proc/stat");
    std::string name;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(in >> name >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || name != "cpu") {
        return std::nullopt;
    }
    const double total = user + nice + system + idle + iowait + irq + softirq + steal;
    return cpu_ticks{total - idle - iowait, total};
}

std::string seconds_text(double s) {
    if (s >= 1) {
        return fmt::format("{:.2f} s", s);
    }
    return s >= 0.001 ? fmt::format("{:.3g} ms", s * 1e3) : fmt::format("{:.3g} µs", s * 1e6);
}

std::string rate_text(double x) {
    return x >= 100 ? fmt::format("{:.0f}/s", x) : fmt::format("{:.3g}/s", x);
}

// Failed requests: transport failures and timeouts, unexpected statuses and failed checks.
std::uint64_t failures(const load::results& r) {
    return r.error_total();
}

// Requests that ended in the window: the responses, and those that failed before one came.
std::uint64_t ended(const load::results& r) {
    std::uint64_t no_response = 0;
    for (const load::error_class e :
         {load::error_class::read, load::error_class::write, load::error_class::timeout, load::error_class::malformed,
          load::error_class::reset, load::error_class::refused}) {
        no_response += r.errors[static_cast<std::size_t>(e)];
    }
    return r.responses + no_response;
}

// Whether the window's answers per second held: its two halves agree within 10 % and what counting noise allows.
bool steady(const load::results& r) {
    const std::size_t n = r.seconds.size() >= 2 ? r.seconds.size() - 1 : 0; // the last takes in the requests' tail
    if (n < 2) {
        return true;
    }
    double first = 0, second = 0;
    for (std::size_t i = 0; i < n / 2; ++i) {
        first += static_cast<double>(r.seconds[i].responses);
        second += static_cast<double>(r.seconds[n - 1 - i].responses);
    }
    return std::abs(first - second) <= 0.1 * std::max(first, second) + 3 * std::sqrt(first + second);
}

// The step's figures from its whole seconds but the last: a closed model's run ends by waiting for the requests in
// flight, which the last second takes in (load/results.hpp), up to one per user however long they took, and which
// would inflate a short window's rate.
capacity_step step_of(unsigned users, const load::results& r, std::optional<double> cpu_busy) {
    capacity_step s;
    s.users = users;
    const std::size_t whole = r.seconds.size() >= 2 ? r.seconds.size() - 1 : 0;
    metrics::histogram latency;
    std::uint64_t answered = 0;
    if (whole > 0) {
        for (std::size_t i = 0; i < whole; ++i) {
            answered += r.seconds[i].responses;
            latency.merge(*r.seconds[i].latency);
        }
        s.measured_s = static_cast<double>(whole);
    } else {
        answered = r.responses;
        latency.merge(r.latency);
        s.measured_s = std::chrono::duration<double>(r.measured).count();
    }
    s.requests = answered;
    s.throughput = s.measured_s > 0 ? static_cast<double>(answered) / s.measured_s : 0;
    s.mean_latency_s = latency.mean_ns() / 1e9;
    if (latency.count() > 0) {
        s.latency_sd_s = latency.stddev_ns() / 1e9;
    }
    s.p50_s = static_cast<double>(latency.value_at_percentile(50)) / 1e9;
    s.p90_s = static_cast<double>(latency.value_at_percentile(90)) / 1e9;
    s.p99_s = static_cast<double>(latency.value_at_percentile(99)) / 1e9;
    const std::uint64_t all = ended(r);
    s.error_share = all > 0 ? static_cast<double>(failures(r)) / static_cast<double>(all) : 0;
    s.machine_cpu_busy = cpu_busy;
    return s;
}

boost::json::value optional_number(const std::optional<double>& v) {
    return v ? boost::json::value(*v) : boost::json::value(nullptr);
}

boost::json::object step_json(const capacity_step& s) {
    boost::json::object o;
    o["users"] = s.users;
    o["throughput"] = s.throughput;
    o["mean_latency_s"] = s.mean_latency_s;
    o["latency_sd_s"] = optional_number(s.latency_sd_s);
    o["p50_s"] = s.p50_s;
    o["p90_s"] = s.p90_s;
    o["p99_s"] = s.p99_s;
    o["error_share"] = s.error_share;
    o["requests"] = s.requests;
    o["measured_s"] = s.measured_s;
    o["in_flight"] = s.in_flight();
    o["little_holds"] = s.little_holds();
    o["machine_cpu_busy"] = optional_number(s.machine_cpu_busy);
    return o;
}

} // namespace

std::string capacity_json(const capacity_result& r) {
    boost::json::object doc;
    doc["schema"] = "hotpath-capacity/1";
    doc["url"] = r.url;
    boost::json::array steps;
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
        boost::json::object o = step_json(r.steps[i]);
        o["fitted"] = i < r.fitted.size() && r.fitted[i];
        steps.push_back(std::move(o));
    }
    doc["steps"] = std::move(steps);
    if (r.recheck) {
        const int change = r.recheck->change();
        doc["recheck"] = {{"users", r.recheck->again.users},
                          {"first_throughput", r.recheck->first.throughput},
                          {"first_mean_latency_s", r.recheck->first.mean_latency_s},
                          {"again", step_json(r.recheck->again)},
                          {"change", change > 0   ? "faster"
                                     : change < 0 ? "slower"
                                                  : "held"}};
    } else {
        doc["recheck"] = nullptr;
    }
    if (r.fit) {
        const usl_fit& f = *r.fit;
        doc["fit"] = {{"lambda", f.lambda},
                      {"sigma", f.sigma},
                      {"kappa", f.kappa},
                      {"lambda_se", optional_number(f.lambda_se)},
                      {"sigma_se", optional_number(f.sigma_se)},
                      {"kappa_se", optional_number(f.kappa_se)},
                      {"r_squared", f.r_squared},
                      {"points", f.points},
                      {"peak_users", optional_number(f.peak_users())},
                      {"peak_throughput", optional_number(f.peak_throughput())}};
    } else {
        doc["fit"] = nullptr;
    }
    const capacity_verdict& v = r.verdict;
    boost::json::object verdict;
    verdict["shape"] = to_string(v.shape);
    verdict["text"] = v.text;
    verdict["knee_users"] = v.knee_users ? boost::json::value(*v.knee_users) : boost::json::value(nullptr);
    verdict["peak_throughput"] = v.peak_throughput;
    verdict["peak_users"] = v.peak_users;
    verdict["pool_size"] = optional_number(v.pool_size);
    verdict["pool_grew"] = v.pool_grew;
    doc["verdict"] = std::move(verdict);
    doc["stopped"] = r.stopped;
    return boost::json::serialize(doc) + "\n";
}

int run_capacity(const capacity_options& o, std::FILE* out, std::FILE* err) {
    block_stop_signals();
    const auto step = parse_duration(o.step);
    const auto max_step = parse_duration(o.max_step);
    const auto warmup = parse_duration(o.warmup);
    const auto max_latency =
        o.max_latency.empty() ? std::optional<std::chrono::nanoseconds>(0ns) : parse_duration(o.max_latency);
    auto bad = [&](const std::string& why) {
        fmt::print(err, "hotpath: lab capacity: {}\n", why);
        return 2;
    };
    if (!step || step->count() <= 0) {
        return bad(fmt::format("bad --step '{}' (e.g. 3s)", o.step));
    }
    if (!max_step || *max_step < *step) {
        return bad(fmt::format("bad --max-step '{}': a duration no shorter than --step", o.max_step));
    }
    if (!warmup || warmup->count() < 0) {
        return bad(fmt::format("bad --warmup '{}' (e.g. 1s)", o.warmup));
    }
    if (!max_latency) {
        return bad(fmt::format("bad --max-latency '{}' (e.g. 2s)", o.max_latency));
    }
    if (o.max_users < 1 || o.min_steps < 1) {
        return bad("--max-users and --min-steps must be at least 1");
    }
    if (!(o.max_errors >= 0 && o.max_errors <= 1)) {
        return bad("--max-errors is a share from 0 to 1 (0.01: 1%)");
    }
    if (o.load_with.rate || o.load_with.stages || o.load_with.connections) {
        return bad("the steps are a closed model of their own users: -c, --rate and --stages do not apply");
    }
    if (o.load_with.url.empty() && o.load_with.scenario.empty()) {
        return bad("a URL is required");
    }
    load::load_options lo = o.load_with;
    lo.ignore_retry_after = true; // each step's users keep asking: a service that sheds load shows it as errors
    lo.connections = 1;
    lo.duration = o.step;
    if (auto checked = load::make_plan(lo); !checked) {
        return bad(checked.error().message);
    }

    // With --json -, standard output is the document's alone: the steps and the verdict go to standard error.
    std::FILE* text = o.json_path == "-" ? err : out;
    capacity_result r;
    r.url = o.load_with.url.empty() ? o.load_with.scenario : o.load_with.url;
    // Printed with the first step's line: a target that answers nothing gets one line, on `err`.
    bool header_printed = false;
    auto header = [&] {
        if (header_printed) {
            return;
        }
        header_printed = true;
        fmt::print(text,
                   "capacity of {}: closed-model users doubling from 1 (to {} at most), each step {} or longer until "
                   "steady (warm-up {})\n",
                   r.url, o.max_users, o.step, o.warmup);
        fmt::print(text, "{:>7}  {:>10}  {:>10}  {:>10}  {:>10}  {:>7}  {:>10}  {:>5}\n", "users", "answers", "mean",
                   "p50", "p99", "errors", "in flight", "cpu");
    };

    // One step of `users`: a warm-up, then whole seconds held until steady with min_requests answered, up to
    // max_step. None when the run cannot go on, with its exit code in `failed`.
    struct measured_step {
        load::results results;
        capacity_step step;
    };
    int failed = 0;
    auto measure = [&](unsigned users, std::chrono::nanoseconds window) -> std::optional<measured_step> {
        for (;;) {
            lo.connections = users;
            lo.duration = exact_duration_text(window + *warmup);
            lo.warmup = warmup->count() > 0 ? std::optional<std::string>(exact_duration_text(*warmup)) : std::nullopt;
            auto planned = load::make_plan(lo);
            if (!planned) {
                failed = bad(planned.error().message);
                return std::nullopt;
            }
            const auto cpu_before = read_cpu();
            auto ran = run_load(*planned, load::progress_mode::none, err);
            const auto cpu_after = read_cpu();
            if (!ran) {
                const bool cancelled = ran.error().code == errc::cancelled;
                fmt::print(err, "{}\n",
                           cancelled ? "hotpath: lab capacity interrupted"
                                     : fmt::format("hotpath: lab capacity: {}", ran.error().message));
                failed = cancelled ? 130 : 1;
                return std::nullopt;
            }
            std::optional<double> cpu_busy;
            if (cpu_before && cpu_after && cpu_after->total > cpu_before->total) {
                cpu_busy = (cpu_after->busy - cpu_before->busy) / (cpu_after->total - cpu_before->total);
            }
            measured_step m{std::move(*ran), {}};
            m.step = step_of(users, m.results, cpu_busy);
            if (m.results.responses == 0 && ended(m.results) == 0 && m.results.connections_opened == 0) {
                return m; // nothing connected: no longer window will change that
            }
            if ((m.step.requests >= o.min_requests && steady(m.results)) || window >= *max_step + 1s) {
                return m;
            }
            window = std::chrono::ceil<std::chrono::seconds>(std::min(window * 2, *max_step + 1s));
        }
    };
    auto print_step = [&](const capacity_step& s, std::string_view note) {
        fmt::print(text, "{:>7}  {:>10}  {:>10}  {:>10}  {:>10}  {:>6.1f}%  {:>10.1f}  {:>5}{}{}\n", s.users,
                   rate_text(s.throughput), seconds_text(s.mean_latency_s), seconds_text(s.p50_s),
                   seconds_text(s.p99_s), s.error_share * 100, s.in_flight(),
                   s.machine_cpu_busy ? fmt::format("{:.0f}%", *s.machine_cpu_busy * 100) : "-",
                   s.little_holds() ? "" : "  (Little's law: fewer in flight than users; not fitted)", note);
        std::fflush(text);
    };

    double best = 0;
    unsigned stalled = 0;
    double last_throughput = 0;
    double last_latency = 0;
    for (unsigned users = 1;;) {
        // Long enough for min_requests at the last step's rate (more users answer at least as fast), within bounds.
        // Whole seconds, one more than the figures take (see step_of), and long against the last step's latency
        // (a window of a few requests' time is mostly its edges): five of this step's, whose latency doubles with
        // its users where the last one queued.
        auto window = *step;
        if (last_throughput > 0) {
            const auto needed =
                std::chrono::duration<double>(std::max(o.min_requests / last_throughput, 10 * last_latency));
            window = std::clamp(std::chrono::duration_cast<std::chrono::nanoseconds>(needed), *step, *max_step);
        }
        window = std::chrono::ceil<std::chrono::seconds>(window) + 1s;
        auto measured = measure(users, window);
        if (!measured) {
            return failed;
        }
        if (measured->results.responses == 0 && ended(measured->results) == 0 && r.steps.empty()) {
            const std::string why =
                measured->results.connect_error.empty() ? "no answer" : measured->results.connect_error;
            fmt::print(err, "hotpath: lab capacity: nothing answers at {}: {}\n", r.url, why);
            return 1;
        }
        header();
        const capacity_step& s = measured->step;
        const bool too_many_errors = s.error_share > o.max_errors;
        r.steps.push_back(s);
        r.fitted.push_back(s.requests > 0 && !too_many_errors && s.little_holds());
        print_step(s, "");
        last_throughput = s.throughput;
        last_latency = s.mean_latency_s;

        if (too_many_errors) {
            r.stopped = fmt::format("errors past {:g}%", o.max_errors * 100);
            break;
        }
        if (max_latency->count() > 0 && s.mean_latency_s > std::chrono::duration<double>(*max_latency).count()) {
            r.stopped = fmt::format("mean latency past {}", o.max_latency);
            break;
        }
        stalled = s.throughput <= 1.05 * best ? stalled + 1 : 0;
        best = std::max(best, s.throughput);
        if (stalled >= 2 && r.steps.size() >= o.min_steps) {
            r.stopped = "throughput stopped growing for two steps";
            break;
        }
        if (users >= o.max_users) {
            r.stopped = fmt::format("--max-users {} reached", o.max_users);
            break;
        }
        users = std::min(users * 2, o.max_users);
    }

    std::vector<capacity_step> usable;
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
        if (r.fitted[i]) {
            usable.push_back(r.steps[i]);
        }
    }
    // The first step that queued, once more: a capacity that moved with the run's time shows there.
    if (const auto again = recheck_users(usable)) {
        const auto first = std::find_if(usable.begin(), usable.end(), [&](const auto& s) { return s.users == *again; });
        const auto window = std::max(std::chrono::ceil<std::chrono::seconds>(*step),
                                     std::chrono::seconds{std::lround(first->measured_s)}) +
                            1s;
        auto measured = measure(*again, window);
        if (!measured) {
            return failed;
        }
        r.recheck = capacity_recheck{*first, measured->step, {}};
        if (usable.front().users == 1) {
            r.recheck->alone = usable.front();
        }
        print_step(measured->step, "  again, at the end");
    }
    r.fit = fit_usl(usable);
    r.verdict = judge_capacity(usable, r.fit, r.recheck);
    if (r.fit) {
        const usl_fit& f = *r.fit;
        auto pm = [](double v, const std::optional<double>& se) {
            return se ? fmt::format("{:.3g} ± {:.2g}", v, *se) : fmt::format("{:.3g} (at its bound)", v);
        };
        std::string peak = "none (κ = 0: the curve never falls)";
        if (f.peak_users()) {
            peak = fmt::format("{:.0f} users, {}", *f.peak_users(), rate_text(*f.peak_throughput()));
        }
        fmt::print(text,
                   "fit      X(N) = λN / (1 + σ(N−1) + κN(N−1)) over {} steps: λ = {}/s, σ = {}, κ = {}; R² = "
                   "{:.3f}; peak: {}\n",
                   f.points, pm(f.lambda, f.lambda_se), pm(f.sigma, f.sigma_se), pm(f.kappa, f.kappa_se), f.r_squared,
                   peak);
    } else {
        fmt::print(text, "fit      none: fewer than three steps to fit\n");
    }
    if (r.verdict.knee_users) {
        fmt::print(text, "knee     {} user{} (the most answers per second of latency)\n", *r.verdict.knee_users,
                   *r.verdict.knee_users == 1 ? "" : "s");
    }
    fmt::print(text, "verdict  {}\n", r.verdict.text);
    fmt::print(text, "stopped  {}\n", r.stopped);
    if (!o.html_path.empty()) {
        const auto page = write_report_html({boost::json::parse(capacity_json(r))}, o.html_path);
        if (!page) {
            fmt::print(err, "hotpath: lab capacity: {}\n", page.error().message);
            return 1;
        }
    }
    if (!o.json_path.empty()) {
        const std::string doc = capacity_json(r);
        if (o.json_path == "-") {
            fmt::print(out, "{}", doc);
        } else {
            std::ofstream f(o.json_path, std::ios::binary | std::ios::trunc);
            if (!(f << doc) || !(f.flush())) {
                fmt::print(err, "hotpath: lab capacity: cannot write {}\n", o.json_path);
                return 1;
            }
        }
    }
    return 0;
}

} // namespace hotpath::lab
