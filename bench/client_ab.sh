#!/usr/bin/env bash
# A/B of two hotpath binaries as a client, in one sitting: the aggregator (one loop, CPU 1) calling a weather
# service without delay, loaded by wrk; reported as downstream calls per aggregator CPU-second, alternating which
# binary goes first. The weather service (one loop) and wrk share CPU 0 and run the NEW binary for both sides.
# Usage: bench/client_ab.sh OLD_BINARY NEW_BINARY
# Env: PAIRS (5) DURATION (5s) CONNECTIONS (8) CALLS (20) STRATEGY (all; sequential or bounded) IO (auto)
#      OLD_ARGS, NEW_ARGS (empty): more `serve aggregator` options for each side, e.g. the same binary twice with
#      OLD_ARGS="--upstream-protocol http1" NEW_ARGS="--upstream-protocol http2" to price HTTP/2 to the upstream.
set -euo pipefail
OLD=${1:?old binary} NEW=${2:?new binary}
PAIRS=${PAIRS:-5} DURATION=${DURATION:-5s} CONNECTIONS=${CONNECTIONS:-8} CALLS=${CALLS:-20}
STRATEGY=${STRATEGY:-all} IO=${IO:-auto} OLD_ARGS=${OLD_ARGS:-} NEW_ARGS=${NEW_ARGS:-}
for tool in wrk taskset awk sort python3 curl; do
    command -v "$tool" >/dev/null || { echo "client_ab: missing tool: $tool" >&2; exit 2; }
done
TCK=$(getconf CLK_TCK)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
WEATHER_PORT=$(free_port)
PORT=$(free_port)
TMP=$(mktemp -d /tmp/client_ab.XXXXXX)
PID=
WEATHER=
cleanup() {
    [[ -n $PID ]] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    [[ -n $WEATHER ]] && kill -TERM "$WEATHER" 2>/dev/null && wait "$WEATHER" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

taskset -c 0 "$NEW" serve weather --port "$WEATHER_PORT" --delay 0ms --threads 1 --io "$IO" >"$TMP/weather.log" 2>&1 &
WEATHER=$!
for _ in $(seq 50); do grep -q serving "$TMP/weather.log" && break; sleep 0.05; done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run BINARY EXTRA_ARGS -> prints downstream calls per aggregator CPU-second
run() {
    # shellcheck disable=SC2086 # the extra options are words
    taskset -c 1 "$1" serve aggregator --port "$PORT" --upstream "http://127.0.0.1:$WEATHER_PORT" --calls "$CALLS" \
        --strategy "$STRATEGY" --threads 1 --io "$IO" $2 >"$TMP/server.log" 2>&1 &
    PID=$!
    for _ in $(seq 50); do grep -q serving "$TMP/server.log" && break; sleep 0.05; done
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/" || { echo "client_ab: $1 did not answer" >&2; exit 1; }
    taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d1s "http://127.0.0.1:$PORT/" >/dev/null # warm-up
    local before after requests
    before=$(cpu_ticks "$PID")
    taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" "http://127.0.0.1:$PORT/" >"$TMP/wrk.txt"
    after=$(cpu_ticks "$PID")
    requests=$(awk '/requests in/ {print $1}' "$TMP/wrk.txt")
    if grep -q "Non-2xx" "$TMP/wrk.txt"; then
        echo "client_ab: $1 answered errors: $(grep Non-2xx "$TMP/wrk.txt")" >&2
        exit 1
    fi
    kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; PID=
    awk -v r="$requests" -v c="$CALLS" -v t="$((after - before))" -v hz="$TCK" \
        'BEGIN { printf "%.0f\n", r * c / (t / hz) }'
}

median() { sort -g | awk '{v[NR] = $1} END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "client_ab: $(date -u +%FT%TZ) PAIRS=$PAIRS DURATION=$DURATION CONNECTIONS=$CONNECTIONS CALLS=$CALLS STRATEGY=$STRATEGY IO=$IO${OLD_ARGS:+ OLD_ARGS=$OLD_ARGS}${NEW_ARGS:+ NEW_ARGS=$NEW_ARGS}"
: >"$TMP/ratios"
: >"$TMP/old"
: >"$TMP/new"
for ((i = 1; i <= PAIRS; i++)); do
    if ((i % 2)); then
        a=$(run "$OLD" "$OLD_ARGS"); b=$(run "$NEW" "$NEW_ARGS")
    else
        b=$(run "$NEW" "$NEW_ARGS"); a=$(run "$OLD" "$OLD_ARGS")
    fi
    echo "$a" >>"$TMP/old"
    echo "$b" >>"$TMP/new"
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
    echo "$ratio" >>"$TMP/ratios"
    echo "  pair $i: old $a, new $b calls/CPU-s: new/old $ratio" >&2
done
echo "calls per aggregator CPU-second: old median $(median <"$TMP/old"), new median $(median <"$TMP/new"), new/old median of pairs $(median <"$TMP/ratios")"
