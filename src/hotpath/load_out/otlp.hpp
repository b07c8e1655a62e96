// OTLP/HTTP metrics (https://opentelemetry.io/docs/specs/otlp/#otlphttp): the run's metrics as one
// ExportMetricsServiceRequest in protobuf, cumulative from the run's start, POSTed to a collector's /v1/metrics.
#pragma once

#include <hotpath/load_out/metric_set.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotpath::load_out {

// The fields of an OTLP/HTTP protobuf POST, as "Name: value".
std::vector<std::string> otlp_headers();

// The request body: every family as an OTLP metric (counters as monotonic cumulative sums, gauges, histograms with
// explicit bounds), each point's attributes the series' labels, the resource named service.name = hotpath-load.
// `start` is when the counts began (the run's start), `at` the reading's time.
std::string otlp_body(const load::live_snapshot& s, const run_view& run, std::chrono::system_clock::time_point start,
                      std::chrono::system_clock::time_point at);

// An ExportMetricsServiceResponse's rejected data points and message, when the collector sent one (partial success);
// nullopt when the body is empty or holds none.
std::optional<std::pair<std::int64_t, std::string>> otlp_partial_success(const std::string& body);

} // namespace hotpath::load_out
