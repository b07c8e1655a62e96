// Remote-write: the metric set as prompb time series.
#include <hotpath/load_out/remote_write.hpp>

#include <hotpath/load_out/proto/remote_write.pb.h>

#include <snappy.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <limits>

namespace hotpath::load_out {
namespace {

using labels_t = std::vector<std::pair<std::string, std::string>>;

// Prometheus's staleness marker: a NaN with this payload (value.StaleNaN), not any NaN.
const double stale_nan = std::bit_cast<double>(std::uint64_t{0x7ff0000000000002});

// A bucket bound as the text exposition writes it (fixed notation: "0.0001").
std::string number_text(double v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    return {buf, ec == std::errc{} ? end : buf};
}

// The sink that fills a WriteRequest (and remembers each series' labels for the stale markers).
class write_sink final : public metric_sink {
public:
    write_sink(prompb::WriteRequest& request, std::int64_t at_ms, std::vector<labels_t>& series)
        : request_(request), at_ms_(at_ms), series_(series) {}

    void family(std::string_view name, std::string_view, std::string_view unit, std::string_view help,
                metrics::metric_type type) override {
        name_ = name;
        auto* m = request_.add_metadata();
        m->set_type(type == metrics::metric_type::counter ? prompb::MetricMetadata::COUNTER
                    : type == metrics::metric_type::gauge ? prompb::MetricMetadata::GAUGE
                                                          : prompb::MetricMetadata::HISTOGRAM);
        m->set_metric_family_name(std::string(name));
        m->set_help(std::string(help));
        m->set_unit(unit == "s" ? "seconds" : unit == "By" ? "bytes" : "");
    }
    void value(std::span<const metrics::label> labels, double v) override { add(name_, labels, {}, {}, v); }
    void histogram(std::span<const metrics::label> labels, std::span<const std::uint64_t> counts,
                   double sum_seconds) override {
        const std::string bucket = name_ + "_bucket";
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i < counts.size(); ++i) {
            cumulative += counts[i];
            add(bucket, labels, "le", i < load::live_bounds_s.size() ? number_text(load::live_bounds_s[i]) : "+Inf",
                static_cast<double>(cumulative));
        }
        add(name_ + "_sum", labels, {}, {}, sum_seconds);
        add(name_ + "_count", labels, {}, {}, static_cast<double>(cumulative));
    }

private:
    void add(std::string_view name, std::span<const metrics::label> labels, std::string_view extra_name,
             const std::string& extra_value, double v) {
        labels_t l;
        l.reserve(labels.size() + 2);
        l.emplace_back("__name__", std::string(name));
        for (const auto& x : labels) {
            l.emplace_back(std::string(x.name), std::string(x.value));
        }
        if (!extra_name.empty()) {
            l.emplace_back(std::string(extra_name), extra_value);
        }
        std::sort(l.begin(), l.end()); // the protocol asks for labels sorted by name
        auto* ts = request_.add_timeseries();
        for (const auto& [n, value] : l) {
            auto* label = ts->add_labels();
            label->set_name(n);
            label->set_value(value);
        }
        auto* sample = ts->add_samples();
        sample->set_value(v);
        sample->set_timestamp(at_ms_);
        if (std::find(series_.begin(), series_.end(), l) == series_.end()) {
            series_.push_back(std::move(l));
        }
    }

    prompb::WriteRequest& request_;
    std::int64_t at_ms_;
    std::vector<labels_t>& series_;
    std::string name_;
};

std::int64_t millis(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string compressed(const prompb::WriteRequest& request) {
    std::string bytes;
    request.SerializeToString(&bytes);
    std::string out;
    snappy::Compress(bytes.data(), bytes.size(), &out);
    return out;
}

} // namespace

std::vector<std::string> remote_write_headers() {
    return {"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
            "X-Prometheus-Remote-Write-Version: 0.1.0", "User-Agent: hotpath-load"};
}

std::string remote_write_encoder::encode(const load::live_snapshot& s, const run_view& run,
                                         std::chrono::system_clock::time_point at) {
    prompb::WriteRequest request;
    write_sink sink(request, millis(at), series_);
    describe(s, run, sink);
    return compressed(request);
}

std::string remote_write_encoder::stale(std::chrono::system_clock::time_point at) const {
    prompb::WriteRequest request;
    for (const auto& l : series_) {
        auto* ts = request.add_timeseries();
        for (const auto& [n, value] : l) {
            auto* label = ts->add_labels();
            label->set_name(n);
            label->set_value(value);
        }
        auto* sample = ts->add_samples();
        sample->set_value(stale_nan);
        sample->set_timestamp(millis(at));
    }
    return compressed(request);
}

std::vector<decoded_sample> decode_write_request(const std::string& compressed_bytes) {
    std::string bytes;
    prompb::WriteRequest request;
    if (!snappy::Uncompress(compressed_bytes.data(), compressed_bytes.size(), &bytes) ||
        !request.ParseFromString(bytes)) {
        return {};
    }
    std::vector<decoded_sample> out;
    for (const auto& ts : request.timeseries()) {
        decoded_sample d;
        for (const auto& l : ts.labels()) {
            d.labels.append(d.labels.empty() ? "" : ",").append(l.name()).append("=").append(l.value());
        }
        if (ts.samples_size() == 1) {
            d.value = ts.samples(0).value();
            d.timestamp_ms = ts.samples(0).timestamp();
        }
        out.push_back(std::move(d));
    }
    return out;
}

} // namespace hotpath::load_out
