#!/usr/bin/env bash
# The Node.js test services install from a clean checkout: the tracked files of peers/node and
# scripts/build-node-peers.sh alone, in an empty folder, install every service with its pinned packages
# (package-lock.json) into the output, none into the sources; the service answers --help; a second run finds them up
# to date. Exits 77 (skipped) without node and npm.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "node or npm not found: the Node.js services are skipped"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if files=$(git -C "$src" ls-files peers/node scripts/build-node-peers.sh 2>/dev/null) && [[ -n $files ]]; then
    (cd "$src" && tar -cf - $files) | tar -xf - -C "$work"
else
    mkdir -p "$work/scripts"
    cp "$src/scripts/build-node-peers.sh" "$work/scripts/"
    (cd "$src" && tar -cf - --exclude=node_modules peers/node) | tar -xf - -C "$work"
fi

first=$(bash "$work/scripts/build-node-peers.sh" "$work/out")
echo "$first"
if grep -q "skipped" <<<"$first"; then
    exit 77 # a Node older than the packages need
fi
service=$work/out/node/inventory/server.js
[[ -f $service && -d $work/out/node/inventory/node_modules/@opentelemetry/sdk-metrics ]] ||
    { echo "FAIL: no installed $service"; exit 1; }
[[ -z $(find "$work/peers" -name node_modules) ]] || { echo "FAIL: node_modules inside peers/node"; exit 1; }
node "$service" --help | grep -q "usage: node server.js" || { echo "FAIL: $service --help"; exit 1; }
receiver=$work/out/node/otlp-receiver/server.js
[[ -f $receiver && -f $work/out/node/otlp-receiver/node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js ]] ||
    { echo "FAIL: no installed $receiver with OpenTelemetry's generated decoders"; exit 1; }
again=$(bash "$work/scripts/build-node-peers.sh" "$work/out")
if [[ $(grep -c 'up to date' <<<"$again") != 2 ]]; then
    echo "FAIL: a second run reinstalled:"
    echo "$again"
    exit 1
fi
echo "the Node.js services install from a clean checkout"
