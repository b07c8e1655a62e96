// The stall line's writer and reader, next to each other.
#include <hotpath/server/stall_event.hpp>

#include <charconv>

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
