// Addresses: an IPv4 or IPv6 socket address, the address a server listens on, and host:port for URLs.
#pragma once

#include <hotpath/core/result.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <sys/socket.h>

namespace hotpath::net {

// An IPv4 or IPv6 address and port, as the socket calls take it.
struct endpoint {
    sockaddr_storage address{};
    socklen_t length = 0;

    // An IP literal ("127.0.0.1", "::1"; no brackets), or nullopt for anything else.
    static std::optional<endpoint> from_literal(std::string_view host, std::uint16_t port) noexcept;
    int family() const noexcept { return address.ss_family; }
    std::uint16_t port() const noexcept;
    void set_port(std::uint16_t port) noexcept;
    // The address alone as text: "127.0.0.1", "::1", "fe80::1%2" (an IPv6 scope as its number).
    std::string address_text() const;
};

// The address to listen on for `host` (port 0): an IPv4 or IPv6 literal as it is ("127.0.0.1", "::1", "::"; an
// IPv6 literal may come in brackets, "[::1]"), else a host name resolved with getaddrinfo, whose first address
// (the system's preference, RFC 6724) is taken. Blocks while resolving: for start-up, never on a loop. Errors:
// errc::invalid_address when `host` is neither a literal nor a host name (empty, or a malformed literal such as
// "256.1.1.1" or "1::2::3", which is not looked up), errc::resolve_failed when the name does not resolve.
result<endpoint> resolve_listen_address(std::string_view host);

// "host:port" for the authority of a URL: an IPv6 literal in brackets ("[::1]:8080", RFC 3986 §3.2.2), anything
// else as it is ("127.0.0.1:8080", "localhost:8080"). Allocates the string.
std::string host_port(std::string_view host, std::uint16_t port);

// What an option naming an address to listen on takes: "PORT" (on 127.0.0.1), "HOST:PORT" or "[IPv6]:PORT", the
// host without its brackets; none for anything else (an IPv6 address without brackets, a port past 65535).
std::optional<std::pair<std::string, std::uint16_t>> parse_listen_at(std::string_view text);

} // namespace hotpath::net
