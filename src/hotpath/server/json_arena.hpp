// The per-response JSON arena behind response::json and json_storage, opaque to the connection.
#pragma once

#include <memory>

namespace hotpath {

struct json_arena;

struct json_arena_deleter {
    void operator()(json_arena* arena) const noexcept;
};
using json_arena_ptr = std::unique_ptr<json_arena, json_arena_deleter>;

json_arena_ptr make_json_arena();
// Frees what the last request built; keeps the arena's first block.
void reset_json_arena(json_arena& arena) noexcept;

} // namespace hotpath
