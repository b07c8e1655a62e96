// `hotpath serve SERVICE [options]`: runs one of the demo services (apps/) until SIGINT or SIGTERM.
#include "command.hpp"

#include "apps/apps.hpp"
#include "apps/freight/service.hpp"
#include "apps/profile/service.hpp"
#include "apps/storage/files.hpp"
#include <hotpath/load/plan.hpp>
#include <hotpath/net/tls.hpp>
#include <hotpath/server/server.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

namespace hotpath::cli {
namespace {

// Thread-per-core: more loops than any machine has cores only costs memory and rings.
constexpr unsigned max_threads = 1024;

// The options every service shares: where to listen, the loops, the limits and timeouts.
struct serve_flags {
    server_options options;
    unsigned headers_timeout_s = 30;
    unsigned keep_alive_timeout_s = 130;
    unsigned drain_timeout_ms = 30'000;
    unsigned drain_delay_ms = 0;
    unsigned retry_after_s = 1;
    unsigned stall_threshold_ms = 25;
    std::string io = "auto";
    std::string access_log_format = "json";
    unsigned tls_handshake_timeout_s = 10;
    std::string tls_min = "1.2";
    std::vector<std::string> tls_certs; // --tls-cert, in order: the first is served by default, the others by SNI
    std::vector<std::string> tls_keys;  // --tls-key, one per --tls-cert, in the same order

    void add_to(CLI::App& cmd) {
        cmd.add_option("--address", options.address, "Address or host name to listen on")->capture_default_str();
        cmd.add_option("--threads", options.threads, "Event loops, one thread each; 0: one per core")
            ->capture_default_str()
            ->check(CLI::Range(0u, max_threads));
        cmd.add_option("--max-connections", options.limits.max_connections,
                       "Open connections allowed; past it a connection's first request gets 503 with Retry-After; "
                       "0: no limit")
            ->capture_default_str()
            ->check(not_negative());
        cmd.add_option("--max-in-flight", options.limits.max_requests_in_flight,
                       "Requests whose handler is running, per event loop; past it a request gets 503 with "
                       "Retry-After at once; 0: no limit")
            ->capture_default_str()
            ->check(not_negative());
        cmd.add_option("--retry-after", retry_after_s, "Seconds in the Retry-After of those 503s")
            ->capture_default_str()
            ->check(CLI::Range(0u, 86400u));
        cmd.add_option("--max-body-bytes", options.limits.max_body_bytes, "Largest request body (413 above)")
            ->capture_default_str()
            ->check(not_negative());
        cmd.add_option("--headers-timeout", headers_timeout_s, "Seconds to receive a request head (408 after)")
            ->capture_default_str()
            ->check(CLI::Range(1u, 3600u));
        cmd.add_option("--keepalive-timeout", keep_alive_timeout_s, "Seconds an idle keep-alive connection is kept")
            ->capture_default_str()
            ->check(CLI::Range(1u, 86400u));
        cmd.add_option("--min-body-rate", options.limits.min_body_bytes_per_second,
                       "Bytes/s a request body must keep up after a 5 s grace (408 below); 0: no limit")
            ->capture_default_str()
            ->check(not_negative());
        cmd.add_option("--min-response-rate", options.limits.min_response_bytes_per_second,
                       "Bytes/s a client must keep reading responses at, measured on progress after a 5 s grace "
                       "(closed below); "
                       "0: no limit")
            ->capture_default_str()
            ->check(not_negative());
        cmd.add_option("--io", io, "Socket I/O: io_uring where available (auto), uring, or epoll")
            ->capture_default_str()
            ->check(CLI::IsMember({"auto", "uring", "epoll"}));
        cmd.add_option("--stall-threshold", stall_threshold_ms,
                       "Milliseconds a loop may work in one turn before it counts as stalled (named in a log line "
                       "and /metrics); 0: no watchdog")
            ->capture_default_str()
            ->check(not_negative());
        cmd.add_option("--access-log", options.access_log,
                       "Write one line per request to FILE (appended), or to standard output with -; written off "
                       "the event loops, lines dropped and counted when the writer falls behind");
        cmd.add_option("--access-log-format", access_log_format,
                       "json (JSON lines with the time's parts) or common "
                       "(the Common Log Format)")
            ->capture_default_str()
            ->check(CLI::IsMember({"json", "common"}));
        cmd.add_flag("--server-timing", options.server_timing,
                     "Add a Server-Timing field to every response: where its time went (queue, app, downstream, "
                     "wait, total), shown by curl -v and browsers' developer tools");
        cmd.add_flag("--http2,!--no-http2", options.http2,
                     "Serve HTTP/2 beside HTTP/1.1 on the same port (default): h2c to clients that open with its "
                     "preface (prior knowledge), h2 through ALPN over TLS; --no-http2 serves HTTP/1.1 only");
        cmd.add_option("--tls-cert", tls_certs,
                       "Serve HTTPS with this certificate chain (PEM, leaf first); SIGHUP reloads it. Given again, "
                       "one more certificate, served to clients that ask (SNI) for a name it is for; the first "
                       "serves the others")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        cmd.add_option("--tls-key", tls_keys, "The certificate's private key (PEM); one per --tls-cert, in order")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        cmd.add_option("--tls-min", tls_min, "Lowest TLS version accepted: 1.2 or 1.3")
            ->capture_default_str()
            ->check(CLI::IsMember({"1.2", "1.3"}));
        cmd.add_option("--tls-client-ca", options.tls.client_ca_file,
                       "Mutual TLS: require a client certificate issued by these roots (PEM)");
        cmd.add_option("--tls-handshake-timeout", tls_handshake_timeout_s,
                       "Seconds a TLS handshake may take from the accept (closed after)")
            ->capture_default_str()
            ->check(CLI::Range(1u, 3600u));
        cmd.add_option("--max-tls-handshakes", options.limits.max_tls_handshakes,
                       "TLS handshakes in progress per event loop; a connection past it is closed at once; 0: no "
                       "limit")
            ->capture_default_str()
            ->check(not_negative());
        cmd.add_option("--drain-timeout", drain_timeout_ms,
                       "Milliseconds in-flight requests get to finish on SIGINT/SIGTERM")
            ->capture_default_str();
        cmd.add_option("--drain-delay", drain_delay_ms,
                       "Milliseconds to go on serving, and accepting, after SIGINT/SIGTERM with GET /readyz answering "
                       "503, so that a load balancer's health checks or Kubernetes take the instance out first; "
                       "then the drain (a second signal cuts it short)")
            ->capture_default_str()
            ->check(CLI::Range(0u, 3'600'000u));
    }

    void apply() {
        options.limits.request_headers_timeout = std::chrono::seconds{headers_timeout_s};
        options.limits.keep_alive_timeout = std::chrono::seconds{keep_alive_timeout_s};
        options.limits.drain_timeout = std::chrono::milliseconds{drain_timeout_ms};
        options.drain_delay = std::chrono::milliseconds{drain_delay_ms};
        options.limits.retry_after = std::chrono::seconds{retry_after_s};
        options.limits.tls_handshake_timeout = std::chrono::seconds{tls_handshake_timeout_s};
        options.tls.min_version = tls_min == "1.3" ? net::tls_1_3 : net::tls_1_2;
        options.tls.sni_certificates.clear();
        for (std::size_t i = 0; i < std::min(tls_certs.size(), tls_keys.size()); ++i) {
            if (i == 0) {
                options.tls.cert_file = tls_certs[0];
                options.tls.key_file = tls_keys[0];
            } else {
                options.tls.sni_certificates.push_back({tls_certs[i], tls_keys[i]});
            }
        }
        options.stall_threshold = std::chrono::milliseconds{stall_threshold_ms};
        options.io = io == "uring" ? io_backend::uring : io == "epoll" ? io_backend::epoll : io_backend::automatic;
        options.access_log_format =
            access_log_format == "common" ? hotpath::log_line_format::common : hotpath::log_line_format::json;
    }
};

// Serves `routes` until SIGINT/SIGTERM; prints where it listens, then a one-line summary.
int serve(std::string_view name, const app& routes, serve_flags& flags) {
    flags.apply();
    if (const auto& path = flags.options.access_log; !path.empty() && path != "-") {
        // Told apart from a port that cannot be had: a path is the user's to fix.
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            fmt::print(stderr, "hotpath: cannot open the access log {}: {}\n", path, std::strerror(errno));
            return 2;
        }
        ::close(fd);
    }
    const auto& tls = flags.options.tls;
    if (flags.tls_certs.size() != flags.tls_keys.size()) {
        fmt::print(stderr, "hotpath: HTTPS needs one --tls-key for each --tls-cert ({} --tls-cert, {} --tls-key)\n",
                   flags.tls_certs.size(), flags.tls_keys.size());
        return 2;
    }
    if (!tls.client_ca_file.empty() && !tls.enabled()) {
        fmt::print(stderr, "hotpath: --tls-client-ca needs --tls-cert and --tls-key\n");
        return 2;
    }
    server srv(routes, flags.options);
    server::block_stop_signals();
    if (auto started = srv.start(); !started) {
        if (tls.enabled() && started.error().code == make_error_code(errc::invalid_value)) {
            fmt::print(stderr, "hotpath: cannot serve HTTPS: {}\n", started.error().message);
            return 2; // a file of the user's to fix
        }
        fmt::print(stderr, "hotpath: cannot listen on {}:{}: {}\n", flags.options.address, flags.options.port,
                   started.error().message);
        return 1;
    }
    fmt::print("hotpath: serving {} on {} with {} event loop{} on {}; {} (Ctrl-C stops)\n", name, srv.url(),
               srv.threads(), srv.threads() == 1 ? "" : "s", srv.io() == io_backend::uring ? "io_uring" : "epoll",
               flags.options.http2 ? "HTTP/1.1 and HTTP/2" : "HTTP/1.1 only");
    if (tls.enabled()) {
        fmt::print("hotpath: TLS {}+ with {} (SIGHUP reloads {}); {}\n", flags.tls_min,
                   fmt::join(flags.tls_certs, ", "), flags.tls_certs.size() == 1 ? "it" : "them",
                   net::kernel_tls_status());
    }
    std::fflush(stdout);
    srv.wait_for_stop_signal();
    const auto s = srv.stats();
    fmt::print("hotpath: stopped after {} requests ({} over HTTP/2) on {} connections ({} malformed, {} timed out, {} "
               "handler errors)\n",
               s.requests, s.h2_streams, s.connections_accepted, s.bad_requests, s.timeouts, s.handler_exceptions);
    if (s.refused_in_flight + s.refused_connections + s.refused_draining != 0) {
        fmt::print("hotpath: overload: {} requests answered 503 over --max-in-flight, {} over --max-connections, {} "
                   "past --drain-timeout while stopping\n",
                   s.refused_in_flight, s.refused_connections, s.refused_draining);
    }
    if (s.timeouts != 0) {
        fmt::print("hotpath: timeouts: {} waiting for a request head, {} for a body, {} for a client to read (408 or "
                   "closed)\n",
                   s.header_timeouts, s.body_timeouts, s.response_timeouts);
    }
    if (tls.enabled()) {
        fmt::print("hotpath: TLS: {} handshakes ({} resumed), {} failed, {} timed out, {} refused over "
                   "--max-tls-handshakes\n",
                   s.tls_handshakes, s.tls_resumed, s.tls_failures, s.tls_timeouts, s.tls_refused);
    }
    if (s.accept_pauses != 0) {
        fmt::print("hotpath: accepting paused {} times: out of file descriptors (raise ulimit -n)\n", s.accept_pauses);
    }
    return 0;
}

// One demo service: its subcommand under `serve`, its own options, and how it maps its routes.
struct service {
    serve_flags flags;
    CLI::App* cmd = nullptr;
    std::function<int(app&)> map; // maps the routes; returns 0, or 2 after printing a bad option
};

runner define_serve(CLI::App& serve_cmd) {
    serve_cmd.require_subcommand(1);
    auto services = std::make_shared<std::vector<std::unique_ptr<service>>>();
    auto add = [&](const char* name, const char* description, std::uint16_t port,
                   std::function<void(CLI::App&, service&)> options, std::function<int(app&, service&)> map) {
        auto s = std::make_unique<service>();
        service& me = *s;
        me.cmd = serve_cmd.add_subcommand(name, description);
        when_chosen(*me.cmd, [&me, port, options = std::move(options)](CLI::App& c) {
            me.flags.options.port = port;
            options(c, me);
            me.flags.add_to(c);
        });
        me.map = [&me, map = std::move(map)](app& routes) { return map(routes, me); };
        services->push_back(std::move(s));
    };
    auto port_option = [](CLI::App& c, service& s) {
        c.add_option("--port,-p", s.flags.options.port, "Port; 0 picks a free one")->capture_default_str();
    };

    add("platform", "TechEmpower tests: GET /plaintext and GET /json", 8080, port_option, [](app& routes, service&) {
        apps::map_platform(routes);
        return 0;
    });

    auto avatar_n = std::make_shared<unsigned>(0);
    add(
        "avatar", "Case 5: GET / redirects to a random Renard-{k}.png", 5001,
        [avatar_n](CLI::App& c, service& s) {
            c.add_option("port,--port,-p", s.flags.options.port, "Port; 0 picks a free one")->capture_default_str();
            c.add_option("n", *avatar_n, "Largest k: k is uniform in 0..N")->capture_default_str();
        },
        [avatar_n](app& routes, service&) {
            apps::map_avatar(routes, *avatar_n);
            return 0;
        });

    auto weather_delay = std::make_shared<std::string>("10ms");
    add(
        "weather", "Case 1 downstream: GET /weatherForecast (async wait, 5 forecasts)", 5176,
        [port_option, weather_delay](CLI::App& c, service& s) {
            port_option(c, s);
            c.add_option("--delay", *weather_delay, "Asynchronous wait per request (a cache or database call)")
                ->capture_default_str();
        },
        [weather_delay](app& routes, service&) {
            const auto delay = parse_duration(*weather_delay);
            if (!delay) {
                fmt::print(stderr, "hotpath: bad --delay '{}' (e.g. 10ms)\n", *weather_delay);
                return 2;
            }
            apps::map_weather(routes, *delay);
            return 0;
        });

    struct aggregator_text {
        apps::aggregator_options options;
        std::string strategy = "sequential";
        std::string timeout = "10s";
        std::string lifetime = "5m";
        std::string protocol = "http1";
        bool upstream_insecure = false;
    };
    auto agg = std::make_shared<aggregator_text>();
    add(
        "aggregator", "Case 1 upstream: GET / calls the weather service N times (?strategy=&limit=&calls=)", 5060,
        [port_option, agg](CLI::App& c, service& s) {
            port_option(c, s);
            c.add_option("--upstream", agg->options.upstream, "The weather service's base URL")->capture_default_str();
            c.add_option("--calls", agg->options.calls, "Downstream calls per request")
                ->capture_default_str()
                ->check(CLI::Range(1u, 100000u));
            c.add_option("--strategy", agg->strategy, "sequential | all | bounded (a request's ?strategy= wins)")
                ->capture_default_str();
            c.add_option("--limit", agg->options.limit, "bounded: calls in flight at most")
                ->capture_default_str()
                ->check(CLI::Range(1u, 100000u));
            c.add_option("--timeout", agg->timeout, "Per downstream call; past it the answer is 504")
                ->capture_default_str();
            c.add_option("--upstream-connections", agg->options.client.max_connections_per_host,
                         "Pooled connections to the upstream per loop")
                ->capture_default_str()
                ->check(CLI::Range(std::size_t{1}, std::size_t{65535}));
            c.add_option("--upstream-cacert", agg->options.client.tls.ca_file,
                         "https:// upstream: trust these roots (PEM) instead of the system's")
                ->check(CLI::ExistingFile);
            c.add_flag("--upstream-insecure", agg->upstream_insecure,
                       "https:// upstream: do not verify its certificate (a test server's self-signed one)");
            c.add_option("--upstream-protocol", agg->protocol,
                         "http1; http2 (h2 by ALPN over https://, h2c with prior knowledge over http://: the calls "
                         "share a connection's streams); or prefer-http2 (what ALPN agrees)")
                ->capture_default_str()
                ->check(CLI::IsMember({"http1", "http2", "prefer-http2"}));
            c.add_option("--connection-lifetime", agg->lifetime,
                         "Pooled connections are retired after this (PooledConnectionLifetime)")
                ->capture_default_str();
        },
        [agg](app& routes, service&) {
            const auto timeout = parse_duration(agg->timeout);
            const auto lifetime = parse_duration(agg->lifetime);
            std::string why;
            if (!apps::parse_fan_out(agg->strategy, agg->options.strategy)) {
                why = "bad --strategy '" + agg->strategy + "' (sequential, all or bounded)";
            } else if (!timeout || timeout->count() <= 0) {
                why = "bad --timeout '" + agg->timeout + "' (e.g. 10s)";
            } else if (!lifetime) {
                why = "bad --connection-lifetime '" + agg->lifetime + "' (e.g. 5m)";
            } else {
                agg->options.timeout = *timeout;
                agg->options.client.connection_lifetime = *lifetime;
                agg->options.client.tls.verify = !agg->upstream_insecure;
                agg->options.client.protocol = agg->protocol == "http2"          ? client_protocol::http2
                                               : agg->protocol == "prefer-http2" ? client_protocol::prefer_http2
                                                                                 : client_protocol::http1;
                why = apps::check_aggregator_options(agg->options);
            }
            if (!why.empty()) {
                fmt::print(stderr, "hotpath: {}\n", why);
                return 2;
            }
            apps::map_aggregator(routes, agg->options);
            return 0;
        });

    struct freight_text {
        std::string db = "freight.sqlite";
        std::string variant = "lean";
        std::unique_ptr<apps::table_reloader> reloader;
    };
    auto freight = std::make_shared<freight_text>();
    add(
        "freight", "Case 2: POST /freight/quote prices a cart to a CEP (SIGHUP or a new file reloads the table)", 5080,
        [port_option, freight](CLI::App& c, service& s) {
            port_option(c, s);
            c.add_option("--db", freight->db, "SQLite price table (hotpath freight init makes one)")
                ->capture_default_str();
            c.add_option("--variant", freight->variant,
                         "lean (no allocation per request) or churn (the anti-pattern: a DOM, objects and a SQL "
                         "query per request)")
                ->capture_default_str()
                ->check(CLI::IsMember({"lean", "churn"}));
        },
        [freight](app& routes, service& s) {
            std::shared_ptr<freight::index_holder> table;
            try {
                table = std::make_shared<freight::index_holder>(freight->db);
            } catch (const std::exception& e) {
                fmt::print(stderr, "hotpath: cannot load {}: {}\n", freight->db, e.what());
                return 2;
            }
            apps::map_freight(routes, table,
                              freight->variant == "churn" ? apps::freight_variant::churn : apps::freight_variant::lean);
            // Before the server's threads. SIGHUP comes through the server, which reloads a TLS certificate with it.
            freight->reloader = std::make_unique<apps::table_reloader>(table, false);
            s.flags.options.on_reload = [r = freight->reloader.get()] { r->reload(); };
            return 0;
        });

    struct profile_text {
        apps::profile_options options;
        apps::file_store_options files;
        std::string data;
        std::string delay = "2s";
    };
    auto profile = std::make_shared<profile_text>();
    {
        std::error_code no_temp;
        const auto temp = std::filesystem::temp_directory_path(no_temp);
        profile->data = ((no_temp ? std::filesystem::path("/tmp") : temp) / "hotpath-files").string();
    }
    add(
        "profile",
        "Case 4: GET /profile/{sync,async,offload}/{id}: a delay blocking the loop (the anti-pattern), awaited, or "
        "offloaded to a bounded pool; PUT/GET/DELETE /files/{container}/{name}: uploads streamed to --data",
        5090,
        [port_option, profile](CLI::App& c, service& s) {
            port_option(c, s);
            c.add_option("--delay", profile->delay, "The backing call's length")->capture_default_str();
            c.add_option("--blocking-threads", profile->options.pool.threads,
                         "Threads of the pool /profile/offload runs its blocking call on")
                ->capture_default_str()
                ->check(CLI::Range(1u, 4096u));
            c.add_option("--data", profile->data,
                         "Folder of the file store (PUT/GET/DELETE /files/{container}/{name}); made if missing")
                ->capture_default_str();
            c.add_option("--max-file-bytes", profile->files.max_file_bytes, "Largest upload (413 above)")
                ->capture_default_str()
                ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 50));
            c.add_option("--blocking-queue", profile->options.pool.queue_capacity,
                         "Offloaded calls that may wait for a thread; beyond, 503 with Retry-After")
                ->capture_default_str()
                ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 20));
        },
        [profile](app& routes, service&) {
            if (profile->data.empty()) {
                fmt::print(stderr, "hotpath: --data needs a folder\n");
                return 2;
            }
            std::error_code made;
            std::filesystem::create_directories(profile->data, made);
            if (made || !std::filesystem::is_directory(profile->data)) {
                fmt::print(stderr, "hotpath: cannot use {} as the data folder: {}\n", profile->data,
                           made ? made.message() : "not a folder");
                return 2;
            }
            profile->files.root = profile->data;
            apps::map_file_store(routes, profile->files);
            const auto delay = parse_duration(profile->delay);
            if (!delay || delay->count() < 0) {
                fmt::print(stderr, "hotpath: bad --delay '{}' (e.g. 2s)\n", profile->delay);
                return 2;
            }
            profile->options.delay = *delay;
            apps::map_profile(routes, profile->options);
            return 0;
        });

    auto shapes_pool = std::make_shared<unsigned>(8);
    add(
        "shapes",
        "Planted capacity shapes for lab capacity: GET /scale, /lock, /pool, /grow?every=, /usl?sigma=&kappa= (?ms=)",
        5300,
        [port_option, shapes_pool](CLI::App& c, service& s) {
            port_option(c, s);
            s.flags.options.threads = 1; // one lock and one pool: they are per event loop
            c.add_option("--pool", *shapes_pool, "GET /pool: requests served at once per event loop")
                ->capture_default_str()
                ->check(CLI::Range(1u, 100000u));
        },
        [shapes_pool](app& routes, service&) {
            apps::map_shapes(routes, *shapes_pool);
            return 0;
        });

    return [services]() -> int {
        for (auto& s : *services) {
            if (s->cmd->parsed()) {
                app routes;
                if (const int bad = s->map(routes); bad != 0) {
                    return bad;
                }
                routes.metrics("/metrics");           // Prometheus's text format: on in every demo service
                routes.debug_routes("/debug/routes"); // and the per-route report, as JSON
                // Probes for a load balancer or Kubernetes: live while the loops answer; ready until a stop
                // signal, then 503 for --drain-delay before the drain.
                auto draining = std::make_shared<std::atomic<bool>>(false);
                routes.get("/livez", [](request&, response& res) { res.text("live"); });
                routes.get("/readyz", [draining](request&, response& res) {
                    if (draining->load(std::memory_order_relaxed)) {
                        res.problem(http::status::service_unavailable, "draining: stopping soon");
                    } else {
                        res.text("ready");
                    }
                });
                s->flags.options.on_draining = [draining] { draining->store(true); };
                return serve(s->cmd->get_name(), routes, s->flags);
            }
        }
        return 2;
    };
}

const registration serve_registration{
    {"serve", "Run one of the demo services", define_serve,
     "0 stopped by SIGINT or SIGTERM after draining, 1 could not start (the port is taken, ...), 2 bad usage"}};

} // namespace
} // namespace hotpath::cli
