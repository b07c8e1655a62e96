// The watchdog's look at each loop: a turn working past the threshold is a stall, reported when it is first seen
// and when the loop's next turn shows it over.
#include <hotpath/net/watchdog.hpp>

#include <algorithm>

namespace hotpath::net {

watchdog::watchdog(std::vector<const loop*> loops, std::chrono::nanoseconds threshold, report_fn report)
    : threshold_(threshold), report_(std::move(report)) {
    for (const loop* l : loops) {
        loops_.push_back({l});
    }
    thread_ = std::thread([this] { run(); });
}

watchdog::~watchdog() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void watchdog::run() {
    const auto period = std::max<std::chrono::nanoseconds>(std::chrono::milliseconds{1}, threshold_ / 2);
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
        const std::int64_t now = clock::now().time_since_epoch().count();
        for (auto& w : loops_) {
            look(w, now);
        }
    }
}

void watchdog::look(watched& w, std::int64_t now_ns) {
    const turn_stats& s = w.l->stats();
    const std::int64_t since = s.working_since_ns.load(std::memory_order_relaxed);
    if (w.flagged_since != 0 && since != w.flagged_since) {
        // The stalled turn is over: the loop recorded its length as its latest long turn, unless another long
        // one followed before this look (then the last length seen here, a lower bound).
        std::int64_t length = w.seen_ns;
        if (s.long_turn_start_ns.load(std::memory_order_relaxed) == w.flagged_since) {
            length = static_cast<std::int64_t>(s.long_turn_ns.load(std::memory_order_relaxed));
        }
        w.flagged_since = 0;
        report_(w.l->index(), std::chrono::nanoseconds{length}, true);
    }
    if (since == 0 || now_ns - since <= threshold_.count()) {
        return;
    }
    if (w.flagged_since == 0) {
        w.flagged_since = since;
        w.seen_ns = now_ns - since;
        w.told_ns = w.seen_ns;
        report_(w.l->index(), std::chrono::nanoseconds{w.seen_ns}, false);
        return;
    }
    w.seen_ns = now_ns - since;
    if (w.seen_ns - w.told_ns >= std::chrono::nanoseconds{still_every}.count()) {
        w.told_ns = w.seen_ns;
        report_(w.l->index(), std::chrono::nanoseconds{w.seen_ns}, false); // still stalled
    }
}

} // namespace hotpath::net
