// JSON bodies and problem details through Boost.JSON, on a per-connection arena.
#include <hotpath/server/json.hpp>

#include <hotpath/server/json_arena.hpp>

#include <array>
#include <optional>

namespace hotpath {

// Values built for one response come from `resource`, which starts on an inline block and is released
// after each request. Made on a response's first JSON use and kept with its pooled request state.
struct json_arena {
    static constexpr std::size_t inline_bytes = 4096;

    json_arena() { resource.emplace(block.data(), block.size()); }

    alignas(std::max_align_t) std::array<unsigned char, inline_bytes> block{};
    // Made afresh for each request (reset_json_arena), not release()d: see there.
    std::optional<boost::json::monotonic_resource> resource;
    boost::json::serializer serializer; // its nesting stack is kept between requests
};

void json_arena_deleter::operator()(json_arena* arena) const noexcept {
    delete arena;
}

json_arena_ptr make_json_arena() {
    return json_arena_ptr(new json_arena());
}

void reset_json_arena(json_arena& arena) noexcept {
    // Boost.JSON 1.81's release() frees the blocks but keeps the doubled size of the next one, so each request
    // that spills past the inline block asked for twice as much as the last, until bad_alloc after ~17 of them
    // (a 500 for every later large JSON response on that arena). A fresh resource starts again from the inline
    // block's size, as LWG 3120 has the standard's monotonic_buffer_resource::release() do.
    arena.resource.emplace(arena.block.data(), arena.block.size());
}

json_arena& arena_of(response& res) {
    if (res.arena_ == nullptr) {
        res.arena_ = make_json_arena();
    }
    return *res.arena_;
}

boost::json::storage_ptr json_storage(response& res) {
    return boost::json::storage_ptr(&*arena_of(res).resource);
}

void response::json(const boost::json::value& value, http::status s) {
    status(s);
    content_type("application/json");
    auto& sr = arena_of(*this).serializer;
    std::string& out = body();
    out.clear();
    sr.reset(&value);
    // Through a stack buffer: growing the body string to its capacity first would zero it every time.
    char chunk[1024];
    while (!sr.done()) {
        out.append(sr.read(chunk, sizeof chunk));
    }
}

void response::problem(http::status s, std::string_view detail) {
    boost::json::object o(json_storage(*this));
    o.reserve(4);
    o.emplace("type", "about:blank");
    o.emplace("title", http::reason_phrase(s));
    o.emplace("status", http::to_int(s));
    o.emplace("detail", detail);
    json(o, s);
    content_type("application/problem+json");
}

} // namespace hotpath
