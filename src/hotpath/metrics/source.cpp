// Grouping a page's sources by writer, so that each writer runs once with all of its kind.
#include <hotpath/metrics/source.hpp>

#include <vector>

namespace hotpath::metrics {

void write_sources(prometheus_writer& out, std::span<const std::shared_ptr<const source>> sources) {
    std::vector<source::write_fn> done;
    std::vector<const source*> group;
    for (const auto& first : sources) {
        const source::write_fn w = first->writer();
        bool seen = false;
        for (const auto d : done) {
            seen = seen || d == w;
        }
        if (seen) {
            continue;
        }
        done.push_back(w);
        group.clear();
        for (const auto& s : sources) {
            if (s->writer() == w) {
                group.push_back(s.get());
            }
        }
        w(out, group);
    }
}

} // namespace hotpath::metrics
