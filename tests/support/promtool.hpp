// Prometheus's own checker on an exposition: `promtool check metrics` (Debian's prometheus package).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace hotpath::test {

inline bool have_promtool() {
    return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

struct promtool_verdict {
    bool passed = false;
    std::string said; // promtool's output: what it found wrong
};

// Runs promtool check metrics on `text` (through a temporary file).
inline promtool_verdict promtool_check(const std::string& text) {
    promtool_verdict v;
    char path[] = "/tmp/hotpath-metrics-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) {
        v.said = "no temporary file";
        return v;
    }
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (written) {
        const std::string command = std::string("promtool check metrics < ") + path + " 2>&1";
        if (std::FILE* p = ::popen(command.c_str(), "r")) {
            char buf[512];
            while (std::fgets(buf, sizeof(buf), p) != nullptr) {
                v.said += buf;
            }
            v.passed = ::pclose(p) == 0;
        }
    }
    ::unlink(path);
    return v;
}

} // namespace hotpath::test
