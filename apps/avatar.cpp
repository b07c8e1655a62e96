// The random-avatar redirect (case 5): GET / → 302 to Renard-{k}.png, k uniform in 0..N.
#include "apps/apps.hpp"

#include <random>
#include <string>

namespace hotpath::apps {

void map_avatar(app& routes, unsigned n) {
    routes.get("/", [n](request&, response& res) {
        thread_local std::minstd_rand rng{std::random_device{}()};
        thread_local std::string location;
        const auto k = std::uniform_int_distribution<unsigned>{0, n}(rng);
        location.assign("https://avatar.spacefox.fr/Renard-").append(std::to_string(k)).append(".png");
        res.redirect(location);
    });
}

} // namespace hotpath::apps
