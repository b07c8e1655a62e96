// A real Prometheus server for tests (Debian's prometheus package): started on a store of its own, asked instant
// queries over its HTTP API. Shared by the tests that check what Prometheus makes of hotpath's metrics.
#pragma once

#include "support/child_process.hpp"
#include "support/loop_runner.hpp"
#include <hotpath/client/client.hpp>

#include <boost/json.hpp>

#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace hotpath::test {

inline std::string fmt_hex(unsigned char c) {
    constexpr char digits[] = "0123456789ABCDEF";
    return {'%', digits[c >> 4], digits[c & 15]};
}

// The body of GET `url` when it answers 200, else "".
inline std::string get_body(const std::string& url) {
    client_options options;
    options.connect_timeout = std::chrono::seconds{2};
    options.request_timeout = std::chrono::seconds{5};
    client c(options);
    auto body = test::run_on_loop([](client& cl, std::string u) -> task<std::string> {
        auto r = co_await cl.get(std::move(u));
        co_return r && r->status() == 200 ? r->body() : std::string{};
    }(c, url));
    return body.value_or(std::string{});
}

// The samples of an instant query's answer (`data.result`), or an empty array when it failed or is not one.
inline boost::json::array query(std::uint16_t prometheus_port, const std::string& encoded_query) {
    const std::string body =
        get_body("http://127.0.0.1:" + std::to_string(prometheus_port) + "/api/v1/query?query=" + encoded_query);
    boost::system::error_code ec;
    const boost::json::value answer = boost::json::parse(body, ec);
    if (ec || !answer.is_object()) {
        return {};
    }
    const auto* data = answer.as_object().if_contains("data");
    const auto* result = data != nullptr && data->is_object() ? data->as_object().if_contains("result") : nullptr;
    return result != nullptr && result->is_array() ? result->as_array() : boost::json::array{};
}

// A sample's value ("value": [time, "text"]) as a number; -1 when it has none.
inline double value_of(const boost::json::value& sample) {
    const auto* value = sample.as_object().if_contains("value");
    if (value == nullptr || !value->is_array() || value->as_array().size() != 2 || !value->as_array()[1].is_string()) {
        return -1;
    }
    return std::strtod(value->as_array()[1].as_string().c_str(), nullptr);
}

// A sample's label, or "" without it.
inline std::string label(const boost::json::value& sample, const char* name) {
    const auto* metric = sample.as_object().if_contains("metric");
    const auto* v = metric != nullptr && metric->is_object() ? metric->as_object().if_contains(name) : nullptr;
    return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string{};
}

// Debian's prometheus with `config` (a file in `dir`), its store in `dir`, on 127.0.0.1:`port`. Through a shell only
// to find prometheus on PATH and to cap its heap (GOMEMLIMIT): exec leaves the child's PID prometheus's own. Five
// minutes of retention and warnings only: a small store, and a log that cannot fill the pipe nobody reads while the
// test runs. Its address space is bounded too (it maps about 1.2 GB at rest, with a heap of tens of MB).
// `flags`: more of prometheus's own, e.g. "--web.enable-remote-write-receiver".
inline std::unique_ptr<child> start_prometheus(const std::string& dir, std::uint16_t port,
                                               const std::string& flags = {}) {
    constexpr rlim_t max_prometheus_memory_bytes = 3ull << 30;
    return std::make_unique<child>(
        "/bin/sh",
        std::vector<std::string>{"-c", "GOMEMLIMIT=256MiB exec prometheus --config.file='" + dir +
                                           "/prometheus.yml' --storage.tsdb.path='" + dir +
                                           "/data' --storage.tsdb.retention.time=5m --web.listen-address=127.0.0.1:" +
                                           std::to_string(port) + " --log.level=warn " + flags},
        0, max_prometheus_memory_bytes);
}

// A directory of its own under /tmp, removed with what Prometheus wrote in it.
class temp_dir {
public:
    temp_dir() {
        char path[] = "/tmp/hotpath-prometheus-XXXXXX";
        if (::mkdtemp(path) != nullptr) {
            path_ = path;
        }
    }
    ~temp_dir() {
        if (!path_.empty()) {
            std::system(("rm -rf '" + path_ + "'").c_str());
        }
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

// Percent-encodes a PromQL query for a URL's query string.
inline std::string encoded(const std::string& q) {
    std::string out;
    for (const unsigned char c : q) {
        if (std::isalnum(c) != 0 || c == '_' || c == '.' || c == '-' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += fmt_hex(c);
        }
    }
    return out;
}

// The single value an instant query answers, -1 when it answers none or several.
inline double one_value(std::uint16_t prometheus_port, const std::string& q) {
    const boost::json::array r = query(prometheus_port, encoded(q));
    return r.size() == 1 ? value_of(r[0]) : -1;
}

} // namespace hotpath::test
