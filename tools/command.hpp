// The subcommands of `hotpath`: each lives in one file under tools/ and registers itself with one line.
#pragma once

#include <hotpath/net/tls_options.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class Validator;
} // namespace CLI

namespace hotpath::cli {

// What runs a parsed command; returns the process's exit code (0 done, 1 failed, 2 bad usage, ...).
using runner = std::function<int()>;

struct command {
    std::string_view name;
    std::string_view description;
    // Adds the command's options and nested subcommands to `cmd` (see when_chosen for options that cost start-up
    // time) and returns what runs it once the command line has been parsed into them.
    runner (*define)(CLI::App& cmd);
    // What its exit codes mean, for the foot of its help: "0 ..., 2 bad usage, ...".
    std::string_view exit_codes = {};
};

// Registers a command at static initialisation: `const cli::registration serve_registration{{"serve", ...}};`.
struct registration {
    explicit registration(command c);
};

// Every registered command, sorted by name.
std::vector<command> commands();

// Adds a subcommand's options only once the command line names it (CLI11 runs the callback before parsing the
// subcommand's own arguments, `--help` included): a start builds the few dozen options it uses, not all.
void when_chosen(CLI::App& cmd, std::function<void(CLI::App&)> add_options);

// For unsigned options: CLI11 turns "-1" into a 64-bit unsigned number by wrapping it around, so the text is
// checked first ("must not be negative").
const CLI::Validator& not_negative();

// A repeatable option takes one value per occurrence, so that options written before a positional argument
// never swallow it (`--threshold "p95<1ms" URL`).
template <class Option>
Option* one_value_each(Option* o) {
    o->allow_extra_args(false);
    return o;
}

// The client side of TLS for commands that take an https:// URL (load, probe, lab diagnose), as curl names them:
// -k/--insecure, --cacert, --cert/--key, --tls-min, --sni, --no-tls-resume.
struct tls_flags {
    net::tls_client_options options;
    std::string min_version = "1.2";
    bool no_resume = false;

    void add_to(CLI::App& cmd);
    // The options as given, with the lowest version and resumption applied.
    const net::tls_client_options& apply();
};

} // namespace hotpath::cli
