// Durations and sizes: tables of what is read and written, and round trips.
#include <hotpath/core/units.hpp>

#include <gtest/gtest.h>

#include <random>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

TEST(units_test, durations_as_typed) {
    const std::pair<const char*, std::chrono::nanoseconds> good[] = {
        {"10s", 10s},     {"2m", 2min}, {"1h", 1h},   {"250ms", 250ms}, {"40us", 40us},
        {"1.5s", 1500ms}, {"3", 3s},    {" 5s ", 5s}, {"0", 0s},        {"0.0000000001s", 0ns},
    };
    for (const auto& [text, expected] : good) {
        SCOPED_TRACE(text);
        const auto d = parse_duration(text);
        ASSERT_TRUE(d.has_value());
        EXPECT_EQ(*d, expected);
    }
    for (const char* bad : {"", "ten", "5 parsecs", "-1s", "1e400s", "s", "5ss", "5s x", "nan", "inf", "1e12h"}) {
        EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
    }
}

TEST(units_test, durations_for_people) {
    EXPECT_EQ(format_duration_ns(812), "812ns");
    EXPECT_EQ(format_duration_ns(35070), "35.07us");
    EXPECT_EQ(format_duration_ns(4.19e6), "4.19ms");
    EXPECT_EQ(format_duration_ns(1.03e9), "1.03s");
    EXPECT_EQ(format_duration_ns(0), "0ns");
}

TEST(units_test, exact_durations_read_back_to_the_same_count) {
    EXPECT_EQ(exact_duration_text(0s), "0s");
    EXPECT_EQ(exact_duration_text(90s), "90s");
    EXPECT_EQ(exact_duration_text(1h), "1h");
    EXPECT_EQ(exact_duration_text(1500ms), "1500ms");
    EXPECT_EQ(exact_duration_text(7us), "7us");
    std::mt19937_64 rng(7);
    for (int i = 0; i < 10000; ++i) {
        const std::chrono::nanoseconds d{static_cast<std::int64_t>(rng() % 4'000'000'000'000ULL)};
        const auto back = parse_duration(exact_duration_text(d));
        ASSERT_TRUE(back.has_value()) << exact_duration_text(d);
        EXPECT_EQ(*back, d) << exact_duration_text(d);
    }
}

TEST(units_test, sizes_as_typed) {
    const std::pair<const char*, std::uint64_t> good[] = {
        {"512", 512},
        {"512B", 512},
        {"64k", 64 * 1024},
        {"64KiB", 64 * 1024},
        {"64 KiB", 64 * 1024},
        {"64kB", 64'000},
        {"10MB", 10'000'000},
        {"1.5MiB", 1024 * 1024 * 3 / 2},
        {"2G", 2ULL * 1024 * 1024 * 1024},
        {"1gb", 1'000'000'000},
        {"0", 0},
        {"30M", 30ULL * 1024 * 1024},
    };
    for (const auto& [text, expected] : good) {
        SCOPED_TRACE(text);
        const auto n = parse_size(text);
        ASSERT_TRUE(n.has_value());
        EXPECT_EQ(*n, expected);
    }
    for (const char* bad : {"", "big", "-1", "5 parsecs", "1KiBs", "1e30", "16777216T", "k"}) {
        EXPECT_FALSE(parse_size(bad).has_value()) << bad;
    }
}

TEST(units_test, sizes_for_people) {
    EXPECT_EQ(format_size(0), "0 B");
    EXPECT_EQ(format_size(812), "812 B");
    EXPECT_EQ(format_size(1500), "1.50 kB");
    EXPECT_EQ(format_size(53'120'000), "53.1 MB");
    EXPECT_EQ(format_size(2'040'000'000), "2.04 GB");
    EXPECT_EQ(format_size(999'999), "1.00 MB");
}

} // namespace
} // namespace hotpath
