// The `hotpath` command line: finds the subcommand, parses its options, runs it; bad usage exits 2 with one line.
#include "command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <string>

namespace {

// Names an unknown word where a subcommand is required ("hotpath frobnicate", "hotpath serve nope"), which CLI11
// would only answer with "A subcommand is required". Returns "" when every required subcommand is known.
std::string unknown_subcommand(CLI::App& cli, int argc, char** argv) {
    CLI::App* at = &cli;
    std::string path = "hotpath";
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word.empty() || word.front() == '-' || at->get_require_subcommand_min() == 0) {
            return {};
        }
        CLI::App* next = nullptr;
        std::string known;
        for (CLI::App* sub : at->get_subcommands([](CLI::App*) { return true; })) {
            known.append(known.empty() ? "" : ", ").append(sub->get_name());
            next = sub->get_name() == word ? sub : next;
        }
        if (next == nullptr) {
            return fmt::format("'{}' is not a {} command; try one of: {} (see {} --help)", word, path, known, path);
        }
        at = next;
        path += " " + word;
    }
    return {};
}

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"hotpath: build fast HTTP APIs, load them, and find where the time goes."};
    cli.require_subcommand(1);
    std::vector<std::pair<CLI::App*, hotpath::cli::runner>> defined;
    for (const auto& c : hotpath::cli::commands()) {
        CLI::App* cmd = cli.add_subcommand(std::string(c.name), std::string(c.description));
        defined.emplace_back(cmd, c.define(*cmd));
    }
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
        fmt::print(stderr, "hotpath: {} (see hotpath --help)\n", e.what());
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
