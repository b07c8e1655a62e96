// A stall the watchdog saw, as one line of the server's log: written by the server (server.cpp) and read back by
// whoever watches its output (hotpath lab), both through this one type.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace hotpath {

// "hotpath: loop 1 stalled 2001 ms in one turn, in the handler of GET /x: it blocked its thread or computed too
// long", with " so far" after "ms" while the stall goes on, "outside any handler (...)" when no handler ran last;
// then what its thread did, "; its thread: on the CPU 3 % of the stall, waiting in clock_nanosleep" ("computing",
// "waiting on a lock (futex)", "waiting in a system call", "doing what could not be told"), when measured; and
// "; stack (addr2line -Cfpe PROGRAM): FRAMES" when backtraces are on.
struct stall_event {
    unsigned loop = 0;
    std::chrono::milliseconds length{};
    bool ongoing = false; // told while it goes on ("so far"), not when it ended
    // The handler whose code ran last in the stalled turn; both empty when none did.
    std::string method;
    std::string route;
    std::string program; // with a backtrace: the executable to give addr2line; else empty
    std::string stack;   // with a backtrace: its frames as the sampler wrote them; else empty
    // What its thread did in the stall, as the watchdog measured it (net/thread_activity.hpp): `waiting` is
    // "computes", "lock", a system call's name ("clock_nanosleep", "read"), "system_call" (one the table does not
    // name) or "unknown"; empty when not measured (the line of an older server), and cpu_percent is then not
    // written. cpu_percent: its thread's CPU time over the wall time measured, 0 to 100; none when unreadable.
    std::optional<int> cpu_percent{};
    std::string waiting{};

    friend bool operator==(const stall_event&, const stall_event&) = default;
};

// The event's line, without a newline.
std::string format_stall_line(const stall_event& e);
// The event a line of format_stall_line's tells, or nullopt for any other line (a log line, a partial line).
std::optional<stall_event> parse_stall_line(std::string_view line);

} // namespace hotpath
