// Figures from outside the server (a client's, say) that a metrics page writes beside its own.
#pragma once

#include <memory>
#include <span>

namespace hotpath::metrics {

class prometheus_writer;

// A source of figures for a Prometheus page. Sources of one kind share one writer, called once per page with all
// of them, so that each family appears once on the page however many sources there are (Prometheus refuses a
// family written twice): two clients' calls to the same downstream are summed into one series.
class source {
public:
    // Writes every family of `group` (sources whose writer() is this function) to `out`. Called by a scrape, on
    // any thread; it must not wait on an event loop.
    using write_fn = void (*)(prometheus_writer& out, std::span<const source* const> group);

    explicit source(write_fn write) noexcept : write_(write) {}
    write_fn writer() const noexcept { return write_; }

protected:
    ~source() = default; // owned through the derived type (a shared_ptr made from it keeps its deleter)
    source(const source&) = default;
    source& operator=(const source&) = default;

private:
    write_fn write_;
};

// Writes `sources`, grouped by writer, in the order each writer first appears. Allocates (a scrape does).
void write_sources(prometheus_writer& out, std::span<const std::shared_ptr<const source>> sources);

} // namespace hotpath::metrics
