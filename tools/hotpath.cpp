// The `hotpath` command line: parses options and wires the library's pieces together; no logic of its own.
#include "apps/apps.hpp"
#include "server/server.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <string>

namespace {

struct serve_flags {
    hotpath::server_options options;
    unsigned headers_timeout_s = 30;
    unsigned keep_alive_timeout_s = 130;
    unsigned drain_timeout_ms = 30'000;
    std::string io = "auto";

    void add_to(CLI::App& cmd) {
        cmd.add_option("--address", options.address, "Address to listen on")->capture_default_str();
        cmd.add_option("--threads", options.threads, "Event loops, one thread each; 0: one per core")
            ->capture_default_str();
        cmd.add_option("--max-connections", options.limits.max_connections, "Open connections allowed; 0: no limit")
            ->capture_default_str();
        cmd.add_option("--max-body-bytes", options.limits.max_body_bytes, "Largest request body (413 above)")
            ->capture_default_str();
        cmd.add_option("--headers-timeout", headers_timeout_s, "Seconds to receive a request head (408 after)")
            ->capture_default_str()
            ->check(CLI::Range(1u, 3600u));
        cmd.add_option("--keepalive-timeout", keep_alive_timeout_s, "Seconds an idle keep-alive connection is kept")
            ->capture_default_str()
            ->check(CLI::Range(1u, 86400u));
        cmd.add_option("--io", io, "Socket I/O: io_uring where available (auto), uring, or epoll")
            ->capture_default_str()
            ->check(CLI::IsMember({"auto", "uring", "epoll"}));
        cmd.add_option("--drain-timeout", drain_timeout_ms,
                       "Milliseconds in-flight requests get to finish on SIGINT/SIGTERM")
            ->capture_default_str();
    }

    void apply() {
        options.limits.request_headers_timeout = std::chrono::seconds{headers_timeout_s};
        options.limits.keep_alive_timeout = std::chrono::seconds{keep_alive_timeout_s};
        options.limits.drain_timeout = std::chrono::milliseconds{drain_timeout_ms};
        options.io = io == "uring"   ? hotpath::io_backend::uring
                     : io == "epoll" ? hotpath::io_backend::epoll
                                     : hotpath::io_backend::automatic;
    }
};

// Serves `routes` until SIGINT/SIGTERM; prints where it listens, then a one-line summary.
int serve(std::string_view name, const hotpath::app& routes, serve_flags& flags) {
    flags.apply();
    hotpath::server srv(routes, flags.options);
    hotpath::server::block_stop_signals();
    if (auto started = srv.start(); !started) {
        fmt::print(stderr, "hotpath: cannot listen on {}:{}: {}\n", flags.options.address, flags.options.port,
                   started.error().message());
        return 1;
    }
    fmt::print("hotpath: serving {} on http://{}:{} with {} event loop{} on {} (Ctrl-C stops)\n", name,
               flags.options.address, srv.port(), srv.threads(), srv.threads() == 1 ? "" : "s",
               srv.io() == hotpath::io_backend::uring ? "io_uring" : "epoll");
    std::fflush(stdout);
    srv.wait_for_stop_signal();
    const auto s = srv.stats();
    fmt::print("hotpath: stopped after {} requests on {} connections ({} malformed, {} handler errors)\n", s.requests,
               s.connections_accepted, s.bad_requests, s.handler_exceptions);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"hotpath: build fast HTTP APIs, load them, and find where the time goes."};
    cli.require_subcommand(1);
    auto* serve_cmd = cli.add_subcommand("serve", "Run one of the demo services");
    serve_cmd->require_subcommand(1);

    serve_flags platform_flags;
    auto* platform = serve_cmd->add_subcommand("platform", "TechEmpower tests: GET /plaintext and GET /json");
    platform_flags.options.port = 8080;
    platform->add_option("--port,-p", platform_flags.options.port, "Port; 0 picks a free one")->capture_default_str();
    platform_flags.add_to(*platform);

    serve_flags avatar_flags;
    unsigned avatar_n = 0;
    auto* avatar = serve_cmd->add_subcommand("avatar", "Case 5: GET / redirects to a random Renard-{k}.png");
    avatar_flags.options.port = 5001;
    avatar->add_option("port", avatar_flags.options.port, "Port; 0 picks a free one")->capture_default_str();
    avatar->add_option("n", avatar_n, "Largest k: k is uniform in 0..N")->capture_default_str();
    avatar_flags.add_to(*avatar);

    try {
        cli.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        return cli.exit(CLI::CallForHelp());
    } catch (const CLI::CallForAllHelp&) {
        return cli.exit(CLI::CallForAllHelp());
    } catch (const CLI::ParseError& e) {
        const std::string what = e.what();
        fmt::print(stderr, "hotpath: {} (see hotpath --help)\n", what);
        return 2;
    }

    hotpath::app routes;
    if (platform->parsed()) {
        hotpath::apps::map_platform(routes);
        return serve("platform", routes, platform_flags);
    }
    if (avatar->parsed()) {
        hotpath::apps::map_avatar(routes, avatar_n);
        return serve("avatar", routes, avatar_flags);
    }
    return 2;
}
