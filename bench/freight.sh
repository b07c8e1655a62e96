#!/usr/bin/env bash
# Case 2: requests per server CPU-second of POST /freight/quote, lean against churn, and GET /plaintext beside
# them (the floor: the business logic's cost is what lean loses against it), alternating the order each round.
# Server pinned to CPU 0 with one loop, `hotpath load` to CPU 1 (closed model, random carts from
# examples/freight/carts.csv, ~7.5 % answering 404). Then allocations per request of each variant, from a
# build with the allocation counter (build/profile) when there is one.
# Usage: bench/freight.sh [BINARY]   Env: ROUNDS (5) DURATION (5s) CONNECTIONS (64) PROFILE (build/profile/hotpath)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/hotpath}
ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-5s} CONNECTIONS=${CONNECTIONS:-64} PROFILE=${PROFILE:-build/profile/hotpath}
for tool in taskset awk sort python3 curl; do
  command -v "$tool" >/dev/null || { echo "freight: missing tool: $tool" >&2; exit 2; }
done
TCK=$(getconf CLK_TCK)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TMP=$(mktemp -d /tmp/freight_bench.XXXXXX)
PID=
cleanup() { [[ -n $PID ]] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
"$BIN" freight init --db "$TMP/freight.sqlite" >/dev/null

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start() { # start BINARY ARGS... (serve options)
  local bin=$1; shift
  taskset -c 0 "$bin" serve "$@" --port "$PORT" --threads 1 >"$TMP/server.log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do grep -q serving "$TMP/server.log" && break; sleep 0.05; done
}
stop() { kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; PID=; }

load() { # load DURATION -> the load report on stdout
  if [[ $WHAT == plaintext ]]; then
    taskset -c 1 "$BIN" load "http://127.0.0.1:$PORT/plaintext" -t 1 -c "$CONNECTIONS" -d "$1" -q
  else
    taskset -c 1 "$BIN" load --scenario examples/freight/quote.toml "http://127.0.0.1:$PORT" -t 1 \
      -c "$CONNECTIONS" -d "$1" -q
  fi
}

# run lean|churn|plaintext -> requests per server CPU-second
run() {
  WHAT=$1
  case $WHAT in
    plaintext) start "$BIN" platform ;;
    *) start "$BIN" freight --db "$TMP/freight.sqlite" --variant "$WHAT" ;;
  esac
  load 1s >/dev/null # warm-up
  local before after requests
  before=$(cpu_ticks "$PID")
  load "$DURATION" >"$TMP/load.txt"
  after=$(cpu_ticks "$PID")
  stop
  requests=$(awk '/^  Requests/ {print $2}' "$TMP/load.txt")
  grep -q ' 0 errors' "$TMP/load.txt" || { echo "freight: $WHAT had errors:" >&2; cat "$TMP/load.txt" >&2; exit 1; }
  awk -v r="$requests" -v t="$((after - before))" -v hz="$TCK" 'BEGIN { printf "%.0f\n", r / (t / hz) }'
}

median() { sort -g | awk '{v[NR] = $1} END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "freight: $(date -u +%FT%TZ) ROUNDS=$ROUNDS DURATION=$DURATION CONNECTIONS=$CONNECTIONS $(git rev-parse --short HEAD 2>/dev/null || true)"
: >"$TMP/lean"; : >"$TMP/churn"; : >"$TMP/plaintext"
for ((i = 1; i <= ROUNDS; i++)); do
  if ((i % 2)); then order="lean churn plaintext"; else order="plaintext churn lean"; fi
  for w in $order; do run "$w" >>"$TMP/$w"; done
  echo "  round $i: lean $(tail -1 "$TMP/lean")  churn $(tail -1 "$TMP/churn")  plaintext $(tail -1 "$TMP/plaintext") requests/CPU-s"
done
lean=$(median <"$TMP/lean"); churn=$(median <"$TMP/churn"); plain=$(median <"$TMP/plaintext")
echo "  median requests per server CPU-second: lean $lean, churn $churn, plaintext $plain"
awk -v l="$lean" -v c="$churn" -v p="$plain" 'BEGIN { printf "  lean/churn %.2fx, lean/plaintext %.2fx\n", l / c, l / p }'

if [[ -x $PROFILE ]]; then
  for w in lean churn; do
    WHAT=$w
    start "$PROFILE" freight --db "$TMP/freight.sqlite" --variant "$w"
    load 2s >/dev/null
    metrics=$(curl -s "http://127.0.0.1:$PORT/metrics")
    stop
    awk -v w="$w" '/^hotpath_http_request_allocations_total\{method="POST",route="\/freight\/quote"\}/ {a = $2}
                   /^hotpath_http_requests_total\{method="POST",route="\/freight\/quote"/ {n += $2}
                   END { printf "  %s: %.2f allocations per request (%d requests)\n", w, a / n, n }' <<<"$metrics"
  done
else
  echo "  (no $PROFILE: cmake --preset profile && cmake --build build/profile --target hotpath_cli for allocations)"
fi
