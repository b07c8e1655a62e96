// Scenario files (TOML, docs/scenarios.md): several weighted requests with checks, a CSV feed, the same knobs as
// `hotpath load`; read into a plan and written back out. The feed and placeholder helpers are in load/feed.hpp.
#pragma once

#include <hotpath/load/feed.hpp>
#include <hotpath/load/plan.hpp>

#include <string>
#include <string_view>

namespace hotpath::load {

// Fills `p` from a scenario document (format: docs/scenarios.md). The document's [[request]] tables and [feed]
// replace p.scenario and p.data; other keys the document omits keep the values `p` already holds. A [feed] csv
// path is read relative to `base_dir` ("" for the current directory): the only I/O. Fails with
// errc::invalid_value, a one-line reason (the line and the key) and `p` unchanged on syntax errors, unknown keys,
// wrong types, out-of-range values, placeholders naming columns the CSV lacks, and plans the CLI would refuse.
// Throws only std::bad_alloc.
result<void, problem> load_scenario(std::string_view toml_text, std::string_view base_dir, plan& p);

// Reads the file at `path` and calls load_scenario with the file's folder as base_dir; a reason then starts with
// the path.
result<void, problem> load_scenario_file(const std::string& path, plan& p);

// `p` as a scenario document that load_scenario reads back into an equal plan (given the same base_dir, where
// `p.data.source` names the CSV). Every knob is written, defaults included, except those a plan ignores (duration
// when stages are set). What the format cannot hold is approximated: a plan without a scenario is written as its
// one default request; only the first status check of a request is kept; a feed without `source` is left out;
// the path in `p.to` is written as the url's prefix only when every request path starts with it.
std::string to_toml(const plan& p);

} // namespace hotpath::load
