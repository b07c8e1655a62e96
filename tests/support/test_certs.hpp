// Throw-away certificates for TLS tests, made once per test program by scripts/make-test-certs.sh (openssl) in the
// test's temporary folder, never committed: ca.pem, server.pem/.key (localhost, 127.0.0.1), client.pem/.key,
// expired, other-name and self-signed ones. The target defines HOTPATH_SOURCE_DIR.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace hotpath::test {

inline const std::string& test_certs() {
    static const std::string dir = [] {
        const std::string d = ::testing::TempDir() + "hotpath_certs_" + std::to_string(::getpid());
        const std::string command = "bash " HOTPATH_SOURCE_DIR "/scripts/make-test-certs.sh " + d + " > /dev/null";
        EXPECT_EQ(std::system(command.c_str()), 0) << command;
        return d;
    }();
    return dir;
}

// The path of one of them: test_cert("server.pem").
inline std::string test_cert(const std::string& name) {
    return test_certs() + "/" + name;
}

} // namespace hotpath::test
