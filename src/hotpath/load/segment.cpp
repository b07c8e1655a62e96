// Execution segments: fractions, the sequence's stripe, and the counts a segment takes of the whole plan.
#include <hotpath/load/segment.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <numeric>

namespace hotpath::load {

namespace {

// The largest stripe period, and the most work spent dealing one (the period times the sequence's segments).
constexpr std::uint64_t max_period = 1'000'000;
constexpr std::uint64_t max_dealing = 50'000'000;
constexpr std::uint64_t max_equal_parts = 7'071; // N equal parts: a period of N over N pieces, within max_dealing

problem bad(std::string message) {
    return problem{errc::invalid_value, std::move(message)};
}

// For fractions whose denominators are at most max_period (checked first).
bool less(const fraction& x, const fraction& y) noexcept {
    return x < y;
}

fraction reduced(std::uint64_t p, std::uint64_t q) noexcept {
    const std::uint64_t g = std::gcd(p, q);
    return g == 0 ? fraction{0, 1} : fraction{p / g, q / g};
}

bool whole_number(std::string_view text, std::uint64_t& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return !text.empty() && ec == std::errc{} && end == text.data() + text.size();
}

} // namespace

std::string fraction::text() const {
    return q == 1 ? fmt::format("{}", p) : fmt::format("{}/{}", p, q);
}

result<fraction, problem> parse_fraction(std::string_view text) {
    const auto out_of_range = [&] {
        return bad(fmt::format("'{}' is not a fraction from 0 to 1 (0, 1/4, 0.25, 25%, 1)", text));
    };
    std::uint64_t p = 0;
    std::uint64_t q = 1;
    if (text.ends_with('%')) {
        if (!whole_number(text.substr(0, text.size() - 1), p)) {
            return out_of_range();
        }
        q = 100;
    } else if (const auto slash = text.find('/'); slash != std::string_view::npos) {
        if (!whole_number(text.substr(0, slash), p) || !whole_number(text.substr(slash + 1), q) || q == 0) {
            return out_of_range();
        }
    } else {
        const auto dot = text.find('.');
        const std::string_view integer = text.substr(0, dot);
        const std::string_view decimals = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
        if (!whole_number(integer, p) || p > 1 || decimals.size() > 6 ||
            (dot != std::string_view::npos && decimals.empty())) {
            return out_of_range();
        }
        std::uint64_t d = 0;
        if (!decimals.empty() && !whole_number(decimals, d)) {
            return out_of_range();
        }
        for (std::size_t i = 0; i < decimals.size(); ++i) {
            q *= 10;
        }
        p = p * q + d;
    }
    if (p > q) {
        return out_of_range();
    }
    return reduced(p, q);
}

result<segment, problem> segment::make(fraction a, fraction b, std::vector<fraction> sequence) {
    for (const auto* f : {&a, &b}) {
        if (f->p > f->q || f->q == 0) {
            return bad(fmt::format("'{}' is not a fraction from 0 to 1", f->text()));
        }
    }
    const auto too_fine = [](const fraction& f) { return f.q > max_period; };
    if (too_fine(a) || too_fine(b) || std::any_of(sequence.begin(), sequence.end(), too_fine)) {
        return bad(fmt::format("the segments' common denominator passes {}: use simpler fractions", max_period));
    }
    if (!less(a, b)) {
        return bad(fmt::format("segment {}:{} is empty: its start must be below its end", a.text(), b.text()));
    }
    if (sequence.size() < 2 || !(sequence.front() == fraction{0, 1}) || !(sequence.back() == fraction{1, 1})) {
        return bad("a segment sequence goes from 0 to 1 (e.g. 0,1/4,1/2,1)");
    }
    for (std::size_t i = 1; i < sequence.size(); ++i) {
        if (!less(sequence[i - 1], sequence[i])) {
            return bad(fmt::format("the segment sequence must rise: {} is not below {}", sequence[i - 1].text(),
                                   sequence[i].text()));
        }
    }
    const auto position = [&](const fraction& f) {
        return static_cast<std::size_t>(std::find(sequence.begin(), sequence.end(), f) - sequence.begin());
    };
    const std::size_t first = position(a);
    const std::size_t last = position(b);
    if (first == sequence.size() || last == sequence.size()) {
        return bad(fmt::format("segment {}:{} is not in the sequence (its ends must be two of its boundaries)",
                               a.text(), b.text()));
    }
    std::uint64_t period = 1;
    for (const fraction& f : sequence) {
        period = std::lcm(period, f.q);
        if (period > max_period) {
            return bad(fmt::format("the segments' common denominator passes {}: use simpler fractions", max_period));
        }
    }
    const std::size_t pieces = sequence.size() - 1;
    if (period * pieces > max_dealing) {
        return bad(fmt::format("{} segments over a period of {} are too many to deal", pieces, period));
    }
    // Each piece's share of a period, and the dealing, earliest deadline first: piece j's k-th number is due by
    // k·L/w_j; the next number goes, among the pieces behind their share of the numbers so far, to the one whose
    // next is due first (the first such piece on a tie). Each piece then gets exactly w_j per period, and every
    // prefix within one of its share.
    std::vector<std::int64_t> weight(pieces);
    for (std::size_t j = 0; j < pieces; ++j) {
        weight[j] = static_cast<std::int64_t>(sequence[j + 1].p * (period / sequence[j + 1].q) -
                                              sequence[j].p * (period / sequence[j].q));
    }
    std::vector<std::int64_t> had(pieces, 0);
    segment s;
    s.from_ = a;
    s.to_ = b;
    s.period_ = period;
    s.offsets_.clear();
    const auto total = static_cast<std::int64_t>(period);
    for (std::uint64_t i = 0; i < period; ++i) {
        const auto dealt = static_cast<std::int64_t>(i + 1);
        std::size_t chosen = pieces;
        for (std::size_t j = 0; j < pieces; ++j) {
            if (total * had[j] >= weight[j] * dealt) {
                continue; // not behind
            }
            // Due (had + 1)·L/w: earlier than the chosen's when (had_j + 1)·w_c < (had_c + 1)·w_j.
            if (chosen == pieces || (had[j] + 1) * weight[chosen] < (had[chosen] + 1) * weight[j]) {
                chosen = j;
            }
        }
        ++had[chosen];
        if (chosen >= first && chosen < last) {
            s.offsets_.push_back(i);
        }
    }
    s.sequence_ = std::move(sequence);
    return s;
}

result<segment, problem> segment::parse(std::string_view segment_text, std::string_view sequence_text) {
    if (segment_text.empty()) {
        if (!sequence_text.empty()) {
            return bad("--segment-sequence needs --segment: which of its segments this run is");
        }
        return segment{};
    }
    if (const auto colon = segment_text.find(':'); colon != std::string_view::npos) {
        auto a = parse_fraction(segment_text.substr(0, colon));
        auto b = parse_fraction(segment_text.substr(colon + 1));
        if (!a || !b) {
            return bad(fmt::format("bad --segment '{}': {}", segment_text, (!a ? a : b).error().message));
        }
        std::vector<fraction> sequence;
        if (sequence_text.empty()) {
            for (const fraction& f : {fraction{0, 1}, *a, *b, fraction{1, 1}}) {
                if (sequence.empty() || !(sequence.back() == f)) {
                    sequence.push_back(f);
                }
            }
        } else {
            std::string_view rest = sequence_text;
            while (true) {
                const auto comma = rest.find(',');
                auto f = parse_fraction(rest.substr(0, comma));
                if (!f) {
                    return bad(fmt::format("bad --segment-sequence '{}': {}", sequence_text, f.error().message));
                }
                sequence.push_back(*f);
                if (comma == std::string_view::npos) {
                    break;
                }
                rest.remove_prefix(comma + 1);
            }
        }
        return make(*a, *b, std::move(sequence));
    }
    if (const auto slash = segment_text.find('/'); slash != std::string_view::npos) {
        std::uint64_t i = 0;
        std::uint64_t n = 0;
        if (!whole_number(segment_text.substr(0, slash), i) || !whole_number(segment_text.substr(slash + 1), n) ||
            n == 0 || i >= n) {
            return bad(fmt::format("bad --segment '{}': I/N is the I-th of N equal segments, I from 0 to N-1 "
                                   "(or give A:B, two fractions)",
                                   segment_text));
        }
        if (!sequence_text.empty()) {
            return bad("--segment I/N sets its own sequence (N equal segments): give A:B with --segment-sequence");
        }
        if (n > max_equal_parts) {
            return bad(fmt::format("bad --segment '{}': at most {} equal segments", segment_text, max_equal_parts));
        }
        std::vector<fraction> sequence;
        sequence.reserve(n + 1);
        for (std::uint64_t k = 0; k <= n; ++k) {
            sequence.push_back(reduced(k, n));
        }
        return make(reduced(i, n), reduced(i + 1, n), std::move(sequence));
    }
    return bad(fmt::format("bad --segment '{}': A:B (two fractions, e.g. 0:1/4) or I/N (e.g. 0/4)", segment_text));
}

std::string segment::text() const {
    return from_.text() + ":" + to_.text();
}

std::string segment::sequence_text() const {
    std::string joined;
    for (const fraction& f : sequence_) {
        joined += (joined.empty() ? "" : ",") + f.text();
    }
    return joined;
}

std::uint64_t segment::count_below(std::uint64_t n) const noexcept {
    const std::uint64_t within = n % period_;
    const auto partial =
        static_cast<std::uint64_t>(std::lower_bound(offsets_.begin(), offsets_.end(), within) - offsets_.begin());
    return n / period_ * offsets_.size() + partial;
}

std::uint64_t segment::nth(std::uint64_t m) const noexcept {
    const std::uint64_t k = offsets_.size();
    return m / k * period_ + offsets_[m % k];
}

} // namespace hotpath::load
