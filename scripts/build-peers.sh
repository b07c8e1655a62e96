#!/usr/bin/env bash
# Publishes the .NET originals of the cases (peers/dotnet/*, see its README) into OUT_DIR/<name>/ (default
# build/peers): Release, framework-dependent, each with its apphost OUT_DIR/<name>/<name>. Packages come from a
# registry for two uses: freight's SQLite provider (Microsoft.Data.Sqlite and its SQLitePCLRaw packages), and the
# OpenTelemetry SDK with its Prometheus exporter for the opt-in /metrics of profile and aggregator
# (peers/dotnet/shared/OtelMetrics.cs), restored from the NuGet source peers/dotnet/NuGet.config names and maps to
# those packages alone (the NuGet copy this machine reaches, or the local package cache once they are in it); the
# other projects use only the SDK and the shared framework.
# Beside them, dotnet-counters in OUT_DIR/tools (the lab reads the originals' runtime counters with it).
# A peer whose sources are older than its apphost is left as it is. Without dotnet it says so in one line and
# exits 0: whatever uses the peers skips them.
set -euo pipefail
# A relative OUT_DIR is taken from where the script is called.
OUT_DIR=$(realpath -m "${1:-$(dirname "$0")/../build/peers}")
cd "$(dirname "$0")/.."
DOTNET=${DOTNET:-dotnet}
PEERS=(platform avatar weather aggregator freight profile)

if ! command -v "$DOTNET" >/dev/null 2>&1; then
    echo "build-peers: dotnet not found: the .NET originals are skipped"
    exit 0
fi

export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
# No background check for workload updates (it asks the network).
export DOTNET_CLI_WORKLOAD_UPDATE_NOTIFY_DISABLE=1

mkdir -p "$OUT_DIR"
for name in "${PEERS[@]}"; do
    src=peers/dotnet/$name
    app=$OUT_DIR/$name/$name
    # Its own folder, the shared settings, and peers/dotnet/shared when its project compiles code from there.
    shared=()
    if grep -q '\.\./shared/' "$src/$name.csproj"; then shared=(peers/dotnet/shared); fi
    if [[ -x $app && -z $(find "$src" peers/dotnet/Directory.Build.props peers/dotnet/NuGet.config "${shared[@]}" \
        -path "$src/bin" -prune -o -path "$src/obj" -prune -o -type f -newer "$app" -print -quit) ]]; then
        echo "build-peers: $name up to date ($app)"
        continue
    fi
    # No build servers left running afterwards (MSBuild nodes, the compiler server): one-shot builds.
    "$DOTNET" publish "$src/$name.csproj" -c Release -o "$OUT_DIR/$name" --artifacts-path "$OUT_DIR/artifacts" \
        -nodeReuse:false -p:UseSharedCompilation=false --tl:off -v quiet -nologo
    touch "$app" # publish leaves an unchanged apphost's time alone: the next run must see it as newer
    echo "build-peers: $name → $app"
done

# dotnet-counters: the lab reads each original's runtime counters with it (thread pool, GC, HttpClient, Kestrel). A
# .NET tool from NuGet, through the same NuGet.config, into OUT_DIR/tools: never installed globally.
COUNTERS_VERSION=${DOTNET_COUNTERS_VERSION:-10.0.750501}
if [[ -x $OUT_DIR/tools/dotnet-counters ]]; then
    echo "build-peers: dotnet-counters up to date ($OUT_DIR/tools/dotnet-counters)"
elif "$DOTNET" tool install dotnet-counters --tool-path "$OUT_DIR/tools" --version "$COUNTERS_VERSION" \
    --configfile peers/dotnet/NuGet.config >/dev/null; then
    echo "build-peers: dotnet-counters → $OUT_DIR/tools/dotnet-counters"
else
    echo "build-peers: dotnet-counters could not be installed: the lab reads the originals without their counters"
fi
