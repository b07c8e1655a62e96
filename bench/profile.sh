#!/usr/bin/env bash
# Case 4: the write-up's step load (virtual users 250 -> 500 -> 1000 -> 2000 -> 4000) against GET /profile/sync,
# /profile/async and /profile/offload of `hotpath serve profile --delay 2s`, one endpoint after another, each
# against a fresh server. Server pinned to CPU 0, `hotpath load` (closed model, one thread) to CPU 1, both under
# ulimit -v. Only the top step is measured (the lower steps are the load's warm-up). Prints per endpoint: 200s/s,
# responses/s, mean and p95 latency of the responses, errors, 503s and timeouts, the mean with each timeout counted
# at the timeout (mean+t/o), the server's peak RSS and, scraped during the top step, its blocking pool's figures and
# stall count; then the ratios async/sync (throughput of 200s; mean+t/o).
# Usage: bench/profile.sh [BINARY]
# Env: QUICK=1 (6 s steps, 10 s top step) STEP (15s) TOP (30s) DELAY (2s) SERVER_THREADS (4) BLOCKING_THREADS (32)
#      BLOCKING_QUEUE (64) TIMEOUT (10s) VMEM_KB (4194304 per process)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/hotpath}
if [[ ${QUICK:-0} == 1 ]]; then STEP=${STEP:-6}; TOP=${TOP:-10}; else STEP=${STEP:-15}; TOP=${TOP:-30}; fi
STEP=${STEP%s} TOP=${TOP%s}
DELAY=${DELAY:-2s} SERVER_THREADS=${SERVER_THREADS:-4} BLOCKING_THREADS=${BLOCKING_THREADS:-32}
BLOCKING_QUEUE=${BLOCKING_QUEUE:-64} TIMEOUT=${TIMEOUT:-10s} VMEM_KB=${VMEM_KB:-4194304}
for tool in taskset python3 curl; do
  command -v "$tool" >/dev/null || { echo "profile: missing tool: $tool" >&2; exit 2; }
done
(( $(ulimit -n) >= 9000 )) || ulimit -n 9000 2>/dev/null || { echo "profile: ulimit -n below 9000" >&2; exit 2; }
# A port per endpoint: a killed server's thousands of closed connections sit in TIME_WAIT on its port.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
TMP=$(mktemp -d /tmp/profile_bench.XXXXXX)
PID=
cleanup() { [[ -n $PID ]] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

STAGES="vus=250:${STEP}s, vus=500:${STEP}s, vus=1000:${STEP}s, vus=2000:${STEP}s, vus=4000:${TOP}s"
WARMUP=$((4 * STEP))

run() { # run sync|async|offload -> $TMP/$1.json, $TMP/$1.metrics, $TMP/$1.server
  local way=$1
  PORT=$(free_port)
  (ulimit -v "$VMEM_KB"; exec taskset -c 0 "$BIN" serve profile --port "$PORT" --threads "$SERVER_THREADS" \
    --delay "$DELAY" --blocking-threads "$BLOCKING_THREADS" --blocking-queue "$BLOCKING_QUEUE") \
    >"$TMP/$way.server" 2>&1 &
  PID=$!
  for _ in $(seq 100); do grep -q serving "$TMP/$way.server" && break; sleep 0.05; done
  # During the top step: what the server says of itself (a loop asleep in a handler may not answer).
  (sleep $((WARMUP + TOP - 5)); curl -s --max-time 4 "http://127.0.0.1:$PORT/metrics" >"$TMP/$way.metrics" || true) &
  local scrape=$!
  (ulimit -v "$VMEM_KB"; exec taskset -c 1 "$BIN" load "http://127.0.0.1:$PORT/profile/$way/42" -t 1 \
    --stages "$STAGES" --warmup "${WARMUP}s" --timeout "$TIMEOUT" -q --json "$TMP/$way.json") >"$TMP/$way.load" 2>&1 ||
    true # a load whose requests all failed exits non-zero: its figures are still the point
  [[ -s $TMP/$way.json ]] || { echo "profile: the load against $way failed:" >&2; cat "$TMP/$way.load" >&2; exit 1; }
  wait "$scrape" || true
  if ! kill -0 "$PID" 2>/dev/null; then # the server did not survive the load: say so, with its exit status
    local status=0; wait "$PID" || status=$?; PID=
    echo "profile: the $way server exited ($status) during the load; its last lines:" >&2
    tail -n 3 "$TMP/$way.server" >&2
    echo 0 >"$TMP/$way.rss"
    return
  fi
  awk '/^VmHWM/ {print $2}' "/proc/$PID/status" >"$TMP/$way.rss"
  # A sync server drains its backlog one blocked handler after another (minutes): stopped hard after 5 s.
  kill -TERM "$PID"
  for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true; PID=
}

echo "hotpath serve profile --delay $DELAY --threads $SERVER_THREADS --blocking-threads $BLOCKING_THREADS" \
  "--blocking-queue $BLOCKING_QUEUE (CPU 0); hotpath load -t 1 --stages \"$STAGES\" --warmup ${WARMUP}s" \
  "--timeout $TIMEOUT (CPU 1); ulimit -v $VMEM_KB; $(date -u '+%Y-%m-%d %H:%M UTC')"
for way in sync async offload; do
  run "$way"
done

python3 - "$TMP" "$(python3 -c "import sys; t='$TIMEOUT'; print(float(t[:-2]) if t.endswith('ms') else float(t[:-1]) * 1000)")" <<'EOF'
import json, re, sys
tmp = sys.argv[1]
def metric(text, name):
    m = re.search(r'^' + re.escape(name) + r'(?:\{[^}]*\})? (\S+)$', text, re.M)
    return float(m.group(1)) if m else None
rows = {}
print(f"{'top step':9} {'200/s':>8} {'resp/s':>9} {'mean':>9} {'p95':>9} {'errors':>8} {'503s':>8} {'timeouts':>8} "
      f"{'mean+t/o':>11} {'RSS MB':>7}  server during the top step")
for way in ("sync", "async", "offload"):
    d = json.load(open(f"{tmp}/{way}.json"))
    s = d["measured_s"]
    ok = d["statuses"].get("200", 0) / s
    lat = d["latency"]
    mean_ms = lat["mean_us"] / 1000 if lat["count"] else float("nan")
    p95_ms = lat["percentiles_us"]["95"] / 1000 if lat["count"] else float("nan")
    timeouts = d["errors"]["timeout"]
    errors = d["responses"] - d["successes"] + timeouts + d["errors"]["read"] + d["errors"]["write"]
    # The mean the ratio uses: timed-out requests count at the timeout (a lower bound of their latency).
    timeout_ms = d["run"].get("timeout_ms") or float(sys.argv[2])
    all_n = lat["count"] + timeouts
    mean_all_ms = (lat["mean_us"] / 1000 * lat["count"] + timeouts * timeout_ms) / all_n if all_n else float("nan")
    rss = int(open(f"{tmp}/{way}.rss").read().strip() or 0) / 1024
    page = open(f"{tmp}/{way}.metrics").read()
    if not page:
        seen = "no /metrics answer within 4 s"
    else:
        parts = []
        for label, name in (("busy", "hotpath_blocking_threads_busy"), ("queued", "hotpath_blocking_queue_length"),
                            ("rejected", "hotpath_blocking_rejected_total"), ("stalls", "hotpath_loop_stalls_total")):
            v = metric(page, name)
            if v is not None:
                parts.append(f"{label} {v:.0f}")
        seen = ", ".join(parts)
    stall = next((l for l in open(f"{tmp}/{way}.server") if "stalled" in l), "")
    m = re.search(r"in the handler of (\S+ [^\s:]+)", stall)
    if m:
        seen += f"; stall line names {m.group(1)}"
    rows[way] = (ok, mean_all_ms)
    print(f"{way:9} {ok:8.1f} {d['requests_per_second']:9.1f} {mean_ms:7.0f}ms {p95_ms:7.0f}ms {errors:8d} "
          f"{d['statuses'].get('503', 0):8d} {timeouts:8d} {mean_all_ms:9.0f}ms {rss:7.0f}  {seen}")
(sync_ok, sync_mean), (async_ok, async_mean) = rows["sync"], rows["async"]
ratio = lambda a, b: f"{a / b:.1f}x" if b else "inf (sync answered nothing in time)"
print(f"async/sync: {ratio(async_ok, sync_ok)} the 200s per second (write-up: >=10x), "
      f"{ratio(sync_mean, async_mean)} lower mean latency, timeouts counted at the timeout (write-up: >=25x)")
EOF
