// Prometheus remote-write 1.0 (https://prometheus.io/docs/specs/remote_write_spec/): the run's series as one
// WriteRequest, protobuf then snappy's block format, with the headers the receiver expects.
#pragma once

#include <hotpath/load_out/metric_set.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace hotpath::load_out {

// The fields of a remote-write POST, as "Name: value".
std::vector<std::string> remote_write_headers();

// Keeps the series it wrote, to mark them stale at the end (Prometheus's staleness marker, a NaN of its own), so that
// a dashboard shows the run end instead of its last values for five minutes. One encoder per destination.
class remote_write_encoder {
public:
    // A WriteRequest of every series at `at` (milliseconds: each push must come later than the last, as
    // Prometheus refuses the whole request when a series' sample is not newer than its last), compressed.
    std::string encode(const load::live_snapshot& s, const run_view& run, std::chrono::system_clock::time_point at);
    // Every series written so far, marked stale at `at`, compressed.
    std::string stale(std::chrono::system_clock::time_point at) const;

private:
    std::vector<std::vector<std::pair<std::string, std::string>>> series_; // labels of each, __name__ first
};

// For tests: a compressed WriteRequest read back as each series' labels (sorted, "name=value" joined by ',') and its
// one sample's value and timestamp; empty on any error.
struct decoded_sample {
    std::string labels;
    double value = 0;
    std::int64_t timestamp_ms = 0;
};
std::vector<decoded_sample> decode_write_request(const std::string& compressed);

} // namespace hotpath::load_out
