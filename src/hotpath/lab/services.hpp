// The lab's child services: `hotpath serve NAME ...` run from this same executable on a port each picks itself,
// health-checked, and always stopped (SIGTERM, then SIGKILL) by the lab; plus the one blocking GET the lab needs.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/lab/certificates.hpp>

#include <hotpath/probe/probe.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace hotpath::load {
struct plan;
struct results;
enum class progress_mode : std::uint8_t;
} // namespace hotpath::load

namespace hotpath::lab {

// SIGINT and SIGTERM for the lab: blocked in the calling thread (call it first in main's thread, before any other
// thread starts, so that every thread inherits the mask) and polled with interrupted(). Children unblock them.
void block_stop_signals();
// True once SIGINT or SIGTERM has arrived (polls; remembers). note_signal() records one the load runner took.
bool interrupted();
void note_signal(int signal_number);
// Runs the load `plan` (load::run) under those signals: one that ended it early is noted for interrupted(), and the
// result is then errc::cancelled ("interrupted"), as it is when one came before.
result<load::results, problem> run_load(const load::plan& plan, load::progress_mode mode, std::FILE* progress);

// Runs `hotpath <args...>` from this same executable (a setup step: `freight init ...`) in the current folder and
// waits for it, at most `timeout` (then it is killed). A problem with its last line of output, or how it ended, when
// it fails, times out or the lab is interrupted (errc::cancelled then).
result<void, problem> run_command(const std::vector<std::string>& args, std::chrono::milliseconds timeout);

// A child the lab started: its PID and the read end of its stdout and stderr (the caller closes it).
struct spawned_child {
    pid_t pid = -1;
    int output = -1;
};
// Starts `argv` (argv[0] a path) with the lab's stop signals unblocked, stdin from /dev/null and its stdout and
// stderr on one pipe, this process's environment and `env` ("NAME=value", set over it); the kernel kills it should
// the lab die first. A problem when it cannot be started.
result<spawned_child, problem> spawn_child(const std::vector<std::string>& argv,
                                           const std::vector<std::string>& env = {});

// One running service. Its stdout and stderr go to a pipe that a thread of its own drains for as long as it runs
// (a service that logs must never block on a full pipe), keeping the last lines for messages.
struct service {
    std::string name; // "weather", as given to serve, or a peer's name
    pid_t pid = -1;
    std::uint16_t port = 0;
    int output = -1;     // the read end of its stdout and stderr
    bool hotpath = true; // false for a peer: no /debug/routes, no /metrics of ours
    std::string ca_file; // served over HTTPS: the CA its certificate is trusted through; "": plain HTTP
    std::thread drain;
    struct output_tail {
        std::mutex lock;
        std::string text;
    };
    std::shared_ptr<output_tail> tail; // its last output (a few KiB), written by `drain` until it ends
    // What it wrote last, whole lines (thread-safe).
    std::string last_output() const;
    std::string url() const {
        return (ca_file.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") + std::to_string(port);
    }
};

// GET <s.url()><path_and_query> through probe::fetch (a connection of its own, blocking, at most `timeout` in all,
// trusting s.ca_file over HTTPS): the lab's health checks and scrapes. A failure is probe's one line.
result<probe::fetched, problem> get_local(const service& s, std::string_view path_and_query,
                                          std::chrono::nanoseconds timeout);

// Where scripts/build-peers.sh puts the .NET originals and their tools for this executable: ../peers beside it
// (build/release/hotpath -> build/peers); "" when this executable's path cannot be read.
std::string default_peers_folder();

// A port free on 127.0.0.1 right now (bound, read, released), for a peer that cannot pick its own; 0 on failure.
std::uint16_t free_loopback_port();

// Owns the children it starts; its destructor stops those still running. Used from one thread.
class service_set {
public:
    // With `tls`, every service serves HTTPS with its certificate (hotpath's with --tls-cert, trusting it for an
    // --upstream; a peer, Kestrel, through its configuration's default certificate and SSL_CERT_FILE), and is reached
    // over it. It must outlive the set.
    explicit service_set(const lab_certificates* tls = nullptr) : tls_(tls) {}
    service_set(const service_set&) = delete;
    service_set& operator=(const service_set&) = delete;
    ~service_set();

    // Runs `hotpath serve <args...> --port 0`, reads the port from the line it prints on start, then waits until
    // GET /debug/routes answers 200; all within `timeout`. A one-line problem on failure (the child is stopped).
    result<const service*, problem> start(const std::vector<std::string>& args, std::chrono::milliseconds timeout);
    // Runs a program that is not hotpath (a .NET original): `argv` as given, the lab having chosen `port` and put
    // it and the scheme (https://, with the set's certificates) into the arguments; ready once GET `ready_path` answers
    // anything at all (a 404 is an answer). A one-line problem on failure (the child is stopped).
    result<const service*, problem> start_peer(const std::string& name, const std::vector<std::string>& argv,
                                               std::uint16_t port, const std::string& ready_path,
                                               std::chrono::milliseconds timeout);
    // SIGTERM, then SIGKILL after `grace`; reaps it. Safe to call twice.
    void stop(const service* s, std::chrono::milliseconds grace = std::chrono::seconds{3});
    void stop_all();
    // The PIDs of the children still running, for a test's eyes ("HOTPATH_LAB_PIDS").
    std::vector<pid_t> pids() const;

private:
    // fork + exec of argv[0] with the lab's signals unblocked and its output on a pipe.
    result<service*, problem> spawn(const std::string& name, const std::vector<std::string>& argv,
                                    const std::vector<std::string>& env = {});
    // Waits until GET `path` answers (`any_status`, or 200) or the deadline; stops the child on failure.
    result<const service*, problem> wait_ready(service& s, const std::string& path, bool any_status,
                                               std::chrono::steady_clock::time_point deadline);
    const lab_certificates* tls_ = nullptr;
    std::list<service> running_; // a list: the pointers start() hands out stay valid
};

} // namespace hotpath::lab
