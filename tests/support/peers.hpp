// The peers scripts/build-peers.sh publishes into one folder (HOTPATH_PEERS_DIR, defined by the tests that use
// them): the .NET originals (peers/dotnet: <dir>/<name>/<name>), dotnet-counters (<dir>/tools), and the Node service
// (peers/node: <dir>/node/<name>/server.js, run with the machine's node). Tests that need one skip, naming what is
// missing, where it was not built (no dotnet, no node).
#pragma once

#include "support/child_process.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace hotpath::test {

inline std::string peers_dir() {
    return HOTPATH_PEERS_DIR;
}

inline std::string original_path(const std::string& name) {
    return peers_dir() + "/" + name + "/" + name;
}

inline std::string dotnet_counters_path() {
    return peers_dir() + "/tools/dotnet-counters";
}

// The first of `names` whose original has not been published, as a line for GTEST_SKIP; "" when all have.
inline std::string missing_original(std::initializer_list<const char*> names) {
    for (const char* name : names) {
        if (::access(original_path(name).c_str(), X_OK) != 0) {
            return "no .NET original " + original_path(name) + " (scripts/build-peers.sh publishes it where dotnet is)";
        }
    }
    return {};
}

// node on the PATH, as a path (a child runs a path, not a name); "" when there is none.
inline std::string node_program() {
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
    std::size_t at = 0;
    while (at <= dirs.size()) {
        const std::size_t end = std::min(dirs.find(':', at), dirs.size());
        const std::string candidate = dirs.substr(at, end - at) + "/node";
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        at = end + 1;
    }
    return {};
}

// The Node peer NAME's script (peers/node/NAME), and why it cannot run ("" when it can), for GTEST_SKIP.
inline std::string node_peer(const std::string& name) {
    return peers_dir() + "/node/" + name + "/server.js";
}
inline std::string missing_node_peer(const std::string& name) {
    if (node_program().empty()) {
        return "no node on the PATH";
    }
    if (::access(node_peer(name).c_str(), R_OK) != 0) {
        return "no " + node_peer(name) + " (scripts/build-node-peers.sh installs it where node and npm are)";
    }
    return {};
}

// A peer running: its process, and its port once it accepts connections (0 if it never did).
struct running_peer {
    std::unique_ptr<child> process;
    std::uint16_t port = 0;
};

// Starts `argv` where "{port}" stands for a free port it is given (and "{port2}" for a second one, which is not
// waited for); its port once it accepts connections within `timeout` (the JIT's start, on a busy machine), else 0.
inline running_peer start_peer(std::vector<std::string> argv,
                               std::chrono::milliseconds timeout = std::chrono::seconds{30},
                               std::uint16_t* second = nullptr) {
    const std::uint16_t port = free_port();
    const std::uint16_t port2 = second != nullptr ? free_port() : 0;
    for (auto& a : argv) {
        for (const auto& [key, value] : {std::pair<std::string, std::uint16_t>{"{port}", port}, {"{port2}", port2}}) {
            if (const auto at = a.find(key); at != std::string::npos) {
                a.replace(at, key.size(), std::to_string(value));
            }
        }
    }
    if (second != nullptr) {
        *second = port2;
    }
    running_peer p;
    const std::string program = argv.front();
    argv.erase(argv.begin());
    p.process = std::make_unique<child>(program, std::move(argv));
    if (wait_listening(port, timeout)) {
        p.port = port;
    }
    return p;
}

// The published original NAME with ARGS ("{port}" as above).
inline running_peer start_original(const std::string& name, std::vector<std::string> args) {
    args.insert(args.begin(), original_path(name));
    return start_peer(std::move(args));
}

} // namespace hotpath::test
