// The `hotpath` command line: finds the subcommand, parses its options, runs it; bad usage exits 2 with one line
// that points at the command's own help.
#include "command.hpp"
#include "help.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Names an unknown word where a subcommand is required ("hotpath frobnicate", "hotpath serve nope"), or the
// subcommand missing ("hotpath serve --port 9000"), which CLI11 would only answer with "A subcommand is required".
// Returns "" when every required subcommand is known, or help is asked for.
std::string unknown_subcommand(CLI::App& cli, int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (const std::string_view word = argv[i]; word == "--help" || word == "-h") {
            return {};
        }
    }
    CLI::App* at = &cli;
    std::string path = "hotpath";
    for (int i = 1;; ++i) {
        if (at->get_require_subcommand_min() == 0) {
            return {};
        }
        std::string known;
        for (CLI::App* sub : at->get_subcommands([](CLI::App*) { return true; })) {
            known.append(known.empty() ? "" : ", ").append(sub->get_name());
        }
        const std::string word = i < argc ? argv[i] : "";
        if (word.empty() || word.front() == '-') {
            return at == &cli ? fmt::format("a command is needed: one of {} (see {} --help)", known, path)
                              : fmt::format("{} needs a command: one of {} (see {} --help)",
                                            std::string_view(path).substr(sizeof "hotpath"), known, path);
        }
        CLI::App* next = nullptr;
        for (CLI::App* sub : at->get_subcommands([](CLI::App*) { return true; })) {
            next = sub->get_name() == word ? sub : next;
        }
        if (next == nullptr) {
            return fmt::format("'{}' is not a {} command; try one of: {} (see {} --help)", word, path, known, path);
        }
        at = next;
        path += " " + word;
    }
}

// Whether the bare word after `word` may be its value ("--port 9000"): `word` is an option without "=". Options are
// defined only once their subcommand is chosen, so which ones take a value is not known here.
bool may_take_value(const char* word) {
    const std::string_view w = word;
    return w.size() >= 2 && w.front() == '-' && w.find('=') == std::string_view::npos;
}

// Options given before the subcommand they belong to ("hotpath serve --port 9000 platform"), as users of other tools
// write them: the subcommand's name moves ahead of them, so that they are parsed as its own options. A word is
// taken as the subcommand only when it is one's exact name.
void hoist_subcommands(CLI::App& cli, std::vector<char*>& args) {
    CLI::App* at = &cli;
    for (std::size_t i = 1; i < args.size() && at->get_require_subcommand_min() != 0; ++i) {
        const auto subs = at->get_subcommands([](CLI::App*) { return true; });
        auto named = [&](const char* word) -> CLI::App* {
            for (CLI::App* sub : subs) {
                if (sub->get_name() == word) {
                    return sub;
                }
            }
            return nullptr;
        };
        if (args[i][0] != '-') {
            at = named(args[i]);
            if (at == nullptr) {
                return; // unknown: unknown_subcommand names it
            }
            continue;
        }
        for (std::size_t j = i + 1; j < args.size(); ++j) {
            if (CLI::App* sub = named(args[j]); sub != nullptr) {
                std::rotate(args.begin() + static_cast<std::ptrdiff_t>(i),
                            args.begin() + static_cast<std::ptrdiff_t>(j),
                            args.begin() + static_cast<std::ptrdiff_t>(j) + 1);
                at = sub;
                break;
            }
        }
        if (args[i][0] == '-') {
            // No subcommand after the options: the last bare word that may not be an option's value is most likely
            // the one meant, so it moves ahead to be named as unknown ("serve --port 1 nope": 'nope' is not a serve
            // command), instead of the options being refused as the parent's. None at all: unknown_subcommand says one
            // is needed.
            for (std::size_t j = args.size(); j-- > i + 1;) {
                if (args[j][0] != '-' && !may_take_value(args[j - 1])) {
                    std::rotate(args.begin() + static_cast<std::ptrdiff_t>(i),
                                args.begin() + static_cast<std::ptrdiff_t>(j),
                                args.begin() + static_cast<std::ptrdiff_t>(j) + 1);
                    break;
                }
            }
            return;
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"hotpath: build fast HTTP APIs, load them, and find where the time goes.", "hotpath"};
    cli.formatter(hotpath::cli::help_formatter());
    cli.require_subcommand(1);
    cli.footer("Run `hotpath COMMAND --help` for a command's options and exit codes; `hotpath --version` for the "
               "build.");
    std::vector<std::pair<CLI::App*, hotpath::cli::runner>> defined;
    for (const auto& c : hotpath::cli::commands()) {
        CLI::App* cmd = cli.add_subcommand(std::string(c.name), std::string(c.description));
        if (!c.exit_codes.empty()) {
            cmd->footer("Exit codes: " + std::string(c.exit_codes));
        }
        defined.emplace_back(cmd, c.define(*cmd));
    }
    // Listed with the others; answered before parsing.
    cli.add_subcommand("help", "Print this help, or a command's: hotpath help load");
    cli.add_subcommand("version",
                       "Print the version, the build and the socket I/O this machine allows (-V, --version)");

    // `hotpath` alone, `hotpath help [COMMAND ...]`, `hotpath --version | -V | version`.
    const std::string first = argc > 1 ? argv[1] : "";
    if (argc == 1) {
        fmt::print("{}", cli.help());
        return 0;
    }
    if (first == "--version" || first == "-V" || first == "version") {
        hotpath::cli::print_version(stdout);
        return 0;
    }
    std::vector<char*> args(argv, argv + argc);
    static char help_flag[] = "--help";
    if (first == "help") {
        args.erase(args.begin() + 1);
        args.push_back(help_flag);
        argc = static_cast<int>(args.size());
        argv = args.data();
    }

    argv = args.data();
    hoist_subcommands(cli, args);
    if (const std::string unknown = unknown_subcommand(cli, argc, argv); !unknown.empty()) {
        fmt::print(stderr, "hotpath: {}\n", unknown);
        return 2;
    }
    try {
        cli.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        return cli.exit(CLI::CallForHelp());
    } catch (const CLI::CallForAllHelp&) {
        return cli.exit(CLI::CallForAllHelp());
    } catch (const CLI::ParseError& e) {
        const auto named = hotpath::cli::command_named(cli, argc, argv);
        if (const std::string line = hotpath::cli::unknown_option_line(*named.app, named.path, argc, argv);
            !line.empty()) {
            fmt::print(stderr, "hotpath: {}\n", line);
        } else {
            fmt::print(stderr, "hotpath: {} (see {} --help)\n", e.what(), named.path);
        }
        return 2;
    }
    for (auto& [cmd, run] : defined) {
        if (cmd->parsed()) {
            try {
                return run();
            } catch (const std::exception& e) {
                fmt::print(stderr, "hotpath: {}\n", e.what());
                return 1;
            }
        }
    }
    return 2;
}
