// The run's metrics, once, for every output.
#include <hotpath/load_out/metric_set.hpp>

#include <unistd.h>

#include <fmt/core.h>

#include <array>

namespace hotpath::load_out {
namespace {

// Labels: the run's tags, then `extra`.
class label_set {
public:
    explicit label_set(const run_view& run) {
        for (const auto& [name, value] : run.tags) {
            labels_.push_back({name, value});
        }
        base_ = labels_.size();
    }
    std::span<const metrics::label> with(std::initializer_list<metrics::label> extra) {
        labels_.resize(base_);
        labels_.insert(labels_.end(), extra.begin(), extra.end());
        return labels_;
    }

private:
    std::vector<metrics::label> labels_;
    std::size_t base_ = 0;
};

constexpr std::array<std::string_view, 6> status_classes{"other", "1xx", "2xx", "3xx", "4xx", "5xx"};

double seconds(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e9;
}

// The Prometheus text exposition as a sink.
class text_sink final : public metric_sink {
public:
    explicit text_sink(std::string& out) : writer_(out) {}
    void family(std::string_view name, std::string_view, std::string_view, std::string_view help,
                metrics::metric_type type) override {
        name_ = name;
        writer_.family(name, help, type);
    }
    void value(std::span<const metrics::label> labels, double v) override { writer_.sample_of(name_, labels, v); }
    void histogram(std::span<const metrics::label> labels, std::span<const std::uint64_t> counts,
                   double sum_seconds) override {
        writer_.histogram_of(name_, labels, load::live_bounds_s, counts, sum_seconds);
    }

private:
    metrics::prometheus_writer writer_;
    std::string name_;
};

} // namespace

std::vector<std::pair<std::string, std::string>> run_tags(const load::plan& p,
                                                          std::vector<std::pair<std::string, std::string>> tags) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    tags.emplace_back("generator", fmt::format("{}:{}", host, ::getpid()));
    if (!p.part.whole()) {
        tags.emplace_back("segment", p.part.text());
    }
    return tags;
}

double target_at(const load::plan& p, std::chrono::nanoseconds elapsed) {
    if (elapsed.count() < 0) {
        return 0;
    }
    const double whole =
        p.stages.empty() ? (p.open_model() ? p.rate : static_cast<double>(p.connections)) : p.level_at(elapsed);
    // This run's part of it (--segment), so that the parts' levels add up to the plan's.
    const auto share = [](const load::fraction& f) { return static_cast<double>(f.p) / static_cast<double>(f.q); };
    return whole * (share(p.part.to()) - share(p.part.from()));
}

void describe(const load::live_snapshot& s, const run_view& run, metric_sink& sink) {
    using metrics::metric_type;
    label_set l(run);
    sink.family("hotpath_load_responses_total", "hotpath.load.responses", "{response}",
                "Responses in the measured window, by request and status class", metric_type::counter);
    for (const auto& r : s.requests) {
        for (std::size_t c = 1; c < status_classes.size(); ++c) {
            sink.value(l.with({{"request", r.name}, {"status_class", status_classes[c]}}),
                       static_cast<double>(r.responses[c]));
        }
        if (r.responses[0] != 0) {
            sink.value(l.with({{"request", r.name}, {"status_class", status_classes[0]}}),
                       static_cast<double>(r.responses[0]));
        }
    }
    sink.family("hotpath_load_latency_seconds", "hotpath.load.latency", "s",
                "Latency of the responses in the measured window (open model: from each request's scheduled send)",
                metric_type::histogram);
    for (const auto& r : s.requests) {
        sink.histogram(l.with({{"request", r.name}}), r.latency, seconds(r.latency_sum_ns));
    }
    sink.family("hotpath_load_errors_total", "hotpath.load.errors", "{request}",
                "Failed requests in the measured window, by class", metric_type::counter);
    for (std::size_t e = 0; e < load::error_class_count; ++e) {
        sink.value(l.with({{"class", load::to_string(static_cast<load::error_class>(e))}}),
                   static_cast<double>(s.errors_by_class[e]));
    }
    sink.family("hotpath_load_connect_attempts_total", "hotpath.load.connect_attempts", "{attempt}",
                "Connection attempts", metric_type::counter);
    sink.value(l.with({}), static_cast<double>(s.connect_attempts));
    sink.family("hotpath_load_connect_failures_total", "hotpath.load.connect_failures", "{attempt}",
                "Connection attempts that failed (refused, unreachable, timed out, TLS)", metric_type::counter);
    sink.value(l.with({}), static_cast<double>(s.connect_failures));
    sink.family("hotpath_load_requests_in_flight", "hotpath.load.requests_in_flight", "{request}",
                "Requests sent and not yet answered or failed", metric_type::gauge);
    sink.value(l.with({}), static_cast<double>(s.in_flight));
    sink.family("hotpath_load_connections", "hotpath.load.connections", "{connection}",
                "Connections open now (TLS handshakes under way among them)", metric_type::gauge);
    sink.value(l.with({}), static_cast<double>(s.connections_open));
    sink.family("hotpath_load_received_bytes_total", "hotpath.load.received", "By",
                "Response bytes in the measured window, heads and bodies", metric_type::counter);
    sink.value(l.with({}), static_cast<double>(s.bytes_received));
    sink.family("hotpath_load_sent_bytes_total", "hotpath.load.sent", "By", "Request bytes sent", metric_type::counter);
    sink.value(l.with({}), static_cast<double>(s.bytes_sent));
    sink.family("hotpath_load_retry_after_total", "hotpath.load.retry_after", "{response}",
                "Answers (429 or 503) that asked with Retry-After to wait", metric_type::counter);
    sink.value(l.with({}), static_cast<double>(s.retry_after_asked));
    sink.family("hotpath_load_late_sends_total", "hotpath.load.late_sends", "{request}",
                "Open model: requests sent after their scheduled time, waiting for a connection", metric_type::counter);
    sink.value(l.with({}), static_cast<double>(s.late));
    sink.family("hotpath_load_send_lag_seconds", "hotpath.load.send_lag", "s",
                "Open model: how far behind its scheduled time each late request was sent", metric_type::histogram);
    sink.histogram(l.with({}), s.send_lag, seconds(s.send_lag_sum_ns));
    sink.family("hotpath_load_target", "hotpath.load.target", "{level}",
                "The plan's level now: virtual users (closed model) or requests per second (open model)",
                metric_type::gauge);
    sink.value(l.with({{"kind", run.open_model ? "rate" : "users"}}), run.target);
}

std::string prometheus_text(const load::live_snapshot& s, const run_view& run) {
    std::string out;
    text_sink sink(out);
    describe(s, run, sink);
    return out;
}

} // namespace hotpath::load_out
