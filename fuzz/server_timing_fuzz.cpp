// libFuzzer target for parse_server_timing: no crash or over-read, names are tokens and every view lies inside the
// field value, durations are finite, and parsing appends to what the vector held without touching it.
#include <hotpath/http/server_timing.hpp>

#include "fuzz_support.hpp"

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

namespace {

using namespace hotpath::http;
using hotpath::fuzz::require;
using hotpath::fuzz::within;

bool is_tchar(char c) {
    constexpr std::string_view symbols = "!#$%&'*+-.^_`|~";
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           symbols.find(c) != std::string_view::npos;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    std::vector<server_timing_metric> out{{"kept", server_timing_duration{1}, "x"}};
    const server_timing_result r = parse_server_timing(input, out);
    require(out.size() == r.metrics + 1);
    require(out[0].name == "kept" && out[0].raw_description == "x");
    for (std::size_t i = 1; i < out.size(); ++i) {
        const auto& m = out[i];
        require(!m.name.empty() && within(m.name, input));
        for (const char c : m.name) {
            require(is_tchar(c));
        }
        require(within(m.raw_description, input));
        require(!m.duration || std::isfinite(m.duration->count()));
        require(m.description().size() <= m.raw_description.size());
    }
    // Every metric starts a list element: there cannot be more metrics than bytes.
    require(r.metrics + r.rejected <= size);
    return 0;
}
