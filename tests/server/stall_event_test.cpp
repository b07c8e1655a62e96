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
        // What the thread did, every shape of it, with and without a stack after it.
        {0, 301ms, false, "GET", "/x", "", "", 98, "computes"},
        {0, 301ms, false, "GET", "/x", "", "", 3, "clock_nanosleep"},
        {1, 2001ms, true, "GET", "/x", "", "", 1, "lock"},
        {1, 290ms, false, "", "", "", "", 40, "unknown"},
        {1, 290ms, false, "GET", "/x", "", "", 0, "system_call"},
        {2, 75ms, false, "GET", "/x", "/usr/bin/hotpath", "0x4011a2 libc.so.6+0x3c4d", 100, "read"},
        {2, 75ms, false, "GET", "/x", "", "", std::nullopt, "computes"}, // the CPU clock unreadable
        {2, 75ms, false, "GET", "/x", "/usr/bin/hotpath", "0x1", std::nullopt, "recvfrom"},
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
    EXPECT_EQ(format_stall_line({1, 301ms, false, "GET", "/x", "", "", 3, "clock_nanosleep"}),
              "hotpath: loop 1 stalled 301 ms in one turn, in the handler of GET /x: it blocked its thread or "
              "computed too long; its thread: on the CPU 3 % of the stall, waiting in clock_nanosleep");
    EXPECT_EQ(format_stall_line({1, 301ms, false, "GET", "/x", "", "", 98, "computes"}),
              "hotpath: loop 1 stalled 301 ms in one turn, in the handler of GET /x: it blocked its thread or "
              "computed too long; its thread: on the CPU 98 % of the stall, computing");
    EXPECT_EQ(format_stall_line({1, 301ms, false, "GET", "/x", "/bin/svc", "0x1", 1, "lock"}),
              "hotpath: loop 1 stalled 301 ms in one turn, in the handler of GET /x: it blocked its thread or "
              "computed too long; its thread: on the CPU 1 % of the stall, waiting on a lock (futex); stack "
              "(addr2line -Cfpe /bin/svc): 0x1");
}

// A line of a server older than the thread's measure reads as a stall with nothing measured.
TEST(stall_event, an_older_line_reads_with_nothing_measured) {
    const auto e = parse_stall_line("hotpath: loop 1 stalled 2001 ms in one turn, in the handler of GET /x: it blocked "
                                    "its thread or computed too long; stack (addr2line -Cfpe /bin/svc): 0x1 0x2");
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->route, "/x");
    EXPECT_EQ(e->stack, "0x1 0x2");
    EXPECT_TRUE(e->waiting.empty());
    EXPECT_FALSE(e->cpu_percent.has_value());
}

TEST(stall_event, other_lines_are_not_stalls) {
    for (const char* line : {"", "hotpath: serving platform on http://127.0.0.1:8080 with 2 event loops",
                             "hotpath: loop 1 stalled", "hotpath: loop x stalled 5 ms in one turn, outside any handler",
                             "hotpath: loop 1 stalled 5 ms in one turn, in the handler of GET",
                             "hotpath: loop 1 stalled 5 ms in one turn, in the handler of GET /x: it blocked its "
                             "thread or computed too long and more",
                             "hotpath: loop 1 stalled -5 ms in one turn, outside any handler (in the loop's own work, "
                             "or a handler resumed by an awaitable of its own)",
                             "hotpath: loop 1 stalled 5 ms in one turn, in the handler of GET /x: it blocked its "
                             "thread or computed too long; its thread: on the CPU 101 % of the stall, computing",
                             "hotpath: loop 1 stalled 5 ms in one turn, in the handler of GET /x: it blocked its "
                             "thread or computed too long; its thread: on the CPU 3 %, computing",
                             "hotpath: loop 1 stalled 5 ms in one turn, in the handler of GET /x: it blocked its "
                             "thread or computed too long; its thread: waiting in ",
                             "hotpath: loop 1 stalled 5 ms in one turn, in the handler of GET /x: it blocked its "
                             "thread or computed too long; its thread: waiting in two words",
                             "hotpath: loop 1 stalled 5 ms in one turn, in the handler of GET /x: it blocked its "
                             "thread or computed too long; its thread: sleeping"}) {
        EXPECT_FALSE(parse_stall_line(line).has_value()) << line;
    }
}

} // namespace
} // namespace hotpath
