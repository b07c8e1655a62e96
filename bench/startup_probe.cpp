// Start-up time of a server: fork, pin the child to one CPU and exec it, then from another CPU retry a
// connection every 50 µs until GET /plaintext is answered. Prints "connect_ms answer_ms" and stops the child.
// Usage: startup_probe PORT SERVER_CPU PROBE_CPU CMD [ARGS...]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: startup_probe PORT SERVER_CPU PROBE_CPU CMD [ARGS...]\n");
        return 2;
    }
    const int port = std::atoi(argv[1]);
    const int server_cpu = std::atoi(argv[2]);
    pin(std::atoi(argv[3]));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    const auto t0 = std::chrono::steady_clock::now();
    const pid_t child = fork();
    if (child == 0) {
        pin(server_cpu);
        std::freopen("/dev/null", "w", stdout);
        std::freopen("/dev/null", "w", stderr);
        execvp(argv[4], argv + 4);
        _exit(127);
    }
    double connect_ms = -1;
    double answer_ms = -1;
    const char request[] = "GET /plaintext HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n";
    while (answer_ms < 0 && ms_since(t0) < 10000) {
        const int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
            close(fd);
            std::this_thread::sleep_for(std::chrono::microseconds{50});
            continue;
        }
        if (connect_ms < 0) {
            connect_ms = ms_since(t0);
        }
        if (send(fd, request, sizeof(request) - 1, MSG_NOSIGNAL) > 0) {
            pollfd p{fd, POLLIN, 0};
            char byte = 0;
            if (poll(&p, 1, 5000) == 1 && recv(fd, &byte, 1, 0) == 1) {
                answer_ms = ms_since(t0);
            }
        }
        close(fd);
    }
    kill(child, SIGTERM);
    int status = 0;
    waitpid(child, &status, 0);
    if (answer_ms < 0) {
        std::fprintf(stderr, "startup_probe: no answer in 10 s\n");
        return 1;
    }
    std::printf("%.2f %.2f\n", connect_ms, answer_ms);
    return 0;
}
