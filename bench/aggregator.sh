#!/usr/bin/env bash
# Case 1 in numbers: the aggregator's single-request time per strategy (median of N requests, with curl) and
# its throughput under wrk for the bounded strategy. weather on CPU 0, aggregator on CPU 1, one loop each;
# curl and wrk run on CPU 0 beside the weather service (it only sleeps). Ratios are to the ideal:
# sequential calls × delay, bounded ceil(calls / limit) × delay, all one delay plus the transfer, which a
# second pair measures: the same `all` request against a weather service without delay.
# Env: REQUESTS (20) CALLS (100) LIMIT (10) DELAY_MS (10) DURATION (10s) CONNECTIONS (10)
#      HOTPATH (build/release/hotpath) OUT (append Markdown to this file)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REQUESTS=${REQUESTS:-20} CALLS=${CALLS:-100} LIMIT=${LIMIT:-10} DELAY_MS=${DELAY_MS:-10}
DURATION=${DURATION:-10s} CONNECTIONS=${CONNECTIONS:-10}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} OUT=${OUT:-}
for tool in wrk curl taskset awk sort python3; do
    command -v "$tool" >/dev/null || { echo "aggregator: missing tool: $tool" >&2; exit 2; }
done
[[ -x $HOTPATH ]] || { echo "aggregator: hotpath binary not found: $HOTPATH" >&2; exit 2; }
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

TMP=$(mktemp -d /tmp/aggregator_bench.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
WEATHER_PORT=$(free_port)
AGG_PORT=$(free_port)
WEATHER0_PORT=$(free_port)
AGG0_PORT=$(free_port)

taskset -c 0 "$HOTPATH" serve weather --port "$WEATHER_PORT" --delay "${DELAY_MS}ms" --threads 1 >"$TMP/weather.log" 2>&1 &
PIDS+=($!)
taskset -c 1 "$HOTPATH" serve aggregator --port "$AGG_PORT" --upstream "http://127.0.0.1:$WEATHER_PORT" \
    --calls "$CALLS" --limit "$LIMIT" --threads 1 >"$TMP/aggregator.log" 2>&1 &
PIDS+=($!)
taskset -c 0 "$HOTPATH" serve weather --port "$WEATHER0_PORT" --delay 0ms --threads 1 >"$TMP/weather0.log" 2>&1 &
PIDS+=($!)
taskset -c 1 "$HOTPATH" serve aggregator --port "$AGG0_PORT" --upstream "http://127.0.0.1:$WEATHER0_PORT" \
    --calls "$CALLS" --threads 1 >"$TMP/aggregator0.log" 2>&1 &
PIDS+=($!)
BASE="http://127.0.0.1:$AGG_PORT/"
BASE0="http://127.0.0.1:$AGG0_PORT/"
for ((i = 0; i < 100; i++)); do curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$WEATHER_PORT/weatherForecast" &&
    curl -s -o /dev/null --max-time 1 "${BASE}?calls=1" && curl -s -o /dev/null --max-time 1 "${BASE0}?calls=1" &&
    break; sleep 0.1; done

timings() {  # timings BASE QUERY FILE: REQUESTS timed requests after 2 that warm the pool
    local t
    for ((i = 0; i < REQUESTS + 2; i++)); do
        t=$(taskset -c 0 curl -s -o "$TMP/body" -w '%{http_code} %{time_total}' "$1$2")
        [[ ${t%% *} == 200 ]] || { echo "aggregator: $2 answered ${t%% *}: $(cat "$TMP/body")" >&2; exit 1; }
        ((i < 2)) || echo "${t#* }" >>"$3"
    done
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
ideal() {  # ideal STRATEGY -> ms
    case $1 in
        sequential) echo $((CALLS * DELAY_MS)) ;;
        bounded) echo $(((CALLS + LIMIT - 1) / LIMIT * DELAY_MS)) ;;
        all) awk -v d="$DELAY_MS" -v t="$TRANSFER_MS" 'BEGIN {printf "%.1f", d + t}' ;;
    esac
}

: >"$TMP/rows"
log "transfer: $REQUESTS requests ?strategy=all against the weather service without delay"
timings "$BASE0" "?strategy=all" "$TMP/transfer"
TRANSFER_MS=$(awk '{print $1 * 1000}' "$TMP/transfer" | median)
for strategy in sequential bounded all; do
    log "$strategy: $REQUESTS requests (and 2 to warm the pool)"
    timings "$BASE" "?strategy=$strategy" "$TMP/$strategy"
    ms=$(awk '{print $1 * 1000}' "$TMP/$strategy" | median)
    echo "$strategy $ms $(ideal "$strategy")" >>"$TMP/rows"
done

log "wrk -t1 -c$CONNECTIONS -d$DURATION on ?strategy=bounded"
taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency "${BASE}?strategy=bounded" >"$TMP/wrk.out" 2>&1
rps=$(awk '/^Requests\/sec/ {print $2}' "$TMP/wrk.out")
p50=$(awk '$1 == "50%" {print $2}' "$TMP/wrk.out")
errors=$(awk '/Non-2xx|Socket errors/' "$TMP/wrk.out")
ideal_rps=$(awk -v c="$CONNECTIONS" -v ms="$(ideal bounded)" 'BEGIN {printf "%.0f", c * 1000 / ms}')

table() {
    echo "strategy|median ms|ideal ms|ratio"
    awk '{printf "%s|%.1f|%.1f|%.2f\n", $1, $2, $3, $2 / $3}' "$TMP/rows"
}
{
    printf '%-12s %10s %9s %7s\n' strategy "median ms" "ideal ms" ratio
    table | tail -n +2 | awk -F'|' '{printf "%-12s %10s %9s %7s\n", $1, $2, $3, $4}'
    echo
    echo "bounded under wrk -c$CONNECTIONS: $rps req/s (ideal $ideal_rps: $CONNECTIONS connections / $(ideal bounded) ms), p50 $p50 ${errors:+($errors)}"
    echo "calls per request: $CALLS, limit $LIMIT, downstream delay ${DELAY_MS} ms, $REQUESTS requests per strategy;"
    echo "transfer (all $CALLS calls without delay): $TRANSFER_MS ms"
}
if [[ -n $OUT ]]; then
    {
        echo
        echo "### Case 1 aggregator, $(date -u +%F) (\`bench/aggregator.sh\`)"
        echo
        echo "| $(table | head -1 | sed 's/|/ | /g') |"
        echo "|---|---|---|---|"
        table | tail -n +2 | sed 's/^/| /; s/|/ | /g; s/$/ |/'
        echo
        echo "bounded under \`wrk -t1 -c$CONNECTIONS -d$DURATION\`: $rps req/s (ideal $ideal_rps), p50 $p50."
        echo "Ideal for all: ${DELAY_MS} ms plus the transfer, $TRANSFER_MS ms (the same request against a weather"
        echo "service without delay). $CALLS calls, limit $LIMIT, median of $REQUESTS requests each."
    } >>"$OUT"
fi
