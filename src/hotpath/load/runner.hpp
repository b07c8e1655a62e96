// Runs a load plan: resolves the target, one worker per thread, live progress, merged results.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/load/live.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/load/results.hpp>
#include <hotpath/load/start.hpp>

#include <cstdio>
#include <string>

namespace hotpath::load {

enum class progress_mode : std::uint8_t { none, terminal, lines };

// Blocks until the plan is done or SIGINT/SIGTERM arrives (then stops early and still reports). Progress
// goes to `progress_out` (a bar refreshed in place on a terminal, a line every 5 s otherwise). Errors
// (an unresolvable host, io_uring asked for and missing) are values with a one-line message. When a signal ended
// the run early and `stopped_by` is given, it receives that signal's number (else 0): a caller with work left
// (`hotpath lab`) can stop too. Over https://, every connection's session is made from plan::tls_context (one is made
// here when the plan has none).
// A plan with a start time waits for it, and a paused one for SIGUSR1 or `control`'s release; a signal or
// control->stop() before then ends it without a run (errc::cancelled; `stopped_by` says which signal, SIGTERM for
// the control's stop). `control`, when given, shows the run's phase to other threads and can end it early (as
// SIGTERM does). `watch`, when given, gets the workers' live totals while they run and their final sum at the end
// (live.hpp): what exporters push and a scrape endpoint shows.
result<results, problem> run(const plan& p, progress_mode mode, std::FILE* progress_out, int* stopped_by = nullptr,
                             run_control* control = nullptr, live_watch* watch = nullptr);

} // namespace hotpath::load
