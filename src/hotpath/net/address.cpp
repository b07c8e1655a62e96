// Resolving the address to listen on (getaddrinfo, at start-up only) and writing host:port.
#include <hotpath/net/address.hpp>

#include <hotpath/core/error.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstring>
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

std::optional<endpoint> endpoint::from_literal(std::string_view host, std::uint16_t port) noexcept {
    char text[INET6_ADDRSTRLEN + 1] = {};
    if (host.empty() || host.size() > INET6_ADDRSTRLEN) {
        return std::nullopt;
    }
    std::memcpy(text, host.data(), host.size());
    endpoint e;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&e.address);
    if (::inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        e.length = sizeof(sockaddr_in);
        return e;
    }
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&e.address);
    if (::inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        e.length = sizeof(sockaddr_in6);
        return e;
    }
    if (host.find('%') == std::string_view::npos) {
        return std::nullopt;
    }
    // A scope ("fe80::1%eth0") is not part of inet_pton's syntax: getaddrinfo with AI_NUMERICHOST reads it
    // without a lookup.
    addrinfo hints{};
    hints.ai_family = AF_INET6;
    hints.ai_flags = AI_NUMERICHOST;
    addrinfo* found = nullptr;
    if (::getaddrinfo(text, nullptr, &hints, &found) != 0 || found == nullptr) {
        return std::nullopt;
    }
    const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
    if (found->ai_family != AF_INET6 || found->ai_addrlen > sizeof(e.address)) {
        return std::nullopt;
    }
    std::memcpy(&e.address, found->ai_addr, found->ai_addrlen);
    e.length = found->ai_addrlen;
    e.set_port(port);
    return e;
}

std::uint16_t endpoint::port() const noexcept {
    if (family() == AF_INET6) {
        return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
    }
    return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

void endpoint::set_port(std::uint16_t port) noexcept {
    if (family() == AF_INET6) {
        reinterpret_cast<sockaddr_in6*>(&address)->sin6_port = htons(port);
    } else {
        reinterpret_cast<sockaddr_in*>(&address)->sin_port = htons(port);
    }
}

std::string endpoint::address_text() const {
    char text[INET6_ADDRSTRLEN] = {};
    if (family() == AF_INET6) {
        const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
        ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
        std::string out(text);
        if (v6->sin6_scope_id != 0) {
            out += '%';
            out += std::to_string(v6->sin6_scope_id);
        }
        return out;
    }
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, text, sizeof(text));
    return text;
}

result<endpoint> resolve_listen_address(std::string_view host) {
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    if (host.empty()) {
        return make_error_code(errc::invalid_address);
    }
    if (auto literal = endpoint::from_literal(host, 0)) {
        return *literal;
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
        if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) && a->ai_addrlen <= sizeof(sockaddr_storage)) {
            endpoint e;
            std::memcpy(&e.address, a->ai_addr, a->ai_addrlen);
            e.length = a->ai_addrlen;
            e.set_port(0);
            return e;
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

std::optional<std::pair<std::string, std::uint16_t>> parse_listen_at(std::string_view text) {
    std::string_view host = "127.0.0.1";
    std::string_view port = text;
    if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
            host = host.substr(1, host.size() - 2);
        } else if (host.find(':') != std::string_view::npos) {
            return std::nullopt; // an IPv6 address goes in brackets
        }
    }
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (host.empty() || port.empty() || ec != std::errc{} || end != port.data() + port.size() || value > 65535) {
        return std::nullopt;
    }
    return std::pair{std::string(host), static_cast<std::uint16_t>(value)};
}

} // namespace hotpath::net
