// What a client asks of TLS for https:// URLs (the same options in the client library, `hotpath load`, probe and the
// lab), what a server serves with, and how a session fails. Plain data, no OpenSSL (net/tls.hpp makes a context of
// them).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace hotpath::net {

// How a TLS session failed, each its own class (the load counts them apart, probe names them), told in one line for a
// person by the error_code's message() (what failed and what to do), and by tls_errc_name() in JSON.
enum class tls_errc {
    certificate_expired = 1,   // the peer's certificate (or one of its chain) is past its validity, or not yet valid
    unknown_issuer,            // no trusted root issued it (self-signed, or a CA not in the store)
    name_mismatch,             // it is not for the host asked for
    certificate_invalid,       // any other verification failure (revoked, bad signature, wrong purpose)
    handshake_failed,          // the protocol itself: no common version or cipher, a bad record, an alert
    peer_certificate_required, // the server asked for a client certificate and none (or a refused one) was given
    no_common_protocol, // ALPN: the peer speaks none of the protocols offered (HTTP/2 asked of an HTTP/1.1 server)
};
// Every class, in order (numbered 1 to tls_errcs.size()): for tables with a count per class.
inline constexpr std::array<tls_errc, 7> tls_errcs{tls_errc::certificate_expired, tls_errc::unknown_issuer,
                                                   tls_errc::name_mismatch,       tls_errc::certificate_invalid,
                                                   tls_errc::handshake_failed,    tls_errc::peer_certificate_required,
                                                   tls_errc::no_common_protocol};

// The category of tls_errc ("tls"; defined in net/tls.cpp), whose message() is the line for a person.
const std::error_category& tls_category() noexcept;
inline std::error_code make_error_code(tls_errc e) noexcept {
    return {static_cast<int>(e), tls_category()};
}

// The class's short name, a static string: the key of its count in `hotpath load`'s JSON ("unknown_issuer") and,
// after "tls_", probe's name of the failure ("tls_unknown_issuer"). Empty for a value that is no class.
constexpr std::string_view tls_errc_name(tls_errc e) noexcept {
    switch (e) {
    case tls_errc::certificate_expired:
        return "certificate_expired";
    case tls_errc::unknown_issuer:
        return "unknown_issuer";
    case tls_errc::name_mismatch:
        return "name_mismatch";
    case tls_errc::certificate_invalid:
        return "certificate_invalid";
    case tls_errc::handshake_failed:
        return "handshake";
    case tls_errc::peer_certificate_required:
        return "client_certificate";
    case tls_errc::no_common_protocol:
        return "alpn";
    }
    return {};
}

// A client context made of tls_client_options (net/tls.hpp), shared by the sessions made from it: declared here for
// those who keep one (a load or probe plan) without OpenSSL's headers.
class tls_context;

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

template <>
struct std::is_error_code_enum<hotpath::net::tls_errc> : std::true_type {};
