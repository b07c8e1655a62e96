// A burst of thousands of connections at once: the loop's submission queue fills and is flushed to make room
// (back-pressure), and every connection is answered.
#include "support/test_server.hpp"
#include <hotpath/server/server.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace hotpath {
namespace {

TEST(burst_test, thousands_of_connections_at_once_are_all_answered) {
    // Each connection costs two descriptors here (client and server side, one process).
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
    const int connections = static_cast<int>(std::min<rlim_t>(8000, (limit.rlim_cur - 200) / 2));
    ASSERT_GE(connections, 1000) << "RLIMIT_NOFILE too low for a burst";

    app a;
    a.get("/hello", [](request&, response& res) { res.text("hello"); });
    test::test_server srv(a, {}, 1);
    ASSERT_TRUE(srv.ok());
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(srv.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::vector<int> fds;
    fds.reserve(static_cast<std::size_t>(connections));
    for (int i = 0; i < connections; ++i) {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ASSERT_GE(fd, 0) << i;
        ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << "connection " << i;
        fds.push_back(fd);
    }
    // Every request goes out before any answer is read: the server meets them all at once.
    const std::string request = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
    for (const int fd : fds) {
        ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
    }
    int answered = 0;
    for (const int fd : fds) {
        timeval wait{10, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
        std::string reply;
        char buf[512];
        while (reply.find("hello") == std::string::npos) {
            const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
            if (n <= 0) {
                break;
            }
            reply.append(buf, static_cast<std::size_t>(n));
        }
        answered += reply.rfind("HTTP/1.1 200 OK", 0) == 0 && reply.find("hello") != std::string::npos ? 1 : 0;
        ::close(fd);
    }
    EXPECT_EQ(answered, connections);
}

} // namespace
} // namespace hotpath
