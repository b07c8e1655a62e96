// The stall line's writer and reader, next to each other.
#include <hotpath/server/stall_event.hpp>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <utility>

namespace hotpath {

namespace {

constexpr std::string_view prefix = "hotpath: loop ";
constexpr std::string_view stalled = " stalled ";
constexpr std::string_view so_far = " ms so far in one turn, ";
constexpr std::string_view ended = " ms in one turn, ";
constexpr std::string_view in_handler = "in the handler of ";
constexpr std::string_view blamed = ": it blocked its thread or computed too long";
constexpr std::string_view outside =
    "outside any handler (in the loop's own work, or a handler resumed by an awaitable of its own)";
constexpr std::string_view thread_start = "; its thread: ";
constexpr std::string_view on_cpu = "on the CPU ";
constexpr std::string_view of_stall = " % of the stall, ";
constexpr std::string_view waiting_in = "waiting in ";
// The words for `waiting`'s fixed values; any other value is a system call's name, after waiting_in.
constexpr std::pair<std::string_view, std::string_view> waiting_words[] = {
    {"computes", "computing"},
    {"lock", "waiting on a lock (futex)"},
    {"system_call", "waiting in a system call"},
    {"unknown", "doing what could not be told"},
};
constexpr std::string_view stack_start = "; stack (addr2line -Cfpe ";
constexpr std::string_view stack_end = "): ";

// A decimal number at the start of `s`; advances past it.
template <typename T>
bool take_number(std::string_view& s, T& out) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    if (r.ec != std::errc{} || r.ptr == s.data()) {
        return false;
    }
    s.remove_prefix(static_cast<std::size_t>(r.ptr - s.data()));
    return true;
}

bool take(std::string_view& s, std::string_view text) {
    if (!s.starts_with(text)) {
        return false;
    }
    s.remove_prefix(text.size());
    return true;
}

} // namespace

std::string format_stall_line(const stall_event& e) {
    std::string line(prefix);
    line.append(std::to_string(e.loop)).append(stalled).append(std::to_string(e.length.count()));
    line.append(e.ongoing ? so_far : ended);
    if (e.method.empty() && e.route.empty()) {
        line.append(outside);
    } else {
        line.append(in_handler).append(e.method).append(" ").append(e.route).append(blamed);
    }
    if (!e.waiting.empty()) {
        line.append(thread_start);
        if (e.cpu_percent) {
            line.append(on_cpu).append(std::to_string(*e.cpu_percent)).append(of_stall);
        }
        const auto* words = std::find_if(std::begin(waiting_words), std::end(waiting_words),
                                         [&](const auto& w) { return w.first == e.waiting; });
        if (words != std::end(waiting_words)) {
            line.append(words->second);
        } else {
            line.append(waiting_in).append(e.waiting);
        }
    }
    if (!e.stack.empty() || !e.program.empty()) {
        line.append(stack_start).append(e.program).append(stack_end).append(e.stack);
    }
    return line;
}

std::optional<stall_event> parse_stall_line(std::string_view line) {
    stall_event e;
    long long ms = 0;
    if (!take(line, prefix) || !take_number(line, e.loop) || !take(line, stalled) || !take_number(line, ms) || ms < 0) {
        return std::nullopt;
    }
    e.length = std::chrono::milliseconds{ms};
    if (take(line, so_far)) {
        e.ongoing = true;
    } else if (!take(line, ended)) {
        return std::nullopt;
    }
    if (!take(line, outside)) {
        // "METHOD ROUTE: it blocked ...": a method is a token (no space), a route a path (no ": it blocked").
        if (!take(line, in_handler)) {
            return std::nullopt;
        }
        const auto space = line.find(' ');
        const auto blame = line.find(blamed);
        if (space == std::string_view::npos || blame == std::string_view::npos || blame < space) {
            return std::nullopt;
        }
        e.method = std::string(line.substr(0, space));
        e.route = std::string(line.substr(space + 1, blame - space - 1));
        line.remove_prefix(blame + blamed.size());
    }
    if (take(line, thread_start)) {
        int percent = 0;
        if (take(line, on_cpu)) {
            if (!take_number(line, percent) || percent < 0 || percent > 100 || !take(line, of_stall)) {
                return std::nullopt;
            }
            e.cpu_percent = percent;
        }
        const auto* words = std::find_if(std::begin(waiting_words), std::end(waiting_words),
                                         [&](const auto& w) { return take(line, w.second); });
        if (words != std::end(waiting_words)) {
            e.waiting = words->first;
        } else if (take(line, waiting_in)) {
            // A system call's name: up to the stack, or the end.
            const auto name = line.substr(0, line.find(stack_start));
            if (name.empty() || name.find(' ') != std::string_view::npos) {
                return std::nullopt;
            }
            e.waiting = std::string(name);
            line.remove_prefix(name.size());
        } else {
            return std::nullopt;
        }
    }
    if (take(line, stack_start)) {
        const auto end = line.find(stack_end);
        if (end == std::string_view::npos) {
            return std::nullopt;
        }
        e.program = std::string(line.substr(0, end));
        e.stack = std::string(line.substr(end + stack_end.size()));
        line = {};
    }
    if (!line.empty()) {
        return std::nullopt;
    }
    return e;
}

} // namespace hotpath
