// The counting allocator (linked into this test): exact counts per thread, every form of operator new counted.
#include <hotpath/core/alloc_count.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

// Makes `p` look used, so that the compiler cannot drop an allocation whose memory nothing reads (C++14 allows
// a new-expression's allocation to be elided).
void keep(const void* p) {
    asm volatile("" : : "r"(p) : "memory");
}

TEST(alloc_counter_test, is_linked) {
    EXPECT_TRUE(alloc::counting());
}

TEST(alloc_counter_test, counts_three_new_int) {
    const alloc::counts before = alloc::this_thread();
    int* a = new int(1);
    keep(a);
    int* b = new int(2);
    keep(b);
    int* c = new int(3);
    keep(c);
    const alloc::counts n = alloc::this_thread() - before;
    delete a;
    delete b;
    delete c;
    EXPECT_EQ(n.allocations, 3u);
    EXPECT_EQ(n.bytes, 3 * sizeof(int));
}

TEST(alloc_counter_test, a_string_of_100_chars_is_one_allocation_of_its_buffer) {
    const alloc::counts before = alloc::this_thread();
    std::string s(100, 'x');
    keep(s.data());
    const alloc::counts n = alloc::this_thread() - before;
    EXPECT_EQ(n.allocations, 1u);
    EXPECT_GE(n.bytes, 101u); // the characters and the terminating null
}

TEST(alloc_counter_test, a_vector_allocates_at_reserve_only) {
    std::vector<std::uint64_t> v;
    const alloc::counts before = alloc::this_thread();
    v.reserve(1000);
    for (std::uint64_t i = 0; i < 1000; ++i) {
        v.push_back(i);
    }
    keep(v.data());
    const alloc::counts n = alloc::this_thread() - before;
    EXPECT_EQ(n.allocations, 1u);
    EXPECT_EQ(n.bytes, 1000 * sizeof(std::uint64_t));
    // Past its capacity it allocates again.
    v.push_back(1000);
    keep(v.data());
    EXPECT_EQ((alloc::this_thread() - before).allocations, 2u);
}

TEST(alloc_counter_test, counts_zero_byte_requests) {
    const alloc::counts before = alloc::this_thread();
    void* a = ::operator new(0);
    void* b = ::operator new(0);
    const alloc::counts n = alloc::this_thread() - before;
    EXPECT_NE(a, nullptr);
    EXPECT_NE(a, b); // distinct pointers, as [basic.stc.dynamic.allocation] requires
    ::operator delete(a);
    ::operator delete(b);
    EXPECT_EQ(n.allocations, 2u);
    EXPECT_EQ(n.bytes, 0u);
}

// Every replaceable form of new is counted with the size it was asked for, and freed by its matching delete.
TEST(alloc_counter_test, counts_every_form_of_operator_new) {
    constexpr auto align = std::align_val_t{256};
    const alloc::counts before = alloc::this_thread();
    void* p1 = ::operator new(10);
    void* p2 = ::operator new[](20);
    void* p3 = ::operator new(30, std::nothrow);
    void* p4 = ::operator new[](40, std::nothrow);
    void* p5 = ::operator new(50, align);
    void* p6 = ::operator new[](60, align);
    void* p7 = ::operator new(70, align, std::nothrow);
    void* p8 = ::operator new[](80, align, std::nothrow);
    const alloc::counts n = alloc::this_thread() - before;
    EXPECT_EQ(n.allocations, 8u);
    EXPECT_EQ(n.bytes, 10u + 20 + 30 + 40 + 50 + 60 + 70 + 80);
    for (void* p : {p1, p2, p3, p4, p5, p6, p7, p8}) {
        EXPECT_NE(p, nullptr);
    }
    for (void* p : {p5, p6, p7, p8}) {
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
    }
    ::operator delete (p1, std::size_t{10});
    ::operator delete[](p2, std::size_t{20});
    ::operator delete(p3, std::nothrow);
    ::operator delete[](p4, std::nothrow);
    ::operator delete (p5, std::size_t{50}, align);
    ::operator delete[](p6, std::size_t{60}, align);
    ::operator delete(p7, align, std::nothrow);
    ::operator delete[](p8, align, std::nothrow);

    // The remaining deletes: unsized, and aligned unsized.
    void* q1 = ::operator new(1);
    void* q2 = ::operator new[](1);
    void* q3 = ::operator new(1, align);
    void* q4 = ::operator new[](1, align);
    ::operator delete(q1);
    ::operator delete[](q2);
    ::operator delete(q3, align);
    ::operator delete[](q4, align);

    // New-expressions reach the same functions: an over-aligned type takes the aligned forms.
    struct alignas(64) line {
        char bytes[64];
    };
    const alloc::counts before_expressions = alloc::this_thread();
    auto* one = new line{};
    keep(one);
    auto* some = new line[3];
    keep(some);
    const alloc::counts m = alloc::this_thread() - before_expressions;
    delete one;
    delete[] some;
    EXPECT_EQ(m.allocations, 2u);
    EXPECT_EQ(m.bytes, 4 * sizeof(line)); // a trivially destructible array has no cookie
}

// A request that cannot be met: the throwing forms throw, the nothrow forms return nullptr; both are counted.
TEST(alloc_counter_test, failed_requests_throw_or_return_null) {
    volatile std::size_t huge = std::numeric_limits<std::size_t>::max() / 2; // volatile: no compile-time warning
    const alloc::counts before = alloc::this_thread();
    EXPECT_THROW(keep(::operator new(huge)), std::bad_alloc);
    EXPECT_EQ(::operator new(huge, std::nothrow), nullptr);
    EXPECT_THROW(keep(::operator new (huge, std::align_val_t{64})), std::bad_alloc);
    EXPECT_EQ(::operator new[](huge, std::align_val_t{64}, std::nothrow), nullptr);
    EXPECT_EQ((alloc::this_thread() - before).allocations, 4u);
}

// The counters are per thread: another thread's allocations are its own, and a new thread starts at zero.
TEST(alloc_counter_test, threads_count_apart) {
    std::atomic<int> step{0};
    alloc::counts at_start;
    alloc::counts made;
    std::thread other([&] {
        at_start = alloc::this_thread();
        while (step.load() != 1) {
            std::this_thread::yield();
        }
        const alloc::counts before = alloc::this_thread();
        std::vector<int*> kept;
        kept.reserve(10);
        for (int i = 0; i < 10; ++i) {
            kept.push_back(new int(i));
        }
        made = alloc::this_thread() - before;
        for (int* p : kept) {
            delete p;
        }
        step.store(2);
    });
    // Measured once the thread exists (creating it allocates its state on this thread).
    const alloc::counts before = alloc::this_thread();
    step.store(1);
    while (step.load() != 2) {
        std::this_thread::yield();
    }
    const alloc::counts here = alloc::this_thread() - before;
    other.join();
    EXPECT_EQ(at_start.allocations, 0u);
    EXPECT_EQ(made.allocations, 11u); // the vector's buffer and ten ints
    EXPECT_EQ(made.bytes, 10 * sizeof(int*) + 10 * sizeof(int));
    EXPECT_EQ(here.allocations, 0u);
    EXPECT_EQ(here.bytes, 0u);
}

} // namespace
} // namespace hotpath
