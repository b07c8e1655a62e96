// Runs a hotpath server in-process on 127.0.0.1 with a free port, for integration tests.
#pragma once

#include <hotpath/server/server.hpp>

#include <charconv>
#include <cstdlib>
#include <memory>
#include <string_view>

namespace hotpath::test {

// A query parameter (or any digits) as a number for a test route: 0 when there are none.
inline unsigned to_unsigned(std::string_view s) {
    unsigned v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

// The I/O backend the tests run on: HOTPATH_TEST_IO=uring|epoll (ctest runs the server tests once with each).
inline io_backend test_io() {
    const char* env = std::getenv("HOTPATH_TEST_IO");
    const std::string_view v = env == nullptr ? "" : env;
    return v == "uring" ? io_backend::uring : v == "epoll" ? io_backend::epoll : io_backend::automatic;
}

// Starts on construction (port 0, `threads` loops) and stops gracefully on destruction.
class test_server {
public:
    explicit test_server(const app& routes, http::limits limits = {}, unsigned threads = 1)
        : test_server(routes, options_with(limits, threads)) {}
    // With options of the test's own; the port (0) and the backend (test_io) are set here.
    test_server(const app& routes, server_options options) {
        options.port = 0;
        options.io = test_io();
        server_ = std::make_unique<server>(routes, options);
        auto started = server_->start();
        ok_ = started.has_value();
    }
    ~test_server() {
        server_->stop();
        server_->wait();
    }

    bool ok() const noexcept { return ok_; }
    std::uint16_t port() const noexcept { return server_->port(); }
    server& get() noexcept { return *server_; }

private:
    static server_options options_with(const http::limits& limits, unsigned threads) {
        server_options options;
        options.threads = threads;
        options.limits = limits;
        return options;
    }

    std::unique_ptr<server> server_;
    bool ok_ = false;
};

} // namespace hotpath::test
