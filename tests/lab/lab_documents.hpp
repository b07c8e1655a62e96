// Hand-written hotpath-lab/1 result documents (docs/lab.md) for the HTML report's tests: two cases whose names,
// variants and texts need escaping in HTML and JS, one judged by a p95 ratio, one by requests/s.
#pragma once

#include <boost/json.hpp>

#include <string>
#include <vector>

namespace hotpath::test {

// One variant: `seconds` seconds at `rps` responses each, latencies around `ms`, its load document's latency
// histogram holding `buckets` ([index, count] pairs, docs/load-json.md).
inline boost::json::object lab_variant(const std::string& name, double ms, int seconds, int rps,
                                       boost::json::array buckets) {
    boost::json::array series;
    for (int s = 0; s < seconds; ++s) {
        const double wobble = 1.0 + 0.1 * (s % 3);
        series.push_back({{"second", s},
                          {"responses", rps},
                          {"errors", s == 1 ? 1 : 0},
                          {"latency_ms",
                           {{"mean", ms * wobble},
                            {"p50", ms * wobble},
                            {"p90", 1.5 * ms * wobble},
                            {"p95", 1.8 * ms * wobble},
                            {"p99", 2.5 * ms * wobble},
                            {"max", 3.0 * ms * wobble}}}});
    }
    return {
        {"name", name},
        {"url", "http://127.0.0.1:40000/?v=" + name},
        {"requests", seconds * rps},
        {"successes", seconds * rps - 1},
        {"errors", 1},
        {"measured_s", seconds},
        {"rps", rps},
        {"latency_ms",
         {{"mean", ms}, {"p50", ms}, {"p90", 1.5 * ms}, {"p95", 1.8 * ms}, {"p99", 2.5 * ms}, {"max", 3 * ms}}},
        {"seconds", std::move(series)},
        {"routes", nullptr},
        {"diagnosis", boost::json::array{{{"kind", "sequential_calls"},
                                          {"problem", true},
                                          {"method", "GET"},
                                          {"route", "/<a>"},
                                          {"text", name + ": 5 calls one after another, <b>bold</b> & \"quoted\""}}}},
        {"load",
         {{"schema", "hotpath-load/1"},
          {"latency", {{"state", {{"lowest_ns", 1000}, {"sub_bucket_bits", 7}, {"counts", std::move(buckets)}}}}}}}};
}

// Case 1 (p95 ratio, three variants, a shared service) and case 2 (requests/s, one variant).
inline std::vector<boost::json::value> lab_documents() {
    boost::json::object first{
        {"schema", "hotpath-lab/1"},
        {"case", "fan</script>out"},
        {"title", "calls one after another </script><script>document.body.dataset.errors='pwned'</script> & <!-- x"},
        {"quick", true},
        {"variants",
         boost::json::array{
             lab_variant("</script><script>alert(1)</script>", 30, 12, 3, {{1898, 20}, {1950, 12}, {2100, 4}}),
             lab_variant("a & b", 12, 12, 3, {{1694, 25}, {1750, 11}}),
             lab_variant("bounded \"10\" 'x'", 10, 12, 3, {{1690, 30}, {1720, 6}}),
         }},
        {"shared", boost::json::array{{{"name", "weather<1>"},
                                       {"routes", nullptr},
                                       {"diagnosis", boost::json::array{{{"kind", "healthy"},
                                                                         {"problem", false},
                                                                         {"method", "GET"},
                                                                         {"route", "/forecast"},
                                                                         {"text", "nothing wrong: p95 2 ms"}}}}}}},
        {"headline",
         {{"label", "</script>/bounded p95"},
          {"metric", "p95"},
          {"numerator", "</script><script>alert(1)</script>"},
          {"denominator", "bounded \"10\" 'x'"},
          {"value", 3.0},
          {"write_up", 3.0},
          {"write_up_text", "about 3x & more"}}}};
    boost::json::object second{
        {"schema", "hotpath-lab/1"},
        {"case", "redirect"},
        {"title", "a new connection per request"},
        {"quick", false},
        {"variants", boost::json::array{lab_variant("avatar", 1.1, 3, 9000, {{1274, 20000}, {1300, 7000}})}},
        {"shared", boost::json::array{}},
        {"headline",
         {{"label", "avatar requests/s"},
          {"metric", "rps"},
          {"numerator", "avatar"},
          {"denominator", ""},
          {"value", 9000.0},
          {"write_up", 8791.0},
          {"write_up_text", "8,791 req/s, mean 1.1 ms"}}}};
    return {std::move(first), std::move(second)};
}

} // namespace hotpath::test
