// The default build's answers: no counting allocator, so no counts. Weak definitions, which the strong ones in
// alloc_counter.cpp (the hotpath_alloc_counter object library) replace in a program that links it.
#include <hotpath/core/alloc_count.hpp>

namespace hotpath::alloc {

// Weak, so that whichever order the linker meets the objects in, the counter's strong definitions win; the
// counter is an object library, never an archive member the linker could leave out.
[[gnu::weak]] bool counting() noexcept {
    return false;
}

[[gnu::weak]] counts this_thread() noexcept {
    return {};
}

[[gnu::weak]] void record(std::size_t) noexcept {}

} // namespace hotpath::alloc
