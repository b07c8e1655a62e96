// edit_distance against distances worked out by hand.
#include <hotpath/core/spelling.hpp>

#include <gtest/gtest.h>

namespace hotpath {
namespace {

TEST(spelling_test, edit_distance_counts_single_character_edits) {
    EXPECT_EQ(edit_distance("", ""), 0u);
    EXPECT_EQ(edit_distance("", "abc"), 3u);
    EXPECT_EQ(edit_distance("abc", ""), 3u);
    EXPECT_EQ(edit_distance("--conections", "--connections"), 1u); // an insertion
    EXPECT_EQ(edit_distance("--thread", "--threads"), 1u);
    EXPECT_EQ(edit_distance("kitten", "sitting"), 3u); // two substitutions and an insertion
    EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
    EXPECT_EQ(edit_distance("threshold", "thresholds"), edit_distance("thresholds", "threshold"));
}

} // namespace
} // namespace hotpath
