// The response a handler fills: http::response plus JSON bodies and RFC 9457 problem details.
#pragma once

#include "http/response.hpp"

#include <string_view>

namespace boost::json {
class value;
}

namespace hotpath {

struct json_arena;

// Reused for every request of one connection (see http::response). Lives on the connection's loop.
class response : public http::response {
public:
    // Serialises `value` as the body, Content-Type application/json, with status `s`.
    void json(const boost::json::value& value, http::status s = http::status::ok);
    // An RFC 9457 problem+json body: {"type":"about:blank","title":<reason>,"status":<code>,"detail":...}.
    void problem(http::status s, std::string_view detail);

private:
    friend class server_connection;
    friend json_arena& arena_of(response& res) noexcept;
    json_arena* arena_ = nullptr;
};

} // namespace hotpath
