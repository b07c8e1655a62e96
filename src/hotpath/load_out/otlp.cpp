// OTLP: the metric set as OpenTelemetry metrics.
#include <hotpath/load_out/otlp.hpp>

#include <hotpath/core/build_info.hpp>

#include <hotpath/load_out/proto/otlp_metrics.pb.h>

namespace hotpath::load_out {
namespace {

std::uint64_t nanos(std::chrono::system_clock::time_point t) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

void set_attributes(google::protobuf::RepeatedPtrField<otlp::KeyValue>* to, std::span<const metrics::label> labels) {
    for (const auto& l : labels) {
        auto* kv = to->Add();
        kv->set_key(std::string(l.name));
        kv->mutable_value()->set_string_value(std::string(l.value));
    }
}

class otlp_sink final : public metric_sink {
public:
    otlp_sink(otlp::ScopeMetrics& scope, std::uint64_t start_ns, std::uint64_t at_ns)
        : scope_(scope), start_ns_(start_ns), at_ns_(at_ns) {}

    void family(std::string_view, std::string_view otel_name, std::string_view unit, std::string_view help,
                metrics::metric_type type) override {
        metric_ = scope_.add_metrics();
        metric_->set_name(std::string(otel_name));
        metric_->set_description(std::string(help));
        metric_->set_unit(std::string(unit));
        type_ = type;
        if (type == metrics::metric_type::counter) {
            auto* sum = metric_->mutable_sum();
            sum->set_aggregation_temporality(otlp::AGGREGATION_TEMPORALITY_CUMULATIVE);
            sum->set_is_monotonic(true);
        } else if (type == metrics::metric_type::gauge) {
            metric_->mutable_gauge();
        } else {
            metric_->mutable_histogram()->set_aggregation_temporality(otlp::AGGREGATION_TEMPORALITY_CUMULATIVE);
        }
    }
    void value(std::span<const metrics::label> labels, double v) override {
        otlp::NumberDataPoint* p = type_ == metrics::metric_type::counter ? metric_->mutable_sum()->add_data_points()
                                                                          : metric_->mutable_gauge()->add_data_points();
        set_attributes(p->mutable_attributes(), labels);
        if (type_ == metrics::metric_type::counter) {
            p->set_start_time_unix_nano(start_ns_);
            p->set_as_int(static_cast<std::int64_t>(v));
        } else {
            p->set_as_double(v);
        }
        p->set_time_unix_nano(at_ns_);
    }
    void histogram(std::span<const metrics::label> labels, std::span<const std::uint64_t> counts,
                   double sum_seconds) override {
        auto* p = metric_->mutable_histogram()->add_data_points();
        set_attributes(p->mutable_attributes(), labels);
        p->set_start_time_unix_nano(start_ns_);
        p->set_time_unix_nano(at_ns_);
        std::uint64_t count = 0;
        for (const auto c : counts) {
            p->add_bucket_counts(c);
            count += c;
        }
        for (const double b : load::live_bounds_s) {
            p->add_explicit_bounds(b);
        }
        p->set_count(count);
        p->set_sum(sum_seconds);
    }

private:
    otlp::ScopeMetrics& scope_;
    std::uint64_t start_ns_;
    std::uint64_t at_ns_;
    otlp::Metric* metric_ = nullptr;
    metrics::metric_type type_ = metrics::metric_type::counter;
};

} // namespace

std::vector<std::string> otlp_headers() {
    return {"Content-Type: application/x-protobuf", "User-Agent: hotpath-load"};
}

std::string otlp_body(const load::live_snapshot& s, const run_view& run, std::chrono::system_clock::time_point start,
                      std::chrono::system_clock::time_point at) {
    otlp::ExportMetricsServiceRequest request;
    auto* resource_metrics = request.add_resource_metrics();
    auto* service = resource_metrics->mutable_resource()->add_attributes();
    service->set_key("service.name");
    service->mutable_value()->set_string_value("hotpath-load");
    auto* scope = resource_metrics->add_scope_metrics();
    scope->mutable_scope()->set_name("hotpath.load");
    scope->mutable_scope()->set_version(std::string(build_version()));
    otlp_sink sink(*scope, nanos(start), nanos(at));
    describe(s, run, sink);
    std::string out;
    request.SerializeToString(&out);
    return out;
}

std::optional<std::pair<std::int64_t, std::string>> otlp_partial_success(const std::string& body) {
    otlp::ExportMetricsServiceResponse response;
    if (body.empty() || !response.ParseFromString(body) || !response.has_partial_success()) {
        return std::nullopt;
    }
    const auto& p = response.partial_success();
    if (p.rejected_data_points() == 0 && p.error_message().empty()) {
        return std::nullopt;
    }
    return std::pair{p.rejected_data_points(), p.error_message()};
}

} // namespace hotpath::load_out
