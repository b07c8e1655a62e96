// hotpath::errc: every value is an error (never 0, which std::error_code reads as success) with its own message.
#include <hotpath/core/error.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace hotpath {
namespace {

// invalid_json is the last value.
TEST(error_test, every_value_is_an_error_with_its_own_message) {
    std::set<std::string> messages;
    for (int v = static_cast<int>(errc::bad_request); v <= static_cast<int>(errc::invalid_json); ++v) {
        const std::error_code ec = static_cast<errc>(v);
        EXPECT_TRUE(ec) << v << " reads as an error";
        EXPECT_EQ(ec.category().name(), std::string("hotpath"));
        EXPECT_NE(ec.message(), "unknown hotpath error") << v;
        messages.insert(ec.message());
    }
    EXPECT_EQ(messages.size(), static_cast<std::size_t>(errc::invalid_json)) << "one message per value";
    EXPECT_EQ(std::error_code(errc::timeout).message(), "timed out");
}

} // namespace
} // namespace hotpath
