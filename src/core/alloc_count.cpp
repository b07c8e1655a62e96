// The defaults when the counting allocator is not linked in: weak, so that its definitions replace these.
#include "core/alloc_count.hpp"

namespace hotpath::alloc {

[[gnu::weak]] bool counting() noexcept {
    return false;
}

[[gnu::weak]] counts this_thread() noexcept {
    return {};
}

} // namespace hotpath::alloc
