// libFuzzer target for read_prometheus_text: no crash, hang or over-read; a page it reads has a name on every sample
// and no more labels than the limit; and what it reads, written back in the quoted form every name allows, reads back
// as the same samples (names, labels in order, values; NaN as NaN).
#include <hotpath/metrics/prometheus_reader.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void require(bool condition) {
    if (!condition) {
        std::abort();
    }
}

void quoted(std::string& out, std::string_view text) {
    out += '"';
    for (const char c : text) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    out += '"';
}

std::string written(const hotpath::metrics::scrape& s) {
    std::string out;
    for (const auto& x : s.samples) {
        out += '{';
        quoted(out, x.name);
        for (const auto& [name, value] : x.labels) {
            out += ',';
            quoted(out, name);
            out += '=';
            quoted(out, value);
        }
        out += "} ";
        if (std::isnan(x.value)) {
            out += "NaN";
        } else if (std::isinf(x.value)) {
            out += x.value > 0 ? "+Inf" : "-Inf";
        } else {
            char number[64];
            std::snprintf(number, sizeof number, "%.17g", x.value);
            out += number;
        }
        out += '\n';
    }
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    hotpath::metrics::scrape_limits limits;
    limits.max_labels = 8;
    const auto r = hotpath::metrics::read_prometheus_text(input, limits);
    if (!r) {
        require(!r.error().message.empty());
        return 0;
    }
    for (const auto& x : r->samples) {
        require(!x.name.empty());
        require(x.labels.size() <= limits.max_labels);
    }
    // A sample per line at most.
    require(r->samples.size() <= size / 2 + 1);
    const auto again = hotpath::metrics::read_prometheus_text(written(*r), limits);
    require(again.has_value());
    require(again->samples.size() == r->samples.size());
    for (std::size_t i = 0; i < r->samples.size(); ++i) {
        const auto& a = r->samples[i];
        const auto& b = again->samples[i];
        require(a.name == b.name && a.labels == b.labels);
        require(std::isnan(a.value) ? std::isnan(b.value) : a.value == b.value);
    }
    return 0;
}
