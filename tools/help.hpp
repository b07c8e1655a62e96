// What `hotpath` says about itself: help as people read it, its version, and the hints of a misspelt or foreign
// option.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace CLI {
class App;
class FormatterBase;
} // namespace CLI

namespace hotpath::cli {

// Help laid out as other tools' is: "-c, --connections N    Connections (default 50; 1 to 100000)", a flag without
// CLI11's default-value forms ("--no-originals{false}"), choices as "auto|uring|epoll".
std::shared_ptr<CLI::FormatterBase> help_formatter();

// "  name      description": the description wrapped to 80 columns, its lines aligned at `column`.
std::string aligned(const std::string& name, const std::string& description, std::size_t column);

// `hotpath --version`: the version, the commit and build type, whether allocations are counted, and the socket I/O
// this kernel allows.
void print_version(std::FILE* out);

// The command a command line names ("hotpath load"), and its CLI11 app: the deepest subcommand whose name appears
// in order among the words before the first option.
struct named_command {
    CLI::App* app;
    std::string path;
};
named_command command_named(CLI::App& root, int argc, char** argv);

// One line for an option `command` does not have: a hint where the word means something in wrk, wrk2, hey, oha
// or k6, else the nearest option of `command` ("did you mean --connections?"), else what is there to read. Empty
// when every option word of argv is known to `command`.
std::string unknown_option_line(const CLI::App& command, std::string_view path, int argc, char** argv);

} // namespace hotpath::cli
