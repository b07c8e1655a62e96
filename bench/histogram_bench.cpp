// Micro benchmarks of metrics::histogram: record, a tail percentile query and merge; figures go to bench/RESULTS.md.
#include <hotpath/metrics/histogram.hpp>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace {

using hotpath::metrics::histogram;

// Log-normal latencies around 1 ms with a long tail, pre-generated so the benchmark measures record() alone.
std::vector<std::uint64_t> latencies(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> latency_ns(std::log(1e6), 1.5);
    std::vector<std::uint64_t> values(n);
    for (auto& v : values) {
        v = static_cast<std::uint64_t>(latency_ns(rng));
    }
    return values;
}

std::unique_ptr<histogram> filled(std::size_t n, std::uint64_t seed) {
    auto h = std::make_unique<histogram>();
    for (const auto v : latencies(n, seed)) {
        h->record_ns(v);
    }
    return h;
}

void bm_record(benchmark::State& state) {
    const auto values = latencies(std::size_t{1} << 16, 1);
    const std::size_t mask = values.size() - 1;
    auto h = std::make_unique<histogram>();
    std::size_t i = 0;
    for (auto _ : state) {
        h->record_ns(values[i++ & mask]);
    }
    benchmark::DoNotOptimize(h->count());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(bm_record);

void bm_value_at_percentile_99_9(benchmark::State& state) {
    const auto h = filled(1'000'000, 2);
    for (auto _ : state) {
        benchmark::DoNotOptimize(h->value_at_percentile(99.9));
    }
}
BENCHMARK(bm_value_at_percentile_99_9);

void bm_merge(benchmark::State& state) {
    const auto other = filled(100'000, 3);
    auto into = filled(100'000, 4);
    for (auto _ : state) {
        into->merge(*other);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(sizeof(histogram)));
}
BENCHMARK(bm_merge);

} // namespace
