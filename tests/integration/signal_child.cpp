// A child process for server_test: a program that starts a server and waits for SIGTERM without ever calling
// server::block_stop_signals(), as one written without knowing of it would.
#include "support/test_server.hpp"
#include <hotpath/net/sleep.hpp>
#include <hotpath/server/server.hpp>

#include <charconv>
#include <cstdio>
#include <string_view>

int main() {
    using namespace hotpath;
    app routes;
    routes.get("/slow", [](request& req, response& res) -> task<void> {
        unsigned ms = 0;
        const std::string_view q = req.query_param("ms");
        std::from_chars(q.data(), q.data() + q.size(), ms);
        co_await net::sleep_for(std::chrono::milliseconds{ms});
        res.text("slow");
    });
    server_options options;
    options.port = 0;
    options.threads = 2;
    options.io = test::test_io();
    server s(routes, options);
    if (!s.start()) {
        return 1;
    }
    std::printf("%u\n", static_cast<unsigned>(s.port()));
    std::fflush(stdout);
    s.wait_for_stop_signal();
    std::printf("drained after %llu requests\n", static_cast<unsigned long long>(s.stats().requests));
    return 0;
}
