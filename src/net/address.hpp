// The address a server listens on: a literal or a host name made into an IP address, and host:port for URLs.
#pragma once

#include "core/result.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace hotpath::net {

// The IP address to listen on for `host`: an IPv4 or IPv6 literal as it is ("127.0.0.1", "::1", "::"; an IPv6
// literal may come in brackets, "[::1]"), else a host name resolved with getaddrinfo, whose first address (the
// system's preference, RFC 6724) is taken. Blocks while resolving: for start-up, never on a loop. Errors:
// errc::invalid_address when `host` is neither a literal nor a host name (empty, or a malformed literal such as
// "256.1.1.1" or "1::2::3", which is not looked up), errc::resolve_failed when the name does not resolve.
result<boost::asio::ip::address> resolve_listen_address(std::string_view host);

// "host:port" for the authority of a URL: an IPv6 literal in brackets ("[::1]:8080", RFC 3986 §3.2.2), anything
// else as it is ("127.0.0.1:8080", "localhost:8080"). Allocates the string.
std::string host_port(std::string_view host, std::uint16_t port);

} // namespace hotpath::net
