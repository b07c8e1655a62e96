// The diagnosis of a service that reports nothing of itself: a queue told from the load against requests alone,
// the server's own time from Server-Timing where it is sent, errors, and what could not be seen.
#include <hotpath/lab/from_outside.hpp>

#include <gtest/gtest.h>

#include <string>

namespace hotpath::lab {
namespace {

outside_view view(double loaded_ms, double alone_ms) {
    outside_view v;
    v.load = {1'000, 5, 8, loaded_ms, loaded_ms * 2, 8};
    v.alone_ms = alone_ms;
    v.during_ms = loaded_ms;
    return v;
}

TEST(from_outside_test, a_mean_under_load_far_past_a_request_alone_is_a_queue) {
    const auto found = diagnose_from_outside(view(115.5, 16.7), "GET /checksum/20");
    ASSERT_EQ(found.size(), 1U);
    EXPECT_EQ(found.front().what, finding::kind::queueing);
    EXPECT_TRUE(found.front().problem);
    EXPECT_NE(found.front().text.find("against 16.70ms for a request alone (7x)"), std::string::npos)
        << found.front().text;
    EXPECT_NE(found.front().text.find("saturated"), std::string::npos) << found.front().text;
}

TEST(from_outside_test, a_mean_near_a_request_alone_is_nothing_the_load_can_see) {
    const auto found = diagnose_from_outside(view(9.2, 10.5), "GET /x");
    ASSERT_EQ(found.size(), 1U);
    EXPECT_EQ(found.front().what, finding::kind::healthy);
    EXPECT_FALSE(found.front().problem);
    // Twice as slow is not yet a queue worth a line (a busy machine does that); a microsecond handler waiting a
    // few microseconds more is not one either.
    EXPECT_FALSE(diagnose_from_outside(view(21, 10.5), "GET /x").front().problem);
    EXPECT_FALSE(diagnose_from_outside(view(0.2, 0.01), "GET /x").front().problem);
}

TEST(from_outside_test, server_timing_tells_waiting_before_the_server_from_a_server_that_slows) {
    outside_view waits = view(200, 20);
    waits.server_timing.push_back({"app", 18.0, 19.0}); // the server's own time did not grow: the rest is a queue
    auto found = diagnose_from_outside(waits, "GET /x");
    ASSERT_EQ(found.front().what, finding::kind::queueing);
    EXPECT_NE(found.front().text.find("Server-Timing 'app' reads 19.00ms under load against 18.00ms alone"),
              std::string::npos)
        << found.front().text;
    EXPECT_NE(found.front().text.find("91 % of the time under load is outside the server's own measure"),
              std::string::npos)
        << found.front().text;

    outside_view slows = view(200, 20);
    slows.server_timing.push_back({"db", 2.0, 3.0});
    slows.server_timing.push_back({"app", 18.0, 190.0}); // the longest metric is the one judged
    found = diagnose_from_outside(slows, "GET /x");
    ASSERT_EQ(found.front().what, finding::kind::queueing);
    EXPECT_NE(found.front().text.find("the server's own time grew with the load"), std::string::npos)
        << found.front().text;
    EXPECT_EQ(outside_lacking(slows).size(), 1U); // Server-Timing was sent
    EXPECT_EQ(outside_lacking(waits).size(), 1U);
    EXPECT_EQ(outside_lacking(view(1, 1)).size(), 2U);
}

TEST(from_outside_test, five_hundreds_are_errors_before_the_queue) {
    outside_view v = view(200, 20);
    v.server_errors = 50;
    const auto found = diagnose_from_outside(v, "GET /x");
    ASSERT_EQ(found.size(), 2U);
    EXPECT_EQ(found[0].what, finding::kind::server_errors);
    EXPECT_NE(found[0].text.find("50 of 1,000 answers of GET /x were 5xx (5 %)"), std::string::npos) << found[0].text;
    EXPECT_EQ(found[1].what, finding::kind::queueing);
}

} // namespace
} // namespace hotpath::lab
