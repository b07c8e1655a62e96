// dotnet-counters as a child of the lab: found, started on a process, waited for, and its JSON read back.
#include <hotpath/lab/dotnet_collector.hpp>

#include <hotpath/lab/services.hpp>

#include <fmt/core.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace hotpath::lab {

namespace fs = std::filesystem;

namespace {

bool executable(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// The tool's words for a failure: its first line that says something ("Unable to ...", "[ERROR] ...").
std::string first_words(const std::string& said) {
    std::istringstream lines(said);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.find_first_not_of(" \t\r") != std::string::npos) {
            return line.substr(0, 300);
        }
    }
    return "it printed nothing";
}

// Reads what the tool printed so far, waiting at most `wait_ms`; false once it has closed its output.
bool read_some(int fd, std::string& into, int wait_ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) {
        return true;
    }
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) {
        return false;
    }
    if (into.size() < 64 * 1024) {
        into.append(buffer, static_cast<std::size_t>(n));
    }
    return true;
}

} // namespace

std::optional<std::string> find_dotnet_counters(const std::string& given, const std::vector<std::string>& folders) {
    if (!given.empty()) {
        return executable(given) ? std::optional<std::string>(given) : std::nullopt;
    }
    if (const char* env = std::getenv("HOTPATH_DOTNET_COUNTERS"); env != nullptr && *env != '\0') {
        return executable(env) ? std::optional<std::string>(env) : std::nullopt;
    }
    for (const std::string& folder : folders) {
        if (const fs::path p = fs::path(folder) / "tools" / "dotnet-counters"; executable(p)) {
            return p.string();
        }
    }
    if (const char* path = std::getenv("PATH"); path != nullptr) {
        std::istringstream dirs(path);
        std::string dir;
        while (std::getline(dirs, dir, ':')) {
            if (const fs::path p = fs::path(dir.empty() ? "." : dir) / "dotnet-counters"; executable(p)) {
                return p.string();
            }
        }
    }
    if (const char* home = std::getenv("HOME"); home != nullptr) {
        if (const fs::path p = fs::path(home) / ".dotnet" / "tools" / "dotnet-counters"; executable(p)) {
            return p.string();
        }
    }
    return std::nullopt;
}

result<std::unique_ptr<dotnet_collector>, problem> dotnet_collector::start(const std::string& tool, pid_t pid,
                                                                           std::chrono::nanoseconds length) {
    std::unique_ptr<dotnet_collector> c(new dotnet_collector());
    std::error_code ec;
    const fs::path base = fs::temp_directory_path(ec);
    std::string pattern = ((ec ? fs::path("/tmp") : base) / "hotpath-dotnet-counters-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        const int error = errno;
        return problem{std::error_code(error, std::system_category()),
                       fmt::format("cannot create {}: {}", pattern, std::strerror(error))};
    }
    c->folder_ = pattern;
    const auto seconds =
        std::max(1LL, static_cast<long long>(std::ceil(std::chrono::duration<double>(length).count())));
    const std::string span =
        fmt::format("{:02}:{:02}:{:02}:{:02}", seconds / 86400, seconds / 3600 % 24, seconds / 60 % 60, seconds % 60);
    auto spawned = spawn_child({tool, "collect", "--process-id", std::to_string(pid), "--format", "json", "--output",
                                c->folder_ + "/counters.json", "--refresh-interval", "1", "--duration", span,
                                "--counters", std::string(dotnet_counter_providers)});
    if (!spawned) {
        return std::move(spawned).error();
    }
    c->pid_ = spawned->pid;
    c->output_ = spawned->output;
    // Attached once it says so; it prints its failure and exits otherwise.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
    while (c->said_.find("Starting a counter session") == std::string::npos) {
        if (!read_some(c->output_, c->said_, 100)) {
            return problem{errc::refused, fmt::format("dotnet-counters could not attach to process {}: {}", pid,
                                                      first_words(c->said_))};
        }
        if (std::chrono::steady_clock::now() > deadline) {
            return problem{errc::timeout, fmt::format("dotnet-counters did not attach to process {} in 20 s", pid)};
        }
    }
    c->ends_ = std::chrono::steady_clock::now() + std::chrono::seconds{seconds};
    return c;
}

result<dotnet_counters, problem> dotnet_collector::finish() {
    // Killed outright when it overstays: SIGTERM loses its unwritten tail just as SIGKILL does.
    const auto kill_at = ends_ + std::chrono::seconds{10};
    while (pid_ > 0) {
        int status = 0;
        const pid_t done = ::waitpid(pid_, &status, WNOHANG);
        if (done == pid_ || (done < 0 && errno != EINTR)) {
            pid_ = -1;
            break;
        }
        if (std::chrono::steady_clock::now() >= kill_at) {
            ::kill(pid_, SIGKILL);
        }
        if (output_ < 0 || !read_some(output_, said_, 20)) {
            if (output_ >= 0) {
                ::close(output_);
                output_ = -1;
            }
            ::usleep(20'000);
        }
    }
    std::ifstream in(folder_ + "/counters.json", std::ios::binary);
    if (!in) {
        return problem{make_error_code(std::errc::no_such_file_or_directory),
                       fmt::format("dotnet-counters wrote no counters: {}", first_words(said_))};
    }
    std::ostringstream text;
    text << in.rdbuf();
    std::string json = text.str();
    // A stopped session's file ends inside an event or after one: kept up to its last whole event, then closed.
    if (const auto end = json.find_last_not_of(" \t\r\n");
        end == std::string::npos || end < 1 || json.compare(end - 1, 2, "]}") != 0) {
        constexpr std::string_view opening = "\"Events\": [";
        const auto last = json.rfind("},{");
        const auto events = json.find(opening);
        if (last != std::string::npos) {
            json.resize(last + 1);
            json += "]}";
        } else if (events != std::string::npos) {
            json.resize(events + opening.size());
            json += "]}";
        }
    }
    return parse_dotnet_counters(json);
}

dotnet_collector::~dotnet_collector() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    if (output_ >= 0) {
        ::close(output_);
    }
    if (!folder_.empty()) {
        std::error_code ec;
        fs::remove_all(folder_, ec);
    }
}

} // namespace hotpath::lab
