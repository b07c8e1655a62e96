// The counting allocator (object library hotpath_alloc_counter, opt in): replaces every replaceable global
// operator new and delete, counting each allocation and the bytes it asked for on the calling thread.
//
// Linked only into profiling builds (HOTPATH_COUNT_ALLOCATIONS) and the tests, never the default build, and never
// under a sanitizer, whose runtime owns the allocation functions. Its definitions of counting() and this_thread()
// replace core's weak defaults.
#include <hotpath/core/alloc_count.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <stdlib.h> // posix_memalign

namespace {

// Plain thread-local counters: only their own thread writes or reads them, so no atomic and no lock; constinit
// and trivially destructible, so reaching them needs no guard, even in an allocation made while the thread starts
// or exits.
constinit thread_local hotpath::alloc::counts this_thread_counts;

void count(std::size_t bytes) noexcept {
    ++this_thread_counts.allocations;
    this_thread_counts.bytes += bytes;
}

// What every throwing form does ([new.delete.single]): retry through the new-handler while there is one, else
// throw. A request for 0 bytes still returns a distinct pointer.
void* allocate(std::size_t bytes) {
    count(bytes);
    for (;;) {
        if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) {
            return p;
        }
        const std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) {
            throw std::bad_alloc();
        }
        handler();
    }
}

void* allocate_aligned(std::size_t bytes, std::align_val_t alignment) {
    count(bytes);
    // posix_memalign wants a power of two (which align_val_t is) at least the size of a pointer.
    const std::size_t align = std::max(static_cast<std::size_t>(alignment), sizeof(void*));
    for (;;) {
        void* p = nullptr;
        if (::posix_memalign(&p, align, bytes == 0 ? 1 : bytes) == 0) {
            return p;
        }
        const std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) {
            throw std::bad_alloc();
        }
        handler();
    }
}

// The nothrow forms return nullptr where the others throw.
void* allocate_nothrow(std::size_t bytes) noexcept {
    try {
        return allocate(bytes);
    } catch (...) {
        return nullptr;
    }
}

void* allocate_aligned_nothrow(std::size_t bytes, std::align_val_t alignment) noexcept {
    try {
        return allocate_aligned(bytes, alignment);
    } catch (...) {
        return nullptr;
    }
}

} // namespace

namespace hotpath::alloc {

bool counting() noexcept {
    return true;
}

counts this_thread() noexcept {
    return this_thread_counts;
}

void record(std::size_t bytes) noexcept {
    count(bytes);
}

} // namespace hotpath::alloc

// Every replaceable form ([new.delete.single], [new.delete.array]): the 8 of new and the 12 of delete. One left
// out would be libstdc++'s own, allocating uncounted (new) or freeing memory it did not allocate (delete); both
// sides use malloc and free here, aligned memory included (posix_memalign's memory is freed by free).

void* operator new(std::size_t bytes) {
    return allocate(bytes);
}
void* operator new[](std::size_t bytes) {
    return allocate(bytes);
}
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
    return allocate_nothrow(bytes);
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
    return allocate_nothrow(bytes);
}
void* operator new(std::size_t bytes, std::align_val_t alignment) {
    return allocate_aligned(bytes, alignment);
}
void* operator new[](std::size_t bytes, std::align_val_t alignment) {
    return allocate_aligned(bytes, alignment);
}
void* operator new(std::size_t bytes, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return allocate_aligned_nothrow(bytes, alignment);
}
void* operator new[](std::size_t bytes, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return allocate_aligned_nothrow(bytes, alignment);
}

void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    std::free(p);
}
