// What a client asks of TLS for https:// URLs (the same options in the client library, `hotpath load`, probe and the
// lab), and what a server serves with. Plain data, no OpenSSL (net/tls.hpp makes a context of them).
#pragma once

#include <string>
#include <vector>

namespace hotpath::net {

// TLS versions as their protocol numbers (TLS1_2_VERSION, TLS1_3_VERSION).
inline constexpr int tls_1_2 = 0x0303;
inline constexpr int tls_1_3 = 0x0304;

struct tls_client_options {
    bool verify = true;                        // the server's chain against the trusted roots, and its name (-k: off)
    std::string ca_file;                       // PEM roots to trust instead of the system's store; empty: the system's
    std::string cert_file;                     // mutual TLS: the client's certificate chain (PEM) ...
    std::string key_file;                      // ... and its key
    int min_version = tls_1_2;                 // tls_1_2 or tls_1_3
    std::vector<std::string> alpn{"http/1.1"}; // offered, in order
    bool resume = true; // resume sessions with a server (tickets): a full handshake only the first time
    // The name sent as SNI and that the certificate must be for, instead of the URL's host (a URL with an address,
    // or a name that resolves elsewhere); empty: the URL's host.
    std::string server_name;
};

// A certificate chain (PEM, leaf first) and its private key (PEM).
struct tls_certificate {
    std::string cert_file;
    std::string key_file;
};

// HTTPS: the server's certificates and what it accepts (server_options::tls). Off while no file is named.
struct tls_server_options {
    std::string cert_file; // the certificate chain (PEM), leaf first
    std::string key_file;  // its private key (PEM)
    // More certificates, each served to the clients that ask (SNI) for a name it is for: one of its DNS subject
    // alternative names (`*.example.com` covers one label), or its common name where it has none. A client that
    // asks for no name, or one none of them is for, gets the first (cert_file), as nginx's default server.
    std::vector<tls_certificate> sni_certificates;
    int min_version = tls_1_2;                 // tls_1_2 or tls_1_3
    std::vector<std::string> alpn{"http/1.1"}; // accepted, in order of preference; none in common: no ALPN
    std::string client_ca_file;                // mutual TLS: require a client certificate issued by these roots (PEM)

    bool enabled() const noexcept { return !cert_file.empty() || !key_file.empty(); }
};

} // namespace hotpath::net
