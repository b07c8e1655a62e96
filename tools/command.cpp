// The registry of `hotpath` subcommands.
#include "command.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>

namespace hotpath::cli {
namespace {

std::vector<command>& registry() {
    static std::vector<command> all;
    return all;
}

} // namespace

registration::registration(command c) {
    registry().push_back(c);
}

std::vector<command> commands() {
    auto all = registry();
    std::sort(all.begin(), all.end(), [](const command& a, const command& b) { return a.name < b.name; });
    return all;
}

const CLI::Validator& not_negative() {
    static const CLI::Validator check(
        [](std::string& text) {
            return !text.empty() && text.front() == '-' ? std::string("must not be negative") : std::string();
        },
        "", "not negative");
    return check;
}

void tls_flags::add_to(CLI::App& cmd) {
    cmd.add_flag(
        "-k,--insecure", [this](std::int64_t) { options.verify = false; },
        "https://: do not verify the server's certificate or name (a test server's self-signed one)");
    cmd.add_option("--cacert", options.ca_file, "https://: trust these roots (PEM) instead of the system's")
        ->check(CLI::ExistingFile);
    cmd.add_option("--cert", options.cert_file, "https://: a client certificate chain (PEM), for mutual TLS")
        ->check(CLI::ExistingFile);
    cmd.add_option("--key", options.key_file, "https://: the client certificate's key (PEM)")->check(CLI::ExistingFile);
    cmd.add_option("--tls-min", min_version, "https://: lowest TLS version: 1.2 or 1.3")
        ->default_str("1.2")
        ->check(CLI::IsMember({"1.2", "1.3"}));
    cmd.add_option("--sni", options.server_name,
                   "https://: the server name to send and verify, instead of the URL's host (a URL with an address)");
    cmd.add_flag("--no-tls-resume", no_resume,
                 "https://: a full handshake on every connection (no session resumption)");
}

const net::tls_client_options& tls_flags::apply() {
    options.min_version = min_version == "1.3" ? net::tls_1_3 : net::tls_1_2;
    options.resume = !no_resume;
    return options;
}

void when_chosen(CLI::App& cmd, std::function<void(CLI::App&)> add_options) {
    cmd.preparse_callback([&cmd, add = std::move(add_options)](std::size_t) { add(cmd); });
}

} // namespace hotpath::cli
