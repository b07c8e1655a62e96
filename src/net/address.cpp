// Resolving the address to listen on (getaddrinfo, at start-up only) and writing host:port.
#include "net/address.hpp"

#include "core/error.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>

namespace hotpath::net {

namespace {

// A string of digits and dots can only mean an IPv4 literal, and one with a colon an IPv6 literal: neither is
// looked up as a name (getaddrinfo would try DNS for "256.1.1.1" and take seconds to fail).
bool looks_literal(std::string_view host) noexcept {
    return host.find(':') != std::string_view::npos ||
           std::all_of(host.begin(), host.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

} // namespace

result<boost::asio::ip::address> resolve_listen_address(std::string_view host) {
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    if (host.empty()) {
        return make_error_code(errc::invalid_address);
    }
    boost::system::error_code ec;
    const auto literal = boost::asio::ip::make_address(host, ec);
    if (!ec) {
        return literal;
    }
    if (looks_literal(host)) {
        return make_error_code(errc::invalid_address);
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string name(host);
    if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
        return make_error_code(errc::resolve_failed);
    }
    const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            const auto* v4 = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
            boost::asio::ip::address_v4::bytes_type bytes;
            std::copy_n(reinterpret_cast<const unsigned char*>(&v4->sin_addr), bytes.size(), bytes.begin());
            return boost::asio::ip::address{boost::asio::ip::address_v4{bytes}};
        }
        if (a->ai_family == AF_INET6) {
            const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
            boost::asio::ip::address_v6::bytes_type bytes;
            std::copy_n(reinterpret_cast<const unsigned char*>(&v6->sin6_addr), bytes.size(), bytes.begin());
            return boost::asio::ip::address{boost::asio::ip::address_v6{bytes, v6->sin6_scope_id}};
        }
    }
    return make_error_code(errc::resolve_failed);
}

std::string host_port(std::string_view host, std::uint16_t port) {
    std::string out;
    const bool bracket = host.find(':') != std::string_view::npos && !host.starts_with('[');
    out.reserve(host.size() + 8);
    if (bracket) {
        out += '[';
    }
    out += host;
    if (bracket) {
        out += ']';
    }
    out += ':';
    out += std::to_string(port);
    return out;
}

} // namespace hotpath::net
