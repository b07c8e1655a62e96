// How many heap allocations this thread has made: read from the opt-in counting allocator, zeros without it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hotpath::alloc {

// Allocations through the global operator new (every form), and the bytes they asked for (not what malloc
// rounded them up to). malloc, and memory the C library or the kernel takes by itself, are not seen.
struct counts {
    std::uint64_t allocations = 0;
    std::uint64_t bytes = 0;
};

// True when the counting allocator (the CMake object library hotpath_alloc_counter, which replaces the global
// operator new and delete) is linked into this program; false in the default build, where this_thread() gives
// zeros.
bool counting() noexcept;

// This thread's allocations since it started, as plain thread-local counters: take one reading before and one
// after the code to measure, on the same thread, and subtract. Allocates nothing; costs a few instructions.
counts this_thread() noexcept;

// Counts an allocation of `bytes` made on this thread outside operator new: a library's own allocator routed
// here through its hook (SQLite's, see apps/freight/table.hpp). Nothing without the counting allocator.
void record(std::size_t bytes) noexcept;

// The allocations made between `before` and `after` (two readings of the same thread).
constexpr counts operator-(const counts& after, const counts& before) noexcept {
    return {after.allocations - before.allocations, after.bytes - before.bytes};
}

} // namespace hotpath::alloc
