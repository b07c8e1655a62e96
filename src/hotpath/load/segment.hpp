// Execution segments (k6's semantics): a plan split over many `hotpath load` processes, each running the half-open
// part [a, b) of it, so that together they send exactly the whole plan. The whole plan's users, requests and
// arrivals are numbered 0, 1, 2, ...; a sequence of segments (boundaries 0 = s0 < s1 < ... < sk = 1) deals those
// numbers to its segments in a fixed stripe of period L (the boundaries' common denominator): within each L, segment
// j takes exactly (s(j+1) − sj)·L of them, interleaved (earliest deadline first), so that the first n of the whole go
// to the segments in proportion for every n (each within one of its share; a segment spanning k pieces of the
// sequence, within k), and their counts add up to n exactly.
#pragma once

#include <hotpath/core/result.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::load {

// A fraction p/q in [0, 1], in lowest terms.
struct fraction {
    std::uint64_t p = 0;
    std::uint64_t q = 1;
    friend bool operator==(const fraction&, const fraction&) = default;
    // For denominators up to 1,000,000 (every segment's): the cross products stay within 2^40.
    friend bool operator<(const fraction& x, const fraction& y) noexcept { return x.p * y.q < y.p * x.q; }
    std::string text() const; // "0", "1", "1/4"
};

// "0", "1", "1/4", "0.25" (at most 6 decimals), "25%"; none for anything else or outside [0, 1].
result<fraction, problem> parse_fraction(std::string_view text);

class segment {
public:
    // The whole plan (one process sends everything).
    segment() = default;

    // Segment [a, b) of `sequence` (its boundaries, ascending from 0 to 1; a and b two of them, a < b). Errors name
    // what is wrong: an empty or reversed segment, a boundary not in the sequence, a sequence whose common
    // denominator passes 1,000,000.
    static result<segment, problem> make(fraction a, fraction b, std::vector<fraction> sequence);
    // `--segment` and `--segment-sequence` as given: "a:b" (fractions; without a sequence, the sequence 0, a, b, 1),
    // or "i/N" (the i-th of N equal segments, from 0: the sequence 0, 1/N, ..., 1); "" for the whole. The sequence
    // is "s0,s1,...,sk", "" for none.
    static result<segment, problem> parse(std::string_view segment_text, std::string_view sequence_text);

    bool whole() const noexcept { return period_ == 1; }
    fraction from() const noexcept { return from_; }
    fraction to() const noexcept { return to_; }
    const std::vector<fraction>& sequence() const noexcept { return sequence_; }
    std::uint64_t period() const noexcept { return period_; }
    std::string text() const;          // "1/4:1/2", "0:1" for the whole
    std::string sequence_text() const; // "0,1/4,1/2,1"

    // How many of the whole plan's first n (users, requests, arrivals) are this segment's.
    std::uint64_t count_below(std::uint64_t n) const noexcept;
    // The number, in the whole plan, of this segment's m-th (from 0).
    std::uint64_t nth(std::uint64_t m) const noexcept;

private:
    fraction from_{0, 1};
    fraction to_{1, 1};
    std::vector<fraction> sequence_{{0, 1}, {1, 1}};
    std::uint64_t period_ = 1;
    std::vector<std::uint64_t> offsets_{0}; // this segment's numbers within one period, ascending
};

} // namespace hotpath::load
