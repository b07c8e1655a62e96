// A newcomer's first commands (#25), run against the binary as users run it: usage with no command, help and
// version, help laid out for an 80-column terminal with each command's exit codes, misspelt options answered with
// the nearest one, other tools' habits (wrk2's -R, hey and oha's -z and -q, wrk's --latency) met or named.
#include "support/child_process.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <sstream>
#include <string>
#include <vector>

namespace hotpath {
namespace {

using test::child;
using test::port_from;

struct ran {
    int code;
    std::string out; // standard output and error, as a terminal shows them
};

ran run(std::vector<std::string> args) {
    child c(std::move(args));
    std::string out = c.rest();
    return {c.wait_exit(), std::move(out)};
}

std::size_t widest_line(const std::string& text) {
    std::istringstream in(text);
    std::size_t widest = 0;
    for (std::string line; std::getline(in, line);) {
        // Columns, not bytes: "µ" and "×" take one column and two bytes.
        const auto columns = static_cast<std::size_t>(std::count_if(
            line.begin(), line.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
        widest = std::max(widest, columns);
    }
    return widest;
}

// Help wrapped for the terminal, read as one line: each run of spaces and line breaks as one space.
std::string flat(const std::string& text) {
    std::string out;
    for (char ch : text) {
        const bool space = ch == ' ' || ch == '\n';
        if (!space || (!out.empty() && out.back() != ' ')) {
            out += space ? ' ' : ch;
        }
    }
    return out;
}

TEST(first_hour, hotpath_alone_prints_its_usage) {
    const ran r = run({});
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("Usage: hotpath"), std::string::npos) << r.out;
    for (const char* command : {"load", "probe", "serve", "lab", "help", "version"}) {
        EXPECT_NE(r.out.find("\n  " + std::string(command) + " "), std::string::npos) << command << "\n" << r.out;
    }
    EXPECT_EQ(r.out.find(HOTPATH_BINARY), std::string::npos) << "the program is named hotpath, not by its path";
}

TEST(first_hour, version_three_ways) {
    for (const char* way : {"--version", "-V", "version"}) {
        const ran r = run({way});
        EXPECT_EQ(r.code, 0) << way << ": " << r.out;
        EXPECT_EQ(r.out.rfind("hotpath 0.", 0), 0u) << way << ": " << r.out;
        EXPECT_NE(r.out.find("commit "), std::string::npos) << r.out;
        EXPECT_NE(r.out.find(" build)"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("allocation counting: "), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("socket I/O: "), std::string::npos) << r.out;
    }
}

TEST(first_hour, help_of_a_command_is_the_same_both_ways_and_names_its_exit_codes) {
    for (const char* command : {"load", "probe", "serve", "lab", "freight"}) {
        const ran asked = run({"help", command});
        const ran flag = run({command, "--help"});
        EXPECT_EQ(asked.code, 0) << command << ": " << asked.out;
        EXPECT_EQ(flag.code, 0) << command;
        EXPECT_EQ(asked.out, flag.out) << command;
        EXPECT_NE(flag.out.find("Usage: hotpath " + std::string(command)), std::string::npos) << flag.out;
        EXPECT_NE(flag.out.find("Exit codes: 0 "), std::string::npos) << command << "\n" << flag.out;
        EXPECT_NE(flag.out.find("2 bad usage"), std::string::npos) << command << "\n" << flag.out;
    }
}

TEST(first_hour, help_reads_as_people_write_options_on_80_columns) {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{"--help"},
                                                                                      {"load", "--help"},
                                                                                      {"probe", "--help"},
                                                                                      {"serve", "--help"},
                                                                                      {"serve", "platform", "--help"},
                                                                                      {"serve", "aggregator", "--help"},
                                                                                      {"lab", "--help"},
                                                                                      {"lab", "diagnose", "--help"},
                                                                                      {"freight", "--help"}}) {
        const ran r = run(args);
        EXPECT_EQ(r.code, 0) << args.front();
        EXPECT_LE(widest_line(r.out), 80u) << args.front() << " " << (args.size() > 1 ? args[1] : "") << "\n" << r.out;
        for (const char* raw : {"UINT", "FLOAT", "TEXT", "{false}", "{true}", ":{", ",--"}) {
            EXPECT_EQ(r.out.find(raw), std::string::npos) << raw << " in\n" << r.out;
        }
    }
    const ran load = run({"load", "--help"});
    EXPECT_NE(load.out.find("-c, --connections N "), std::string::npos) << load.out;
    EXPECT_NE(flat(load.out).find("Connections (closed model: virtual users) (default 50; 1 to 100000)"),
              std::string::npos)
        << load.out;
    EXPECT_NE(load.out.find("-d, -z, --duration DURATION"), std::string::npos) << load.out;
    EXPECT_NE(load.out.find("--io auto|uring|epoll"), std::string::npos) << load.out;
    EXPECT_NE(load.out.find("-H, --header 'NAME: VALUE' ..."), std::string::npos) << load.out;
    const ran lab = run({"lab", "--help"});
    EXPECT_NE(lab.out.find("  --no-originals "), std::string::npos) << lab.out;
    const ran root = run({"--help"});
    EXPECT_NE(flat(root.out).find("Run `hotpath COMMAND --help` for a command's options"), std::string::npos)
        << root.out;
    // TLS and HTTP/2 are spoken now: the help no longer says otherwise.
    EXPECT_EQ(root.out.find("Not supported yet"), std::string::npos) << root.out;
}

TEST(first_hour, a_misspelt_option_gets_the_nearest_one_before_or_after_the_url) {
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"load", "--conections", "5", "http://127.0.0.1:1/"},
                                               {"load", "http://127.0.0.1:1/", "--conections", "5"},
                                               {"load", "http://127.0.0.1:1/", "--conections=5"}}) {
        const ran r = run(args);
        EXPECT_EQ(r.code, 2) << r.out;
        EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
        EXPECT_NE(r.out.find("did you mean --connections?"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("(see hotpath load --help)"), std::string::npos) << r.out;
    }
    const ran far = run({"probe", "--frobnicate", "http://127.0.0.1:1/"});
    EXPECT_EQ(far.code, 2) << far.out;
    EXPECT_NE(far.out.find("hotpath: probe has no option --frobnicate (see hotpath probe --help)"), std::string::npos)
        << far.out;
    EXPECT_EQ(far.out.find("did you mean"), std::string::npos) << far.out;
    const ran serve = run({"serve", "platform", "--thread", "2"});
    EXPECT_EQ(serve.code, 2) << serve.out;
    EXPECT_NE(serve.out.find("did you mean --threads? (see hotpath serve platform --help)"), std::string::npos)
        << serve.out;
}

TEST(first_hour, other_tools_habits_are_met_or_named) {
    const ran q = run({"load", "-q", "100", "http://127.0.0.1:1/"});
    EXPECT_EQ(q.code, 2) << q.out;
    EXPECT_NE(q.out.find("-q means --quiet in load"), std::string::npos) << q.out;
    EXPECT_NE(q.out.find("-R/--rate"), std::string::npos) << q.out;
    const ran latency = run({"load", "--latency", "http://127.0.0.1:1/"});
    EXPECT_EQ(latency.code, 2) << latency.out;
    EXPECT_NE(latency.out.find("always prints the latency distribution"), std::string::npos) << latency.out;

    // wrk2's -R and hey's -z do what they do there.
    child server({"serve", "platform", "--port", "0", "--threads", "1"});
    const auto port = port_from(server.line());
    ASSERT_NE(port, 0);
    const ran r = run({"load", "-q", "-R", "200", "-z", "1s", "-c", "2", "-t", "1",
                       "http://127.0.0.1:" + std::to_string(port) + "/plaintext"});
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("open model, 200 req/s"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" 0 errors"), std::string::npos) << r.out;
    server.signal(SIGTERM);
    EXPECT_EQ(server.wait_exit(), 0);
}

// Options before the name of what they apply to, as other tools take them: "serve --port 0 platform".
TEST(first_hour, serve_takes_its_options_before_the_service_name_too) {
    child server({"serve", "--port", "0", "--threads", "1", "platform"});
    const auto port = port_from(server.line());
    ASSERT_NE(port, 0);
    const ran r = run({"load", "-n", "10", "-c", "1", "http://127.0.0.1:" + std::to_string(port) + "/plaintext"});
    EXPECT_EQ(r.code, 0) << r.out;
    server.signal(SIGTERM);
    EXPECT_EQ(server.wait_exit(), 0);
    const ran bad = run({"serve", "--bogus", "platform"});
    EXPECT_EQ(bad.code, 2) << bad.out;
    EXPECT_NE(bad.out.find("serve platform has no option --bogus"), std::string::npos) << bad.out;
    // A service that is not one, after the options: named as such, not the options refused as serve's own.
    const ran unknown = run({"serve", "--port", "1", "nope"});
    EXPECT_EQ(unknown.code, 2) << unknown.out;
    EXPECT_NE(unknown.out.find("'nope' is not a hotpath serve command; try one of: platform"), std::string::npos)
        << unknown.out;
    // No service at all: an option's value is not taken for one.
    for (const std::vector<std::string>& args : {std::vector<std::string>{"serve", "--port", "9000"},
                                                 std::vector<std::string>{"serve", "--threads=1", "--port", "9000"}}) {
        const ran none = run(args);
        EXPECT_EQ(none.code, 2) << none.out;
        EXPECT_NE(none.out.find("hotpath: serve needs a command: one of platform, avatar"), std::string::npos)
            << none.out;
    }
}

// On a terminal the progress is a bar redrawn in place, then cleared for the report; through a pipe no control
// characters at all. (script(1) gives the run a terminal.)
TEST(first_hour, load_on_a_terminal_and_through_a_pipe) {
    child server({"serve", "platform", "--port", "0", "--threads", "1"});
    const auto port = port_from(server.line());
    ASSERT_NE(port, 0);
    const std::string command =
        std::string(HOTPATH_BINARY) + " load -d 1s -c 2 -t 1 http://127.0.0.1:" + std::to_string(port) + "/plaintext";
    child terminal("/usr/bin/script", {"-qfec", command, "/dev/null"});
    const std::string shown = terminal.rest();
    EXPECT_EQ(terminal.wait_exit(), 0) << shown;
    EXPECT_NE(shown.find("\r["), std::string::npos) << "a progress bar redrawn in place:\n" << shown;
    EXPECT_NE(shown.find("\x1b[K"), std::string::npos) << shown;
    EXPECT_NE(shown.find("  Requests "), std::string::npos) << shown;
    const ran piped =
        run({"load", "-d", "1s", "-c", "2", "-t", "1", "http://127.0.0.1:" + std::to_string(port) + "/plaintext"});
    EXPECT_EQ(piped.code, 0) << piped.out;
    EXPECT_EQ(piped.out.find('\r'), std::string::npos) << piped.out;
    EXPECT_EQ(piped.out.find('\x1b'), std::string::npos) << piped.out;
    EXPECT_NE(piped.out.find("  Requests "), std::string::npos) << piped.out;
    server.signal(SIGTERM);
    EXPECT_EQ(server.wait_exit(), 0);
}

// A bare `hotpath lab` would have run all five cases at full size (sync-io alone holds 4,000 users for minutes):
// it lists them and how to start instead, at once.
TEST(first_hour, a_bare_lab_lists_the_cases_and_how_to_start) {
    const auto started = std::chrono::steady_clock::now();
    const ran r = run({"lab"});
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds{5}) << r.out;
    EXPECT_EQ(r.code, 0) << r.out;
    for (const char* name : {"fanout", "freight", "platform", "sync-io", "redirect"}) {
        EXPECT_NE(r.out.find("\n  " + std::string(name) + " "), std::string::npos) << name << "\n" << r.out;
    }
    EXPECT_NE(r.out.find("hotpath lab all --quick"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("started"), std::string::npos) << "nothing runs\n" << r.out;
    EXPECT_LE(widest_line(r.out), 80u) << r.out;
}

// probe's -d is curl's (the body); one typed as load's duration is sent as asked, and said.
TEST(first_hour, probe_warns_when_its_body_looks_like_a_duration) {
    ran r = run({"probe", "http://127.0.0.1:1/", "-d", "2s"});
    EXPECT_NE(r.out.find("warning: -d is the request body here, as curl's: '2s' goes as a POST body"),
              std::string::npos)
        << r.out;
    r = run({"probe", "http://127.0.0.1:1/", "-d", "{\"id\": 2}"});
    EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
}

} // namespace
} // namespace hotpath
