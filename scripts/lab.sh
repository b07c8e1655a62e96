#!/usr/bin/env bash
# The main job: installs what it needs, builds hotpath (and the write-ups' .NET originals where dotnet is), then
# replays the five cases of CASES.md with `hotpath lab all --quick` and says where the report is.
# Env: OUT (lab-results) LAB_ARGS (extra arguments to hotpath lab, e.g. "fanout" or "" for the full profiles)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-lab-results}
LAB_ARGS=${LAB_ARGS-all --quick}

bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
# The .NET originals (one line and nothing else without dotnet).
bash scripts/build-peers.sh

# shellcheck disable=SC2086 # LAB_ARGS is a list of words
build/release/hotpath lab $LAB_ARGS --out "$OUT"
echo "open $OUT/report.html in a browser (it works offline)"
