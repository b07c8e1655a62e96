#!/usr/bin/env bash
# The main job: installs what it needs, builds the hotpath executable (the profile preset: release with the
# allocation counter, so that the lab shows heap allocations per request) and the write-ups' .NET originals where
# dotnet is, then replays the five cases of CASES.md with `hotpath lab all --quick` and says where the report is.
# Env: OUT (lab-results) LAB_ARGS (arguments to hotpath lab: "all --quick"; e.g. "fanout", or "all" for the full
#      profiles, about half an hour) PRESET (profile; release for a build without the counter)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-lab-results}
LAB_ARGS=${LAB_ARGS-all --quick}
PRESET=${PRESET:-profile}

bash scripts/install-deps.sh
cmake --preset "$PRESET" >/dev/null
cmake --build --preset "$PRESET" -j "$(nproc)" --target hotpath_cli
# The .NET originals (one line and nothing else without dotnet).
bash scripts/build-peers.sh

# shellcheck disable=SC2086 # LAB_ARGS is a list of words
"build/$PRESET/hotpath" lab $LAB_ARGS --out "$OUT"
echo "open $OUT/report.html in a browser (it works offline)"
