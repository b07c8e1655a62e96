// Results in tests: a result as an assertion that shows its message when it failed, and the message of one that
// failed (empty when it did not), for checking what a refusal says.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace hotpath::test {

template <typename R>
::testing::AssertionResult ok(const R& r) {
    if (r) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << r.error().message;
}

template <typename R>
std::string failure_of(const R& r) {
    return r ? std::string() : r.error().message;
}

} // namespace hotpath::test
