#!/usr/bin/env bash
# Builds hotpath, serves the platform app, shows how to call it, loads it with hotpath load, stops it gracefully.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${PORT:-8080}

bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"

out=$(mktemp)
build/release/hotpath serve platform --port "$PORT" >"$out" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 100); do
    grep -q serving "$out" && break
    sleep 0.05
done
cat "$out"

show() {
    echo
    echo "\$ $*"
    "$@"
    echo
}
show curl -si "http://127.0.0.1:${PORT}/plaintext"
show curl -si "http://127.0.0.1:${PORT}/json"
show curl -si "http://127.0.0.1:${PORT}/nope"
show build/release/hotpath load "http://127.0.0.1:${PORT}/plaintext" -t 1 -c 32 -d 3s -q
# What the server says of itself (Prometheus's text format), the routes' lines only.
echo "\$ curl -s http://127.0.0.1:${PORT}/metrics | grep -E '^hotpath_http_(requests_total|request_duration_seconds_(sum|count))'"
curl -s "http://127.0.0.1:${PORT}/metrics" | grep -E '^hotpath_http_(requests_total|request_duration_seconds_(sum|count))'
echo

kill -TERM "$pid"
wait "$pid"
trap 'rm -f "$out"' EXIT
tail -n 1 "$out"
