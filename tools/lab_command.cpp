// `hotpath lab [CASE] [--quick] [--out DIR]`: the case studies replayed end to end (src/lab/).
#include "command.hpp"

#include "lab/cases.hpp"
#include "lab/runner.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

namespace hotpath::cli {
namespace {

runner define_lab(CLI::App& cmd) {
    auto o = std::make_shared<lab::lab_options>();
    when_chosen(cmd, [o](CLI::App& c) {
        std::vector<std::string> choices = lab::case_names();
        choices.emplace_back("all");
        c.add_option("case", o->which, "Which case: fanout, freight, platform, sync-io, redirect or all")
            ->capture_default_str()
            ->check(CLI::IsMember(choices));
        c.add_flag("--quick", o->quick, "Scaled-down profiles: the whole of `lab all --quick` takes under a minute");
        c.add_option("--out", o->out_dir, "Folder of the result files (DIR/<case>/result.json)")->capture_default_str();
    });
    return [o]() -> int { return lab::run_lab(*o, stdout, stderr); };
}

const registration lab_registration{
    {"lab", "Replay the case studies: start the services, load them, diagnose, compare with the write-ups",
     define_lab}};

} // namespace
} // namespace hotpath::cli
