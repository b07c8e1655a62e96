// A per-thread recycling allocator for coroutine frames: steady-state coroutines allocate nothing.
#pragma once

#include <cstddef>

namespace hotpath {

// Frames up to max_pooled_bytes are kept on per-thread free lists by size class (64-byte steps) and reused;
// larger ones go to operator new. A frame must be freed on the thread that allocated it: the project's
// coroutines live on one event loop and never change thread.
struct frame_allocator {
    static constexpr std::size_t max_pooled_bytes = 4096;

    static void* allocate(std::size_t bytes);
    static void deallocate(void* frame, std::size_t bytes) noexcept;
};

} // namespace hotpath
