// The run's outputs: parsing --out and --tag, the pushers' threads, the scrape endpoint.
#include <hotpath/load_out/outputs.hpp>

#include <hotpath/http/url.hpp>
#include <hotpath/load_out/metric_set.hpp>
#include <hotpath/load_out/otlp.hpp>
#include <hotpath/load_out/remote_write.hpp>
#include <hotpath/net/address.hpp>
#include <hotpath/probe/probe.hpp>
#include <hotpath/server/app.hpp>
#include <hotpath/server/server.hpp>

#include <pthread.h>
#include <signal.h>

#include <fmt/core.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stop_token>
#include <thread>

namespace hotpath::load_out {
namespace {

problem bad(std::string message) {
    return problem{errc::invalid_value, std::move(message)};
}

bool label_name(std::string_view n) {
    if (n.empty() || (n[0] >= '0' && n[0] <= '9')) {
        return false;
    }
    for (const char c : n) {
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
            return false;
        }
    }
    return true;
}

// The run's own labels and those describe() adds: a tag may not take their names.
constexpr std::string_view reserved_labels[] = {"generator", "segment", "request", "status_class", "class",
                                                "kind",      "le",      "job",     "instance"};

// Label values go into protobuf strings and the text format: UTF-8, as both require (no overlong forms, no
// surrogates, nothing past U+10FFFF).
bool valid_utf8(std::string_view s) {
    static constexpr std::uint32_t least[] = {0, 0x80, 0x800, 0x10000};
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<unsigned char>(s[i]);
        std::size_t more = 0;
        std::uint32_t cp = 0;
        if (b < 0x80) {
            ++i;
            continue;
        }
        if ((b & 0xE0) == 0xC0) {
            more = 1;
            cp = b & 0x1Fu;
        } else if ((b & 0xF0) == 0xE0) {
            more = 2;
            cp = b & 0x0Fu;
        } else if ((b & 0xF8) == 0xF0) {
            more = 3;
            cp = b & 0x07u;
        } else {
            return false;
        }
        if (i + more >= s.size()) {
            return false;
        }
        for (std::size_t k = 1; k <= more; ++k) {
            const auto c = static_cast<unsigned char>(s[i + k]);
            if ((c & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (c & 0x3Fu);
        }
        if (cp < least[more] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        i += more + 1;
    }
    return true;
}

// The first line of a body, shortened: what a receiver said when it refused a push.
std::string first_line(std::string_view body) {
    body = body.substr(0, body.find('\n'));
    return std::string(body.substr(0, 200));
}

const char* kind_name(output_spec::kind k) {
    return k == output_spec::kind::prometheus_rw ? "prometheus-rw"
           : k == output_spec::kind::otlp        ? "otlp"
                                                 : "prometheus";
}

} // namespace

result<output_spec, problem> parse_output(std::string_view text) {
    const auto eq = text.find('=');
    const std::string_view name = text.substr(0, eq);
    const std::string_view target = eq == std::string_view::npos ? std::string_view{} : text.substr(eq + 1);
    output_spec o;
    o.text = std::string(text);
    if (name == "prometheus-rw" || name == "otlp") {
        o.what = name == "otlp" ? output_spec::kind::otlp : output_spec::kind::prometheus_rw;
        auto url = http::parse_url(target);
        if (target.empty() || !url) {
            return bad(fmt::format("--out {}: '{}' is not an http:// or https:// URL (e.g. {}=http://127.0.0.1:{})",
                                   name, target, name, name == "otlp" ? "4318" : "9090/api/v1/write"));
        }
        o.target = std::string(target);
        if (o.what == output_spec::kind::otlp && (url->target.empty() || url->target == "/")) {
            url->target = "/v1/metrics"; // a collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT names it
            o.target = url->text();
        }
        return o;
    }
    if (name == "prometheus") {
        o.what = output_spec::kind::prometheus;
        const auto at = net::parse_listen_at(target);
        if (!at) {
            return bad(fmt::format("--out prometheus: '{}' is not PORT or HOST:PORT to listen on (e.g. "
                                   "prometheus=9464 or prometheus=0.0.0.0:9464)",
                                   target));
        }
        o.target = at->first;
        o.port = at->second;
        return o;
    }
    return bad(fmt::format("--out '{}': expected prometheus-rw=URL, otlp=URL or prometheus=[HOST:]PORT", text));
}

result<std::pair<std::string, std::string>, problem> parse_tag(std::string_view text) {
    const auto eq = text.find('=');
    const std::string_view name = text.substr(0, eq);
    if (eq == std::string_view::npos || !label_name(name) || name.starts_with("__")) {
        return bad(fmt::format("--tag '{}': expected NAME=VALUE with a label name ([a-zA-Z_][a-zA-Z0-9_]*, not "
                               "starting with __)",
                               text));
    }
    for (const auto r : reserved_labels) {
        if (name == r) {
            return bad(fmt::format("--tag {}: '{}' is a label of the run's own series", text, name));
        }
    }
    const std::string_view value = text.substr(eq + 1);
    if (!valid_utf8(value)) {
        return bad(fmt::format("--tag {}: the value is not UTF-8", name));
    }
    return std::pair{std::string(name), std::string(value)};
}

result<void, problem> check(const output_options& o) {
    const output_spec* endpoint = nullptr;
    for (const auto& spec : o.specs) {
        if (spec.what == output_spec::kind::prometheus) {
            if (endpoint != nullptr) {
                return bad(
                    fmt::format("--out {} and --out {}: one scrape endpoint per run", endpoint->text, spec.text));
            }
            endpoint = &spec;
        }
    }
    for (std::size_t i = 0; i < o.tags.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            if (o.tags[i].first == o.tags[j].first) {
                return bad(fmt::format("--tag {}: given twice ({}={} and {}={})", o.tags[i].first, o.tags[j].first,
                                       o.tags[j].second, o.tags[i].first, o.tags[i].second));
            }
        }
    }
    return {};
}

// Pushes one destination's metrics every interval from a thread of its own, and once more at the end.
class pusher {
public:
    pusher(output_spec spec, const load::plan& p, const load::live_watch& watch,
           std::vector<std::pair<std::string, std::string>> tags, std::chrono::milliseconds interval)
        : spec_(std::move(spec)), plan_(p), watch_(watch), tags_(std::move(tags)), interval_(interval),
          thread_([this](std::stop_token stop) { loop(stop); }) {}

    // Asks the thread for its last push (the final figures) and to end; finish() waits for it. Every pusher is asked
    // first, so that their last pushes go together: the run's end waits for the slowest receiver, not for their sum.
    void stop() { thread_.request_stop(); }
    void finish() {
        stop();
        if (thread_.joinable()) {
            thread_.join();
        }
    }

    std::string summary() const {
        std::lock_guard lock(mutex_);
        return fmt::format(
            "{} {}: {} push{}, {}", kind_name(spec_.what), spec_.target, pushes_, pushes_ == 1 ? "" : "es",
            failures_ == 0 ? std::string("none failed") : fmt::format("{} failed (last: {})", failures_, last_error_));
    }

private:
    void loop(std::stop_token stop) {
        // The run's signals are the main thread's (SIGINT and SIGTERM end the run and still push the last figures);
        // a receiver that resets a TLS connection mid-write is a failed push, not SIGPIPE's end of the process.
        sigset_t signals;
        sigemptyset(&signals);
        for (const int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGPIPE}) {
            sigaddset(&signals, s);
        }
        pthread_sigmask(SIG_BLOCK, &signals, nullptr);
        std::mutex m;
        std::condition_variable_any wake;
        std::unique_lock lock(m);
        // Until the run begins (a paused or scheduled run waits), then at once and every interval.
        while (!stop.stop_requested() && !watch_.running() && !watch_.ended()) {
            wake.wait_for(lock, stop, std::chrono::milliseconds{20}, [] { return false; });
        }
        if (!watch_.ended()) { // the first sends are due a few milliseconds after the workers are made
            wake.wait_until(lock, stop, watch_.start(), [] { return false; });
        }
        while (!stop.stop_requested()) {
            push(false);
            wake.wait_for(lock, stop, interval_, [] { return false; });
        }
        if (watch_.ended() || watch_.running()) {
            push(true);
        }
    }

    void push(bool last) {
        const load::live_snapshot snapshot = watch_.snapshot();
        const run_view run{tags_, target_at(plan_, std::chrono::steady_clock::now() - watch_.start()),
                           plan_.open_model()};
        auto at = std::chrono::system_clock::now();
        // Each push's samples later than the last's, to the millisecond, as the receiver requires.
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch());
        if (ms <= last_ms_) {
            at = std::chrono::system_clock::time_point{last_ms_ + std::chrono::milliseconds{1}};
        }
        last_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch());
        if (spec_.what == output_spec::kind::prometheus_rw) {
            // The stale markers only after a last push the receiver took: one that hangs delays the run's end by
            // two timeouts at most (a push under way, then the last), not three.
            if (send(encoder_.encode(snapshot, run, at), remote_write_headers()) && last) {
                last_ms_ += std::chrono::milliseconds{1};
                send(encoder_.stale(std::chrono::system_clock::time_point{last_ms_}), remote_write_headers());
            }
        } else {
            send(otlp_body(snapshot, run, watch_.wall_start(), at), otlp_headers());
        }
    }

    // True when the receiver took it.
    bool send(std::string body, std::vector<std::string> headers) {
        probe::probe_options o;
        o.url = spec_.target;
        o.method = "POST";
        o.headers = std::move(headers);
        o.body = std::move(body);
        const auto timeout =
            std::clamp(std::chrono::nanoseconds{interval_}, std::chrono::nanoseconds{std::chrono::seconds{1}},
                       std::chrono::nanoseconds{std::chrono::seconds{10}});
        auto answer = probe::fetch(o, timeout, 4096);
        std::string failed;
        if (!answer) {
            failed = answer.error().message;
        } else if (answer->status < 200 || answer->status > 299) {
            failed = fmt::format("answered {}: {}", answer->status, first_line(answer->body));
        } else if (spec_.what == output_spec::kind::otlp) {
            if (const auto partial = otlp_partial_success(answer->body); partial && partial->first > 0) {
                failed = fmt::format("{} data points rejected: {}", partial->first, partial->second);
            } else if (partial && !warned_) {
                // All taken, with a word (OTLP's partial success without rejected points is a warning).
                warned_ = true;
                fmt::print(stderr, "hotpath load: --out {}: the collector says: {}\n", spec_.text,
                           first_line(partial->second));
            }
        }
        std::lock_guard lock(mutex_);
        ++pushes_;
        if (failed.empty()) {
            return true;
        }
        ++failures_;
        last_error_ = failed;
        if (failures_ == 1) {
            fmt::print(stderr, "hotpath load: --out {}: {} (the run goes on; pushes are tried again)\n", spec_.text,
                       failed);
            std::fflush(stderr);
        }
        return false;
    }

    output_spec spec_;
    const load::plan& plan_;
    const load::live_watch& watch_;
    std::vector<std::pair<std::string, std::string>> tags_;
    std::chrono::milliseconds interval_;
    remote_write_encoder encoder_;
    std::chrono::milliseconds last_ms_{0};
    mutable std::mutex mutex_;
    std::uint64_t pushes_ = 0;
    std::uint64_t failures_ = 0;
    std::string last_error_;
    bool warned_ = false; // the pusher's thread alone
    std::jthread thread_; // last: started once the rest is ready, joined first
};

// GET /metrics: the run's figures in the Prometheus text format, on one event loop of its own.
class scrape_endpoint {
public:
    scrape_endpoint(const output_spec& spec, const load::plan& p, const load::live_watch& watch,
                    std::vector<std::pair<std::string, std::string>> tags)
        : tags_(std::move(tags)), routes_(make_routes(p, watch, tags_)), server_(routes_, options_for(spec)) {}
    result<void, problem> start() { return server_.start(); }
    void stop() {
        server_.stop();
        server_.wait();
    }
    std::string url() const { return server_.url() + "/metrics"; }

private:
    static server_options options_for(const output_spec& spec) {
        server_options o;
        o.address = spec.target;
        o.port = spec.port;
        o.threads = 1;
        o.stall_threshold = std::chrono::milliseconds{0};
        return o;
    }
    static app make_routes(const load::plan& p, const load::live_watch& watch,
                           const std::vector<std::pair<std::string, std::string>>& tags) {
        app a;
        a.get("/metrics", [&p, &watch, &tags](request&, response& res) {
            const double target =
                watch.running() || watch.ended() ? target_at(p, std::chrono::steady_clock::now() - watch.start()) : 0.0;
            res.body(prometheus_text(watch.snapshot(), run_view{tags, target, p.open_model()}),
                     "text/plain; version=0.0.4; charset=utf-8");
        });
        return a;
    }

    std::vector<std::pair<std::string, std::string>> tags_;
    app routes_;
    server server_;
};

outputs::outputs() = default;

outputs::~outputs() {
    finish();
}

result<std::unique_ptr<outputs>, problem> outputs::start(const output_options& o, const load::plan& p,
                                                         const load::live_watch& watch) {
    if (auto whole = check(o); !whole) {
        return whole.error();
    }
    std::unique_ptr<outputs> out(new outputs());
    const auto tags = run_tags(p, o.tags);
    for (const auto& spec : o.specs) {
        if (spec.what != output_spec::kind::prometheus) {
            continue;
        }
        out->endpoint_ = std::make_unique<scrape_endpoint>(spec, p, watch, tags);
        if (auto started = out->endpoint_->start(); !started) {
            out->endpoint_.reset();
            return problem{errc::invalid_value, fmt::format("--out {}: {}", spec.text, started.error().message)};
        }
    }
    for (const auto& spec : o.specs) {
        if (spec.what != output_spec::kind::prometheus) {
            out->pushers_.push_back(std::make_unique<pusher>(spec, p, watch, tags, o.interval));
        }
    }
    return out;
}

void outputs::finish() {
    if (finished_) {
        return;
    }
    finished_ = true;
    for (auto& p : pushers_) {
        p->stop();
    }
    for (auto& p : pushers_) {
        p->finish();
    }
    if (endpoint_ != nullptr) {
        endpoint_->stop();
    }
}

std::vector<std::string> outputs::summary() const {
    std::vector<std::string> lines;
    if (endpoint_ != nullptr) {
        lines.push_back("prometheus " + endpoint_->url() + ": scraped while the run lasted");
    }
    for (const auto& p : pushers_) {
        lines.push_back(p->summary());
    }
    return lines;
}

std::string outputs::scrape_url() const {
    return endpoint_ != nullptr ? endpoint_->url() : std::string();
}

} // namespace hotpath::load_out
