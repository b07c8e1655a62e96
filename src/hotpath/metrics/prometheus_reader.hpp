// The Prometheus text exposition format read back: what prometheus_writer (prometheus.hpp) writes, and what other
// exporters write for Prometheus to scrape (OpenTelemetry's for .NET, Node, Go and Java among them): version 0.0.4,
// and the OpenMetrics 1.0 text that a scrape may get instead (`# EOF`, exemplars, `# UNIT`). Read whole, no I/O;
// `hotpath lab diagnose --metrics URL` diagnoses services of any stack from it.
#pragma once

#include <hotpath/core/result.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotpath::metrics {

// One line of a scrape: `name{label="value",...} value [timestamp]`, its labels in the order written, its value as
// written (NaN, +Inf and -Inf included). The timestamp and an OpenMetrics exemplar are read past, not kept.
struct scraped_sample {
    std::string name;
    std::vector<std::pair<std::string, std::string>> labels;
    double value = 0;

    // The value of label `name`, or empty.
    std::string_view label(std::string_view wanted) const noexcept;
};

// A family's `# TYPE` ("counter", "gauge", "histogram", "summary", "untyped"; OpenMetrics adds "gaugehistogram",
// "stateset", "info", "unknown"), as declared: samples carry suffixes (_bucket, _sum, _count, _total) the family's
// name does not.
struct scraped_family {
    std::string name;
    std::string type;
    std::string unit; // OpenMetrics' `# UNIT`; empty in 0.0.4
};

struct scrape {
    std::vector<scraped_family> families;
    std::vector<scraped_sample> samples;

    // The declared type of the family a sample name belongs to: its own, else that of the name less a suffix
    // (_bucket, _sum, _count, _total, _created, _gsum, _gcount, _info); empty when undeclared.
    std::string_view type_of(std::string_view sample_name) const noexcept;
};

// The limits a scrape is read within: a page past them is refused rather than held (a service's page is tens of KB).
struct scrape_limits {
    std::size_t max_bytes = 64U << 20;
    std::size_t max_labels = 64; // per sample
};

// A number as the format writes it, Go's float syntax (1.5e3, .5, +Inf, -Inf, NaN in any case), or nothing: a
// sample's value, and a histogram bucket's `le`.
std::optional<double> parse_prometheus_number(std::string_view text) noexcept;

// Reads a whole page. A problem names the first line that is not the format and why ("line 12: label value not
// closed"); blank lines and comments other than HELP, TYPE and UNIT are skipped, names may be written quoted
// inside the braces as Prometheus 3 allows (`{"http.server.duration",le="0.1"} 3`).
result<scrape, problem> read_prometheus_text(std::string_view text, const scrape_limits& limits = {});

} // namespace hotpath::metrics
