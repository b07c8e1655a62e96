// Help text, version and option hints of the `hotpath` command line.
#include "help.hpp"

#include <hotpath/core/alloc_count.hpp>
#include <hotpath/core/build_info.hpp>
#include <hotpath/core/spelling.hpp>
#include <hotpath/net/uring.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#ifndef HOTPATH_BUILD_TYPE
#define HOTPATH_BUILD_TYPE "unknown"
#endif

namespace hotpath::cli {
namespace {

// The placeholder of an option's value from its CLI11 type name ("UINT:UINT in [1 - 100000]", "TEXT:{a,b}",
// "TEXT:FILE") and its long name, and what the type name says beyond it (a range) for the description.
struct value_text {
    std::string placeholder;
    std::string range;
};

value_text value_of(const CLI::Option* opt) {
    const std::string type = opt->get_type_name();
    const std::string base = type.substr(0, type.find(':'));
    const std::string rest = type.find(':') == std::string::npos ? "" : type.substr(type.find(':') + 1);
    value_text v;
    if (const auto open = rest.find('{'); open != std::string::npos && rest.find('}', open) != std::string::npos) {
        v.placeholder = rest.substr(open + 1, rest.find('}', open) - open - 1);
        std::replace(v.placeholder.begin(), v.placeholder.end(), ',', '|');
        return v;
    }
    if (const auto in = rest.find(" in ["); in != std::string::npos) {
        std::string range = rest.substr(in + 5, rest.find(']', in) - in - 5);
        if (const auto dash = range.find(" - "); dash != std::string::npos) {
            range = range.substr(0, dash) + " to " + range.substr(dash + 3);
        }
        v.range = range;
    }
    const std::string name = opt->get_lnames().empty() ? opt->get_name() : opt->get_lnames().front();
    const auto has = [&](std::string_view part) { return name.find(part) != std::string::npos; };
    if (base == "UINT" || base == "INT" || base == "NUMBER") {
        v.placeholder = "N";
    } else if (base == "FLOAT") {
        v.placeholder = "X";
    } else if (base != "TEXT" && !base.empty()) {
        v.placeholder = base; // named by the option itself
    } else if (rest == "FILE" || has("file") || has("json") || has("html") || has("log") || name == "out" ||
               name == "peers") {
        v.placeholder = "PATH";
    } else if (has("duration") || has("timeout") || has("warmup") || has("lifetime") || has("delay")) {
        v.placeholder = "DURATION";
    } else if (has("header")) {
        v.placeholder = "'NAME: VALUE'";
    } else if (has("url") || has("upstream")) {
        v.placeholder = "URL";
    } else {
        v.placeholder = "VALUE";
    }
    return v;
}

constexpr std::size_t terminal_columns = 80;

// `text` broken at spaces into lines of at most `width` columns (a longer word stands alone); its own line breaks
// kept.
std::vector<std::string> wrap(std::string_view text, std::size_t width) {
    std::vector<std::string> lines;
    while (true) {
        const auto newline = text.find('\n');
        std::string_view paragraph = text.substr(0, newline);
        std::string line;
        while (!paragraph.empty()) {
            const auto space = paragraph.find(' ');
            const std::string_view word = paragraph.substr(0, space);
            if (!line.empty() && line.size() + 1 + word.size() > width) {
                lines.push_back(std::move(line));
                line.clear();
            }
            line += line.empty() ? std::string(word) : " " + std::string(word);
            paragraph = space == std::string_view::npos ? std::string_view{} : paragraph.substr(space + 1);
        }
        lines.push_back(std::move(line));
        if (newline == std::string_view::npos) {
            return lines;
        }
        text = text.substr(newline + 1);
    }
}

// "  name   description", the description wrapped to the terminal and its lines aligned at `column`.
std::string line_up(const std::string& name, const std::string& description, std::size_t column) {
    std::string out = "  " + name;
    const std::vector<std::string> lines = wrap(description, terminal_columns - column);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (i == 0 && out.size() < column) {
            out.append(column - out.size(), ' ');
        } else {
            out += "\n" + std::string(column, ' ');
        }
        out += lines[i];
    }
    return out + "\n";
}

std::string wrapped(std::string_view text) {
    std::string out;
    for (const auto& line : wrap(text, terminal_columns)) {
        out += line + "\n";
    }
    return out;
}

class formatter final : public CLI::Formatter {
public:
    formatter() { column_width(30); }

    std::string make_option(const CLI::Option* opt, bool positional) const override {
        return line_up(make_option_name(opt, positional) + make_option_opts(opt), make_option_desc(opt),
                       get_column_width());
    }

    std::string make_subcommand(const CLI::App* sub) const override {
        return line_up(sub->get_display_name(true), sub->get_description(), get_column_width());
    }

    std::string make_description(const CLI::App* app) const override {
        return app->get_description().empty() ? std::string() : wrapped(app->get_description());
    }

    std::string make_footer(const CLI::App* app) const override {
        return app->get_footer().empty() ? std::string() : wrapped(app->get_footer());
    }

    std::string make_option_name(const CLI::Option* opt, bool positional) const override {
        if (positional) {
            return opt->get_name(true, false);
        }
        std::string names;
        for (const auto& s : opt->get_snames()) {
            names += (names.empty() ? "-" : ", -") + s;
        }
        for (const auto& l : opt->get_lnames()) {
            names += (names.empty() ? "--" : ", --") + l;
        }
        return names;
    }

    std::string make_option_opts(const CLI::Option* opt) const override {
        if (opt->get_expected_max() == 0 || opt->get_positional()) { // a flag, or named by its name
            return {};
        }
        std::string out = " " + value_of(opt).placeholder;
        if (opt->get_expected_max() > 1 || opt->get_items_expected_max() > 1) {
            out += " ...";
        }
        return out;
    }

    std::string make_option_desc(const CLI::Option* opt) const override {
        std::string desc = opt->get_description();
        std::vector<std::string> notes;
        if (opt->get_expected_max() != 0) {
            const value_text v = value_of(opt);
            const std::string def = opt->get_default_str();
            if (!def.empty() && desc.find("default") == std::string::npos) {
                notes.push_back("default " + def);
            }
            if (!v.range.empty()) {
                notes.push_back(v.range);
            }
        }
        if (opt->get_required()) {
            notes.push_back("required");
        }
        for (std::size_t i = 0; i < notes.size(); ++i) {
            desc += (i == 0 ? " (" : "; ") + notes[i] + (i + 1 == notes.size() ? ")" : "");
        }
        return desc;
    }
};

// Words other tools give the options people type into `hotpath load` by habit.
struct foreign_option {
    std::string_view word;
    std::string_view hint;
};
constexpr foreign_option foreign_options[] = {
    {"--latency", "it always prints the latency distribution (wrk's --latency)"},
    {"--qps", "for a rate of requests per second use -R/--rate"},
    {"--vus", "virtual users are connections here: -c/--connections (k6's --vus)"},
    {"-u", "virtual users are connections here: -c/--connections (k6's -u)"},
    {"-k", "connections are kept alive by default; --no-keepalive opens one per request (ab's -k)"},
    {"--insecure", "https:// is not supported yet (TLS comes next), so there is nothing to verify"},
};

} // namespace

std::string aligned(const std::string& name, const std::string& description, std::size_t column) {
    return line_up(name, description, column);
}

std::shared_ptr<CLI::FormatterBase> help_formatter() {
    return std::make_shared<formatter>();
}

void print_version(std::FILE* out) {
    fmt::print(out, "hotpath {} (commit {}, {} build)\n", build_version(), build_commit(), HOTPATH_BUILD_TYPE);
    fmt::print(out, "allocation counting: {}\n", alloc::counting() ? "on (hotpath_alloc_counter linked)" : "off");
    fmt::print(out, "socket I/O: {}\n",
               net::uring::available() ? "io_uring (default) and epoll"
                                       : "epoll (io_uring is not available here: kernel, sandbox or HOTPATH_IO_URING)");
}

named_command command_named(CLI::App& root, int argc, char** argv) {
    named_command at{&root, "hotpath"};
    for (int i = 1; i < argc; ++i) {
        const std::string_view word = argv[i];
        if (word.empty() || word.front() == '-') {
            break;
        }
        CLI::App* next = nullptr;
        for (CLI::App* sub : at.app->get_subcommands([](CLI::App*) { return true; })) {
            next = sub->get_name() == word ? sub : next;
        }
        if (next == nullptr) {
            continue; // a positional argument: a subcommand may still follow ("serve avatar")
        }
        at.app = next;
        at.path += " " + std::string(word);
    }
    return at;
}

std::string unknown_option_line(const CLI::App& command, std::string_view path, int argc, char** argv) {
    // "load" in "load has no option ...", after the line's "hotpath: ".
    const std::string_view name = path.starts_with("hotpath ") ? path.substr(8) : path;
    std::vector<std::string> known;
    for (const CLI::Option* opt : command.get_options()) {
        for (const auto& s : opt->get_snames()) {
            known.push_back("-" + s);
        }
        for (const auto& l : opt->get_lnames()) {
            known.push_back("--" + l);
        }
    }
    for (int i = 1; i < argc; ++i) {
        std::string word = argv[i];
        if (word == "--") {
            break;
        }
        if (word == "-q" && i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9') {
            // hey and oha's rate: here a flag, and the number after it is left without an option.
            return fmt::format("-q means --quiet in {}; for a rate of requests per second use -R/--rate (hey and "
                               "oha's -q) (see {} --help)",
                               name, path);
        }
        if (word.size() < 2 || word.front() != '-' || (word[1] >= '0' && word[1] <= '9')) {
            continue;
        }
        if (const auto eq = word.find('='); eq != std::string::npos) {
            word.resize(eq);
        }
        if (word[1] != '-' && word.size() > 2) {
            word.resize(2); // -c64: the option is -c
        }
        if (std::find(known.begin(), known.end(), word) != known.end()) {
            continue;
        }
        for (const auto& f : foreign_options) {
            if (f.word == word) {
                return fmt::format("{} has no option {}: {} (see {} --help)", name, word, f.hint, path);
            }
        }
        std::string nearest;
        std::size_t best = std::max<std::size_t>(2, word.size() / 3) + 1; // farther is no spelling of it
        for (const auto& k : known) {
            if (const std::size_t d = edit_distance(word, k); k.size() > 2 && word.size() > 2 && d < best) {
                best = d;
                nearest = k;
            }
        }
        if (!nearest.empty()) {
            return fmt::format("{} has no option {}; did you mean {}? (see {} --help)", name, word, nearest, path);
        }
        return fmt::format("{} has no option {} (see {} --help)", name, word, path);
    }
    return {};
}

} // namespace hotpath::cli
