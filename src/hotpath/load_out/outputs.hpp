// `hotpath load --out`: where a run's metrics go while it runs, besides its report. Prometheus remote-write and OTLP
// are pushed every few seconds and once more at the end, each by a thread of its own that only reads the workers'
// live totals (the load's threads never wait on a push); a Prometheus scrape endpoint answers on an event loop of its
// own while the run lasts. docs/load-out.md says what is sent, and the queries to read it.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/load/live.hpp>
#include <hotpath/load/plan.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotpath::load_out {

struct output_spec {
    enum class kind : std::uint8_t { prometheus_rw, otlp, prometheus } what = kind::prometheus_rw;
    std::string target; // an http(s):// URL, or for the scrape endpoint the address to listen on
    std::uint16_t port = 0;
    std::string text; // as given
};

// "prometheus-rw=URL" (a remote-write receiver: Prometheus's /api/v1/write, Mimir, VictoriaMetrics),
// "otlp=URL" (an OTLP/HTTP collector: a URL without a path gets /v1/metrics) or "prometheus=PORT" /
// "prometheus=HOST:PORT" (a scrape endpoint at /metrics; PORT alone listens on 127.0.0.1). One line saying what is
// expected otherwise.
result<output_spec, problem> parse_output(std::string_view text);

// "NAME=VALUE", a label on every series: a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __, not
// one of the run's own) and a UTF-8 value.
result<std::pair<std::string, std::string>, problem> parse_tag(std::string_view text);

struct output_options {
    std::vector<output_spec> specs;
    std::chrono::milliseconds interval{5000}; // between pushes
    std::vector<std::pair<std::string, std::string>> tags;
};

// The options as a whole: one scrape endpoint at most, each tag's name once. One line saying what is wrong otherwise.
result<void, problem> check(const output_options& o);

class pusher;
class scrape_endpoint;

// The outputs of one run. start() before load::run (a scrape endpoint's port taken fails there, before any load),
// finish() after it.
class outputs {
public:
    static result<std::unique_ptr<outputs>, problem> start(const output_options& o, const load::plan& p,
                                                           const load::live_watch& watch);
    ~outputs();
    outputs(const outputs&) = delete;
    outputs& operator=(const outputs&) = delete;

    // The last push of each pusher (the final figures; remote-write then marks its series stale), and the scrape
    // endpoint's end. Idempotent.
    void finish();
    // One line per output for the report, e.g. "prometheus-rw http://...: 13 pushes, none failed".
    std::vector<std::string> summary() const;
    // What the scrape endpoint listens on ("http://127.0.0.1:9464/metrics"), "" without one.
    std::string scrape_url() const;

private:
    outputs();
    std::vector<std::unique_ptr<pusher>> pushers_;
    std::unique_ptr<scrape_endpoint> endpoint_;
    bool finished_ = false;
};

} // namespace hotpath::load_out
