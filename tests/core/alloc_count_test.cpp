// Without the counting allocator (this test does not link it), core's defaults say so and count nothing.
#include <hotpath/core/alloc_count.hpp>

#include <gtest/gtest.h>

#include <memory>

namespace hotpath {
namespace {

TEST(alloc_count_test, without_the_counter_nothing_is_counted) {
    EXPECT_FALSE(alloc::counting());
    auto p = std::make_unique<int>(1);
    const alloc::counts n = alloc::this_thread();
    EXPECT_EQ(n.allocations, 0u);
    EXPECT_EQ(n.bytes, 0u);
}

} // namespace
} // namespace hotpath
