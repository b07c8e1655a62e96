// A counter one event loop writes and any thread reads: relaxed atomics, no locked instruction.
#pragma once

#include <atomic>
#include <cstdint>

namespace hotpath {

// One counter per event; its loop increments with a plain load+store since it is the only writer.
struct counter {
    std::atomic<std::uint64_t> value{0};
    void add(std::uint64_t n = 1) noexcept {
        value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    std::uint64_t get() const noexcept { return value.load(std::memory_order_relaxed); }
};

} // namespace hotpath
