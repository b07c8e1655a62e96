// How many allocations this thread made: zeros unless the counting allocator is linked into the program.
#pragma once

#include <cstdint>

namespace hotpath::alloc {

struct counts {
    std::uint64_t allocations = 0;
    std::uint64_t bytes = 0; // as requested
};

// True when the counting allocator is linked into this program.
bool counting() noexcept;
// This thread's allocations since it started; zeros when not counting.
counts this_thread() noexcept;

} // namespace hotpath::alloc
