// Compiled by ctest, not by the build: registers routes through app.map, and with HOTPATH_MAP_OTHER defined also
// for http::method::other, which must not compile (app.any is the route for every method).
#include <hotpath/server/app.hpp>

void register_routes(hotpath::app& a);

void register_routes(hotpath::app& a) {
    const auto ok = [](hotpath::request&, hotpath::response&) {};
    a.map(hotpath::http::method::get, "/a", ok).map(hotpath::http::method::options, "/a", ok).any("/b", ok);
#ifdef HOTPATH_MAP_OTHER
    a.map(hotpath::http::method::other, "/c", ok);
#endif
}
