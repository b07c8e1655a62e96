#!/usr/bin/env bash
# A/B of two hotpath binaries in one sitting: requests per server CPU-second, alternating which goes first.
# Server pinned to CPU 0, wrk to CPU 1. Usage: bench/binary_ab.sh OLD_BINARY NEW_BINARY
# Env: PAIRS (5) DURATION (5s) CONNECTIONS (64) APP (platform; avatar for the redirect, with PATHS=/)
#      PATHS ("/plaintext /json") IO (auto), or OLD_IO and NEW_IO apart: the same binary on both backends.
#      AB_REQUESTS (unset): ab -n AB_REQUESTS -c 10 without keep-alive instead of wrk (a connection per request).
#      OLD_ARGS, NEW_ARGS (empty): more `serve` options for each side, e.g. the same binary with and without
#      NEW_ARGS="--access-log /dev/null" to price an option.
#      TLS=1: both serve HTTPS with one throw-away certificate (scripts/make-test-certs.sh), loaded over TLS.
set -euo pipefail
OLD=${1:?old binary} NEW=${2:?new binary}
PAIRS=${PAIRS:-5} DURATION=${DURATION:-5s} CONNECTIONS=${CONNECTIONS:-64} PATHS=${PATHS:-"/plaintext /json"}
APP=${APP:-platform} IO=${IO:-auto} AB_REQUESTS=${AB_REQUESTS:-} OLD_ARGS=${OLD_ARGS:-} NEW_ARGS=${NEW_ARGS:-}
OLD_IO=${OLD_IO:-$IO} NEW_IO=${NEW_IO:-$IO} TLS=${TLS:-0}
for tool in wrk ab taskset awk sort python3; do
  command -v "$tool" >/dev/null || { echo "binary_ab: missing tool: $tool" >&2; exit 2; }
done
TCK=$(getconf CLK_TCK)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TMP=$(mktemp -d /tmp/binary_ab.XXXXXX)
PID=
cleanup() { [[ -n $PID ]] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
SCHEME=http TLS_ARGS=()
if [[ $TLS == 1 ]]; then
  bash "$(dirname "$0")/../scripts/make-test-certs.sh" "$TMP/certs" >/dev/null
  SCHEME=https TLS_ARGS=(--tls-cert "$TMP/certs/server.pem" --tls-key "$TMP/certs/server.key")
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run BINARY PATH IO EXTRA_ARGS -> prints requests per server CPU-second
run() {
  local where=(--port "$PORT") extra
  [[ $APP == avatar ]] && where=("$PORT") # positional: binaries before 2026-12-03 took no --port there
  read -r -a extra <<<"$4"
  taskset -c 0 "$1" serve "$APP" "${where[@]}" --threads 1 --io "$3" "${TLS_ARGS[@]}" "${extra[@]}" >"$TMP/server.log" 2>&1 &
  PID=$!
  for _ in $(seq 50); do grep -q serving "$TMP/server.log" && break; sleep 0.05; done
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d1s "$SCHEME://127.0.0.1:$PORT$2" >/dev/null # warm-up
  local before after requests
  before=$(cpu_ticks "$PID")
  if [[ -n $AB_REQUESTS ]]; then
    taskset -c 1 ab -q -n "$AB_REQUESTS" -c 10 "$SCHEME://127.0.0.1:$PORT$2" >"$TMP/ab.txt"
    after=$(cpu_ticks "$PID")
    requests=$(awk '/^Complete requests:/ {print $3}' "$TMP/ab.txt")
  else
    taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" "$SCHEME://127.0.0.1:$PORT$2" >"$TMP/wrk.txt"
    after=$(cpu_ticks "$PID")
    requests=$(awk '/requests in/ {print $1}' "$TMP/wrk.txt")
  fi
  kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; PID=
  awk -v r="$requests" -v t="$((after - before))" -v hz="$TCK" 'BEGIN { printf "%.0f\n", r / (t / hz) }'
}

median() { sort -g | awk '{v[NR] = $1} END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "binary_ab: $(date -u +%FT%TZ) APP=$APP PAIRS=$PAIRS ${AB_REQUESTS:+AB_REQUESTS=$AB_REQUESTS }DURATION=$DURATION CONNECTIONS=$CONNECTIONS IO=$OLD_IO/$NEW_IO$([[ $TLS == 1 ]] && echo " TLS=1")${OLD_ARGS:+ OLD_ARGS=$OLD_ARGS}${NEW_ARGS:+ NEW_ARGS=$NEW_ARGS}"
for path in $PATHS; do
  : >"$TMP/ratios"
  for ((i = 1; i <= PAIRS; i++)); do
    if ((i % 2)); then
      a=$(run "$OLD" "$path" "$OLD_IO" "$OLD_ARGS"); b=$(run "$NEW" "$path" "$NEW_IO" "$NEW_ARGS")
    else
      b=$(run "$NEW" "$path" "$NEW_IO" "$NEW_ARGS"); a=$(run "$OLD" "$path" "$OLD_IO" "$OLD_ARGS")
    fi
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
    echo "$ratio" >>"$TMP/ratios"
    echo "  $path pair $i: old $a, new $b req/CPU-s: new/old $ratio" >&2
  done
  echo "$path: median new/old $(median <"$TMP/ratios") over $PAIRS pairs ($(tr '\n' ' ' <"$TMP/ratios"))"
done
