// Child services: fork, exec of /proc/self/exe, the port from its first line, a health check, and the stop.
#include <hotpath/lab/services.hpp>

#include <hotpath/load/runner.hpp>

#include <fmt/core.h>

#include <filesystem>
#include <fmt/format.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <regex>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace hotpath::lab {

namespace {

using clock = std::chrono::steady_clock;

int signal_seen = 0;

sigset_t stop_signals() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    return s;
}

int remaining_ms(clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

// Reads one line from `fd` until `deadline`; false on EOF, error or timeout.
bool read_line(int fd, std::string& line, clock::time_point deadline) {
    line.clear();
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, std::min(remaining_ms(deadline), 50)) < 0 && errno != EINTR) {
            return false;
        }
        if (interrupted() || clock::now() >= deadline) {
            return false;
        }
        if ((p.revents & (POLLIN | POLLHUP)) == 0) {
            continue;
        }
        char c = 0;
        const ssize_t n = ::read(fd, &c, 1);
        if (n <= 0) {
            return false;
        }
        if (c == '\n') {
            return true;
        }
        line.push_back(c);
    }
}

// A service or a command that failed, with its reason: cancelled when the lab was interrupted.
problem service_problem(std::string why) {
    return {interrupted() ? make_error_code(errc::cancelled) : std::make_error_code(std::errc::io_error),
            std::move(why)};
}

// This executable's path, or a problem.
result<std::string, problem> self_path() {
    char self[PATH_MAX] = {};
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        return service_problem(fmt::format("cannot find this executable: {}", std::strerror(errno)));
    }
    return std::string(self);
}

} // namespace

result<spawned_child, problem> spawn_child(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    // The child's environment, made before the fork (after it, only async-signal-safe calls): this process's, each
    // of `env` in place of a variable of its name.
    std::vector<std::string> variables = env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view v(*e);
        const std::string_view name = v.substr(0, v.find('='));
        if (std::none_of(env.begin(), env.end(), [name](const std::string& mine) {
                return mine.size() > name.size() && mine.compare(0, name.size(), name) == 0 && mine[name.size()] == '=';
            })) {
            variables.emplace_back(v);
        }
    }
    std::vector<char*> cenv;
    for (auto& v : variables) {
        cenv.push_back(v.data());
    }
    cenv.push_back(nullptr);
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
        return service_problem(fmt::format("pipe: {}", std::strerror(errno)));
    }
    std::vector<std::string> args = argv; // execv takes char*: the strings' own buffers
    std::vector<char*> cargv;
    for (auto& a : args) {
        cargv.push_back(a.data());
    }
    cargv.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        problem failed = service_problem(fmt::format("fork: {}", std::strerror(errno)));
        ::close(out[0]);
        ::close(out[1]);
        return failed;
    }
    if (pid == 0) {
        // The last resort should the lab be killed outright: the kernel kills the child with it. The lab's
        // own process group is kept, so a terminal's Ctrl-C reaches both.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(127);
        }
        sigset_t none;
        sigemptyset(&none);
        pthread_sigmask(SIG_SETMASK, &none, nullptr);
        if (const int none_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC); none_in >= 0) {
            ::dup2(none_in, STDIN_FILENO); // nothing reads the lab's terminal: it is the lab's
        }
        ::dup2(out[1], STDOUT_FILENO);
        ::dup2(out[1], STDERR_FILENO);
        ::execve(cargv[0], cargv.data(), cenv.data());
        ::_exit(127);
    }
    ::close(out[1]);
    return spawned_child{pid, out[0]};
}

void block_stop_signals() {
    const sigset_t s = stop_signals();
    pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

bool interrupted() {
    if (signal_seen == 0) {
        const sigset_t s = stop_signals();
        timespec zero{0, 0};
        if (const int got = sigtimedwait(&s, nullptr, &zero); got > 0) {
            signal_seen = got;
        }
    }
    return signal_seen != 0;
}

void note_signal(int signal_number) {
    if (signal_number != 0) {
        signal_seen = signal_number;
    }
}

result<load::results, problem> run_load(const load::plan& plan, load::progress_mode mode, std::FILE* progress) {
    if (interrupted()) {
        return problem{errc::cancelled, "interrupted"};
    }
    int stopped_by = 0;
    auto r = load::run(plan, mode, progress, &stopped_by);
    note_signal(stopped_by);
    if (interrupted()) {
        return problem{errc::cancelled, "interrupted"};
    }
    return r;
}

result<probe::fetched, problem> get_local(const service& s, std::string_view path_and_query,
                                          std::chrono::nanoseconds timeout) {
    net::tls_client_options tls;
    tls.ca_file = s.ca_file;
    return probe::fetch(s.url() + std::string(path_and_query), timeout, 64 * 1024 * 1024, tls);
}

result<void, problem> run_command(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    std::string why;
    const auto deadline = clock::now() + timeout;
    auto self = self_path();
    if (!self) {
        return std::move(self).error();
    }
    std::vector<std::string> argv{*self};
    argv.insert(argv.end(), args.begin(), args.end());
    auto spawned = spawn_child(argv);
    if (!spawned) {
        return std::move(spawned).error();
    }
    const pid_t pid = spawned->pid;
    const int output = spawned->output;
    std::string line;
    std::string last;
    while (read_line(output, line, deadline)) { // until it closes its output (it ends) or the time is up
        if (!line.empty()) {
            last = line;
        }
    }
    if (!line.empty()) { // a last line without its newline
        last = line;
    }
    ::close(output);
    int status = 0;
    pid_t reaped = 0;
    while ((reaped = ::waitpid(pid, &status, WNOHANG)) == 0 && clock::now() < deadline && !interrupted()) {
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    if (reaped != pid) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        why = interrupted() ? "interrupted" : fmt::format("hotpath {} did not end in time", args.front());
        return service_problem(std::move(why));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return {};
    }
    why = fmt::format("hotpath {} {}", fmt::join(args, " "),
                      last.empty() ? (WIFEXITED(status) ? fmt::format("exited with {}", WEXITSTATUS(status))
                                                        : fmt::format("died of signal {}", WTERMSIG(status)))
                                   : "failed: " + last);
    return service_problem(std::move(why));
}

service_set::~service_set() {
    stop_all();
}

result<service*, problem> service_set::spawn(const std::string& name, const std::vector<std::string>& argv,
                                             const std::vector<std::string>& env) {
    auto child = spawn_child(argv, env);
    if (!child) {
        return std::move(child).error();
    }
    service& s = running_.emplace_back();
    s.name = name;
    s.pid = child->pid;
    s.output = child->output;
    s.tail = std::make_shared<service::output_tail>();
    if (tls_ != nullptr) {
        s.ca_file = tls_->ca_file;
    }
    return &s;
}

namespace {

// Drains a child's output until it ends (EOF when the child is gone), keeping its last few KiB in `tail`.
void start_drain(service& s) {
    constexpr std::size_t keep = 16384;
    s.drain = std::thread([fd = s.output, tail = s.tail] {
        char buffer[4096];
        for (;;) {
            const ssize_t n = ::read(fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return;
            }
            const std::lock_guard hold(tail->lock);
            tail->text.append(buffer, static_cast<std::size_t>(n));
            if (tail->text.size() > 2 * keep) {
                tail->text.erase(0, tail->text.size() - keep);
            }
        }
    });
}

} // namespace

result<const service*, problem> service_set::wait_ready(service& s, const std::string& path, bool any_status,
                                                        clock::time_point deadline) {
    std::string why;
    std::string last;
    while (!interrupted()) {
        if (auto a = get_local(s, path, std::chrono::milliseconds{500}); a && (any_status || a->status == 200)) {
            return &s;
        } else if (a) {
            last = fmt::format("GET {} answered {}", path, a->status);
        } else {
            last = std::move(a).error().message;
        }
        if (clock::now() >= deadline) {
            break;
        }
        if (::waitpid(s.pid, nullptr, WNOHANG) == s.pid) {
            s.pid = -1;
            last = "it exited";
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    why = interrupted() ? "interrupted" : fmt::format("{} on port {} did not answer: {}", s.name, s.port, last);
    stop(&s);
    return service_problem(std::move(why));
}

result<const service*, problem> service_set::start(const std::vector<std::string>& args,
                                                   std::chrono::milliseconds timeout) {
    std::string why;
    const auto deadline = clock::now() + timeout;
    auto self = self_path();
    if (!self) {
        return std::move(self).error();
    }
    std::vector<std::string> argv{*self, "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const char* extra : {"--port", "0", "--drain-timeout", "1000"}) {
        argv.emplace_back(extra);
    }
    if (tls_ != nullptr) {
        argv.insert(argv.end(), {"--tls-cert", tls_->cert_file, "--tls-key", tls_->key_file});
        if (std::find(args.begin(), args.end(), "--upstream") != args.end()) {
            argv.insert(argv.end(), {"--upstream-cacert", tls_->ca_file}); // an upstream of the lab's is HTTPS too
        }
    }
    auto started = spawn(args.empty() ? "?" : args.front(), argv);
    if (!started) {
        return std::move(started).error();
    }
    service& s = **started;
    // "hotpath: serving weather on http://127.0.0.1:40123 with 2 event loops on io_uring; HTTP/1.1 and HTTP/2 (Ctrl-C
    // stops)"
    static const std::regex listening(R"(serving \S+ on https?://[^ ]*:(\d+))");
    std::string line;
    std::string said;
    while (s.port == 0 && read_line(s.output, line, deadline)) {
        std::smatch m;
        if (std::regex_search(line, m, listening)) {
            s.port = static_cast<std::uint16_t>(std::stoul(m[1].str()));
        } else {
            said += said.empty() ? line : " / " + line;
        }
    }
    if (s.port == 0) {
        why = interrupted()  ? "interrupted"
              : said.empty() ? fmt::format("serve {} did not start in time", s.name)
                             : fmt::format("serve {}: {}", s.name, said);
        stop(&s);
        return service_problem(std::move(why));
    }
    start_drain(s);
    return wait_ready(s, "/debug/routes", false, deadline);
}

result<const service*, problem> service_set::start_peer(const std::string& name, const std::vector<std::string>& argv,
                                                        std::uint16_t port, const std::string& ready_path,
                                                        std::chrono::milliseconds timeout) {
    std::string why;
    const auto deadline = clock::now() + timeout;
    if (argv.empty() || ::access(argv.front().c_str(), X_OK) != 0) {
        why = fmt::format("{}: {} is not an executable", name, argv.empty() ? std::string{"(nothing)"} : argv.front());
        return service_problem(std::move(why));
    }
    std::vector<std::string> env;
    if (tls_ != nullptr) {
        // Kestrel's certificate for every https:// URL it is given (PEM, .NET 5 on), and the roots .NET's HttpClient
        // trusts on Linux (OpenSSL's variable): an original that calls another trusts the lab's CA.
        env = {"Kestrel__Certificates__Default__Path=" + tls_->cert_file,
               "Kestrel__Certificates__Default__KeyPath=" + tls_->key_file, "SSL_CERT_FILE=" + tls_->ca_file};
    }
    auto spawned = spawn(name, argv, env);
    if (!spawned) {
        return std::move(spawned).error();
    }
    service* started = *spawned;
    started->port = port;
    started->hotpath = false;
    start_drain(*started);
    return wait_ready(*started, ready_path, true, deadline);
}

std::string service::last_output() const {
    if (!tail) {
        return {};
    }
    const std::lock_guard hold(tail->lock);
    std::string_view text = tail->text;
    if (const auto first = text.find('\n'); text.size() > 16384 && first != std::string_view::npos) {
        text.remove_prefix(first + 1); // the first line may have lost its start
    }
    return std::string(text);
}

std::string default_peers_folder() {
    const auto self = self_path();
    return self ? (std::filesystem::path(*self).parent_path().parent_path() / "peers").string() : std::string();
}

std::uint16_t free_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return 0;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    std::uint16_t port = 0;
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
        port = ntohs(a.sin_port);
    }
    ::close(fd);
    return port;
}

void service_set::stop(const service* which, std::chrono::milliseconds grace) {
    for (auto it = running_.begin(); it != running_.end(); ++it) {
        if (&*it != which) {
            continue;
        }
        const auto deadline = clock::now() + grace;
        bool reaped = it->pid < 0; // already reaped (it exited while starting)
        if (!reaped) {
            ::kill(it->pid, SIGTERM);
        }
        while (clock::now() < deadline) {
            if (::waitpid(it->pid, nullptr, WNOHANG) == it->pid) {
                reaped = true;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds{5});
        }
        if (!reaped) {
            ::kill(it->pid, SIGKILL);
            ::waitpid(it->pid, nullptr, 0);
        }
        if (it->drain.joinable()) {
            it->drain.join(); // the pipe's writer is gone with the child: the drain has seen its end
        }
        ::close(it->output);
        running_.erase(it);
        return;
    }
}

void service_set::stop_all() {
    // Every child gets its SIGTERM first, so that they drain at the same time rather than one after another.
    for (const service& s : running_) {
        if (s.pid > 0) {
            ::kill(s.pid, SIGTERM);
        }
    }
    while (!running_.empty()) {
        stop(&running_.back());
    }
}

std::vector<pid_t> service_set::pids() const {
    std::vector<pid_t> out;
    for (const service& s : running_) {
        out.push_back(s.pid);
    }
    return out;
}

} // namespace hotpath::lab
