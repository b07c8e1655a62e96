// The stall line: what the server writes reads back as the same event, and other lines are not stalls.
#include <hotpath/server/stall_event.hpp>

#include <gtest/gtest.h>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

TEST(stall_event, every_shape_reads_back_as_written) {
    const stall_event events[] = {
        {0, 2001ms, false, "GET", "/profile/sync/{id}", "", ""},
        {3, 3001ms, true, "GET", "/profile/sync/{id}", "", ""},
        {1, 150ms, false, "", "", "", ""},
        {2, 9ms, true, "", "", "", ""},
        {0, 2001ms, false, "ANY", "/a b/{c}", "/usr/bin/hotpath", "0x4011a2 0x4011f0"},
        {12, 0ms, false, "POST", "/x: y", "", ""},
        {1, 30ms, false, "GET", "/x", "/usr/bin/hotpath", ""}, // a sampler that found no frame
    };
    for (const stall_event& e : events) {
        const std::string line = format_stall_line(e);
        SCOPED_TRACE(line);
        EXPECT_EQ(line.find('\n'), std::string::npos);
        const auto back = parse_stall_line(line);
        ASSERT_TRUE(back.has_value());
        EXPECT_EQ(*back, e);
    }
}

TEST(stall_event, the_line_reads_as_people_see_it) {
    EXPECT_EQ(format_stall_line({1, 2001ms, false, "GET", "/x", "", ""}),
              "hotpath: loop 1 stalled 2001 ms in one turn, in the handler of GET /x: it blocked its thread or "
              "computed too long");
    EXPECT_EQ(format_stall_line({0, 3001ms, true, "", "", "", ""}),
              "hotpath: loop 0 stalled 3001 ms so far in one turn, outside any handler (in the loop's own work, or a "
              "handler resumed by an awaitable of its own)");
}

TEST(stall_event, other_lines_are_not_stalls) {
    for (const char* line : {"", "hotpath: serving platform on http://127.0.0.1:8080 with 2 event loops",
                             "hotpath: loop 1 stalled", "hotpath: loop x stalled 5 ms in one turn, outside any handler",
                             "hotpath: loop 1 stalled 5 ms in one turn, in the handler of GET",
                             "hotpath: loop 1 stalled 5 ms in one turn, in the handler of GET /x: it blocked its "
                             "thread or computed too long and more",
                             "hotpath: loop 1 stalled -5 ms in one turn, outside any handler (in the loop's own work, "
                             "or a handler resumed by an awaitable of its own)"}) {
        EXPECT_FALSE(parse_stall_line(line).has_value()) << line;
    }
}

} // namespace
} // namespace hotpath
