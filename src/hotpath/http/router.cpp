// Route matching: a tree of path segments, walked once per request with backtracking for precedence.
#include <hotpath/http/router.hpp>

#include <algorithm>
#include <limits>
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
constexpr std::uint32_t no_index = std::numeric_limits<std::uint32_t>::max();

// Up to this many literal children a node scans them (short strings, compared length first); beyond, a hash
// lookup costs the same for 10 or 1,000 siblings.
constexpr std::size_t small_fanout = 8;

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
    std::int32_t any = no_handler; // the handler for every method without one of its own
    std::string allow;
    std::size_t literal_segments = 0;
    std::uint32_t order = 0; // registration order of the pattern: the last tie-break

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
            h = any;
        }
        if (h == no_handler) {
            return {route_status::method_not_allowed, 0, allow};
        }
        return {route_status::found, static_cast<std::uint32_t>(h), {}};
    }

    // Whether this route takes precedence over `other` (null: no match yet) for a path both match.
    bool beats(const route* other) const noexcept {
        return other == nullptr || literal_segments > other->literal_segments ||
               (literal_segments == other->literal_segments && order < other->order);
    }
};

// One position in the tree of patterns: the routes whose first segments led here continue through its
// children, and a pattern that ends here is its terminal.
struct router::node {
    struct edge {
        std::string text;
        std::uint32_t child = no_index;
    };
    std::vector<edge> literals;
    // The same edges hashed, once there are more than small_fanout (the benchmark's 1,000 sibling resources).
    std::unordered_map<std::string, std::uint32_t, string_hash, std::equal_to<>> index;
    std::uint32_t param = no_index;  // the child for a `{name}` segment, whatever the name
    const route* terminal = nullptr; // the earliest route whose pattern ends here; later ones never win
    // Bounds over every route ending in this subtree, so that a subtree which cannot beat the best match
    // found so far is skipped.
    std::size_t most_literals = 0;
    std::uint32_t first_order = no_index;

    std::uint32_t find(std::string_view seg) const noexcept {
        if (index.empty()) {
            for (const auto& e : literals) {
                if (e.text == seg) {
                    return e.child;
                }
            }
            return no_index;
        }
        const auto it = index.find(seg);
        return it == index.end() ? no_index : it->second;
    }
};

struct router::table {
    std::vector<std::unique_ptr<route>> routes;
    std::unordered_map<std::string, route*, string_hash, std::equal_to<>> by_pattern;
    std::vector<node> nodes = std::vector<node>(1); // nodes[0], the root, is where "/" ends

    // The route for `pattern`, created and threaded into the tree the first time.
    route& route_for(std::string_view pattern);
    // The child of `parent` for segment `s`, created if missing.
    std::uint32_t child(std::uint32_t parent, const segment& s);
    // Sets `best` to the route that wins among those matching `rest` below node `at` (see router's contract).
    void search(std::uint32_t at, std::string_view rest, const route*& best) const noexcept;
};

router::router() : table_(std::make_unique<table>()) {}
router::~router() = default;
router::router(router&&) noexcept = default;
router& router::operator=(router&&) noexcept = default;

router::route& router::table::route_for(std::string_view pattern) {
    if (pattern.empty() || pattern.front() != '/') {
        throw std::invalid_argument("route pattern must start with '/': " + std::string(pattern));
    }
    const std::string_view normalised = strip_trailing_slash(pattern);
    if (const auto it = by_pattern.find(normalised); it != by_pattern.end()) {
        return *it->second;
    }
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
    if (segments.size() - literals > route_params::capacity) {
        throw std::invalid_argument("too many parameters in route pattern: " + std::string(pattern));
    }

    auto owned = std::make_unique<route>();
    route& r = *owned;
    r.pattern = std::string(normalised);
    r.segments = std::move(segments);
    r.literal_segments = literals;
    r.order = static_cast<std::uint32_t>(routes.size());
    routes.push_back(std::move(owned));
    by_pattern.emplace(r.pattern, &r);

    std::uint32_t at = 0;
    for (std::size_t i = 0;; ++i) {
        node& n = nodes[at];
        n.most_literals = std::max(n.most_literals, r.literal_segments);
        n.first_order = std::min(n.first_order, r.order);
        if (i == r.segments.size()) {
            if (n.terminal == nullptr) {
                n.terminal = &r;
            }
            break;
        }
        at = child(at, r.segments[i]);
    }
    return r;
}

std::uint32_t router::table::child(std::uint32_t parent, const segment& s) {
    const auto next = static_cast<std::uint32_t>(nodes.size());
    if (s.is_param) {
        if (nodes[parent].param == no_index) {
            nodes.emplace_back();
            nodes[parent].param = next;
        }
        return nodes[parent].param;
    }
    if (const auto found = nodes[parent].find(s.text); found != no_index) {
        return found;
    }
    nodes.emplace_back();
    node& n = nodes[parent]; // after emplace_back, which may move the nodes
    n.literals.push_back({s.text, next});
    if (n.literals.size() > small_fanout) {
        if (n.index.empty()) {
            for (const auto& e : n.literals) {
                n.index.emplace(e.text, e.child);
            }
        } else {
            n.index.emplace(s.text, next);
        }
    }
    return next;
}

// Depth first, the literal child before the parameter child: at most two branches per segment of the path,
// whatever the number of routes, and fewer once the bounds rule a subtree out.
void router::table::search(std::uint32_t at, std::string_view rest, const route*& best) const noexcept {
    const node& n = nodes[at];
    if (best != nullptr && (n.most_literals < best->literal_segments ||
                            (n.most_literals == best->literal_segments && n.first_order >= best->order))) {
        return;
    }
    if (rest.empty()) {
        if (n.terminal != nullptr && n.terminal->beats(best)) {
            best = n.terminal;
        }
        return;
    }
    std::string_view seg;
    next_segment(rest, seg);
    if (seg.empty()) {
        return; // an empty segment matches neither a literal nor a parameter
    }
    if (const auto literal = n.find(seg); literal != no_index) {
        search(literal, rest, best);
    }
    if (n.param != no_index) {
        search(n.param, rest, best);
    }
}

void router::add(method m, std::string_view pattern, std::uint32_t handler) {
    if (m == method::other) {
        throw std::invalid_argument("route needs a standard method (add_any for every method): " +
                                    std::string(pattern));
    }
    route& r = table_->route_for(pattern);
    auto& slot = r.handlers[static_cast<std::size_t>(m)];
    if (slot != no_handler) {
        throw std::invalid_argument("route registered twice: " + std::string(to_string(m)) + " " +
                                    std::string(pattern));
    }
    slot = static_cast<std::int32_t>(handler);
    r.rebuild_allow();
}

void router::add_any(std::string_view pattern, std::uint32_t handler) {
    route& r = table_->route_for(pattern);
    if (r.any != no_handler) {
        throw std::invalid_argument("route registered twice for every method: " + std::string(pattern));
    }
    r.any = static_cast<std::int32_t>(handler);
}

route_match router::match(method m, std::string_view path, route_params& params) const noexcept {
    params.count = 0;
    if (path.empty() || path.front() != '/') {
        return {};
    }
    path = strip_trailing_slash(path);
    const route* best = nullptr;
    table_->search(0, path == "/" ? std::string_view{} : path, best);
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
