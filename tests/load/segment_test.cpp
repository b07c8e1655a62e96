// Execution segments: the fractions read, and a sequence's segments dealing the whole plan's numbers among them
// exactly (every prefix split in proportion, nothing twice, nothing left out).
#include <hotpath/load/segment.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace hotpath::load {
namespace {

segment must(std::string_view text, std::string_view sequence = "") {
    auto s = segment::parse(text, sequence);
    EXPECT_TRUE(s) << text << " " << sequence << ": " << (s ? "" : s.error().message);
    return s ? *s : segment{};
}

TEST(segment_test, fractions_are_read_in_lowest_terms) {
    struct expected {
        const char* text;
        std::uint64_t p, q;
    };
    for (const expected e : {expected{"0", 0, 1},
                             {"1", 1, 1},
                             {"1/4", 1, 4},
                             {"2/4", 1, 2},
                             {"0.25", 1, 4},
                             {"0.5", 1, 2},
                             {"1.0", 1, 1},
                             {"25%", 1, 4},
                             {"100%", 1, 1},
                             {"0.000001", 1, 1000000},
                             {"3/3", 1, 1}}) {
        const auto f = parse_fraction(e.text);
        ASSERT_TRUE(f) << e.text;
        EXPECT_EQ(f->p, e.p) << e.text;
        EXPECT_EQ(f->q, e.q) << e.text;
    }
    for (const char* bad : {"", "1.5", "5/4", "-1", "1/0", "0.1234567", "abc", "1.", "/4", "1/", "101%", "0.25 "}) {
        const auto f = parse_fraction(bad);
        ASSERT_FALSE(f) << bad;
        EXPECT_NE(f.error().message.find("is not a fraction from 0 to 1"), std::string::npos) << f.error().message;
    }
}

// Every segment of `sequence` (its boundaries as text): for every n up to a few periods, the counts add up to n,
// each within one of its share, and the numbers each takes (nth) are exactly the first n, once each.
void expect_exact_split(const std::vector<std::string>& boundaries) {
    std::string sequence;
    for (const auto& b : boundaries) {
        sequence += (sequence.empty() ? "" : ",") + b;
    }
    SCOPED_TRACE(sequence);
    std::vector<segment> parts;
    for (std::size_t i = 0; i + 1 < boundaries.size(); ++i) {
        parts.push_back(must(boundaries[i] + ":" + boundaries[i + 1], sequence));
    }
    const std::uint64_t period = parts.front().period();
    for (const auto& s : parts) {
        EXPECT_EQ(s.period(), period);
    }
    const std::uint64_t most = 3 * period + 7;
    std::vector<int> taken(most, 0);
    for (const auto& s : parts) {
        const double share = static_cast<double>(s.to().p) / static_cast<double>(s.to().q) -
                             static_cast<double>(s.from().p) / static_cast<double>(s.from().q);
        const std::uint64_t mine = s.count_below(most);
        std::uint64_t last = 0;
        for (std::uint64_t m = 0; m < mine; ++m) {
            const std::uint64_t n = s.nth(m);
            ASSERT_LT(n, most);
            EXPECT_TRUE(m == 0 || n > last) << "rising";
            last = n;
            ++taken[n];
            EXPECT_EQ(s.count_below(n), m) << s.text();
            EXPECT_EQ(s.count_below(n + 1), m + 1) << s.text();
        }
        for (std::uint64_t n = 0; n <= most; ++n) {
            EXPECT_NEAR(static_cast<double>(s.count_below(n)), share * static_cast<double>(n), 1.0)
                << s.text() << " n=" << n;
        }
    }
    for (std::uint64_t n = 0; n < most; ++n) {
        EXPECT_EQ(taken[n], 1) << "number " << n;
    }
    for (std::uint64_t n = 0; n <= most; ++n) {
        std::uint64_t sum = 0;
        for (const auto& s : parts) {
            sum += s.count_below(n);
        }
        EXPECT_EQ(sum, n);
    }
}

TEST(segment_test, a_sequence_s_segments_deal_every_number_once_in_proportion) {
    expect_exact_split({"0", "1"});
    expect_exact_split({"0", "1/2", "1"});
    expect_exact_split({"0", "1/3", "2/3", "1"});
    expect_exact_split({"0", "1/4", "1/2", "1"});
    expect_exact_split({"0", "0.1", "0.35", "1"});
    expect_exact_split({"0", "1/7", "3/5", "2/3", "1"});
    expect_exact_split({"0", "1/16", "1/8", "1/4", "1/2", "1"});
}

TEST(segment_test, random_sequences_of_many_pieces_keep_every_prefix_within_one) {
    // Up to ten pieces with denominators whose common multiple stays small (at most 1,680): a greedy "furthest
    // behind" dealing once left a piece 1.06 behind at n = 13 in sequences like these.
    const std::vector<std::uint64_t> denominators{2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 20, 24};
    std::uint64_t seed = 42;
    const auto next = [&](std::uint64_t below) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        return (seed >> 33) % below;
    };
    for (int trial = 0; trial < 30; ++trial) {
        const std::size_t pieces = 6 + static_cast<std::size_t>(next(5));
        std::vector<std::pair<std::uint64_t, std::uint64_t>> inner; // p/q in (0, 1), distinct
        while (inner.size() + 1 < pieces) {
            const std::uint64_t q = denominators[next(denominators.size())];
            const std::uint64_t p = 1 + next(q - 1);
            const bool seen =
                std::any_of(inner.begin(), inner.end(), [&](const auto& f) { return f.first * q == p * f.second; });
            if (!seen) {
                inner.emplace_back(p, q);
            }
        }
        std::sort(inner.begin(), inner.end(),
                  [](const auto& a, const auto& b) { return a.first * b.second < b.first * a.second; });
        std::vector<std::string> boundaries{"0"};
        for (const auto& [p, q] : inner) {
            boundaries.push_back(std::to_string(p) + "/" + std::to_string(q));
        }
        boundaries.push_back("1");
        expect_exact_split(boundaries);
    }
}

TEST(segment_test, i_of_n_takes_every_nth_from_i) {
    for (std::uint64_t n = 1; n <= 5; ++n) {
        for (std::uint64_t i = 0; i < n; ++i) {
            const segment s = must(std::to_string(i) + "/" + std::to_string(n));
            EXPECT_EQ(s.period(), n);
            for (std::uint64_t m = 0; m < 20; ++m) {
                EXPECT_EQ(s.nth(m), i + m * n);
            }
            EXPECT_EQ(s.count_below(10 * n + i), 10u);
        }
    }
    EXPECT_TRUE(must("0/1").whole());
    EXPECT_EQ(must("1/4").text(), "1/4:1/2");
}

TEST(segment_test, a_segment_may_span_pieces_of_its_sequence) {
    // The first half of a sequence in quarters: the numbers of its two first quarters.
    const segment half = must("0:1/2", "0,1/4,1/2,1");
    const segment first = must("0:1/4", "0,1/4,1/2,1");
    const segment second = must("1/4:1/2", "0,1/4,1/2,1");
    for (std::uint64_t n = 0; n < 50; ++n) {
        EXPECT_EQ(half.count_below(n), first.count_below(n) + second.count_below(n));
    }
}

TEST(segment_test, the_whole_plan_is_the_default) {
    const segment whole = must("");
    EXPECT_TRUE(whole.whole());
    EXPECT_EQ(whole.text(), "0:1");
    EXPECT_EQ(whole.count_below(12345), 12345u);
    EXPECT_EQ(whole.nth(777), 777u);
}

TEST(segment_test, mistakes_are_named) {
    struct expected {
        const char* segment;
        const char* sequence;
        const char* says;
    };
    for (const expected e : {
             expected{"1/2:1/4", "", "is empty"},
             {"1/4:1/4", "", "is empty"},
             {"0:1/3", "0,1/2,1", "is not in the sequence"},
             {"0:1/2", "0,1/2,1/4,1", "must rise"},
             {"0:1/2", "1/2,1", "goes from 0 to 1"},
             {"0:1/2", "0,1/2", "goes from 0 to 1"},
             {"0:1/1000003", "", "common denominator"},
             {"", "0,1/2,1", "needs --segment"},
             {"4/4", "", "I-th of N"},
             {"0/0", "", "I-th of N"},
             {"0/4", "0,1/2,1", "sets its own sequence"},
             {"0/8000", "", "at most 7071 equal segments"},
             {"0:x", "", "'x' is not a fraction"},
             {"0:1/2", "0,y,1", "bad --segment-sequence"},
             {"half", "", "A:B"},
         }) {
        const auto s = segment::parse(e.segment, e.sequence);
        ASSERT_FALSE(s) << e.segment << " " << e.sequence;
        EXPECT_NE(s.error().message.find(e.says), std::string::npos) << s.error().message;
    }
}

} // namespace
} // namespace hotpath::load
