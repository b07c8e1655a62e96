// result<T>: construction from values and errors, and value() on an error terminating with a message.
#include <hotpath/core/error.hpp>
#include <hotpath/core/result.hpp>

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

namespace hotpath {
namespace {

// A result<T> for T that an integer or an enum converts to must still pick the right constructor.
static_assert(std::is_constructible_v<result<int>, errc>);
static_assert(std::is_constructible_v<result<int>, int>);
static_assert(std::is_constructible_v<result<bool>, errc>);
static_assert(std::is_constructible_v<result<bool>, bool>);
static_assert(std::is_constructible_v<result<std::string>, errc>);
static_assert(std::is_constructible_v<result<std::string>, std::string>);
static_assert(std::is_constructible_v<result<void>, errc>);
static_assert(std::is_convertible_v<errc, result<int>>, "return errc::x; from a function returning result<int>");
static_assert(std::is_convertible_v<std::error_code, result<int>>);

result<int> parse_digit(char c) {
    if (c < '0' || c > '9') {
        return errc::bad_request;
    }
    return c - '0';
}

result<void> must_be_open(bool open) {
    if (!open) {
        return errc::closed;
    }
    return {};
}

result<std::string> greeting(bool late) {
    if (late) {
        return errc::timeout;
    }
    return std::string("hello");
}

result<bool> is_even(int v) {
    if (v < 0) {
        return errc::invalid_url;
    }
    return v % 2 == 0;
}

TEST(result_test, return_errc_gives_that_error) {
    EXPECT_EQ(parse_digit('x').error(), errc::bad_request);
    ASSERT_TRUE(parse_digit('7'));
    EXPECT_EQ(parse_digit('7').value(), 7);
    EXPECT_EQ(parse_digit('0').value(), 0) << "0 is a value, not an error";

    EXPECT_EQ(must_be_open(false).error(), errc::closed);
    EXPECT_TRUE(must_be_open(true));

    EXPECT_EQ(greeting(true).error(), errc::timeout);
    EXPECT_EQ(greeting(false).value(), "hello");

    EXPECT_EQ(is_even(-1).error(), errc::invalid_url);
    ASSERT_TRUE(is_even(3));
    EXPECT_FALSE(is_even(3).value()) << "false is a value, not an error";
}

TEST(result_test, constructs_from_error_code_as_before) {
    const result<int> r = make_error_code(errc::reset);
    EXPECT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::reset);
    const result<void> v = std::make_error_code(std::errc::io_error);
    EXPECT_EQ(v.error(), std::errc::io_error);
    EXPECT_EQ(result<int>(5).error(), std::error_code{}) << "a value holds no error";
}

TEST(result_test, accessors_reach_the_value) {
    result<std::string> r = std::string("abc");
    EXPECT_EQ(*r, "abc");
    EXPECT_EQ(r->size(), 3u);
    std::string moved = std::move(r).value();
    EXPECT_EQ(moved, "abc");
}

TEST(result_death_test, value_on_an_error_aborts_with_the_message) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            const result<int> r = errc::timeout;
            (void)r.value();
        },
        "^hotpath: result::value\\(\\) called on an error: timed out \\(hotpath:[0-9]+\\)\n$");
    EXPECT_DEATH(
        {
            result<std::string> r = errc::refused;
            (void)r->size();
        },
        "called on an error: connection refused");
    EXPECT_DEATH(
        {
            result<int> r = std::make_error_code(std::errc::io_error);
            (void)*r;
        },
        "called on an error: .* \\(generic:[0-9]+\\)");
    EXPECT_DEATH(
        {
            result<int> r = errc::closed;
            (void)std::move(r).value();
        },
        "called on an error: connection closed");
}

TEST(result_test, a_problem_carries_its_code_and_its_message) {
    const result<int, problem> bad = problem{errc::invalid_url, "bad port in the URL: '80a'"};
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().code, errc::invalid_url);
    EXPECT_EQ(bad.error().message, "bad port in the URL: '80a'");
    const result<int, problem> good = 7;
    ASSERT_TRUE(good.has_value());
    EXPECT_EQ(*good, 7);
    // A bare code gets the code's own message.
    const result<void, problem> closed = problem{make_error_code(errc::closed)};
    ASSERT_FALSE(closed.has_value());
    EXPECT_EQ(closed.error().message, "connection closed");
    // An error code of 0 is still success for result<void>; a problem is always a failure.
    EXPECT_TRUE(result<void>(std::error_code{}).has_value());
    EXPECT_FALSE((result<void, problem>(problem{})).has_value());
    std::string moved_out = result<int, problem>(problem{errc::timeout, "slow"}).error().message;
    EXPECT_EQ(moved_out, "slow");
}

TEST(result_death_test, value_on_a_problem_aborts_with_its_message) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    using told = result<int, problem>; // no comma inside the macro's argument
    EXPECT_DEATH(
        {
            const told r = problem(errc::invalid_url, "the URL has no host");
            (void)r.value();
        },
        "^hotpath: result::value\\(\\) called on an error: the URL has no host \\(hotpath:[0-9]+\\)\n$");
}

} // namespace
} // namespace hotpath
