#!/usr/bin/env bash
# What `hotpath load --out` costs the load generator: its CPU per request with no --out, pushing to Prometheus's
# remote-write receiver, to an OTLP receiver, and serving a scrape endpoint, each every INTERVAL (1s: five times the
# default's pushes), against one nginx worker on CPU 0; the generator on CPU 1, the receivers on CPU 0 with nginx.
# Alternates the variants in each run; prints medians and each variant's CPU per request against the plain run's.
# Env: DURATION (10s) RUNS (3) CONNECTIONS (64) INTERVAL (1s) HOTPATH (build/release/hotpath) OUT (append Markdown)
#      PEERS (build/peers: the OTLP receiver, scripts/build-node-peers.sh; its variant is left out without it)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=${DURATION:-10s} RUNS=${RUNS:-3} CONNECTIONS=${CONNECTIONS:-64} INTERVAL=${INTERVAL:-1s}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} OUT=${OUT:-} NGINX=${NGINX:-/usr/sbin/nginx}
PEERS=${PEERS:-$ROOT/build/peers}
for tool in taskset getconf awk sed sort curl prometheus python3; do
    command -v "$tool" >/dev/null || { echo "load_out: missing tool: $tool" >&2; exit 2; }
done
[[ -x $HOTPATH ]] || { echo "load_out: hotpath binary not found: $HOTPATH" >&2; exit 2; }
TCK=$(getconf CLK_TCK)
DSEC=${DURATION%s}
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

source "$ROOT/bench/generators.sh"
nginx_on_cpu0 load_out "" 4096
URL="http://127.0.0.1:$PORT/plaintext"
for ((i = 0; i < 100; i++)); do curl -s -o /dev/null --max-time 1 "$URL" && break; sleep 0.1; done

# The receivers, stopped by PID with nginx.
PIDS=()
stop_receivers() { for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap 'stop_receivers; if [[ -n $NGINX_PID ]]; then kill -TERM "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; fi; rm -rf "$TMP"' EXIT
PROM_PORT=$(free_port)
printf 'global:\n  scrape_interval: 15s\n' >"$TMP/prometheus.yml"
GOMEMLIMIT=256MiB taskset -c 0 prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/data" \
    --web.listen-address=127.0.0.1:"$PROM_PORT" --web.enable-remote-write-receiver --log.level=warn \
    >"$TMP/prometheus.out" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 100; i++)); do curl -sf -o /dev/null "http://127.0.0.1:$PROM_PORT/-/ready" && break; sleep 0.1; done
VARIANTS=(plain remote-write scrape)
RECEIVER=$PEERS/node/otlp-receiver/server.js
if [[ -f $RECEIVER ]] && command -v node >/dev/null; then
    OTLP_PORT=$(free_port)
    taskset -c 0 node "$RECEIVER" "$OTLP_PORT" >"$TMP/otlp.out" 2>&1 &
    PIDS+=($!)
    for ((i = 0; i < 100; i++)); do curl -s -o /dev/null "http://127.0.0.1:$OTLP_PORT/received" && break; sleep 0.1; done
    VARIANTS+=(otlp)
else
    log "no OTLP receiver at $RECEIVER (scripts/build-node-peers.sh): its variant is left out"
fi

args_of() {
    case $1 in
    plain) ;;
    remote-write) echo "--out prometheus-rw=http://127.0.0.1:$PROM_PORT/api/v1/write --out-interval $INTERVAL" ;;
    otlp) echo "--out otlp=http://127.0.0.1:$OTLP_PORT --out-interval $INTERVAL" ;;
    scrape) echo "--out prometheus=0" ;;
    esac
}

: >"$TMP/res"
for ((run = 1; run <= RUNS; run++)); do
    # A different variant goes first in each run.
    for ((k = 0; k < ${#VARIANTS[@]}; k++)); do
        v=${VARIANTS[$(((k + run - 1) % ${#VARIANTS[@]}))]}
        log "run $run/$RUNS: $v"
        # shellcheck disable=SC2046
        echo "$v $(measure hotpath "$HOTPATH" load -t1 -c"$CONNECTIONS" -d"$DURATION" -q $(args_of "$v") "$URL")" \
            >>"$TMP/res"
        grep -q "failed (last" "$TMP/hotpath.out" && log "$v: $(grep 'failed (last' "$TMP/hotpath.out")"
    done
done

table() {
    echo "variant|requests/s|CPU s per million requests|CPU per request vs plain"
    local base
    base=$(awk -v r="$(med plain 2)" -v c="$(med plain 3)" 'BEGIN {printf "%.4f", c / r * 1e6}')
    for v in "${VARIANTS[@]}"; do
        awk -v g="$v" -v r="$(med "$v" 2)" -v c="$(med "$v" 3)" -v d="$DSEC" -v b="$base" \
            'BEGIN {cpm = r > 0 ? c / r * 1e6 : 0; printf "%s|%.0f|%.3f|%.3f\n", g, r / d, cpm, (b > 0 ? cpm / b : 0)}'
    done
}
table | awk -F'|' '{printf "%-14s %12s %28s %26s\n", $1, $2, $3, $4}'
echo "runs: $RUNS x $DURATION, -t1 -c$CONNECTIONS on CPU 1 against nginx (one worker) on CPU 0, pushes every $INTERVAL; medians"
if [[ -n $OUT ]]; then
    {
        echo
        echo "### hotpath load --out: its cost per request, $(date -u +%F)"
        echo
        echo "\`DURATION=$DURATION RUNS=$RUNS CONNECTIONS=$CONNECTIONS INTERVAL=$INTERVAL bash bench/load_out.sh\`"
        echo
        table | sed 's/|/ | /g; s/^/| /; s/$/ |/; 1p; 1s/[^|]/-/g' | sed '2s/ /-/g'
    } >>"$OUT"
fi
