// The lab's certificates, made with OpenSSL's own calls (no openssl command needed on the machine).
#include <hotpath/lab/certificates.hpp>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

namespace hotpath::lab {

namespace {

struct free_key {
    void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
struct free_cert {
    void operator()(X509* c) const noexcept { X509_free(c); }
};
using key_ptr = std::unique_ptr<EVP_PKEY, free_key>;
using cert_ptr = std::unique_ptr<X509, free_cert>;

problem failed(const std::string& what) {
    return problem{std::make_error_code(std::errc::io_error), "--tls: " + what};
}

// A certificate for `subject` with `key`, issued by `issuer` with `issuer_key` (itself when null), with the
// extensions given as OpenSSL's configuration lines ("basicConstraints", "critical,CA:TRUE").
cert_ptr make_certificate(const char* subject, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
                          std::initializer_list<std::pair<int, const char*>> extensions) {
    cert_ptr c(X509_new());
    if (!c) {
        return nullptr;
    }
    unsigned char serial[16];
    RAND_bytes(serial, sizeof serial);
    serial[0] &= 0x7f; // positive
    BIGNUM* number = BN_bin2bn(serial, sizeof serial, nullptr);
    const bool ok = X509_set_version(c.get(), 2) == 1 && number != nullptr &&
                    BN_to_ASN1_INTEGER(number, X509_get_serialNumber(c.get())) != nullptr &&
                    X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600) != nullptr &&
                    X509_gmtime_adj(X509_getm_notAfter(c.get()), 2L * 24 * 3600) != nullptr &&
                    X509_NAME_add_entry_by_txt(X509_get_subject_name(c.get()), "CN", MBSTRING_ASC,
                                               reinterpret_cast<const unsigned char*>(subject), -1, -1, 0) == 1 &&
                    X509_set_issuer_name(c.get(), issuer != nullptr ? X509_get_subject_name(issuer)
                                                                    : X509_get_subject_name(c.get())) == 1 &&
                    X509_set_pubkey(c.get(), key) == 1;
    BN_free(number);
    if (!ok) {
        return nullptr;
    }
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : c.get(), c.get(), nullptr, nullptr, 0);
    for (const auto& [nid, value] : extensions) {
        X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
        const bool added = e != nullptr && X509_add_ext(c.get(), e, -1) == 1;
        X509_EXTENSION_free(e);
        if (!added) {
            return nullptr;
        }
    }
    if (X509_sign(c.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) <= 0) {
        return nullptr;
    }
    return c;
}

// Writes `certs` (in order) or `key` to `path`, readable by its owner alone.
bool write_pem(const std::string& path, std::initializer_list<X509*> certs, EVP_PKEY* key = nullptr) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    std::FILE* f = fd < 0 ? nullptr : ::fdopen(fd, "w");
    if (f == nullptr) {
        if (fd >= 0) {
            ::close(fd);
        }
        return false;
    }
    bool ok = true;
    for (X509* c : certs) {
        ok = ok && PEM_write_X509(f, c) == 1;
    }
    if (key != nullptr) {
        ok = ok && PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    }
    return std::fclose(f) == 0 && ok;
}

} // namespace

result<lab_certificates, problem> make_lab_certificates(const std::string& dir) {
    const key_ptr ca_key(EVP_EC_gen("P-256"));
    const key_ptr server_key(EVP_EC_gen("P-256"));
    if (!ca_key || !server_key) {
        return failed("cannot make an EC P-256 key");
    }
    const cert_ptr ca = make_certificate("hotpath lab CA", ca_key.get(), nullptr, nullptr,
                                         {{NID_basic_constraints, "critical,CA:TRUE"},
                                          {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                          {NID_subject_key_identifier, "hash"}});
    if (!ca) {
        return failed("cannot make the lab's CA");
    }
    const cert_ptr server = make_certificate("localhost", server_key.get(), ca.get(), ca_key.get(),
                                             {{NID_basic_constraints, "CA:FALSE"},
                                              {NID_key_usage, "critical,digitalSignature"},
                                              {NID_ext_key_usage, "serverAuth"},
                                              {NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"},
                                              {NID_authority_key_identifier, "keyid"}});
    if (!server) {
        return failed("cannot make the server's certificate");
    }
    lab_certificates out{dir + "/ca.pem", dir + "/server.pem", dir + "/server.key"};
    if (!write_pem(out.ca_file, {ca.get()})) {
        return failed("cannot write " + out.ca_file);
    }
    if (!write_pem(out.cert_file, {server.get(), ca.get()})) {
        return failed("cannot write " + out.cert_file);
    }
    if (!write_pem(out.key_file, {}, server_key.get())) {
        return failed("cannot write " + out.key_file);
    }
    return out;
}

} // namespace hotpath::lab
