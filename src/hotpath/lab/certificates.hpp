// Throw-away certificates for `hotpath lab --tls`: a CA made for the run and a server certificate it signed for
// localhost and 127.0.0.1, written into a folder of the run's (never kept): every service of the lab, hotpath's and
// the originals on Kestrel, serves with the same one, and every client trusts that CA alone.
#pragma once

#include <hotpath/core/result.hpp>

#include <string>

namespace hotpath::lab {

struct lab_certificates {
    std::string ca_file;   // the CA (PEM): what clients trust
    std::string cert_file; // the server's chain (PEM): its certificate, then the CA's
    std::string key_file;  // its private key (PEM, unencrypted)
};

// Makes them in `dir` (which exists) as ca.pem, server.pem and server.key: EC P-256 keys, valid from an hour ago for
// two days. A problem naming the file when one cannot be written.
result<lab_certificates, problem> make_lab_certificates(const std::string& dir);

} // namespace hotpath::lab
