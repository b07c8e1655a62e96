// The `hotpath` binary (or another program) as a child process for integration tests: its output, its exit, its
// CPU time; free ports for the programs that take theirs on the command line; curl.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <netinet/in.h>
#include <regex>
#include <string>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath::test {

using namespace std::chrono_literals;

// A running `hotpath` (HOTPATH_BINARY) with its stdout and stderr on one pipe. Killed (SIGKILL) on destruction if
// still running. With max_fds, the child runs under that RLIMIT_NOFILE; with max_memory_bytes, under that
// RLIMIT_AS, so that a run that grows without bound fails instead of taking the machine's memory.
class child {
public:
    explicit child(std::vector<std::string> args, rlim_t max_fds = 0, rlim_t max_memory_bytes = 0)
        : child(HOTPATH_BINARY, std::move(args), max_fds, max_memory_bytes) {}
    // Runs `program` (a path; the child exits 127 when it cannot be run) instead of hotpath.
    child(std::string program, std::vector<std::string> args, rlim_t max_fds = 0, rlim_t max_memory_bytes = 0) {
        int out[2];
        if (::pipe(out) != 0) {
            return;
        }
        const pid_t parent = ::getpid();
        pid_ = ::fork();
        if (pid_ == 0) {
            // Killed with the test, should it crash or be killed itself: a server left running holds its port
            // and its memory after the run (a Prometheus server, hundreds of MB).
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) {
                ::_exit(127);
            }
            ::dup2(out[1], STDOUT_FILENO);
            ::dup2(out[1], STDERR_FILENO);
            ::close(out[0]);
            ::close(out[1]);
            if (max_fds != 0) {
                const rlimit limit{max_fds, max_fds};
                ::setrlimit(RLIMIT_NOFILE, &limit);
            }
            if (max_memory_bytes != 0) {
                const rlimit limit{max_memory_bytes, max_memory_bytes};
                ::setrlimit(RLIMIT_AS, &limit);
            }
            std::vector<char*> argv;
            argv.push_back(program.data());
            for (auto& a : args) {
                argv.push_back(a.data());
            }
            argv.push_back(nullptr);
            ::execv(program.c_str(), argv.data());
            ::_exit(127);
        }
        ::close(out[1]);
        out_ = ::fdopen(out[0], "r");
    }
    ~child() {
        if (pid_ > 0 && !exited_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        if (out_ != nullptr) {
            std::fclose(out_);
        }
    }

    // One line of output (without the newline); empty at EOF.
    std::string line() {
        char buf[4096];
        if (out_ == nullptr || std::fgets(buf, sizeof(buf), out_) == nullptr) {
            return {};
        }
        std::string s(buf);
        if (!s.empty() && s.back() == '\n') {
            s.pop_back();
        }
        return s;
    }
    // Everything until EOF.
    std::string rest() {
        std::string all;
        char buf[4096];
        std::size_t n = 0;
        while (out_ != nullptr && (n = std::fread(buf, 1, sizeof(buf), out_)) > 0) {
            all.append(buf, n);
        }
        return all;
    }
    void signal(int sig) { ::kill(pid_, sig); }
    pid_t pid() const { return pid_; }
    // User plus system CPU time so far, from /proc.
    std::chrono::milliseconds cpu_time() const {
        FILE* f = std::fopen(("/proc/" + std::to_string(pid_) + "/stat").c_str(), "r");
        if (f == nullptr) {
            return {};
        }
        char buf[1024] = {};
        const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
        std::fclose(f);
        // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
        const char* p = std::strrchr(buf, ')');
        unsigned long long utime = 0;
        unsigned long long stime = 0;
        if (p == nullptr || n == 0 ||
            std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) {
            return {};
        }
        return std::chrono::milliseconds{(utime + stime) * 1000 /
                                         static_cast<unsigned long long>(::sysconf(_SC_CLK_TCK))};
    }
    // The exit code, or -1 when it did not exit within `timeout` or died of a signal.
    int wait_exit(std::chrono::milliseconds timeout = 10s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            int st = 0;
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                exited_ = true;
                return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            }
            std::this_thread::sleep_for(10ms);
        }
        return -1;
    }

private:
    pid_t pid_ = -1;
    FILE* out_ = nullptr;
    bool exited_ = false;
};

inline std::uint16_t port_from(const std::string& announcement) {
    std::smatch m;
    static const std::regex re(R"(https?://127\.0\.0\.1:(\d+))");
    if (!std::regex_search(announcement, m, re)) {
        return 0;
    }
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}

// A port nothing listens on right now (the kernel's pick, released), for a program that takes its port on the
// command line and prints nothing to read one from.
inline std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        return 0;
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

// True once a TCP connect to the port succeeds (how such a program says it has started), within `timeout`.
inline bool wait_listening(std::uint16_t port, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        ::close(fd);
        if (up) {
            return true;
        }
        std::this_thread::sleep_for(20ms);
    }
    return false;
}

inline std::string run_curl(const std::string& args) {
    std::string out;
    FILE* p = ::popen(("curl -sS --max-time 5 " + args + " 2>&1").c_str(), "r");
    if (p == nullptr) {
        return out;
    }
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) {
        out.append(buf, n);
    }
    ::pclose(p);
    return out;
}

} // namespace hotpath::test
