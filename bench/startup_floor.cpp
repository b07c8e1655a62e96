// The floor for bench/startup_probe.cpp on this machine: the least a server can do before its first answer
// (exec, socket, bind, listen, accept, one fixed response), linked statically like the release hotpath.
// Usage: startup_floor PORT
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

int main(int argc, char** argv) {
    if (argc != 2) {
        return 2;
    }
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[1])));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 128) != 0) {
        return 1;
    }
    static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\nHello, World!";
    for (;;) {
        const int c = ::accept(s, nullptr, nullptr);
        char request[4096];
        if (c >= 0 && ::read(c, request, sizeof request) > 0) {
            [[maybe_unused]] const auto sent = ::write(c, answer, sizeof answer - 1);
        }
        ::close(c);
    }
}
