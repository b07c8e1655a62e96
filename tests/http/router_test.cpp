// Route matching: literals, parameters, precedence, trailing slash, 404 and 405 with Allow.
#include "http/router.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace hotpath::http {
namespace {

class router_test : public ::testing::Test {
protected:
    void SetUp() override {
        r_.add(method::get, "/", 0);
        r_.add(method::get, "/users", 1);
        r_.add(method::post, "/users", 2);
        r_.add(method::get, "/users/{id}", 3);
        r_.add(method::get, "/users/me", 4);
        r_.add(method::del, "/users/{id}", 5);
        r_.add(method::get, "/users/{id}/orders/{order}", 6);
        r_.add(method::get, "/files/{name}/raw", 7);
    }
    router r_;
    route_params p_;
};

TEST_F(router_test, literal_routes) {
    auto m = r_.match(method::get, "/", p_);
    EXPECT_EQ(m.status, route_status::found);
    EXPECT_EQ(m.handler, 0u);
    m = r_.match(method::post, "/users", p_);
    EXPECT_EQ(m.handler, 2u);
    EXPECT_EQ(p_.count, 0u);
}

TEST_F(router_test, parameters_are_captured) {
    auto m = r_.match(method::get, "/users/42/orders/7", p_);
    ASSERT_EQ(m.status, route_status::found);
    EXPECT_EQ(m.handler, 6u);
    EXPECT_EQ(p_.find("id"), "42");
    EXPECT_EQ(p_.find("order"), "7");
    EXPECT_EQ(p_.find("nope"), "");
}

TEST_F(router_test, literal_wins_over_parameter) {
    EXPECT_EQ(r_.match(method::get, "/users/me", p_).handler, 4u);
    EXPECT_EQ(r_.match(method::get, "/users/you", p_).handler, 3u);
}

TEST_F(router_test, trailing_slash_is_ignored_once) {
    EXPECT_EQ(r_.match(method::get, "/users/", p_).handler, 1u);
    EXPECT_EQ(r_.match(method::get, "/users/42/", p_).handler, 3u);
    EXPECT_EQ(r_.match(method::get, "/users//", p_).status, route_status::not_found);
}

TEST_F(router_test, empty_segment_does_not_match_a_parameter) {
    EXPECT_EQ(r_.match(method::get, "/files//raw", p_).status, route_status::not_found);
    EXPECT_EQ(r_.match(method::get, "/files/a/raw", p_).handler, 7u);
}

TEST_F(router_test, not_found) {
    EXPECT_EQ(r_.match(method::get, "/nope", p_).status, route_status::not_found);
    EXPECT_EQ(r_.match(method::get, "/users/1/2", p_).status, route_status::not_found);
    EXPECT_EQ(r_.match(method::get, "/users/1/orders", p_).status, route_status::not_found);
}

TEST_F(router_test, method_not_allowed_lists_allowed_methods) {
    auto m = r_.match(method::put, "/users", p_);
    EXPECT_EQ(m.status, route_status::method_not_allowed);
    EXPECT_EQ(m.allow, "GET, HEAD, POST");
    m = r_.match(method::post, "/users/3", p_);
    EXPECT_EQ(m.status, route_status::method_not_allowed);
    EXPECT_EQ(m.allow, "GET, HEAD, DELETE");
}

TEST_F(router_test, head_falls_back_to_get) {
    auto m = r_.match(method::head, "/users/3", p_);
    EXPECT_EQ(m.status, route_status::found);
    EXPECT_EQ(m.handler, 3u);
}

TEST_F(router_test, bad_patterns_are_refused) {
    router r;
    EXPECT_THROW(r.add(method::get, "users", 0), std::invalid_argument);
    EXPECT_THROW(r.add(method::get, "/a/{}", 0), std::invalid_argument);
    EXPECT_THROW(r.add(method::get, "/a/{x", 0), std::invalid_argument);
    EXPECT_THROW(r.add(method::get, "/a//b", 0), std::invalid_argument);
    EXPECT_THROW(r.add(method::other, "/a", 0), std::invalid_argument);
    r.add(method::get, "/a", 0);
    EXPECT_THROW(r.add(method::get, "/a", 1), std::invalid_argument);
    EXPECT_THROW(r.add(method::get, "/a/", 1), std::invalid_argument);
}

} // namespace
} // namespace hotpath::http
