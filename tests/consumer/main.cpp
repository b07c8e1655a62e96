// Serves one route from an installed hotpath on a free port, answers one request from itself, exits 0.
#include <hotpath/server.hpp>

#include <arpa/inet.h>
#include <cstdio>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

int main() {
    hotpath::app app;
    app.get("/ping", [](hotpath::request&, hotpath::response& res) { res.text("pong"); });
    hotpath::server server(app, {.port = 0, .threads = 1});
    if (!server.start()) {
        return 1;
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        return 1;
    }
    const std::string req = "GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), 0) != static_cast<ssize_t>(req.size())) {
        return 1;
    }
    std::string reply;
    char buf[1024];
    ssize_t n = 0;
    while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) {
        reply.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    server.stop();
    server.wait();
    std::puts(reply.c_str());
    return reply.find("\r\n\r\npong") != std::string::npos ? 0 : 1;
}
