// Route table: method + path pattern ("/users/{id}") → handler id, with path parameters captured as views.
#pragma once

#include <hotpath/http/method.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::http {

// Path parameters captured by a match: views into the request path, valid as long as it is.
struct route_params {
    static constexpr std::size_t capacity = 8;
    std::array<std::string_view, capacity> names{};
    std::array<std::string_view, capacity> values{};
    std::size_t count = 0;

    // The value of parameter `name`, or an empty view when the route has none by that name.
    std::string_view find(std::string_view name) const noexcept;
};

enum class route_status : std::uint8_t { found, not_found, method_not_allowed };

struct route_match {
    route_status status = route_status::not_found;
    std::uint32_t handler = 0; // valid when found
    std::string_view allow;    // when method_not_allowed: the Allow field value, e.g. "GET, HEAD, POST"
};

// Built once at start-up (add and add_any may throw std::invalid_argument on a bad or duplicate pattern), then
// read by every loop concurrently: match() is const, allocates nothing and throws nothing.
//
// Patterns are absolute paths of '/'-separated segments; a segment is literal text or `{name}`, which
// matches one non-empty segment. Among the routes whose pattern matches the path, the one with the most
// literal segments wins (so a literal route beats every parameterised one), then the earlier registration;
// the route is chosen by path alone, and its methods then give the handler or 405. One trailing '/' in the
// request path is ignored ("/users/" matches "/users"). A route serves a method with its handler for that
// method; without one, HEAD falls back to GET, then every method to the route's any-method handler (add_any).
class router {
public:
    router();
    ~router();
    router(router&&) noexcept;
    router& operator=(router&&) noexcept;

    // Registers `handler` for method `m` on `pattern`; throws std::invalid_argument for method::other, which
    // names no method (use add_any).
    void add(method m, std::string_view pattern, std::uint32_t handler);
    // Registers `handler` for every method on `pattern`, method::other included: such a route never answers 405.
    void add_any(std::string_view pattern, std::uint32_t handler);

    // The route for the path of an origin-form request target (starting with '/', query removed); any other
    // path matches nothing. Captured params are views into `path`. Takes time that grows with the number of
    // segments in `path`, not with the number of routes (a walk over a tree of segments).
    route_match match(method m, std::string_view path, route_params& params) const noexcept;

private:
    struct route;
    struct node;
    struct table;
    std::unique_ptr<table> table_;
};

} // namespace hotpath::http
