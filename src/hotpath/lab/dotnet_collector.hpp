// dotnet-counters run beside a load: attached to a .NET process, it records the runtime's counters every second
// to a file of its own for a given time, which lab/dotnet_counters reads.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/lab/dotnet_counters.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace hotpath::lab {

// Where dotnet-counters is: `given` when not empty (a path), else $HOTPATH_DOTNET_COUNTERS, else
// <folder>/tools/dotnet-counters for each of `folders` (the originals' folder: scripts/build-peers.sh installs it
// there), else dotnet-counters on the PATH or in ~/.dotnet/tools. nullopt when it is nowhere.
std::optional<std::string> find_dotnet_counters(const std::string& given, const std::vector<std::string>& folders);

// One session of `dotnet-counters collect` on one process. Used from one thread; its destructor stops a tool still
// running and removes the session's folder.
class dotnet_collector {
public:
    // Starts the tool on process `pid`, recording for `length` (rounded up to whole seconds: give the load's length
    // and a second or two more, so that the last readings see its end), and waits until it has attached (at most
    // 20 s; it takes ~0.2 s here). A one-line problem when it cannot: no such process, not a .NET process, no
    // permission (the tool's own words).
    static result<std::unique_ptr<dotnet_collector>, problem> start(const std::string& tool, pid_t pid,
                                                                    std::chrono::nanoseconds length);
    // Waits for the session to end by itself and reads what it wrote. The tool has no early stop that keeps its
    // file (SIGINT waits for the session's end, SIGTERM and SIGKILL lose what is not yet written, and it reads no key
    // from a pipe), so a session is as long as it was started for; one still running 10 s past its end is killed,
    // and its file read up to its last whole reading.
    result<dotnet_counters, problem> finish();

    dotnet_collector(const dotnet_collector&) = delete;
    dotnet_collector& operator=(const dotnet_collector&) = delete;
    ~dotnet_collector();

private:
    dotnet_collector() = default;

    pid_t pid_ = -1;
    int output_ = -1; // the tool's stdout and stderr
    std::string folder_;
    std::string said_; // what the tool printed
    std::chrono::steady_clock::time_point ends_;
};

} // namespace hotpath::lab
