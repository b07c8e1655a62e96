// Serves one route from an installed hotpath on a free port, answers one request from itself, exits 0. Built with
// CONSUMER_COUNTS_ALLOCATIONS (linked with hotpath::alloc_counter), it also checks that the route report counts the
// route's allocations, as a user's profiling build would.
#include <hotpath/core/alloc_count.hpp>
#include <hotpath/server.hpp>

#include <arpa/inet.h>
#include <cstdint>
#include <cstdio>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace {

// One request on a connection of its own: the whole reply ("" when the connection failed).
std::string ask(std::uint16_t port, const std::string& target) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::close(fd);
        return {};
    }
    const std::string req = "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), 0) != static_cast<ssize_t>(req.size())) {
        ::close(fd);
        return {};
    }
    std::string reply;
    char buf[1024];
    ssize_t n = 0;
    while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) {
        reply.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return reply;
}

} // namespace

int main() {
    hotpath::app app;
    // A route that allocates: a string longer than the small-string buffer, built per request.
    app.get("/ping", [](hotpath::request&, hotpath::response& res) { res.text(std::string(64, 'p').substr(0, 4)); });
    app.debug_routes("/debug/routes");
    hotpath::server server(app, {.port = 0, .threads = 1});
    if (!server.start()) {
        return 1;
    }
    const std::string reply = ask(server.port(), "/ping");
    const std::string report = ask(server.port(), "/debug/routes");
    server.stop();
    server.wait();
    std::puts(reply.c_str());
    if (reply.find("\r\n\r\npppp") == std::string::npos) {
        return 1;
    }
#ifdef CONSUMER_COUNTS_ALLOCATIONS
    // Counted: the allocator is this program's, and the route report says so with a figure for the route.
    if (!hotpath::alloc::counting() || report.find("\"allocations_counted\":true") == std::string::npos ||
        report.find("\"allocations_per_request\":null") != std::string::npos) {
        std::fprintf(stderr, "consumer_counting: allocations not counted: %s\n", report.c_str());
        return 1;
    }
#else
    if (hotpath::alloc::counting() || report.find("\"allocations_counted\":false") == std::string::npos) {
        std::fprintf(stderr, "consumer: allocations counted without the counter: %s\n", report.c_str());
        return 1;
    }
#endif
    return 0;
}
