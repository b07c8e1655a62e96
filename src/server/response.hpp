// The response a handler fills: http::response plus JSON bodies and RFC 9457 problem details.
#pragma once

#include "http/response.hpp"
#include "server/json_arena.hpp"

#include <string_view>

namespace boost::json {
class value;
}

namespace hotpath {

// Reused for the requests its connection's loop serves (see http::response): it belongs to a pooled request
// state (server/request_state.hpp), lent to one connection at a time. Lives on that loop.
class response : public http::response {
public:
    // Serialises `value` as the body, Content-Type application/json, with status `s`.
    void json(const boost::json::value& value, http::status s = http::status::ok);
    // An RFC 9457 problem+json body: {"type":"about:blank","title":<reason>,"status":<code>,"detail":...}.
    void problem(http::status s, std::string_view detail);

private:
    friend class server_connection;
    friend class request_state_pool;
    friend json_arena& arena_of(response& res);
    json_arena_ptr arena_; // made on the first JSON use (json_storage, json, problem)
};

} // namespace hotpath
