// Start times as typed (RFC 3339, Unix seconds) and the run's start shared between threads.
#include <hotpath/load/start.hpp>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace hotpath::load {
namespace {

using namespace std::chrono;

std::int64_t unix_ns(wall_clock::time_point t) {
    return duration_cast<nanoseconds>(t.time_since_epoch()).count();
}

TEST(start_time_test, rfc_3339_and_unix_seconds_name_the_same_instant) {
    const std::int64_t at = 1'796'572'800LL * 1'000'000'000; // 2026-12-06T16:00:00Z
    const std::vector<std::pair<std::string, std::int64_t>> same{
        {"2026-12-06T16:00:00Z", at},
        {"2026-12-06t16:00:00z", at},
        {"2026-12-06 16:00:00Z", at},
        {"2026-12-06T17:00:00+01:00", at},
        {"2026-12-06T10:30:00-05:30", at},
        {"2026-12-06T16:00:00.25Z", at + 250'000'000},
        {"2026-12-06T16:00:00.000000001Z", at + 1},
        {"1796572800", at},
        {"1796572800.5", at + 500'000'000},
        {"2024-02-29T00:00:00Z", 1'709'164'800LL * 1'000'000'000},
        {"1970-01-01T00:00:00Z", 0},
    };
    for (const auto& [text, ns] : same) {
        SCOPED_TRACE(text);
        const auto t = parse_start_time(text);
        ASSERT_TRUE(t) << t.error().message;
        EXPECT_EQ(unix_ns(*t), ns);
    }
}

TEST(start_time_test, anything_else_is_refused_with_what_is_expected) {
    for (const char* text : {"",
                             "now",
                             "+5s",
                             "2026-12-06T16:40:00",
                             "2026-12-06",
                             "2026-13-01T00:00:00Z",
                             "2026-02-30T00:00:00Z",
                             "2026-12-06T24:00:00Z",
                             "2026-12-06T16:60:00Z",
                             "2026-12-06T16:40:00Zjunk",
                             "2026-12-06T16:40:00+1:00",
                             "2026-12-06T16:40:00+24:00",
                             "2026-12-06T16:40:00.Z",
                             "2026-12-06T16:40:00.1234567891Z",
                             "1796572800.",
                             "1.2.3",
                             "-1",
                             "99999999999999",
                             "2026-12-06T16:40Z",
                             "26-12-06T16:40:00Z"}) {
        SCOPED_TRACE(text);
        const auto t = parse_start_time(text);
        ASSERT_FALSE(t);
        EXPECT_NE(t.error().message.find("RFC 3339"), std::string::npos) << t.error().message;
    }
}

TEST(start_time_test, the_text_written_is_utc_to_the_millisecond_and_reads_back) {
    const auto t = parse_start_time("2026-12-06T17:40:00.123456+01:00");
    ASSERT_TRUE(t);
    EXPECT_EQ(wall_clock_text(*t), "2026-12-06T16:40:00.123Z");
    const auto back = parse_start_time(wall_clock_text(*t));
    ASSERT_TRUE(back);
    EXPECT_EQ(unix_ns(*back), unix_ns(*t) / 1'000'000 * 1'000'000);
    EXPECT_EQ(wall_clock_text(wall_clock::time_point{}), "1970-01-01T00:00:00.000Z");
}

TEST(run_control_test, only_a_paused_waiting_run_is_released_and_only_once) {
    run_control not_paused;
    not_paused.wait_for(false, std::nullopt);
    EXPECT_FALSE(not_paused.release());

    run_control paused;
    paused.wait_for(true, std::nullopt);
    EXPECT_EQ(paused.now(), run_control::phase::waiting);
    EXPECT_FALSE(paused.released());
    // Many threads at once (the control endpoint's requests, SIGUSR1): one release.
    std::atomic<int> released{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
        threads.emplace_back([&] { released += paused.release() ? 1 : 0; });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(released.load(), 1);
    EXPECT_TRUE(paused.released());
    EXPECT_FALSE(paused.began());
    const auto at = wall_clock::now();
    paused.begin(at);
    EXPECT_EQ(paused.now(), run_control::phase::running);
    ASSERT_TRUE(paused.began());
    EXPECT_EQ(unix_ns(*paused.began()), unix_ns(at));
    paused.finish();
    EXPECT_EQ(paused.now(), run_control::phase::finished);
    EXPECT_FALSE(paused.release());
}

} // namespace
} // namespace hotpath::load
