// Per-thread free lists of coroutine frames by size class.
#include <hotpath/core/frame_allocator.hpp>

#include <array>
#include <new>

namespace hotpath {
namespace {

constexpr std::size_t class_bytes = 64;
constexpr std::size_t class_count = frame_allocator::max_pooled_bytes / class_bytes;
constexpr std::size_t max_cached_per_class = 256; // bounds what an idle thread keeps

struct free_node {
    free_node* next;
};

struct free_lists {
    std::array<free_node*, class_count> heads{};
    std::array<std::size_t, class_count> counts{};

    ~free_lists() {
        for (std::size_t i = 0; i < class_count; ++i) {
            while (free_node* n = heads[i]) {
                heads[i] = n->next;
                ::operator delete(static_cast<void*>(n));
            }
        }
    }
};

thread_local free_lists lists;

std::size_t class_of(std::size_t bytes) noexcept {
    return (bytes + class_bytes - 1) / class_bytes - 1;
}

} // namespace

void* frame_allocator::allocate(std::size_t bytes) {
    if (bytes == 0 || bytes > max_pooled_bytes) {
        return ::operator new(bytes);
    }
    const std::size_t c = class_of(bytes);
    if (free_node* n = lists.heads[c]) {
        lists.heads[c] = n->next;
        --lists.counts[c];
        return n;
    }
    return ::operator new((c + 1) * class_bytes);
}

void frame_allocator::deallocate(void* frame, std::size_t bytes) noexcept {
    if (bytes == 0 || bytes > max_pooled_bytes) {
        ::operator delete(frame);
        return;
    }
    const std::size_t c = class_of(bytes);
    if (lists.counts[c] >= max_cached_per_class) {
        ::operator delete(frame);
        return;
    }
    auto* n = static_cast<free_node*>(frame);
    n->next = lists.heads[c];
    lists.heads[c] = n;
    ++lists.counts[c];
}

} // namespace hotpath
