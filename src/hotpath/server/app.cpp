// Registering handlers in the route table, and query-parameter lookup for requests.
#include <hotpath/server/app.hpp>

#include <hotpath/server/metrics.hpp>

namespace hotpath {

void app::add(http::method m, std::string_view pattern, handler h) {
    const auto id = static_cast<std::uint32_t>(handlers_.size());
    router_.add(m, pattern, id); // throws on a bad or duplicate pattern, before the handler is kept
    handlers_.push_back(std::move(h));
    keys_.push_back({std::string(http::to_string(m)), std::string(pattern)});
}

void app::add_any(std::string_view pattern, handler h) {
    const auto id = static_cast<std::uint32_t>(handlers_.size());
    router_.add_any(pattern, id);
    handlers_.push_back(std::move(h));
    keys_.push_back({"ANY", std::string(pattern)});
}

app& app::metrics(std::string_view pattern) {
    return get(pattern, [](request& req, response& res) { write_metrics(req, res); });
}

app& app::debug_routes(std::string_view pattern) {
    return get(pattern, [](request& req, response& res) { write_route_report(req, res); });
}

app& app::expose(std::shared_ptr<const metrics::source> source) {
    if (source != nullptr) {
        exposed_.push_back(std::move(source));
    }
    return *this;
}

namespace {

// Finds `name` among the '&'-separated pairs of a query; sets `found`.
std::string_view find_query(std::string_view query, std::string_view name, bool& found) noexcept {
    found = false;
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        const auto eq = pair.find('=');
        const std::string_view key = pair.substr(0, eq);
        if (key == name) {
            found = true;
            return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
        }
    }
    return {};
}

} // namespace

std::string_view request::query_param(std::string_view name) const noexcept {
    bool found = false;
    return find_query(head_->query, name, found);
}

bool request::has_query_param(std::string_view name) const noexcept {
    bool found = false;
    find_query(head_->query, name, found);
    return found;
}

} // namespace hotpath
