// The Prometheus text exposition format (version 0.0.4), written by hand: families, samples with escaped label
// values, and histograms as cumulative buckets.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace hotpath::metrics {

// A label of a sample: a name (a Prometheus label name, written as given) and a value (escaped as the format asks).
struct label {
    std::string_view name;
    std::string_view value;
};

enum class metric_type : std::uint8_t { counter, gauge, histogram };

// Appends to `out`. Write each family's HELP and TYPE with family() once, then its samples; sample names and
// label names are the caller's and must be valid Prometheus names (they are not checked here).
class prometheus_writer {
public:
    explicit prometheus_writer(std::string& out) noexcept : out_(out) {}

    void family(std::string_view name, std::string_view help, metric_type type);
    // A family of one sample without labels: family() then sample().
    template <typename Value>
    void single(std::string_view name, std::string_view help, metric_type type, Value value) {
        family(name, help, type);
        sample(name, {}, value);
    }
    void sample(std::string_view name, std::initializer_list<label> labels, double value) {
        sample_of(name, std::span<const label>(labels.begin(), labels.size()), value);
    }
    void sample(std::string_view name, std::initializer_list<label> labels, std::uint64_t value) {
        sample_of(name, std::span<const label>(labels.begin(), labels.size()), value);
    }
    // The same with labels made at run time.
    void sample_of(std::string_view name, std::span<const label> labels, double value);
    void sample_of(std::string_view name, std::span<const label> labels, std::uint64_t value);
    // A histogram's samples: name_bucket{..., le="bound"} for each upper bound in seconds (ascending) with the
    // count of observations <= it (cumulative: counts[i] is the number in bucket i alone), then le="+Inf",
    // name_sum and name_count. counts has one more element than bounds: the observations above the last bound.
    void histogram(std::string_view name, std::initializer_list<label> labels, std::span<const double> bounds_seconds,
                   std::span<const std::uint64_t> counts, double sum_seconds) {
        histogram_of(name, std::span<const label>(labels.begin(), labels.size()), bounds_seconds, counts, sum_seconds);
    }
    void histogram_of(std::string_view name, std::span<const label> labels, std::span<const double> bounds_seconds,
                      std::span<const std::uint64_t> counts, double sum_seconds);

private:
    void labels(std::span<const label> labels, std::string_view extra_name = {}, std::string_view extra_value = {});
    void number(double value);
    std::string& out_;
};

} // namespace hotpath::metrics
