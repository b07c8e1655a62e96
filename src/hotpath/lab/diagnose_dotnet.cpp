// `hotpath lab diagnose URL --dotnet PID`: a .NET process's runtime counters over the window.
#include <hotpath/lab/diagnose_window.hpp>

#include <hotpath/core/units.hpp>
#include <hotpath/lab/dotnet_collector.hpp>
#include <hotpath/lab/dotnet_counters.hpp>
#include <hotpath/lab/services.hpp>
#include <hotpath/load/plan.hpp>

#include <fmt/core.h>

#include <cerrno>
#include <csignal>

namespace hotpath::lab::diagnose_detail {

// `--dotnet PID`: a .NET service has no route report; its runtime's counters over the window stand in for one,
// read with dotnet-counters while the window lasts.
int diagnose_dotnet_process(const diagnose_options& o, const load::plan& plan, bool loading,
                            std::chrono::nanoseconds length, const std::string& base, std::FILE* out, std::FILE* err) {
    const pid_t pid = static_cast<pid_t>(*o.dotnet_pid);
    if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH)) {
        fmt::print(err, "hotpath: lab diagnose: --dotnet {}: no such process\n", pid);
        return 2;
    }
    const auto tool = find_dotnet_counters(o.dotnet_counters, {default_peers_folder()});
    if (!tool) {
        fmt::print(err,
                   "hotpath: lab diagnose: dotnet-counters not found{}: install it with `dotnet tool install "
                   "dotnet-counters --tool-path DIR` and give --dotnet-counters DIR/dotnet-counters (or put it on "
                   "the PATH; scripts/build-peers.sh installs one in build/peers/tools)\n",
                   o.dotnet_counters.empty() ? "" : fmt::format(" at '{}'", o.dotnet_counters));
        return 2;
    }
    auto collector = dotnet_collector::start(*tool, pid, length + std::chrono::seconds{1});
    if (!collector) {
        fmt::print(err, "hotpath: lab diagnose: {}\n", collector.error().message);
        return 1;
    }
    fmt::print(out, "hotpath lab diagnose: reading the .NET runtime counters of process {} with {}\n", pid, *tool);
    load_seen seen;
    if (const int stopped = load_or_watch(o, plan, loading, length, base, seen, out, err); stopped != 0) {
        return stopped;
    }
    auto read = (*collector)->finish();
    if (!read) {
        fmt::print(err, "hotpath: lab diagnose: {}\n", read.error().message);
        return 1;
    }
    const dotnet_figures f = summarize(*read);
    const load_window window = seen.results ? load_window_of(plan, *seen.results) : load_window{};
    auto figure = [](const std::optional<double>& v, const char* format) {
        return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
    };
    fmt::print(out,
               "runtime (as .NET counted it, {:.0f} s with load): CPU {} %, thread-pool threads {} -> {}, queued work "
               "items {} on average, {} allocated, {} outbound HTTP calls\n",
               f.seconds, figure(f.cpu_percent, "{:.0f}"), figure(f.threads_first, "{:.0f}"),
               figure(f.threads_last, "{:.0f}"), figure(f.queue_mean, "{:.1f}"),
               f.allocated_bytes ? format_size(static_cast<std::uint64_t>(*f.allocated_bytes)) : std::string("-"),
               figure(f.outbound_started, "{:.0f}"));
    fmt::print(out, "diagnosis of the {} {} (process {}{}):\n", o.duration, seen.how, pid,
               read->process.empty() ? "" : ", " + read->process);
    print_diagnosis(diagnose_dotnet(f, window, target_name(plan)), {}, seen, loading, "verdict: nothing wrong", out);
    return 0;
}

} // namespace hotpath::lab::diagnose_detail
