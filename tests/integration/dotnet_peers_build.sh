#!/usr/bin/env bash
# The .NET originals build from a clean checkout: the tracked files of peers/dotnet and scripts/build-peers.sh
# alone, in an empty folder, publish every apphost (the packages, freight's SQLite provider and the OpenTelemetry SDK
# and Prometheus exporter of profile and aggregator, from the NuGet source peers/dotnet/NuGet.config names, or the
# local package cache) and install dotnet-counters, and a second run finds them up to date.
# Exits 77 (skipped) without dotnet.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v "${DOTNET:-dotnet}" >/dev/null 2>&1; then
    echo "dotnet not found: the .NET originals are skipped"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# What a clone holds: the tracked files (a source tree without git: everything but build output).
if files=$(git -C "$src" ls-files peers/dotnet scripts/build-peers.sh 2>/dev/null) && [[ -n $files ]]; then
    (cd "$src" && tar -cf - $files) | tar -xf - -C "$work"
else
    mkdir -p "$work/scripts"
    cp "$src/scripts/build-peers.sh" "$work/scripts/"
    (cd "$src" && tar -cf - --exclude=bin --exclude=obj peers/dotnet) | tar -xf - -C "$work"
fi

bash "$work/scripts/build-peers.sh" "$work/out"
for name in platform avatar weather aggregator freight profile; do
    [[ -x $work/out/$name/$name ]] || { echo "FAIL: no apphost $work/out/$name/$name"; exit 1; }
done
# dotnet-counters beside them, for the lab's reading of the originals' runtime counters.
[[ -x $work/out/tools/dotnet-counters ]] || { echo "FAIL: no $work/out/tools/dotnet-counters"; exit 1; }
# bin/ and obj/ went to the output, not into the sources.
if [[ -n $(find "$work/peers" -name bin -o -name obj) ]]; then
    echo "FAIL: build output inside peers/dotnet"
    exit 1
fi
again=$(bash "$work/scripts/build-peers.sh" "$work/out")
if [[ $(grep -c 'up to date' <<<"$again") != 7 ]]; then # the six and the tool
    echo "FAIL: a second run rebuilt:"
    echo "$again"
    exit 1
fi
echo "the six originals build from a clean checkout, dotnet-counters beside them"
