// Route matching: literals, parameters, precedence, trailing slash, 404 and 405 with Allow, any-method routes.
#include <hotpath/http/router.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

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

// Route K of a generated API: /api/v1/resourceK/{id}/items/{item} (GET, handler 3K), /api/v1/resourceK (GET, 3K+1)
// and /api/v1/resourceK/{id} (DELETE, 3K+2).
TEST(router_many_routes, each_of_a_thousand_generated_routes_matches_with_its_params) {
    constexpr std::uint32_t count = 1000;
    router r;
    for (std::uint32_t k = 0; k < count; ++k) {
        const std::string base = "/api/v1/resource" + std::to_string(k);
        r.add(method::get, base + "/{id}/items/{item}", 3 * k);
        r.add(method::get, base, 3 * k + 1);
        r.add(method::del, base + "/{id}", 3 * k + 2);
    }
    route_params p;
    for (std::uint32_t k = 0; k < count; ++k) {
        const std::string base = "/api/v1/resource" + std::to_string(k);
        const std::string id = "id" + std::to_string(k * 7);
        const std::string item = std::to_string(k * 13);
        const std::string path = base + "/" + id + "/items/" + item; // the params are views into it
        auto m = r.match(method::get, path, p);
        ASSERT_EQ(m.status, route_status::found) << k;
        EXPECT_EQ(m.handler, 3 * k) << k;
        ASSERT_EQ(p.count, 2u) << k;
        EXPECT_EQ(p.find("id"), id) << k;
        EXPECT_EQ(p.find("item"), item) << k;

        m = r.match(method::get, base, p);
        EXPECT_EQ(m.handler, 3 * k + 1) << k;
        EXPECT_EQ(p.count, 0u) << k;

        const std::string short_path = base + "/" + id;
        m = r.match(method::del, short_path, p);
        EXPECT_EQ(m.handler, 3 * k + 2) << k;
        EXPECT_EQ(p.find("id"), id) << k;

        m = r.match(method::get, short_path, p);
        EXPECT_EQ(m.status, route_status::method_not_allowed) << k;
        EXPECT_EQ(m.allow, "DELETE") << k;

        EXPECT_EQ(r.match(method::get, base + "/" + id + "/items", p).status, route_status::not_found) << k;
        EXPECT_EQ(r.match(method::get, base + "/" + id + "/things/1", p).status, route_status::not_found) << k;
    }
    EXPECT_EQ(r.match(method::get, "/api/v1/resource1000/1/items/2", p).status, route_status::not_found);
    EXPECT_EQ(r.match(method::get, "/api/v1/resource/1/items/2", p).status, route_status::not_found);
    EXPECT_EQ(r.match(method::get, "/api/v2/resource1/1/items/2", p).status, route_status::not_found);
}

// Precedence is by the number of literal segments in the whole pattern, then by registration: a literal at one
// depth does not beat a pattern with more literals elsewhere.
TEST(router_precedence, more_literal_segments_win_whatever_their_depth) {
    router r;
    r.add(method::get, "/a/{y}/{z}", 1);
    r.add(method::get, "/{x}/b/c", 2);
    route_params p;
    auto m = r.match(method::get, "/a/b/c", p);
    EXPECT_EQ(m.handler, 2u);
    EXPECT_EQ(p.find("x"), "a");
    EXPECT_EQ(r.match(method::get, "/a/b/d", p).handler, 1u);
    EXPECT_EQ(r.match(method::get, "/q/b/c", p).handler, 2u);
}

TEST(router_precedence, a_literal_beats_a_parameter_at_the_same_depth_whatever_the_order) {
    router r;
    r.add(method::get, "/a/{y}/{z}", 1);
    r.add(method::get, "/a/b/{z}", 2);
    r.add(method::get, "/a/b/c/{w}", 3);
    r.add(method::get, "/a/{y}/c/{w}", 4);
    r.add(method::get, "/a/b/c/d", 5);
    route_params p;
    EXPECT_EQ(r.match(method::get, "/a/b/c", p).handler, 2u);
    EXPECT_EQ(r.match(method::get, "/a/q/c", p).handler, 1u);
    EXPECT_EQ(r.match(method::get, "/a/b/c/e", p).handler, 3u);
    EXPECT_EQ(p.find("w"), "e");
    EXPECT_EQ(r.match(method::get, "/a/q/c/e", p).handler, 4u);
    EXPECT_EQ(r.match(method::get, "/a/b/c/d", p).handler, 5u);
    EXPECT_EQ(p.count, 0u);
}

TEST(router_precedence, equal_literal_counts_go_to_the_earlier_registration) {
    router first;
    first.add(method::get, "/{a}/y/{c}", 1);
    first.add(method::get, "/x/{b}/{c}", 2);
    router second;
    second.add(method::get, "/x/{b}/{c}", 2);
    second.add(method::get, "/{a}/y/{c}", 1);
    route_params p;
    EXPECT_EQ(first.match(method::get, "/x/y/z", p).handler, 1u);
    EXPECT_EQ(p.find("a"), "x");
    EXPECT_EQ(second.match(method::get, "/x/y/z", p).handler, 2u);
    EXPECT_EQ(p.find("b"), "y");
}

TEST(router_precedence, backtracks_when_a_literal_branch_dead_ends) {
    router r;
    r.add(method::get, "/a/b/c", 1);
    r.add(method::get, "/a/{x}/d", 2);
    r.add(method::get, "/a/b/c/d", 3);
    r.add(method::get, "/{w}/b/c/e", 4);
    route_params p;
    auto m = r.match(method::get, "/a/b/d", p);
    ASSERT_EQ(m.status, route_status::found);
    EXPECT_EQ(m.handler, 2u);
    EXPECT_EQ(p.find("x"), "b");
    m = r.match(method::get, "/a/b/c/e", p);
    ASSERT_EQ(m.status, route_status::found);
    EXPECT_EQ(m.handler, 4u);
    EXPECT_EQ(p.find("w"), "a");
    EXPECT_EQ(r.match(method::get, "/a/b/c/f", p).status, route_status::not_found);
}

// The route is chosen by path alone; its methods then decide between the handler and 405.
TEST(router_precedence, the_path_chooses_the_route_before_the_method) {
    router r;
    r.add(method::put, "/a/b", 1);
    r.add(method::get, "/a/{x}", 2);
    r.add(method::post, "/{y}/c", 3);
    route_params p;
    auto m = r.match(method::get, "/a/b", p);
    EXPECT_EQ(m.status, route_status::method_not_allowed);
    EXPECT_EQ(m.allow, "PUT");
    m = r.match(method::post, "/a/c", p);
    EXPECT_EQ(m.status, route_status::method_not_allowed);
    EXPECT_EQ(m.allow, "GET, HEAD");
    EXPECT_EQ(r.match(method::post, "/z/c", p).handler, 3u);
}

TEST(router_paths, a_path_without_its_leading_slash_matches_nothing) {
    router r;
    r.add(method::get, "/a/{x}", 1);
    r.add(method::get, "/b", 2);
    route_params p;
    EXPECT_EQ(r.match(method::get, "xa/1", p).status, route_status::not_found);
    EXPECT_EQ(r.match(method::get, "b", p).status, route_status::not_found);
    EXPECT_EQ(r.match(method::get, "", p).status, route_status::not_found);
    EXPECT_EQ(r.match(method::get, "/a/1", p).handler, 1u);
}

TEST(router_any_method, serves_every_method_and_custom_tokens) {
    router r;
    r.add_any("/echo", 1);
    r.add_any("/echo/{what}", 2);
    route_params p;
    for (const method m : {method::get, method::head, method::post, method::put, method::del, method::patch,
                           method::options, method::trace, method::other}) {
        auto match = r.match(m, "/echo", p);
        ASSERT_EQ(match.status, route_status::found) << to_string(m);
        EXPECT_EQ(match.handler, 1u) << to_string(m);
        match = r.match(m, "/echo/x", p);
        EXPECT_EQ(match.handler, 2u) << to_string(m);
        EXPECT_EQ(p.find("what"), "x");
    }
}

TEST(router_any_method, a_method_of_its_own_and_head_to_get_come_first) {
    router r;
    r.add(method::get, "/x", 1);
    r.add(method::post, "/x", 2);
    r.add_any("/x", 3);
    route_params p;
    EXPECT_EQ(r.match(method::get, "/x", p).handler, 1u);
    EXPECT_EQ(r.match(method::head, "/x", p).handler, 1u);
    EXPECT_EQ(r.match(method::post, "/x", p).handler, 2u);
    EXPECT_EQ(r.match(method::put, "/x", p).handler, 3u);
    EXPECT_EQ(r.match(method::other, "/x", p).handler, 3u);
}

TEST_F(router_test, method_not_allowed_is_unchanged_beside_any_method_routes) {
    r_.add_any("/echo", 10);
    r_.add_any("/users/{id}/any", 11);
    r_.add_any("/files/{name}", 12);
    auto m = r_.match(method::put, "/users", p_);
    EXPECT_EQ(m.status, route_status::method_not_allowed);
    EXPECT_EQ(m.allow, "GET, HEAD, POST");
    m = r_.match(method::other, "/users/3", p_);
    EXPECT_EQ(m.status, route_status::method_not_allowed);
    EXPECT_EQ(m.allow, "GET, HEAD, DELETE");
    EXPECT_EQ(r_.match(method::put, "/users/3/any", p_).handler, 11u);
    EXPECT_EQ(r_.match(method::put, "/files/a", p_).handler, 12u);
    EXPECT_EQ(r_.match(method::get, "/files/a/raw", p_).handler, 7u);
    EXPECT_EQ(r_.match(method::post, "/files/a/raw", p_).status, route_status::method_not_allowed);
    EXPECT_EQ(r_.match(method::del, "/echo", p_).handler, 10u);
}

TEST(router_any_method, registered_twice_is_refused) {
    router r;
    r.add_any("/a", 0);
    EXPECT_THROW(r.add_any("/a/", 1), std::invalid_argument);
    EXPECT_THROW(r.add_any("/a/{", 1), std::invalid_argument);
    r.add(method::get, "/a", 2);
    route_params p;
    EXPECT_EQ(r.match(method::get, "/a", p).handler, 2u);
    EXPECT_EQ(r.match(method::put, "/a", p).handler, 0u);
}

} // namespace
} // namespace hotpath::http
