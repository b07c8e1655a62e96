// Micro benchmarks of router::match over 10, 100 and 1,000 parameterised routes; figures go to bench/RESULTS.md.
#include <hotpath/http/router.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace {

using namespace hotpath::http;

// `count` routes shaped like a versioned REST API: /api/v1/resourceK/{id}/items/{item}, K = 0 .. count-1.
router make_router(std::int64_t count) {
    router r;
    for (std::int64_t k = 0; k < count; ++k) {
        r.add(method::get, "/api/v1/resource" + std::to_string(k) + "/{id}/items/{item}",
              static_cast<std::uint32_t>(k));
    }
    return r;
}

// The last route registered: the worst case for a matcher that scans routes in order.
void bm_match_last(benchmark::State& state) {
    const std::int64_t count = state.range(0);
    const router r = make_router(count);
    const std::string path = "/api/v1/resource" + std::to_string(count - 1) + "/12345/items/678";
    route_params params;
    for (auto _ : state) {
        benchmark::DoNotOptimize(path.data());
        const route_match m = r.match(method::get, path, params);
        if (m.status != route_status::found) {
            state.SkipWithError("no match");
            break;
        }
        benchmark::DoNotOptimize(m);
        benchmark::DoNotOptimize(params);
    }
    state.SetItemsProcessed(state.iterations());
}

// A path that shares the routes' prefix but matches none of them: a 404 costs the same search.
void bm_match_miss(benchmark::State& state) {
    const router r = make_router(state.range(0));
    const std::string path = "/api/v1/resource/12345/items/678";
    route_params params;
    for (auto _ : state) {
        benchmark::DoNotOptimize(path.data());
        const route_match m = r.match(method::get, path, params);
        if (m.status != route_status::not_found) {
            state.SkipWithError("unexpected match");
            break;
        }
        benchmark::DoNotOptimize(m);
    }
    state.SetItemsProcessed(state.iterations());
}

BENCHMARK(bm_match_last)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(bm_match_miss)->Arg(10)->Arg(100)->Arg(1000);

} // namespace
