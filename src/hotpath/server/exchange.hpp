// What a request's streamed body calls on whatever carries the request: an HTTP/1.1 connection (server_connection),
// or one stream of an HTTP/2 connection (h2_connection). request::read_body and response::write go through it, so
// that a handler never knows which protocol it answers. Internal: not installed.
#pragma once

#include <hotpath/core/result.hpp>

#include <coroutine>
#include <string_view>
#include <system_error>

namespace hotpath {

class exchange {
public:
    // request::read_body: whether the next piece (or the end, or an error) is here; waiting for it; taking it.
    virtual bool body_piece_ready() noexcept = 0;
    virtual void wait_body_piece(std::coroutine_handle<> reader) noexcept = 0;
    virtual result<std::string_view> take_body_piece() noexcept = 0;
    // response::write: sending a piece; whether there is room for more; waiting for room.
    virtual std::error_code write_body_piece(std::string_view piece) = 0;
    virtual bool write_room() const noexcept = 0;
    virtual void wait_write_room(std::coroutine_handle<> writer) noexcept = 0;

protected:
    ~exchange() = default;
};

} // namespace hotpath
