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

void when_chosen(CLI::App& cmd, std::function<void(CLI::App&)> add_options) {
    cmd.preparse_callback([&cmd, add = std::move(add_options)](std::size_t) { add(cmd); });
}

} // namespace hotpath::cli
