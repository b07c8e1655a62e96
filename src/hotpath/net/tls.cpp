// A TLS session as a transport: records in from the inner transport go into a memory BIO that OpenSSL reads, what
// OpenSSL writes comes out of another and goes to the inner transport, one write at a time (what comes meanwhile
// waits in a second buffer). The owner's callbacks are made from the inner transport's, or deferred to the loop when
// a call of the owner's would otherwise make one (the transport contract).
#include <hotpath/net/tls.hpp>

#include <hotpath/net/loop.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace hotpath::net {

namespace {

// One line for a person per class of tls_errc (the classes and their short names are in tls_options.hpp).
class tls_error_category final : public std::error_category {
public:
    const char* name() const noexcept override { return "tls"; }
    std::string message(int c) const override {
        switch (static_cast<tls_errc>(c)) {
        case tls_errc::certificate_expired:
            return "TLS: the certificate has expired or is not yet valid";
        case tls_errc::unknown_issuer:
            return "TLS: the certificate's issuer is not trusted (self-signed, or a CA not in the store: --cacert "
                   "FILE, or -k to skip verification)";
        case tls_errc::name_mismatch:
            return "TLS: the certificate is not for this host name";
        case tls_errc::certificate_invalid:
            return "TLS: the certificate failed verification";
        case tls_errc::handshake_failed:
            return "TLS: the handshake failed (no common version or cipher, or an alert from the peer)";
        case tls_errc::peer_certificate_required:
            return "TLS: a client certificate is required and none was accepted";
        case tls_errc::no_common_protocol:
            return "TLS: the server agreed to none of the protocols offered through ALPN (HTTP/2 asked of a server "
                   "that speaks HTTP/1.1 only?)";
        }
        return "TLS: unknown error";
    }
};

// The first error OpenSSL queued, as its text, and the queue cleared.
std::string openssl_error(std::string_view what) {
    const unsigned long e = ERR_get_error();
    char text[256] = "no detail";
    if (e != 0) {
        ERR_error_string_n(e, text, sizeof text);
    }
    ERR_clear_error();
    return std::string(what) + ": " + text;
}

// A host name in lower case (ASCII: SNI's names are).
std::string lower_case(std::string_view name) {
    std::string out(name);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; });
    return out;
}

bool is_address(const std::string& host) {
    unsigned char raw[sizeof(in6_addr)];
    return ::inet_pton(AF_INET, host.c_str(), raw) == 1 || ::inet_pton(AF_INET6, host.c_str(), raw) == 1;
}

// ALPN's wire form: each protocol name after its length byte.
std::string alpn_wire(const std::vector<std::string>& protocols) {
    std::string out;
    for (const std::string& p : protocols) {
        if (!p.empty() && p.size() < 256) {
            out += static_cast<char>(p.size());
            out += p;
        }
    }
    return out;
}

} // namespace

const std::error_category& tls_category() noexcept {
    static const tls_error_category c;
    return c;
}

struct tls_context::impl {
    SSL_CTX* ctx = nullptr;
    bool server = false;
    bool verify = true;
    std::string alpn; // the server's preference, wire form
    // A client's sessions to resume, per server name, newest last, owned. A TLS 1.3 ticket is best used once (RFC
    // 8446 appendix C.4), and OpenSSL marks a session spent once resumed, so several are kept: a server sends one or
    // two after each handshake, and connections opened together each take their own. When one is left it is lent
    // as a copy and kept (a server with stateless tickets, as OpenSSL's and nginx's, takes it again): connections
    // opened at once beyond the tickets at hand still resume. A TLS 1.2 session is used again and again.
    static constexpr std::size_t sessions_per_name = 64;
    std::mutex sessions_lock;
    std::map<std::string, std::deque<SSL_SESSION*>> sessions;
    // A server's further certificates (tls_server_options::sni_certificates), each a context of its own, owned, and
    // which one serves each name (lower case; "*.example.com" for a wildcard): one lookup per handshake, however many.
    std::vector<SSL_CTX*> named;
    std::unordered_map<std::string, SSL_CTX*> by_name;

    ~impl() {
        for (auto& [name, kept] : sessions) {
            for (SSL_SESSION* s : kept) {
                SSL_SESSION_free(s);
            }
        }
        for (SSL_CTX* n : named) {
            SSL_CTX_free(n);
        }
        SSL_CTX_free(ctx);
    }
    // The context for a client that asked for `name`, or null: none is for it (the first certificate serves).
    SSL_CTX* for_name(std::string_view name) const {
        if (name.empty() || name.size() > 253) {
            return nullptr;
        }
        std::string key = lower_case(name);
        if (const auto it = by_name.find(key); it != by_name.end()) {
            return it->second;
        }
        const std::size_t dot = key.find('.');
        if (dot == std::string::npos || dot == 0) {
            return nullptr;
        }
        key.replace(0, dot, "*"); // a wildcard covers one label
        const auto it = by_name.find(key);
        return it == by_name.end() ? nullptr : it->second;
    }
    // Keeps `s` (owned from now) as a session to resume with `name`.
    void keep(const std::string& name, SSL_SESSION* s) {
        const std::lock_guard hold(sessions_lock);
        auto& kept = sessions[name];
        kept.push_back(s);
        if (kept.size() > sessions_per_name) {
            SSL_SESSION_free(kept.front());
            kept.pop_front();
        }
    }
    // A session kept for `name` to resume with (the caller owns the reference), or null: the newest, taken away
    // when it is a TLS 1.3 ticket.
    SSL_SESSION* resumable(const std::string& name) {
        const std::lock_guard hold(sessions_lock);
        const auto it = sessions.find(name);
        if (it == sessions.end()) {
            return nullptr;
        }
        auto& kept = it->second;
        while (!kept.empty()) {
            SSL_SESSION* s = kept.back();
            if (SSL_SESSION_is_resumable(s) != 1) {
                SSL_SESSION_free(s);
                kept.pop_back();
                continue;
            }
            if (SSL_SESSION_get_protocol_version(s) < TLS1_3_VERSION) {
                SSL_SESSION_up_ref(s);
                return s;
            }
            if (kept.size() > 1) {
                kept.pop_back(); // single use: its reference goes to the caller
                return s;
            }
            return SSL_SESSION_dup(s); // the last: a copy, so that this one stays resumable
        }
        return nullptr;
    }
};

namespace {

// The session of a connection: its context's impl and the name its sessions are kept under (SSL app data).
struct session_key {
    tls_context::impl* context = nullptr;
    std::string name;
};

int keep_new_session(SSL* ssl, SSL_SESSION* s) {
    auto* key = static_cast<session_key*>(SSL_get_app_data(ssl));
    if (key == nullptr || key->context == nullptr) {
        return 0; // not kept: OpenSSL frees it
    }
    key->context->keep(key->name, s);
    return 1; // owned by the cache now
}

int select_alpn(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* offered,
                unsigned offered_length, void* arg) {
    const auto* c = static_cast<const tls_context::impl*>(arg);
    unsigned char* chosen = nullptr;
    if (SSL_select_next_proto(&chosen, out_length, reinterpret_cast<const unsigned char*>(c->alpn.data()),
                              static_cast<unsigned>(c->alpn.size()), offered,
                              offered_length) != OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_NOACK; // no common protocol: go on without ALPN
    }
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}

result<void, problem> load_chain(SSL_CTX* ctx, const std::string& cert_file, const std::string& key_file) {
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
        return problem{errc::invalid_value, openssl_error("certificate '" + cert_file + "'")};
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
            ERR_clear_error();
            return problem{errc::invalid_value,
                           "the key '" + key_file + "' does not match the certificate '" + cert_file + "'"};
        }
        return problem{errc::invalid_value, openssl_error("key '" + key_file + "'")};
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        return problem{errc::invalid_value,
                       "the key '" + key_file + "' does not match the certificate '" + cert_file + "'"};
    }
    return {};
}

bool valid_version(int v) {
    return v == tls_1_2 || v == tls_1_3;
}

} // namespace

tls_context::tls_context(std::unique_ptr<impl> p) noexcept : impl_(std::move(p)) {}
tls_context::~tls_context() = default;

ssl_ctx_st* tls_context::native() const noexcept {
    return impl_->ctx;
}

bool tls_context::is_server() const noexcept {
    return impl_->server;
}

result<std::shared_ptr<tls_context>, problem> tls_context::client(const tls_client_options& o) {
    if (!valid_version(o.min_version)) {
        return problem{errc::invalid_value, "the lowest TLS version is 1.2 or 1.3"};
    }
    auto p = std::make_unique<impl>();
    p->ctx = SSL_CTX_new(TLS_client_method());
    if (p->ctx == nullptr) {
        return problem{errc::invalid_value, openssl_error("TLS")};
    }
    p->verify = o.verify;
    SSL_CTX_set_min_proto_version(p->ctx, o.min_version);
    SSL_CTX_set_mode(p->ctx, SSL_MODE_RELEASE_BUFFERS); // an idle connection holds no record buffers
    SSL_CTX_set_options(p->ctx, SSL_OP_NO_RENEGOTIATION);
    if (o.verify) {
        SSL_CTX_set_verify(p->ctx, SSL_VERIFY_PEER, nullptr);
        const int loaded = o.ca_file.empty() ? SSL_CTX_set_default_verify_paths(p->ctx)
                                             : SSL_CTX_load_verify_locations(p->ctx, o.ca_file.c_str(), nullptr);
        if (loaded != 1) {
            return problem{errc::invalid_value, openssl_error(o.ca_file.empty() ? "the system's trusted roots"
                                                                                : "--cacert '" + o.ca_file + "'")};
        }
    } else {
        SSL_CTX_set_verify(p->ctx, SSL_VERIFY_NONE, nullptr);
    }
    if (!o.cert_file.empty() || !o.key_file.empty()) {
        if (o.cert_file.empty() || o.key_file.empty()) {
            return problem{errc::invalid_value, "a client certificate needs both its file and its key's"};
        }
        if (auto loaded = load_chain(p->ctx, o.cert_file, o.key_file); !loaded) {
            return std::move(loaded).error();
        }
    }
    if (const std::string wire = alpn_wire(o.alpn); !wire.empty()) {
        SSL_CTX_set_alpn_protos(p->ctx, reinterpret_cast<const unsigned char*>(wire.data()),
                                static_cast<unsigned>(wire.size()));
    }
    if (o.resume) {
        // Sessions kept by server name as the server sends them (TLS 1.3 tickets come after the handshake).
        SSL_CTX_set_session_cache_mode(p->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(p->ctx, keep_new_session);
    } else {
        SSL_CTX_set_session_cache_mode(p->ctx, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(p->ctx, SSL_OP_NO_TICKET);
    }
    return std::shared_ptr<tls_context>(new tls_context(std::move(p)));
}

namespace {

// A server context for one certificate, with all of `o` but its files: every certificate's context takes the same
// versions, ALPN and client verification, since a handshake moves to another one midway (after its SNI).
result<SSL_CTX*, problem> server_context_for(const tls_server_options& o, const tls_certificate& certificate,
                                             tls_context::impl& p) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) {
        return problem{errc::invalid_value, openssl_error("TLS")};
    }
    SSL_CTX_set_min_proto_version(ctx, o.min_version);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    auto fail = [ctx](problem why) -> result<SSL_CTX*, problem> {
        SSL_CTX_free(ctx);
        return why;
    };
    if (auto loaded = load_chain(ctx, certificate.cert_file, certificate.key_file); !loaded) {
        return fail(std::move(loaded).error());
    }
    if (!o.client_ca_file.empty()) {
        if (SSL_CTX_load_verify_locations(ctx, o.client_ca_file.c_str(), nullptr) != 1) {
            return fail(problem{errc::invalid_value, openssl_error("client CA '" + o.client_ca_file + "'")});
        }
        SSL_CTX_set_client_CA_list(ctx, SSL_load_client_CA_file(o.client_ca_file.c_str()));
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    if (!p.alpn.empty()) {
        SSL_CTX_set_alpn_select_cb(ctx, select_alpn, &p);
    }
    return ctx;
}

// The host names the leaf certificate of `ctx` is for, lower case: its DNS subject alternative names, or its common
// name where it has none.
std::vector<std::string> names_of(SSL_CTX* ctx) {
    std::vector<std::string> names;
    X509* leaf = SSL_CTX_get0_certificate(ctx);
    if (leaf == nullptr) {
        return names;
    }
    auto* alt = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; alt != nullptr && i < sk_GENERAL_NAME_num(alt); ++i) {
        const GENERAL_NAME* g = sk_GENERAL_NAME_value(alt, i);
        if (g->type == GEN_DNS) {
            const ASN1_IA5STRING* dns = g->d.dNSName;
            names.push_back(lower_case(std::string_view(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                                                        static_cast<std::size_t>(ASN1_STRING_length(dns)))));
        }
    }
    GENERAL_NAMES_free(alt);
    if (names.empty()) {
        char cn[256];
        if (const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn, sizeof cn);
            n > 0) {
            names.push_back(lower_case(std::string_view(cn, static_cast<std::size_t>(n))));
        }
    }
    return names;
}

// Moves a handshake to the certificate for the name its client asked for, if another than the first is.
int select_certificate(SSL* ssl, int*, void* arg) {
    const auto* c = static_cast<const tls_context::impl*>(arg);
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (SSL_CTX* chosen = name != nullptr ? c->for_name(name) : nullptr) {
        SSL_set_SSL_CTX(ssl, chosen);
    }
    return SSL_TLSEXT_ERR_OK;
}

} // namespace

result<std::shared_ptr<tls_context>, problem> tls_context::server(const tls_server_options& o) {
    if (!valid_version(o.min_version)) {
        return problem{errc::invalid_value, "the lowest TLS version is 1.2 or 1.3"};
    }
    if (o.cert_file.empty() || o.key_file.empty()) {
        return problem{errc::invalid_value, "a TLS server needs a certificate file and its key's"};
    }
    auto p = std::make_unique<impl>();
    p->server = true;
    p->alpn = alpn_wire(o.alpn);
    auto made = server_context_for(o, tls_certificate{o.cert_file, o.key_file}, *p);
    if (!made) {
        return std::move(made).error();
    }
    p->ctx = *made;
    for (const tls_certificate& more : o.sni_certificates) {
        if (more.cert_file.empty() || more.key_file.empty()) {
            return problem{errc::invalid_value, "each TLS certificate needs its file and its key's"};
        }
        auto named = server_context_for(o, more, *p);
        if (!named) {
            return std::move(named).error();
        }
        p->named.push_back(*named);
        const std::vector<std::string> names = names_of(*named);
        if (names.empty()) {
            return problem{errc::invalid_value, "the certificate '" + more.cert_file +
                                                    "' names no host (no DNS subject alternative name nor common "
                                                    "name): no client could ask for it"};
        }
        for (const std::string& name : names) {
            p->by_name.try_emplace(name, *named); // the first certificate named for a host serves it
        }
    }
    if (!p->named.empty()) {
        SSL_CTX_set_tlsext_servername_callback(p->ctx, select_certificate);
        SSL_CTX_set_tlsext_servername_arg(p->ctx, p.get());
    }
    return std::shared_ptr<tls_context>(new tls_context(std::move(p)));
}

namespace {

// A client session of `c` for `name`: its SNI where it is a host name, what its certificate must be for (a name or
// an address) when verifying, and a kept session to resume.
void connect_as(SSL* ssl, tls_context::impl& c, const std::string& name) {
    SSL_set_connect_state(ssl);
    if (name.empty()) {
        return;
    }
    const bool address = is_address(name);
    if (!address) {
        SSL_set_tlsext_host_name(ssl, name.c_str());
    }
    if (c.verify) {
        if (address) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
        } else {
            SSL_set1_host(ssl, name.c_str());
        }
    }
    if (SSL_SESSION* s = c.resumable(name)) {
        SSL_set_session(ssl, s);
        SSL_SESSION_free(s);
    }
}

// What the handshake of `ssl` agreed.
tls_session_info info_of(SSL* ssl) {
    tls_session_info i;
    i.done = SSL_is_init_finished(ssl) == 1;
    i.resumed = SSL_session_reused(ssl) == 1;
    const unsigned char* alpn = nullptr;
    unsigned length = 0;
    SSL_get0_alpn_selected(ssl, &alpn, &length);
    if (alpn != nullptr) {
        i.alpn.assign(reinterpret_cast<const char*>(alpn), length);
    }
    i.version = SSL_get_version(ssl);
    return i;
}

// Why a session of `c` failed, as a class of its own where verification says, else the protocol's; OpenSSL's error
// queue cleared.
std::error_code failure_of(SSL* ssl, const tls_context::impl& c) {
    std::error_code out = tls_errc::handshake_failed;
    const long verified = SSL_get_verify_result(ssl);
    const int reason = ERR_GET_REASON(ERR_peek_last_error());
    if (!c.server && c.verify && verified != X509_V_OK) {
        switch (verified) {
        case X509_V_ERR_CERT_HAS_EXPIRED:
        case X509_V_ERR_CERT_NOT_YET_VALID:
            out = tls_errc::certificate_expired;
            break;
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            out = tls_errc::unknown_issuer;
            break;
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH:
            out = tls_errc::name_mismatch;
            break;
        default:
            out = tls_errc::certificate_invalid;
        }
    } else if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE || reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED) {
        out = tls_errc::peer_certificate_required;
    } else if (reason == SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL || reason == SSL_R_NO_APPLICATION_PROTOCOL) {
        out = tls_errc::no_common_protocol;
    }
    ERR_clear_error();
    return out;
}

constexpr std::size_t read_piece = 16 * 1024; // a record's worth of plain bytes per SSL_read

class tls_session final : public tls_transport, public transport_owner {
public:
    tls_session(loop& l, transport_owner& user, std::shared_ptr<tls_context> context, std::string name)
        : loop_(l), user_(user), context_(std::move(context)), key_{nullptr, std::move(name)} {}

    ~tls_session() override {
        *alive_ = false;
        if (ssl_ != nullptr) {
            // A session that worked stays resumable: OpenSSL would mark it bad when freed without a close_notify
            // sent, which HTTP connections rarely send.
            if (handshaken_ && !failed_) {
                SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
            }
            SSL_free(ssl_); // and both BIOs
        }
    }

    // Set up once the inner transport exists: a client starts its handshake at once.
    void start(std::unique_ptr<transport> inner, tls_context::impl& c) {
        inner_ = std::move(inner);
        key_.context = &c;
        ssl_ = SSL_new(c.ctx);
        rbio_ = BIO_new(BIO_s_mem());
        wbio_ = BIO_new(BIO_s_mem());
        BIO_set_mem_eof_return(rbio_, -1); // empty is "wait for more", not the end
        SSL_set_bio(ssl_, rbio_, wbio_);
        SSL_set_app_data(ssl_, &key_);
        server_ = c.server;
        if (server_) {
            SSL_set_accept_state(ssl_);
        } else {
            connect_as(ssl_, c, key_.name);
        }
        const call_guard guard(*this);
        inner_->start_reading();
        if (!server_) {
            handshake();
        }
    }

    // --- transport, for the owner ---

    void start_reading() override {
        if (closed_) {
            return;
        }
        const call_guard guard(*this);
        reading_ = true;
        inner_->start_reading();
        // Plain bytes the session holds, or an end the inner transport told while the owner did not read.
        if (handshaken_ && (SSL_pending(ssl_) > 0 || BIO_ctrl_pending(rbio_) > 0 || inner_ended_)) {
            later([this] { read_plain(); });
        }
    }

    void stop_reading() override {
        if (closed_) {
            return;
        }
        reading_ = false;
        inner_->stop_reading();
    }

    void write(std::string_view bytes) override {
        if (closed_) {
            return;
        }
        const call_guard guard(*this);
        plain_ = bytes;
        plain_done_ = 0;
        writing_ = true;
        if (failed_) {
            write_failed(failed_);
            return;
        }
        if (handshaken_) {
            encrypt();
        }
        flush();
    }

    std::uint64_t bytes_acknowledged() noexcept override {
        // The inner transport counts records; the plain bytes they carry are about as many (a record adds ~30
        // bytes to 16 KiB): those of the writes completed, less what of their records the peer has not
        // acknowledged yet.
        const std::uint64_t acked = inner_ != nullptr ? inner_->bytes_acknowledged() : 0;
        const std::uint64_t behind = sent_ > acked ? sent_ - acked : 0;
        return plain_sent_ > behind ? plain_sent_ - behind : 0;
    }

    void shutdown_send() override {
        if (closed_ || shut_requested_) {
            return;
        }
        const call_guard guard(*this);
        shut_requested_ = true;
        if (handshaken_) {
            SSL_shutdown(ssl_); // close_notify, into the records to send
        }
        flush();
        shut_mark_ = queued_;
        shut_if_sent();
    }

    void close() override {
        if (closed_) {
            return;
        }
        closed_ = true;
        say_close_notify();
        inner_->close();
    }

    int native_handle() const noexcept override { return inner_ != nullptr ? inner_->native_handle() : -1; }

    peeked peek() noexcept override {
        if (closed_) {
            return peeked::end;
        }
        if (ssl_ != nullptr && SSL_pending(ssl_) > 0) {
            return peeked::data;
        }
        return inner_->peek();
    }

    bool resumed() const noexcept override { return ssl_ != nullptr && handshaken_ && SSL_session_reused(ssl_) == 1; }

    std::string_view alpn() const noexcept override {
        const unsigned char* agreed = nullptr;
        unsigned length = 0;
        if (ssl_ != nullptr && handshaken_) {
            SSL_get0_alpn_selected(ssl_, &agreed, &length);
        }
        return agreed == nullptr ? std::string_view() : std::string_view(reinterpret_cast<const char*>(agreed), length);
    }

    tls_session_info info() const override {
        return ssl_ != nullptr && handshaken_ ? info_of(ssl_) : tls_session_info{};
    }

    // --- transport_owner, for the inner transport ---

    void on_transport_data(std::string_view bytes) override {
        if (closed_ || failed_) {
            return;
        }
        // A memory BIO takes everything (it grows); an inner read is at most a buffer's worth.
        BIO_write(rbio_, bytes.data(), static_cast<int>(bytes.size()));
        if (!handshaken_) {
            handshake();
            return; // a finished handshake reads what came with it
        }
        if (reading_) {
            read_plain();
        }
    }

    void on_transport_end(std::error_code error) override {
        if (closed_) {
            return;
        }
        inner_ended_ = true;
        inner_end_ = error;
        if (!handshaken_ && !failed_) {
            // The peer went away mid-handshake: as the stream's end, or its error.
            fail(error);
            return;
        }
        if (reading_) {
            read_plain(); // what came before the end, then the end
        }
    }

    void on_transport_written(std::error_code error) override {
        writing_inner_ = false;
        sent_ += sending_.size();
        sending_.clear();
        if (closed_) {
            return;
        }
        if (error) {
            fail(error);
            return;
        }
        tell_written_if_done();
        if (closed_) {
            return;
        }
        shut_if_sent();
        trim_after_handshake();
        flush();
    }

    void on_transport_closed() override {
        user_.on_transport_closed(); // the owner may destroy this now
    }

private:
    // Marks a call of the owner's: what would call the owner back from inside it is deferred to the loop.
    struct call_guard {
        explicit call_guard(tls_session& s) : s_(s), was_(s.in_call_) { s.in_call_ = true; }
        ~call_guard() { s_.in_call_ = was_; }
        call_guard(const call_guard&) = delete;
        call_guard& operator=(const call_guard&) = delete;
        tls_session& s_;
        bool was_;
    };

    void later(std::function<void()> fn) {
        loop_.defer([alive = std::weak_ptr<bool>(alive_), fn = std::move(fn)] {
            if (const auto a = alive.lock(); a && *a) {
                fn();
            }
        });
    }

    // Calls the owner now, or from the loop when inside a call of the owner's.
    void tell(std::function<void()> fn) {
        if (in_call_) {
            later(std::move(fn));
        } else {
            fn();
        }
    }

    void handshake() {
        const int r = SSL_do_handshake(ssl_);
        flush();
        if (r == 1) {
            handshaken_ = true;
            tell([this] { user_.on_transport_ready(); });
            if (writing_) {
                encrypt();
                flush();
            }
            if (reading_ && !closed_) {
                read_plain(); // application data that came with the handshake's last flight
            }
            return;
        }
        const int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            return;
        }
        fail(classify());
    }

    std::error_code classify() { return failure_of(ssl_, *key_.context); }

    // Once the handshake's flights are out, the buffers they grew are given back: the records' string and the two
    // memory BIOs (a BUF_MEM keeps its largest size), a few kilobytes an idle connection would otherwise hold for
    // its life. Once per session; what the requests need is grown again at their size.
    void trim_after_handshake() {
        if (trimmed_ || !handshaken_ || writing_inner_ || !pending_.empty() || BIO_ctrl_pending(wbio_) != 0) {
            return;
        }
        trimmed_ = true;
        std::string().swap(sending_);
        std::string().swap(pending_);
        if (BIO* w = BIO_new(BIO_s_mem())) {
            SSL_set0_wbio(ssl_, w); // frees the old one
            wbio_ = w;
        }
        if (BIO_ctrl_pending(rbio_) == 0) {
            if (BIO* r = BIO_new(BIO_s_mem())) {
                BIO_set_mem_eof_return(r, -1);
                SSL_set0_rbio(ssl_, r);
                rbio_ = r;
            }
        }
    }

    // A session that ends tells its peer so (RFC 8446 §6.1: close_notify), or a careful peer takes the end for a
    // truncation. Sent straight on the socket, without waiting: the close that follows cancels what is in flight,
    // and when records are still being written (or there is no socket) the alert is left out rather than put
    // ahead of them.
    void say_close_notify() noexcept {
        if (!handshaken_ || failed_ || shut_requested_ || writing_inner_ || !pending_.empty() || inner_ == nullptr) {
            return;
        }
        const int fd = inner_->native_handle();
        if (fd < 0) {
            return;
        }
        SSL_shutdown(ssl_);
        char alert[128];
        const int n = BIO_read(wbio_, alert, static_cast<int>(sizeof alert));
        if (n > 0) {
            (void)::send(fd, alert, static_cast<std::size_t>(n), MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        ERR_clear_error();
    }

    void read_plain() {
        char piece[read_piece];
        while (reading_ && !closed_ && !failed_) {
            const int n = SSL_read(ssl_, piece, static_cast<int>(sizeof piece));
            if (n > 0) {
                user_.on_transport_data(std::string_view(piece, static_cast<std::size_t>(n)));
                continue;
            }
            const int e = SSL_get_error(ssl_, n);
            flush(); // a read may answer (a key update)
            if (e == SSL_ERROR_WANT_READ) {
                if (inner_ended_) {
                    end(inner_end_); // no close_notify: the stream's end as the socket told it
                }
                return;
            }
            if (e == SSL_ERROR_ZERO_RETURN) {
                end({}); // close_notify
                return;
            }
            fail(classify());
            return;
        }
        flush();
    }

    void encrypt() {
        while (plain_done_ < plain_.size()) {
            const std::size_t chunk = std::min<std::size_t>(plain_.size() - plain_done_, std::size_t{1} << 30);
            const int n = SSL_write(ssl_, plain_.data() + plain_done_, static_cast<int>(chunk));
            if (n <= 0) {
                fail(classify()); // with memory BIOs only a broken session refuses
                return;
            }
            plain_done_ += static_cast<std::size_t>(n);
        }
        plain_mark_ = queued_ + BIO_ctrl_pending(wbio_); // the records through this write's last
        encrypted_ = true;
    }

    // Records out of the session, and the next inner write when none is in flight.
    void flush() {
        while (const std::size_t n = BIO_ctrl_pending(wbio_)) {
            const std::size_t at = pending_.size();
            pending_.resize(at + n);
            const int got = BIO_read(wbio_, pending_.data() + at, static_cast<int>(n));
            pending_.resize(at + static_cast<std::size_t>(std::max(got, 0)));
            queued_ += static_cast<std::uint64_t>(std::max(got, 0));
            if (got <= 0) {
                break;
            }
        }
        if (!writing_inner_ && !pending_.empty() && !closed_) {
            sending_.swap(pending_);
            pending_.clear();
            writing_inner_ = true;
            inner_->write(sending_);
            return;
        }
        if (!writing_inner_) {
            tell_written_if_done();
        }
    }

    void tell_written_if_done() {
        if (!writing_ || !encrypted_ || plain_done_ < plain_.size() || sent_ < plain_mark_) {
            return;
        }
        writing_ = false;
        encrypted_ = false;
        plain_sent_ += plain_.size();
        tell([this] { user_.on_transport_written({}); });
    }

    void shut_if_sent() {
        if (shut_requested_ && !shut_sent_ && sent_ >= shut_mark_ && !writing_inner_ && pending_.empty()) {
            shut_sent_ = true;
            inner_->shutdown_send();
        }
    }

    void write_failed(std::error_code error) {
        if (!writing_) {
            return;
        }
        writing_ = false;
        tell([this, error] { user_.on_transport_written(error); });
    }

    // The session is broken: a write waiting fails, the stream ends with the error (once the owner reads).
    void fail(std::error_code error) {
        if (failed_ || closed_) {
            return;
        }
        failed_ = error ? error : std::error_code(tls_errc::handshake_failed);
        if (!handshaken_ && !error) {
            failed_ = make_error_code(errc::closed); // the peer closed before the handshake's end
        }
        write_failed(failed_);
        inner_ended_ = true;
        inner_end_ = failed_;
        if (reading_) {
            end(failed_);
        }
    }

    void end(std::error_code error) {
        if (end_told_ || closed_) {
            return;
        }
        end_told_ = true;
        tell([this, error] { user_.on_transport_end(error); });
    }

    loop& loop_;
    transport_owner& user_;
    std::shared_ptr<tls_context> context_;
    session_key key_;
    std::unique_ptr<transport> inner_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    SSL* ssl_ = nullptr;
    BIO* rbio_ = nullptr; // records in (from the peer)
    BIO* wbio_ = nullptr; // records out
    bool server_ = false;
    bool handshaken_ = false;
    bool trimmed_ = false; // trim_after_handshake done
    bool reading_ = false;
    bool closed_ = false;
    bool in_call_ = false;
    bool end_told_ = false;
    bool inner_ended_ = false;
    std::error_code inner_end_;
    std::error_code failed_;
    // The owner's write in progress: its bytes, how many the session took, where its records end.
    std::string_view plain_;
    std::size_t plain_done_ = 0;
    bool writing_ = false;
    bool encrypted_ = false;
    std::uint64_t plain_mark_ = 0;
    std::uint64_t plain_sent_ = 0; // plain bytes of completed writes
    // Records: those the inner transport is writing, those waiting for it, and the counts of both.
    std::string sending_;
    std::string pending_;
    bool writing_inner_ = false;
    std::uint64_t queued_ = 0; // record bytes taken out of the session
    std::uint64_t sent_ = 0;   // ... and written by the inner transport
    bool shut_requested_ = false;
    bool shut_sent_ = false;
    std::uint64_t shut_mark_ = 0;
};

} // namespace

tls_transports::tls_transports(std::shared_ptr<tls_context> context, transport_factory& inner, std::string server_name)
    : context_(std::move(context)), inner_(inner), server_name_(std::move(server_name)) {}

std::unique_ptr<transport> tls_transports::make(loop& l, int fd, transport_owner& user) {
    auto session = std::make_unique<tls_session>(l, user, context_, server_name_);
    auto inner = inner_.make(l, fd, *session);
    session->start(std::move(inner), *context_->impl_);
    return session;
}

struct tls_stream::impl {
    std::shared_ptr<tls_context> context;
    session_key key; // SSL app data: where new session tickets are kept
    SSL* ssl = nullptr;
    int fd = -1;
    bool ended = false;

    ~impl() {
        if (ssl != nullptr) {
            if (SSL_is_init_finished(ssl) == 1) {
                SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN); // stays resumable
            }
            SSL_free(ssl);
        }
    }

    // After an SSL call returned `r`: waits for the socket when it asks to (true), or says why it cannot go on.
    std::error_code wait_or_fail(int r, deadline until) {
        const int e = SSL_get_error(ssl, r);
        short events = 0;
        if (e == SSL_ERROR_WANT_READ) {
            events = POLLIN;
        } else if (e == SSL_ERROR_WANT_WRITE) {
            events = POLLOUT;
        } else if (e == SSL_ERROR_SYSCALL && errno != 0) {
            const int error = errno;
            ERR_clear_error();
            return {error, std::system_category()};
        } else if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN) {
            ERR_clear_error();
            return make_error_code(errc::closed);
        } else {
            return failure_of(ssl, *key.context);
        }
        return wait_for_socket(fd, events, until) ? std::error_code{} : make_error_code(errc::timeout);
    }
};

tls_stream::tls_stream(std::unique_ptr<impl> p) noexcept : impl_(std::move(p)) {}
tls_stream::~tls_stream() = default;

result<std::unique_ptr<tls_stream>> tls_stream::connect(std::shared_ptr<tls_context> context, int fd,
                                                        const std::string& server_name, deadline until) {
    auto p = std::make_unique<impl>();
    p->context = std::move(context);
    p->fd = fd;
    tls_context::impl& c = *p->context->impl_;
    p->key = session_key{&c, server_name};
    p->ssl = SSL_new(c.ctx);
    if (p->ssl == nullptr || SSL_set_fd(p->ssl, fd) != 1) {
        ERR_clear_error();
        return make_error_code(tls_errc::handshake_failed);
    }
    SSL_set_app_data(p->ssl, &p->key);
    connect_as(p->ssl, c, server_name);
    std::error_code failed;
    for (;;) {
        const int r = SSL_connect(p->ssl);
        if (r == 1) {
            break;
        }
        if ((failed = p->wait_or_fail(r, until))) {
            break;
        }
    }
    if (failed) {
        return failed;
    }
    return std::unique_ptr<tls_stream>(new tls_stream(std::move(p)));
}

std::error_code tls_stream::write(std::string_view bytes, deadline until) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const int n = SSL_write(impl_->ssl, bytes.data() + done,
                                static_cast<int>(std::min<std::size_t>(bytes.size() - done, std::size_t{1} << 30)));
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (auto failed = impl_->wait_or_fail(n, until)) {
            return failed;
        }
    }
    return {};
}

result<std::size_t> tls_stream::read(char* into, std::size_t room, deadline until) {
    if (impl_->ended) {
        return std::size_t{0};
    }
    for (;;) {
        const int n = SSL_read(impl_->ssl, into, static_cast<int>(std::min<std::size_t>(room, 1 << 30)));
        if (n > 0) {
            return static_cast<std::size_t>(n);
        }
        const int e = SSL_get_error(impl_->ssl, n);
        if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0)) {
            ERR_clear_error();
            impl_->ended = true; // close_notify, or the socket's end without one
            return std::size_t{0};
        }
        if (auto failed = impl_->wait_or_fail(n, until)) {
            return failed;
        }
    }
}

tls_session_info tls_stream::info() const {
    return info_of(impl_->ssl);
}

std::string kernel_tls_status() {
    // TCP_ULP "tls" is only accepted on an established TCP socket: a loopback pair, made and closed here.
    const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int accepted = -1;
    std::string out = "kernel TLS: could not be asked of this kernel";
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof a;
    if (server >= 0 && client >= 0 && ::bind(server, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::listen(server, 1) == 0 && ::getsockname(server, reinterpret_cast<sockaddr*>(&a), &length) == 0 &&
        ::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
        accepted = ::accept4(server, nullptr, nullptr, SOCK_CLOEXEC);
        if (::setsockopt(client, SOL_TCP, TCP_ULP, "tls", 3) == 0) {
            out = "kernel TLS: offered by this kernel, not used: records are encrypted in user space";
        } else if (errno == ENOENT) {
            out = "kernel TLS: not offered by this kernel (no tls module): records are encrypted in user space";
        } else {
            out = std::string("kernel TLS: refused by this kernel (") + std::strerror(errno) +
                  "): records are encrypted in user space";
        }
    }
    for (const int fd : {accepted, client, server}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    return out;
}

} // namespace hotpath::net
