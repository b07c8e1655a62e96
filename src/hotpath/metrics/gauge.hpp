// A gauge one event loop writes and any thread reads: a level (connections open, calls waiting), not a count.
#pragma once

#include <atomic>
#include <cstdint>

namespace hotpath::metrics {

// Its loop is the only writer, so a change is a plain load and store (relaxed), no locked instruction; a reader on
// another thread sees some recent value.
struct gauge {
    std::atomic<std::uint64_t> value{0};
    void set(std::uint64_t v) noexcept { value.store(v, std::memory_order_relaxed); }
    void add(std::uint64_t n = 1) noexcept { set(get() + n); }
    void sub(std::uint64_t n = 1) noexcept { set(get() - n); }
    std::uint64_t get() const noexcept { return value.load(std::memory_order_relaxed); }
};

} // namespace hotpath::metrics
