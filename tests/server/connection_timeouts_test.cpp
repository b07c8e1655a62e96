// connection_timeouts: each limit judged on the tick at the times the limits say, walked with the loop's clock's
// time points (no sleeping): the headers and keep-alive deadlines, the body rate after its grace, the response rate
// as progress, a lingering close's end.
#include <hotpath/server/connection_timeouts.hpp>

#include <gtest/gtest.h>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using expired = connection_timeouts::expired;
using waiting = connection_timeouts::waiting;

const http::limits limits{}; // Kestrel's: headers 30 s, keep-alive 130 s, 240 B/s after 5 s each way
const net::clock::time_point t0 = net::clock::time_point{} + 1000s;

expired tick(connection_timeouts& t, net::clock::time_point at, std::optional<std::uint64_t> acknowledged = {},
             bool paused = false) {
    return t.check(limits, at, acknowledged, paused);
}

TEST(connection_timeouts, a_new_connection_owes_its_first_head_within_the_headers_timeout) {
    connection_timeouts t(limits, t0);
    EXPECT_EQ(t.what(), waiting::headers);
    EXPECT_EQ(tick(t, t0 + 29s), expired::nothing);
    EXPECT_EQ(tick(t, t0 + 30s), expired::headers);
}

TEST(connection_timeouts, bytes_on_an_idle_connection_start_the_headers_timeout_from_their_arrival) {
    connection_timeouts t(limits, t0);
    t.wait_idle(limits, t0);
    EXPECT_EQ(tick(t, t0 + 129s), expired::nothing);
    t.received(limits, t0 + 100s, 10);
    EXPECT_EQ(t.what(), waiting::headers);
    EXPECT_EQ(tick(t, t0 + 129s), expired::nothing) << "the keep-alive deadline no longer counts";
    EXPECT_EQ(tick(t, t0 + 130s), expired::headers);

    connection_timeouts idle(limits, t0);
    idle.wait_idle(limits, t0);
    EXPECT_EQ(tick(idle, t0 + 130s), expired::idle);
}

TEST(connection_timeouts, a_body_must_keep_the_minimum_rate_after_its_grace_period) {
    connection_timeouts t(limits, t0);
    t.wait_body(t0, 0);
    EXPECT_EQ(tick(t, t0 + 5s), expired::nothing) << "within the grace period";
    t.received(limits, t0 + 5s, 240 * 6);
    EXPECT_EQ(tick(t, t0 + 6s), expired::nothing) << "240 B/s for 6 s arrived";
    EXPECT_EQ(tick(t, t0 + 7s), expired::body_rate) << "a second behind";

    connection_timeouts paused(limits, t0);
    paused.wait_body(t0, 0);
    EXPECT_EQ(tick(paused, t0 + 10s, {}, true), expired::nothing) << "not reading: nothing is owed";
    EXPECT_EQ(tick(paused, t0 + 15s), expired::nothing) << "measured afresh from the paused tick";
    EXPECT_EQ(tick(paused, t0 + 17s), expired::body_rate);

    connection_timeouts done(limits, t0);
    done.wait_body(t0, 0);
    done.body_done();
    EXPECT_EQ(done.what(), waiting::none);
    EXPECT_EQ(tick(done, t0 + 60s), expired::nothing);
    done.wait_idle(limits, t0);
    done.body_done();
    EXPECT_EQ(done.what(), waiting::idle) << "body_done leaves other waits alone";
}

TEST(connection_timeouts, a_client_that_stops_taking_responses_runs_out_of_credit_after_the_grace_period) {
    connection_timeouts t(limits, t0);
    t.wait_nothing();
    // 1,200 bytes of credit (240 B/s × 5 s); a stalled client loses 240 a second.
    EXPECT_EQ(tick(t, t0, 0), expired::nothing);
    EXPECT_EQ(tick(t, t0 + 5s, 0), expired::nothing);
    EXPECT_EQ(tick(t, t0 + 6s, 0), expired::response_rate);

    connection_timeouts reading(limits, t0);
    reading.wait_nothing();
    std::uint64_t acknowledged = 0;
    for (int s = 0; s <= 60; ++s) {
        EXPECT_EQ(tick(reading, t0 + std::chrono::seconds(s), acknowledged), expired::nothing) << s << " s";
        acknowledged += 240;
    }

    connection_timeouts fast_then_stalled(limits, t0);
    fast_then_stalled.wait_nothing();
    EXPECT_EQ(tick(fast_then_stalled, t0, 0), expired::nothing);
    EXPECT_EQ(tick(fast_then_stalled, t0 + 1s, 10'000'000), expired::nothing);
    EXPECT_EQ(tick(fast_then_stalled, t0 + 6s, 10'000'000), expired::nothing);
    EXPECT_EQ(tick(fast_then_stalled, t0 + 7s, 10'000'000), expired::response_rate)
        << "credit never exceeds the grace period's worth, however fast it read before";

    connection_timeouts written(limits, t0);
    written.wait_nothing();
    EXPECT_EQ(tick(written, t0, 0), expired::nothing);
    EXPECT_EQ(tick(written, t0 + 4s, 0), expired::nothing);
    EXPECT_EQ(tick(written, t0 + 5s), expired::nothing) << "nothing to write: the full credit again";
    EXPECT_EQ(tick(written, t0 + 6s, 0), expired::nothing);
    EXPECT_EQ(tick(written, t0 + 11s, 0), expired::nothing);
    EXPECT_EQ(tick(written, t0 + 12s, 0), expired::response_rate);

    http::limits off = limits;
    off.min_response_bytes_per_second = 0;
    connection_timeouts unlimited(off, t0);
    unlimited.wait_nothing();
    EXPECT_EQ(unlimited.check(off, t0, 0, false), expired::nothing);
    EXPECT_EQ(unlimited.check(off, t0 + 3600s, 0, false), expired::nothing);
}

TEST(connection_timeouts, a_lingering_close_ends_at_its_deadline) {
    connection_timeouts t(limits, t0);
    t.wait_linger(t0, 2s);
    t.received(limits, t0 + 1s, 100); // discarded bytes do not extend it
    EXPECT_EQ(tick(t, t0 + 1s), expired::nothing);
    EXPECT_EQ(tick(t, t0 + 2s), expired::linger);
}

} // namespace
} // namespace hotpath
