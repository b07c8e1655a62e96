// The console report, the JSON document and threshold evaluation of a load run.
#include <hotpath/load/report.hpp>

#include <hotpath/load/start.hpp>
#include <hotpath/net/tls_options.hpp>

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <iterator>

namespace hotpath::load {

namespace {

constexpr double percentiles[] = {50, 75, 90, 95, 99, 99.9};

double seconds_of(std::chrono::nanoseconds d) {
    return static_cast<double>(d.count()) / 1e9;
}

double rate_of(const results& r) {
    const double s = seconds_of(r.measured);
    return s > 0 ? static_cast<double>(r.responses) / s : 0;
}

double error_rate_of(const results& r) {
    const double attempts = static_cast<double>(r.successes + r.error_total());
    return attempts > 0 ? static_cast<double>(r.error_total()) / attempts : 0;
}

std::string percentile_name(double p) {
    return p == std::floor(p) ? fmt::format("p{}", static_cast<int>(p)) : fmt::format("p{}", p);
}

// The connections a plan holds at most: -c, or the largest stage's virtual users.
unsigned connections_of(const plan& p) {
    return !p.open_model() && !p.stages.empty() ? static_cast<unsigned>(std::lround(p.max_level())) : p.connections;
}

// The protocol spoken, as the JSON names it.
std::string whole_model_of(const plan& p) {
    if (p.open_model()) {
        return fmt::format("open model, {}, {} connection{}",
                           p.stages.empty() ? fmt::format("{} req/s", p.rate) : std::string("staged rate"),
                           p.open_connections(), p.open_connections() == 1 ? "" : "s");
    }
    const std::string think = p.think.any() ? fmt::format(", {} think time", think_time_text(p.think)) : "";
    return p.stages.empty() ? fmt::format("closed model, {} connections{}", p.connections, think)
                            : fmt::format("closed model, staged virtual users (up to {}){}", connections_of(p), think);
}

// The model, and this run's part of it with --segment.
std::string model_of(const plan& p) {
    return p.part.whole() ? whole_model_of(p) : fmt::format("{}; segment {} of it", whole_model_of(p), p.part.text());
}

// A 128-bit sum in decimal: JSON numbers past 2^64 (or 2^53 as doubles) do not survive most readers.
std::string decimal_of(metrics::histogram::wide_sum sum) {
    __extension__ using uint128 = unsigned __int128;
    uint128 value = (static_cast<uint128>(sum.high) << 64) | sum.low;
    char digits[40]; // 2^128 - 1 has 39 digits
    std::size_t n = 0;
    do {
        digits[n++] = static_cast<char>('0' + static_cast<int>(value % 10));
        value /= 10;
    } while (value != 0);
    return std::string(std::make_reverse_iterator(digits + n), std::make_reverse_iterator(digits));
}

// A double, or null where JSON has no number (the stddev is NaN once the sum of squares saturates).
boost::json::value number_or_null(double v) {
    return std::isfinite(v) ? boost::json::value(v) : boost::json::value(nullptr);
}

boost::json::object histogram_json(const metrics::histogram& h) {
    boost::json::object o;
    o["count"] = h.count();
    o["min_us"] = static_cast<double>(h.min_ns()) / 1e3;
    o["mean_us"] = h.mean_ns() / 1e3;
    o["stdev_us"] = number_or_null(h.stddev_ns() / 1e3);
    o["max_us"] = static_cast<double>(h.max_ns()) / 1e3;
    boost::json::object ps;
    for (double p : percentiles) {
        ps[fmt::format("{}", p)] = static_cast<double>(h.value_at_percentile(p)) / 1e3;
    }
    o["percentiles_us"] = std::move(ps);
    // The exact state, sparse: [bucket index, count] pairs plus the exact sums, for lossless merging.
    boost::json::array counts;
    const auto& c = h.counts();
    for (std::size_t i = 0; i < c.size(); ++i) {
        if (c[i] != 0) {
            counts.push_back(boost::json::array{i, c[i]});
        }
    }
    boost::json::object state;
    state["lowest_ns"] = metrics::histogram::lowest_ns;
    state["highest_ns"] = metrics::histogram::highest_ns;
    state["sub_bucket_bits"] = metrics::histogram::sub_bucket_bits;
    state["bucket_count"] = metrics::histogram::bucket_count;
    state["counts"] = std::move(counts);
    state["min_ns"] = h.min_ns();
    state["max_ns"] = h.max_ns();
    state["sum_ns"] = decimal_of(h.exact_sum_ns());
    state["sum_squares_ns"] = decimal_of(h.exact_sum_squares_ns());
    state["clamped"] = h.clamped();
    o["state"] = std::move(state);
    return o;
}

} // namespace

std::string_view protocol_name(const plan& p) noexcept {
    return !p.may_h2() ? "http/1.1" : !p.h2() ? "auto" : p.to.tls() ? "h2" : "h2c";
}

std::vector<threshold_outcome> evaluate(const plan& p, const results& r) {
    std::vector<threshold_outcome> out;
    for (const auto& t : p.thresholds) {
        threshold_outcome o;
        o.rule = &t;
        switch (t.what) {
        case threshold::metric::percentile:
            o.actual = static_cast<double>(r.latency.value_at_percentile(t.percentile));
            break;
        case threshold::metric::mean:
            o.actual = r.latency.mean_ns();
            break;
        case threshold::metric::max:
            o.actual = static_cast<double>(r.latency.max_ns());
            break;
        case threshold::metric::errors:
            o.actual = error_rate_of(r);
            break;
        case threshold::metric::rps:
            o.actual = rate_of(r);
            break;
        case threshold::metric::dropped:
            o.actual = r.dropped_rate();
            break;
        }
        o.pass = t.less ? o.actual < t.limit : o.actual > t.limit;
        out.push_back(o);
    }
    return out;
}

verdict judge(const results& r, const std::vector<threshold_outcome>& outcomes) noexcept {
    if (r.successes == 0) {
        return verdict::nothing_succeeded;
    }
    for (const auto& o : outcomes) {
        if (!o.pass) {
            return verdict::threshold_failed;
        }
    }
    return verdict::passed;
}

void print_header(std::FILE* out, const plan& p) {
    const unsigned threads = resolve_threads(p);
    fmt::print(out, "hotpath load {}: {}, {} thread{}\n", p.to.text(), model_of(p), threads, threads == 1 ? "" : "s");
}

void print_report(std::FILE* out, const plan& p, const results& r, const std::vector<threshold_outcome>& outcomes) {
    const auto& h = r.latency;
    // The headline says what went wrong with the run itself: connections that failed, sends the plan made that
    // were never sent, a run cut short.
    std::string headline = fmt::format("{} responses in {:.2f}s, {:.1f}/s; {} errors ({:.2f}%)", r.responses,
                                       seconds_of(r.measured), rate_of(r), r.error_total(), error_rate_of(r) * 100);
    if (r.connect_failures != 0) {
        headline += fmt::format("; {} of {} connection attempts failed ({})", r.connect_failures, r.connect_attempts,
                                r.connect_error.empty() ? "no reason" : r.connect_error);
    }
    if (r.unsent != 0) {
        headline += fmt::format("; {} planned requests never sent ({:.1f}%: connections ran out)", r.unsent,
                                r.dropped_rate() * 100);
    }
    switch (r.ended) {
    case results::ending::completed:
        break;
    case results::ending::interrupted:
        headline += fmt::format("; INTERRUPTED by {} after {:.2f}s of {:.2f}s planned",
                                r.signal == SIGTERM ? "SIGTERM" : "SIGINT", seconds_of(r.measured + p.warmup),
                                seconds_of(p.total_time()));
        break;
    case results::ending::unreachable:
        headline += fmt::format("; STOPPED: no connection opened in the first {}s (--keep-trying waits the whole run)",
                                plan::connect_grace.count());
        break;
    }
    fmt::print(out, "  Requests     {}\n", headline);
    // When it began (the first of its event loops), and how far apart its loops began, those of every part
    // merged among them: generators started together (--start-at, --paused) show how together.
    if (r.started_unix_ns != 0) {
        const auto at = wall_clock::time_point{
            std::chrono::duration_cast<wall_clock::duration>(std::chrono::nanoseconds{r.started_unix_ns})};
        const std::int64_t spread = r.last_started_unix_ns - r.started_unix_ns;
        fmt::print(out, "  Started      {}{}{}\n", wall_clock_text(at),
                   p.start_at ? fmt::format(" (--start-at {})", wall_clock_text(*p.start_at))
                   : p.paused ? " (released)"
                              : "",
                   spread > 0 ? fmt::format(", every event loop within {} of it",
                                            format_duration_ns(static_cast<double>(spread)))
                              : "");
    }
    if (h.count() == 0) {
        fmt::print(out, "  Latency      no responses\n");
    } else {
        fmt::print(out, "  Latency      min {}  mean {}  stdev {}  max {}\n",
                   format_duration_ns(static_cast<double>(h.min_ns())), format_duration_ns(h.mean_ns()),
                   format_duration_ns(h.stddev_ns()), format_duration_ns(static_cast<double>(h.max_ns())));
        std::string line;
        for (double pc : percentiles) {
            line += fmt::format("{} {}  ", percentile_name(pc),
                                format_duration_ns(static_cast<double>(h.value_at_percentile(pc))));
        }
        line.erase(line.find_last_not_of(' ') + 1);
        fmt::print(out, "  Percentiles  {}\n", line);
        // Distribution: ten bands between p0 and p99.9 on a log scale, one bar each.
        const double lo = std::max(1e3, static_cast<double>(h.min_ns()));
        const double hi = std::max(lo * 1.01, static_cast<double>(h.value_at_percentile(99.9)));
        constexpr int bands = 10;
        std::uint64_t band_counts[bands] = {};
        const auto& counts = h.counts();
        for (std::size_t i = 0; i < counts.size(); ++i) {
            if (counts[i] == 0) {
                continue;
            }
            const double v = static_cast<double>(metrics::histogram::bucket_lowest_ns(i));
            int b = static_cast<int>(std::floor(std::log(std::max(v, lo) / lo) / std::log(hi / lo) * bands));
            band_counts[std::clamp(b, 0, bands - 1)] += counts[i];
        }
        const std::uint64_t most = *std::max_element(std::begin(band_counts), std::end(band_counts));
        // Each band labelled by where it starts, with as many decimals as it takes to tell the labels apart (a
        // narrow distribution, all near 1 s, would read "1.01s" three times).
        std::string labels[bands];
        for (int decimals = 2; decimals <= 6; ++decimals) {
            for (int b = 0; b < bands; ++b) {
                labels[b] = format_duration_ns(lo * std::pow(hi / lo, static_cast<double>(b) / bands), decimals);
            }
            if (std::adjacent_find(std::begin(labels), std::end(labels)) == std::end(labels)) {
                break;
            }
        }
        for (int b = 0; b < bands; ++b) {
            const auto width =
                most == 0 ? 0
                          : static_cast<int>(40.0 * static_cast<double>(band_counts[b]) / static_cast<double>(most));
            fmt::print(out, "    {:>11} {:<40} {}\n", labels[b], std::string(static_cast<std::size_t>(width), '#'),
                       band_counts[b]);
        }
    }
    std::string statuses;
    for (std::size_t s = 0; s < r.statuses.size(); ++s) {
        if (r.statuses[s] != 0) {
            statuses += fmt::format("{}: {}  ", s, r.statuses[s]);
        }
    }
    statuses.erase(statuses.find_last_not_of(' ') + 1);
    fmt::print(out, "  Statuses     {}\n", statuses.empty() ? "none" : statuses);
    if (r.error_total() != 0) {
        std::string errors;
        for (std::size_t e = 0; e < error_class_count; ++e) {
            if (r.errors[e] != 0) {
                errors += fmt::format("{} {}  ", to_string(static_cast<error_class>(e)), r.errors[e]);
            }
        }
        errors.erase(errors.find_last_not_of(' ') + 1);
        fmt::print(out, "  Errors       {}\n", errors);
    }
    if (r.retry_after_asked != 0) {
        if (p.open_model()) {
            fmt::print(out, "  Retry-After  {} answers asked to wait; the open model keeps its schedule\n",
                       r.retry_after_asked);
        } else if (!p.honour_retry_after) {
            fmt::print(out,
                       "  Retry-After  {} answers asked to wait; users sent again at once (--ignore-retry-after)\n",
                       r.retry_after_asked);
        } else {
            fmt::print(out, "  Retry-After  {} answers asked to wait; users held {} times, {} in all\n",
                       r.retry_after_asked, r.retry_after_held,
                       format_duration_ns(static_cast<double>(r.retry_after_held_for.count())));
        }
    }
    if (r.per_request.size() > 1) {
        fmt::print(out, "  By request   {:<16} {:>10} {:>10} {:>9} {:>10} {:>10} {:>10}\n", "name", "responses",
                   "req/s", "failures", "p50", "p95", "p99");
        for (const auto& q : r.per_request) {
            const double secs = static_cast<double>(r.measured.count()) / 1e9;
            fmt::print(out, "               {:<16} {:>10} {:>10.1f} {:>9} {:>10} {:>10} {:>10}\n", q.name, q.responses,
                       secs > 0 ? static_cast<double>(q.responses) / secs : 0.0, q.failures,
                       format_duration_ns(static_cast<double>(q.latency.value_at_percentile(50))),
                       format_duration_ns(static_cast<double>(q.latency.value_at_percentile(95))),
                       format_duration_ns(static_cast<double>(q.latency.value_at_percentile(99))));
        }
    }
    fmt::print(out, "  Transfer     {} received, {} sent\n", format_size(r.bytes_received), format_size(r.bytes_sent));
    if (r.connect_failures == 0) {
        fmt::print(out, "  Connections  {} opened\n", r.connections_opened);
    } else {
        fmt::print(out, "  Connections  {} opened; {} of {} attempts failed ({})\n", r.connections_opened,
                   r.connect_failures, r.connect_attempts, r.connect_error.empty() ? "no reason" : r.connect_error);
    }
    if (!p.may_h2()) {
        fmt::print(out, "  Protocol     HTTP/1.1\n");
    } else if (!p.h2()) {
        fmt::print(
            out,
            "  Protocol     h2 or HTTP/1.1 by ALPN: {} of {} connections spoke h2 ({} stream{} each), the others "
            "HTTP/1.1{}\n",
            r.connections_h2, r.connections_opened, p.streams, p.streams == 1 ? "" : "s",
            r.retried_unprocessed == 0
                ? std::string()
                : fmt::format("; {} requests sent again after a GOAWAY left them unprocessed", r.retried_unprocessed));
    } else {
        fmt::print(
            out, "  Protocol     {}, {} stream{} per connection{}\n",
            p.to.tls() ? "h2 (ALPN)" : "h2c (prior knowledge)", p.streams, p.streams == 1 ? "" : "s",
            r.retried_unprocessed == 0
                ? std::string()
                : fmt::format("; {} requests sent again after a GOAWAY left them unprocessed", r.retried_unprocessed));
    }
    if (r.tls) {
        const auto& t = r.handshakes;
        if (t.handshakes != 0) {
            fmt::print(out, "  TLS          {} handshakes, {} full and {} resumed; p50 {} p99 {} max {}\n",
                       t.handshakes, t.handshakes - t.resumed, t.resumed,
                       format_duration_ns(static_cast<double>(t.handshake_time.value_at_percentile(50))),
                       format_duration_ns(static_cast<double>(t.handshake_time.value_at_percentile(99))),
                       format_duration_ns(static_cast<double>(t.handshake_time.max_ns())));
        } else {
            fmt::print(out, "  TLS          no handshake completed\n");
        }
        for (const net::tls_errc e : net::tls_errcs) {
            if (t.failures_of(e) != 0) {
                std::string why = net::make_error_code(e).message(); // what failed and what to do
                if (why.rfind("TLS: ", 0) == 0) {
                    why.erase(0, 5);
                }
                fmt::print(out, "  TLS failed   {} handshakes: {}\n", t.failures_of(e), why);
            }
        }
    }
    if (p.open_model()) {
        const auto& s = r.service_time;
        fmt::print(out,
                   "  Open model   latency is measured from each request's scheduled send time; from the actual "
                   "send: p50 {} p99 {} max {}\n",
                   format_duration_ns(static_cast<double>(s.value_at_percentile(50))),
                   format_duration_ns(static_cast<double>(s.value_at_percentile(99))),
                   format_duration_ns(static_cast<double>(s.max_ns())));
        if (r.late == 0) {
            fmt::print(out, "               every request sent on time; {} never sent\n", r.unsent);
        } else {
            fmt::print(out,
                       "               {} sent late, behind schedule p50 {} p99 {} max {} (all {} connections "
                       "busy: raise -c or --max-connections); {} never sent\n",
                       r.late, format_duration_ns(static_cast<double>(r.send_lag.value_at_percentile(50))),
                       format_duration_ns(static_cast<double>(r.send_lag.value_at_percentile(99))),
                       format_duration_ns(static_cast<double>(r.send_lag.max_ns())), p.open_connections(), r.unsent);
        }
    }
    for (const auto& o : outcomes) {
        const bool is_latency = o.rule->what == threshold::metric::percentile ||
                                o.rule->what == threshold::metric::mean || o.rule->what == threshold::metric::max;
        const std::string actual =
            is_latency ? format_duration_ns(o.actual)
            : o.rule->what == threshold::metric::errors || o.rule->what == threshold::metric::dropped
                ? fmt::format("{:.2f}%", o.actual * 100)
                : fmt::format("{:.1f}/s", o.actual);
        fmt::print(out, "  Threshold    {:<16} {} (actual {})\n", o.rule->text, o.pass ? "pass" : "FAIL", actual);
    }
    if (judge(r, outcomes) == verdict::nothing_succeeded) {
        if (r.connections_opened == 0 && r.connect_failures > 0) {
            fmt::print(out, "  Result       FAIL: nothing succeeded; no connection could be opened ({})\n",
                       r.connect_error);
        } else if (r.connections_opened == 0) {
            fmt::print(out, "  Result       FAIL: nothing succeeded; no connection was opened\n");
        } else {
            fmt::print(out, "  Result       FAIL: nothing succeeded; no request got a successful response\n");
        }
    }
}

std::string to_json(const plan& p, const results& r, const std::vector<threshold_outcome>& outcomes) {
    boost::json::object doc;
    doc["schema"] = "hotpath-load/1";
    boost::json::object run;
    run["url"] = p.to.text();
    run["method"] = p.method;
    run["model"] = p.open_model() ? "open" : "closed";
    run["threads"] = resolve_threads(p);
    run["connections"] = connections_of(p);
    run["rate"] = p.rate;
    run["pipeline"] = p.pipeline;
    run["protocol"] = protocol_name(p);
    run["streams"] = p.streams;
    run["keep_alive"] = p.keep_alive;
    if (p.think.any()) {
        run["think_time"] = think_time_text(p.think);
    }
    run["honour_retry_after"] = p.honour_retry_after;
    run["planned_s"] = seconds_of(p.total_time());
    run["warmup_s"] = seconds_of(p.warmup);
    run["planned_ns"] = p.total_time().count();
    run["warmup_ns"] = p.warmup.count();
    boost::json::array stages;
    for (const auto& st : p.stages) {
        stages.push_back(boost::json::object{{"kind", st.what == stage::kind::rate ? "rate" : "vus"},
                                             {"from", st.from},
                                             {"to", st.to},
                                             {"duration_ns", st.duration.count()}});
    }
    run["stages"] = std::move(stages);
    if (!p.part.whole()) {
        run["segment"] = p.part.text();
        run["segment_sequence"] = p.part.sequence_text();
    }
    if (r.started_unix_ns != 0) {
        const auto at = wall_clock::time_point{
            std::chrono::duration_cast<wall_clock::duration>(std::chrono::nanoseconds{r.started_unix_ns})};
        run["started_at"] = wall_clock_text(at);
        run["started_unix_ns"] = r.started_unix_ns;
        run["start_spread_ns"] = r.last_started_unix_ns - r.started_unix_ns;
    }
    doc["run"] = std::move(run);

    doc["measured_s"] = seconds_of(r.measured);
    doc["measured_ns"] = r.measured.count();
    doc["responses"] = r.responses;
    doc["successes"] = r.successes;
    doc["requests_per_second"] = rate_of(r);
    doc["error_rate"] = error_rate_of(r);
    doc["bytes_received"] = r.bytes_received;
    doc["bytes_sent"] = r.bytes_sent;
    doc["connections_opened"] = r.connections_opened;
    doc["connect_attempts"] = r.connect_attempts;
    doc["connect_failures"] = r.connect_failures;
    if (!r.connect_error.empty()) {
        doc["connect_error"] = r.connect_error;
    }
    if (r.tls) {
        const auto& t = r.handshakes;
        boost::json::object tls;
        tls["handshakes"] = t.handshakes;
        tls["resumed"] = t.resumed;
        tls["handshake_time"] = histogram_json(t.handshake_time);
        boost::json::object failures;
        for (const net::tls_errc e : net::tls_errcs) {
            failures[net::tls_errc_name(e)] = t.failures_of(e);
        }
        tls["failures"] = std::move(failures);
        doc["tls"] = std::move(tls);
    }
    doc["retried_unprocessed"] = r.retried_unprocessed;
    doc["retry_after"] = boost::json::object{{"asked", r.retry_after_asked},
                                             {"held", r.retry_after_held},
                                             {"held_ns", r.retry_after_held_for.count()},
                                             {"held_s", seconds_of(r.retry_after_held_for)}};
    doc["connections_h2"] = r.connections_h2;
    doc["late"] = r.late;
    doc["unsent"] = r.unsent;
    doc["dropped_rate"] = r.dropped_rate();
    doc["ended"] = r.ended == results::ending::completed     ? "completed"
                   : r.ended == results::ending::interrupted ? "interrupted"
                                                             : "unreachable";
    if (r.signal != 0) {
        doc["signal"] = r.signal == SIGTERM ? "SIGTERM" : "SIGINT";
    }
    boost::json::object errors;
    for (std::size_t e = 0; e < error_class_count; ++e) {
        errors[to_string(static_cast<error_class>(e))] = r.errors[e];
    }
    doc["errors"] = std::move(errors);
    boost::json::object statuses;
    for (std::size_t s = 0; s < r.statuses.size(); ++s) {
        if (r.statuses[s] != 0) {
            statuses[std::to_string(s)] = r.statuses[s];
        }
    }
    doc["statuses"] = std::move(statuses);
    doc["latency"] = histogram_json(r.latency);
    if (p.open_model()) {
        doc["service_time"] = histogram_json(r.service_time);
        doc["send_lag"] = histogram_json(r.send_lag);
    }
    boost::json::array seconds;
    for (std::size_t i = 0; i < r.seconds.size(); ++i) {
        const auto& s = r.seconds[i];
        boost::json::object o;
        o["second"] = i;
        o["responses"] = s.responses;
        o["errors"] = s.errors;
        o["connect_failures"] = s.connect_failures;
        o["p50_us"] = static_cast<double>(s.latency->value_at_percentile(50)) / 1e3;
        o["p95_us"] = static_cast<double>(s.latency->value_at_percentile(95)) / 1e3;
        o["p99_us"] = static_cast<double>(s.latency->value_at_percentile(99)) / 1e3;
        o["latency"] = histogram_json(*s.latency);
        seconds.push_back(std::move(o));
    }
    doc["seconds"] = std::move(seconds);
    boost::json::array requests;
    for (const auto& q : r.per_request) {
        requests.push_back(boost::json::object{{"name", q.name},
                                               {"responses", q.responses},
                                               {"successes", q.successes},
                                               {"failures", q.failures},
                                               {"latency", histogram_json(q.latency)}});
    }
    doc["requests"] = std::move(requests);
    boost::json::array th;
    for (const auto& o : outcomes) {
        th.push_back(boost::json::object{{"threshold", o.rule->text}, {"actual", o.actual}, {"pass", o.pass}});
    }
    doc["thresholds"] = std::move(th);
    return boost::json::serialize(doc);
}

} // namespace hotpath::load
