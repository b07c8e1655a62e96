// Durations and sizes as people type and read them ("250ms", "1.5s", "64KiB"), parsed and formatted in one place
// for every command and report.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hotpath {

// A non-negative finite decimal number ("12", "0.5", "1e3") at the start of `text`, which it advances past; nullopt
// (and `text` unchanged) when there is none. The number of every parser below, and of the load plan's levels.
std::optional<double> take_number(std::string_view& text) noexcept;

// "10s", "2m", "1h", "250ms", "40us", "1.5s"; a bare number is seconds. Blanks around it are ignored. nullopt for
// anything else: a negative or non-finite number, another unit, text after the unit. Fractions below a nanosecond
// are truncated.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);

// A duration for a person, in the largest unit under 1000 of it with `decimals` digits after the point (none for
// nanoseconds): "812ns", "35.07us", "4.19ms", "1.03s" (a latency, a phase of a request). More decimals tell close
// figures apart (the bands of a narrow distribution).
std::string format_duration_ns(double ns, int decimals = 2);

// A duration that parse_duration reads back to the same count: the largest of h, m, s, ms, us that holds it
// exactly ("90s" is "90s", 1 h is "1h", 1.5 s is "1500ms"), else fractional microseconds. For files a program
// writes and reads back (scenario files).
std::string exact_duration_text(std::chrono::nanoseconds d);

// "512", "512B", "64KiB", "64k", "10MB", "1.5MiB", "2G": bytes. K, M, G (and KiB, MiB, GiB) are powers of 1024, as
// nginx and curl read them; KB, MB, GB (and kB) powers of 1000, as SI writes them. Units are case-insensitive;
// blanks around the number and the unit are ignored. nullopt for anything else, and for 2^64 bytes or more.
std::optional<std::uint64_t> parse_size(std::string_view text);

// A size for a person, in the unit that keeps 3 significant digits: "0 B", "812 B", "1.50 kB", "53.1 MB",
// "2.04 GB" (powers of 1000).
std::string format_size(std::uint64_t bytes);

} // namespace hotpath
