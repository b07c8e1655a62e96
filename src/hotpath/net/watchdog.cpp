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
        report_(w.l->index(), std::chrono::nanoseconds{length}, true, activity_of(w));
    }
    if (since == 0 || now_ns - since <= threshold_.count()) {
        return;
    }
    if (w.flagged_since == 0) {
        w.flagged_since = since;
        w.seen_ns = now_ns - since;
        w.told_ns = w.seen_ns;
        start_measure(w);
        thread_activity first;
        first.waiting = judge(w.looks, std::nullopt);
        report_(w.l->index(), std::chrono::nanoseconds{w.seen_ns}, false, first);
        return;
    }
    w.looks.add(look_at_thread(w.tid));
    w.seen_ns = now_ns - since;
    if (w.seen_ns - w.told_ns >= std::chrono::nanoseconds{still_every}.count()) {
        w.told_ns = w.seen_ns;
        report_(w.l->index(), std::chrono::nanoseconds{w.seen_ns}, false, activity_of(w)); // still stalled
    }
}

void watchdog::start_measure(watched& w) {
    const turn_stats& s = w.l->stats();
    w.tid = s.thread_id.load(std::memory_order_acquire);
    w.cpu_clock = s.thread_cpu_clock.load(std::memory_order_relaxed);
    w.cpu_at_start = w.tid != 0 ? thread_cpu_time(w.cpu_clock) : std::nullopt;
    w.measured_since_ns = clock::now().time_since_epoch().count();
    w.looks = {};
    w.looks.add(look_at_thread(w.tid));
}

thread_activity watchdog::activity_of(const watched& w) {
    thread_activity a;
    if (w.cpu_at_start) {
        const auto cpu = thread_cpu_time(w.cpu_clock);
        const std::int64_t wall_ns = clock::now().time_since_epoch().count() - w.measured_since_ns;
        if (cpu && wall_ns > 0) {
            a.cpu = std::max(std::chrono::nanoseconds{0}, *cpu - *w.cpu_at_start);
            a.measured = std::chrono::nanoseconds{wall_ns};
            a.cpu_share = std::min(1.0, static_cast<double>(a.cpu.count()) / static_cast<double>(wall_ns));
        }
    }
    a.waiting = judge(w.looks, a.cpu_share);
    return a;
}

} // namespace hotpath::net
