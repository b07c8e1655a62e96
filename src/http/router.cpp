// Route matching: hashed lookup for literal paths, a scan of parameterised patterns for the rest.
#include "http/router.hpp"

#include <stdexcept>
#include <unordered_map>

namespace hotpath::http {

std::string_view route_params::find(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < count; ++i) {
        if (names[i] == name) {
            return values[i];
        }
    }
    return {};
}

namespace {

struct segment {
    std::string text; // literal text, or the parameter name
    bool is_param = false;
};

struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

constexpr std::int32_t no_handler = -1;

std::string_view strip_trailing_slash(std::string_view path) noexcept {
    if (path.size() > 1 && path.back() == '/') {
        path.remove_suffix(1);
    }
    return path;
}

// Splits off the next segment of a path that starts with '/'; returns false at the end.
bool next_segment(std::string_view& rest, std::string_view& seg) noexcept {
    if (rest.empty()) {
        return false;
    }
    rest.remove_prefix(1); // the '/'
    const auto slash = rest.find('/');
    seg = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
    return true;
}

} // namespace

struct router::route {
    std::string pattern;
    std::vector<segment> segments;
    std::array<std::int32_t, method_count> handlers{};
    std::string allow;
    std::size_t literal_segments = 0;

    route() { handlers.fill(no_handler); }

    void rebuild_allow() {
        allow.clear();
        for (std::size_t i = 0; i < method_count; ++i) {
            const bool has =
                handlers[i] != no_handler || (static_cast<method>(i) == method::head &&
                                              handlers[static_cast<std::size_t>(method::get)] != no_handler);
            if (has) {
                if (!allow.empty()) {
                    allow += ", ";
                }
                allow += to_string(static_cast<method>(i));
            }
        }
    }

    route_match resolve(method m) const noexcept {
        auto h = handlers[static_cast<std::size_t>(m)];
        if (h == no_handler && m == method::head) {
            h = handlers[static_cast<std::size_t>(method::get)];
        }
        if (h == no_handler) {
            return {route_status::method_not_allowed, 0, allow};
        }
        return {route_status::found, static_cast<std::uint32_t>(h), {}};
    }
};

struct router::table {
    std::vector<std::unique_ptr<route>> routes;
    std::unordered_map<std::string, route*, string_hash, std::equal_to<>> literal;
    std::vector<route*> parameterised;
};

router::router() : table_(std::make_unique<table>()) {}
router::~router() = default;
router::router(router&&) noexcept = default;
router& router::operator=(router&&) noexcept = default;

void router::add(method m, std::string_view pattern, std::uint32_t handler) {
    if (pattern.empty() || pattern.front() != '/') {
        throw std::invalid_argument("route pattern must start with '/': " + std::string(pattern));
    }
    if (m == method::other) {
        throw std::invalid_argument("route needs a standard method: " + std::string(pattern));
    }
    const std::string_view normalised = strip_trailing_slash(pattern);
    std::vector<segment> segments;
    std::size_t literals = 0;
    std::string_view rest = normalised == "/" ? std::string_view{} : normalised;
    std::string_view seg;
    while (next_segment(rest, seg)) {
        if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
            const auto name = seg.substr(1, seg.size() - 2);
            if (name.empty() || name.find_first_of("{}/") != std::string_view::npos) {
                throw std::invalid_argument("bad parameter in route pattern: " + std::string(pattern));
            }
            segments.push_back({std::string(name), true});
        } else {
            if (seg.empty() || seg.find_first_of("{}") != std::string_view::npos) {
                throw std::invalid_argument("bad segment in route pattern: " + std::string(pattern));
            }
            segments.push_back({std::string(seg), false});
            ++literals;
        }
    }
    const std::size_t params = segments.size() - literals;
    if (params > route_params::capacity) {
        throw std::invalid_argument("too many parameters in route pattern: " + std::string(pattern));
    }

    route* r = nullptr;
    for (auto& existing : table_->routes) {
        if (existing->pattern == normalised) {
            r = existing.get();
        }
    }
    if (r == nullptr) {
        auto owned = std::make_unique<route>();
        owned->pattern = std::string(normalised);
        owned->segments = std::move(segments);
        owned->literal_segments = literals;
        r = owned.get();
        table_->routes.push_back(std::move(owned));
        if (params == 0) {
            table_->literal.emplace(r->pattern, r);
        } else {
            table_->parameterised.push_back(r);
        }
    }
    auto& slot = r->handlers[static_cast<std::size_t>(m)];
    if (slot != no_handler) {
        throw std::invalid_argument("route registered twice: " + std::string(to_string(m)) + " " +
                                    std::string(pattern));
    }
    slot = static_cast<std::int32_t>(handler);
    r->rebuild_allow();
}

route_match router::match(method m, std::string_view path, route_params& params) const noexcept {
    params.count = 0;
    path = strip_trailing_slash(path);
    if (auto it = table_->literal.find(path); it != table_->literal.end()) {
        return it->second->resolve(m);
    }
    const route* best = nullptr;
    for (const route* r : table_->parameterised) {
        std::string_view rest = path == "/" ? std::string_view{} : path;
        std::string_view seg;
        bool ok = true;
        for (const auto& s : r->segments) {
            if (!next_segment(rest, seg) || seg.empty() || (!s.is_param && seg != s.text)) {
                ok = false;
                break;
            }
        }
        if (ok && rest.empty() && (best == nullptr || r->literal_segments > best->literal_segments)) {
            best = r;
        }
    }
    if (best == nullptr) {
        return {};
    }
    std::string_view rest = path;
    std::string_view seg;
    for (const auto& s : best->segments) {
        next_segment(rest, seg);
        if (s.is_param) {
            params.names[params.count] = s.text;
            params.values[params.count] = seg;
            ++params.count;
        }
    }
    return best->resolve(m);
}

} // namespace hotpath::http
