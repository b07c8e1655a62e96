#!/usr/bin/env bash
# The write-ups' own services on ASP.NET Core's Kestrel (peers/dotnet, built by scripts/build-peers.sh) against
# hotpath's, case by case, in one run: servers pinned to CPU 0 with one loop each (Kestrel as it comes), the load
# on CPU 1, the two alternating in every run. Per service: requests per server CPU-second (wrk, or ab for case 5
# as its write-up ran it), p50/p99 at a fixed rate (hotpath load, latency from the scheduled send), RSS at rest and
# the peak under load, start-up to the first answer (bench/startup_probe.cpp), size on disk.
# Case 1: each strategy's p95 under the write-up's NBomber profile (1, 2, 3 req/s after a 5 s warm-up).
# Case 2: POST /freight/quote, lean and churn on each side, from one table (`hotpath freight init`): the random carts
# of examples/freight/quote.toml (~7.5 % answering 404) posted by `hotpath load` (closed model for requests per
# CPU-second, FREIGHT_RATE req/s for p50/p99), as bench/freight.sh loads hotpath's, each server first warmed up
# for FREIGHT_WARMUP (Kestrel's lean quote costs a third less CPU after 30 s of load than after 2 s: the JIT's
# tiers).
# Case 4: the write-up's step load (closed model, 250 -> 500 -> 1000 -> 2000 -> 4000 users, each step STEP4 long, the
# request timeout TIMEOUT4) against GET /profile/{sync,async,offload}/42 with a 2 s backing call, a fresh server per
# endpoint; per step: answers/s, errors/s (timeouts, failed connections, 503s) and the mean latency of the answers. hotpath
# as bench/profile.sh runs it (4 loops, 32 blocking threads, queue 64) under ulimit -v; Kestrel as it comes, its GC
# heap capped at 2 GB (DOTNET_GCHeapHardLimit: ulimit -v does not suit a runtime that reserves 256 GB up front).
# Env: CASES ("3 5 1 2 4") DURATION (10s) RUNS (3) CONNECTIONS (64) RATE (5000) FREIGHT_RATE (2000)
#      FREIGHT_WARMUP (30s) AB_REQUESTS (100000) STEP4 (15s) TIMEOUT4 (10s)
#      HOTPATH (build/release/hotpath) PEERS (build/peers) OUT (append Markdown).
# Example: CASES=3 DURATION=3s RUNS=1 bash bench/vs_dotnet.sh
set -euo pipefail

# --- settings and tool checks -------------------------------------------------------------
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CASES=${CASES:-"3 5 1 2 4"} DURATION=${DURATION:-10s} RUNS=${RUNS:-3} CONNECTIONS=${CONNECTIONS:-64}
RATE=${RATE:-5000} FREIGHT_RATE=${FREIGHT_RATE:-2000} FREIGHT_WARMUP=${FREIGHT_WARMUP:-30s} AB_REQUESTS=${AB_REQUESTS:-100000} OUT=${OUT:-}
STEP4=${STEP4:-15s} TIMEOUT4=${TIMEOUT4:-10s} STEP4=${STEP4%s}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} PEERS=${PEERS:-$ROOT/build/peers}
CMDLINE="CASES=\"$CASES\" DURATION=$DURATION RUNS=$RUNS CONNECTIONS=$CONNECTIONS RATE=$RATE FREIGHT_RATE=$FREIGHT_RATE FREIGHT_WARMUP=$FREIGHT_WARMUP STEP4=${STEP4}s TIMEOUT4=$TIMEOUT4 $0"
for tool in wrk ab taskset getconf awk sort python3 g++ du; do
  command -v "$tool" >/dev/null || { echo "vs_dotnet: missing tool: $tool" >&2; exit 2; }
done
[[ -x $HOTPATH ]] || { echo "vs_dotnet: hotpath binary not found: $HOTPATH" >&2; exit 2; }
if ! command -v dotnet >/dev/null; then
  echo "vs_dotnet: dotnet not found: the .NET originals are skipped (nothing to compare)"
  exit 0
fi
for c in $CASES; do
  case $c in
    1) need="weather aggregator" ;; 2) need=freight ;; 3) need=platform ;; 4) need=profile ;; 5) need=avatar ;;
    *) echo "vs_dotnet: no such case: $c (cases 1 to 5)" >&2; exit 2 ;;
  esac
  for p in $need; do
    [[ -x $PEERS/$p/$p ]] || { echo "vs_dotnet: $PEERS/$p/$p not built: run scripts/build-peers.sh" >&2; exit 2; }
  done
done
if [[ " $CASES " == *" 4 "* ]] && (( $(ulimit -n) < 9000 )); then
  ulimit -n 9000 2>/dev/null || { echo "vs_dotnet: case 4 needs ulimit -n 9000 (4,000 connections each side)" >&2; exit 2; }
fi
TCK=$(getconf CLK_TCK)
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# --- cleanup: stop every server we started, by PID, even on error or Ctrl-C -----------------
TMP=$(mktemp -d /tmp/vs_dotnet.XXXXXX)
PIDS=()
stop_pid() { # SIGTERM, up to 5 s, then SIGKILL
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() { local p; for p in "${PIDS[@]}"; do stop_pid "$p"; done; PIDS=(); rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
g++ -O2 -std=c++20 -o "$TMP/startup_probe" "$ROOT/bench/startup_probe.cpp"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1

# --- the two sides: command lines per service -----------------------------------------------
# cmd SIDE SERVICE PORT [UPSTREAM_PORT] -> the server's command line (freight-lean and freight-churn: case 2's
# variants, on the table FREIGHT_DB)
FREIGHT_DB=$TMP/freight.sqlite
cmd() {
  local side=$1 svc=$2 port=$3 up=${4:-}
  if [[ $side == hotpath ]]; then
    case $svc in
      platform | weather) echo "$HOTPATH serve $svc --port $port --threads 1" ;;
      freight-*) echo "$HOTPATH serve freight --port $port --threads 1 --db $FREIGHT_DB --variant ${svc#freight-}" ;;
      avatar) echo "$HOTPATH serve avatar $port 10 --threads 1" ;;
      aggregator) echo "$HOTPATH serve aggregator --port $port --threads 1 --upstream http://127.0.0.1:$up" ;;
    esac
  else
    case $svc in
      platform | weather) echo "$PEERS/$svc/$svc --urls http://127.0.0.1:$port" ;;
      freight-*) echo "$PEERS/freight/freight --urls http://127.0.0.1:$port --db $FREIGHT_DB --variant ${svc#freight-}" ;;
      avatar) echo "$PEERS/avatar/avatar $port 10" ;;
      aggregator) echo "$PEERS/aggregator/aggregator --urls http://127.0.0.1:$port --upstream http://127.0.0.1:$up" ;;
    esac
  fi
}

LAST_PID=
start() { # start CPU CMD... : starts it pinned; wait_ready tells when it answers
  local cpu=$1; shift
  taskset -c "$cpu" "$@" >"$TMP/server.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}
wait_ready() { # wait_ready URL
  local i
  for ((i = 0; i < 200; i++)); do curl -s -o /dev/null --max-time 1 "$1" && return 0; sleep 0.05; done
  echo "vs_dotnet: no answer from $1 in 10 s" >&2; exit 1
}
forget_pid() { local p kept=(); for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || kept+=("$p"); done; PIDS=("${kept[@]}"); }
stop_last() { stop_pid "$LAST_PID"; forget_pid "$LAST_PID"; LAST_PID=; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { # the process and all its threads: utime + stime
  awk '{print $14 + $15}' "/proc/$1/stat"
}
median() { sort -g | awk '{v[NR] = $1} END { if (NR == 0) print "-"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
record() { echo "$*" >>"$TMP/res"; } # record SIDE SERVICE METRIC VALUE
value() { awk -v s="$1" -v v="$2" -v m="$3" '$1 == s && $2 == v && $3 == m {print $4}' "$TMP/res" | median; }

# --- one service, one side: everything measured on one fresh server ---------------------------
# measure SIDE SERVICE LABEL PATH LOAD(wrk|ab): figures recorded under LABEL
measure() {
  local side=$1 app=$2 svc=$3 path=$4 how=$5 port before after requests url
  port=$(free_port)
  url="http://127.0.0.1:$port$path"
  # Start-up to the first answer, on a server of its own (the probe stops it).
  record "$side" "$svc" startup_ms "$("$TMP/startup_probe" "$port" 0 1 $(cmd "$side" "$app" "$port") | awk '{print $2}')"
  start 0 $(cmd "$side" "$app" "$port")
  wait_ready "$url"
  sleep 1
  record "$side" "$svc" rest_kb "$(rss_kb "$LAST_PID")"
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d2s "$url" >/dev/null # warm-up (JIT tiers for Kestrel)
  before=$(cpu_ticks "$LAST_PID")
  if [[ $how == ab ]]; then
    taskset -c 1 ab -q -n "$AB_REQUESTS" -c 10 "$url" >"$TMP/load.txt" 2>&1
    after=$(cpu_ticks "$LAST_PID")
    requests=$(awk '/^Complete requests:/ {print $3}' "$TMP/load.txt")
    record "$side" "$svc" rps "$(awk '/^Requests per second:/ {print $4}' "$TMP/load.txt")"
  else
    taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" "$url" >"$TMP/load.txt"
    after=$(cpu_ticks "$LAST_PID")
    requests=$(awk '/requests in/ {print $1}' "$TMP/load.txt")
    record "$side" "$svc" rps "$(awk '/^Requests\/sec:/ {print $2}' "$TMP/load.txt")"
  fi
  record "$side" "$svc" rpcpu "$(awk -v r="$requests" -v t="$((after - before))" -v hz="$TCK" 'BEGIN { printf "%.0f", r / (t / hz) }')"
  record "$side" "$svc" peak_kb "$(hwm_kb "$LAST_PID")"
  # Latency at a fixed rate, from the scheduled send (wrk2's way), on the warmed server.
  taskset -c 1 "$HOTPATH" load "$url" --rate "$RATE" -d "$DURATION" -c "$CONNECTIONS" -t 1 -q \
    --json "$TMP/fixed.json" >/dev/null 2>&1 || true
  read -r p50 p99 < <(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["latency"]["percentiles_us"]; print(p["50"], p["99"])' "$TMP/fixed.json")
  record "$side" "$svc" p50_us "$p50"
  record "$side" "$svc" p99_us "$p99"
  stop_last
}

# --- case 2: the freight quote, random carts posted by hotpath load ---------------------------
# freight_load URL LOAD_OPTIONS... : examples/freight/quote.toml's requests (its URL and load replaced), from CPU 1
freight_load() {
  local url=$1; shift
  taskset -c 1 "$HOTPATH" load --scenario "$ROOT/examples/freight/quote.toml" "$url" -t 1 -c "$CONNECTIONS" -q "$@" \
    >"$TMP/freight_load.txt" 2>&1 || true # its thresholds (p95 < 150 ms, errors < 1 %) do not stop the run
}
json_field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d=d[k]
print(d)' "$@"; }
# measure_freight SIDE VARIANT: the same figures as measure, under the label freight-VARIANT
measure_freight() {
  local side=$1 svc=freight-$2 port base before after
  [[ -f $FREIGHT_DB ]] || "$HOTPATH" freight init --db "$FREIGHT_DB" >/dev/null
  port=$(free_port)
  base="http://127.0.0.1:$port"
  # Start-up to the first answer (a 404 to the probe's GET /plaintext), the table loaded first on both sides.
  record "$side" "$svc" startup_ms "$("$TMP/startup_probe" "$port" 0 1 $(cmd "$side" "$svc" "$port") | awk '{print $2}')"
  start 0 $(cmd "$side" "$svc" "$port")
  wait_ready "$base/freight/quote" # a 405: it answers
  sleep 1
  record "$side" "$svc" rest_kb "$(rss_kb "$LAST_PID")"
  freight_load "$base" -d "$FREIGHT_WARMUP" # warm-up (JIT tiers for Kestrel)
  before=$(cpu_ticks "$LAST_PID")
  freight_load "$base" -d "$DURATION" --json "$TMP/closed.json"
  after=$(cpu_ticks "$LAST_PID")
  record "$side" "$svc" rps "$(awk -v r="$(json_field "$TMP/closed.json" requests_per_second)" 'BEGIN { printf "%.0f", r }')"
  record "$side" "$svc" rpcpu "$(awk -v r="$(json_field "$TMP/closed.json" responses)" -v t="$((after - before))" \
    -v hz="$TCK" 'BEGIN { printf "%.0f", r / (t / hz) }')"
  record "$side" "$svc" errors "$(python3 -c 'import json,sys; print(sum(json.load(open(sys.argv[1]))["errors"].values()))' \
    "$TMP/closed.json")"
  record "$side" "$svc" peak_kb "$(hwm_kb "$LAST_PID")"
  freight_load "$base" --rate "$FREIGHT_RATE" -d "$DURATION" --json "$TMP/fixed.json"
  record "$side" "$svc" p50_us "$(json_field "$TMP/fixed.json" latency percentiles_us 50)"
  record "$side" "$svc" p99_us "$(json_field "$TMP/fixed.json" latency percentiles_us 99)"
  stop_last
}

size_of() { # size_of SIDE SERVICE -> bytes on disk
  if [[ $1 == hotpath ]]; then stat -c %s "$HOTPATH"; else du -sb "$PEERS/$2" | awk '{print $1}'; fi
}

# --- case 1: the aggregator's strategies under the write-up's NBomber profile ------------------
case1() {
  local side=$1 wport aport s
  wport=$(free_port); aport=$(free_port)
  start 0 $(cmd "$side" weather "$wport"); local wpid=$LAST_PID
  wait_ready "http://127.0.0.1:$wport/weatherForecast"
  start 0 $(cmd "$side" aggregator "$aport" "$wport")
  wait_ready "http://127.0.0.1:$aport/?strategy=all"
  for s in sequential all bounded; do
    log "  $side aggregator ?strategy=$s: NBomber's profile (35 s)"
    taskset -c 1 "$HOTPATH" load "http://127.0.0.1:$aport/?strategy=$s&limit=10" -t 1 -q --timeout 30s \
      --stages "rate=1/s:5s, rate=1/s:5s, rate=2/s:10s, rate=3/s:15s" --warmup 5s --json "$TMP/c1.json" \
      >/dev/null 2>&1 || true
    record "$side" "agg-$s" p95_ms "$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["latency"]["percentiles_us"]["95"] / 1000, 1))' "$TMP/c1.json")"
  done
  stop_last
  stop_pid "$wpid"; forget_pid "$wpid"
}

# --- case 4: synchronous I/O under the write-up's step load ------------------------------------
STEP4_USERS="250 500 1000 2000 4000"
# case4 SIDE: each endpoint against a fresh server; per step figures recorded as c4-WAY-USERS
case4() {
  local side=$1 way port url stages="" u status
  for u in $STEP4_USERS; do stages+="${stages:+, }vus=$u:${STEP4}s"; done
  for way in sync async offload; do
    port=$(free_port)
    url="http://127.0.0.1:$port/profile/$way/42"
    log "  $side /profile/$way: $stages (timeout $TIMEOUT4)"
    if [[ $side == hotpath ]]; then
      (ulimit -v 4194304; exec taskset -c 0 "$HOTPATH" serve profile --port "$port" --threads 4 --delay 2s \
        --blocking-threads 32 --blocking-queue 64) >"$TMP/server.log" 2>&1 &
    else
      DOTNET_GCHeapHardLimit=0x80000000 taskset -c 0 "$PEERS/profile/profile" --urls "http://127.0.0.1:$port" \
        --delay 2000 >"$TMP/server.log" 2>&1 &
    fi
    LAST_PID=$!
    PIDS+=("$LAST_PID")
    wait_ready "http://127.0.0.1:$port/profile/async/x" # a 404 at once: it answers
    (ulimit -v 4194304; exec taskset -c 1 "$HOTPATH" load "$url" -t 1 --stages "$stages" --timeout "$TIMEOUT4" -q \
      --json "$TMP/c4.json") >"$TMP/c4.load" 2>&1 || true # requests that all fail still give their figures
    [[ -s $TMP/c4.json ]] || { echo "vs_dotnet: the load against $side $way failed:" >&2; cat "$TMP/c4.load" >&2; exit 1; }
    kill -0 "$LAST_PID" 2>/dev/null || { echo "vs_dotnet: the $side $way server exited during the load" >&2; exit 1; }
    record "$side" "c4-$way" peak_kb "$(hwm_kb "$LAST_PID")"
    record "$side" "c4-$way" threads "$(awk '/^Threads:/ {print $2}' "/proc/$LAST_PID/status")"
    # A blocked server drains its backlog for minutes: stopped hard after 5 s (stop_pid).
    stop_last
    python3 - "$TMP/c4.json" "$STEP4" "$side" "$way" $STEP4_USERS >>"$TMP/res" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); step = int(sys.argv[2]); side, way = sys.argv[3], sys.argv[4]
secs = d["seconds"]
for k, users in enumerate(sys.argv[5:]):
    window = secs[k * step:(k + 1) * step]
    n = sum(s["responses"] for s in window); err = sum(s["errors"] for s in window)
    weighted = sum(s["latency"]["mean_us"] * s["latency"]["count"] for s in window)
    answered = sum(s["latency"]["count"] for s in window)
    print(f"{side} c4-{way}-{users} rps {n / step:.1f}")
    print(f"{side} c4-{way}-{users} errps {err / step:.1f}")
    print(f"{side} c4-{way}-{users} mean_ms {weighted / answered / 1000:.0f}" if answered else f"{side} c4-{way}-{users} mean_ms -")
# Totals of the whole run: requests that timed out, and connects that failed (counted apart from requests: a
# server that stops accepting leaves its users waiting on connects, which time out with the request timeout).
print(f"{side} c4-{way} timeouts {d['errors']['timeout']}")
print(f"{side} c4-{way} connect_fail {d['connect_failures']}")
PY
  done
}

# --- the runs -------------------------------------------------------------------------------
for ((run = 1; run <= RUNS; run++)); do
  if ((run % 2)); then sides="hotpath dotnet"; else sides="dotnet hotpath"; fi
  for c in $CASES; do
    for side in $sides; do
      case $c in
        3)
          log "run $run/$RUNS: case 3, $side platform /plaintext and /json"
          measure "$side" platform plaintext /plaintext wrk
          measure "$side" platform json /json wrk ;;
        5)
          log "run $run/$RUNS: case 5, $side avatar (ab -n $AB_REQUESTS -c 10)"
          measure "$side" avatar avatar / ab ;;
        2)
          log "run $run/$RUNS: case 2, $side freight lean and churn (examples/freight/quote.toml)"
          measure_freight "$side" lean
          measure_freight "$side" churn ;;
        4)
          ((run == 1)) || continue # minutes per side: once is enough
          log "run $run/$RUNS: case 4, $side profile sync, async, offload (5 steps of ${STEP4}s)"
          case4 "$side" ;;
        1)
          ((run == 1)) || continue # 35 s per strategy: once is enough
          log "run $run/$RUNS: case 1, $side weather + aggregator"
          case1 "$side" ;;
      esac
    done
  done
done

# --- the table --------------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
{
  printf '%-11s %-14s %10s %10s %6s\n' service metric hotpath dotnet ratio
  for c in $CASES; do
    case $c in 3) svcs="plaintext json" ;; 5) svcs=avatar ;; 2) svcs="freight-lean freight-churn" ;; *) svcs= ;; esac
    for svc in $svcs; do
      for m in rps rpcpu p50_us p99_us rest_kb peak_kb startup_ms errors; do
        h=$(value hotpath "$svc" "$m"); d=$(value dotnet "$svc" "$m")
        [[ $m != errors || $svc == freight-* ]] || continue
        printf '%-11s %-14s %10s %10s %6s\n' "$svc" "$m" "$h" "$d" "$(ratio "$h" "$d")"
      done
    done
    if [[ $c == 1 ]]; then
      for s in sequential all bounded; do
        h=$(value hotpath "agg-$s" p95_ms); d=$(value dotnet "agg-$s" p95_ms)
        printf '%-11s %-14s %10s %10s %6s\n' aggregator "p95_ms $s" "$h" "$d" "$(ratio "$h" "$d")"
      done
    fi
    if [[ $c == 4 ]]; then
      for way in sync async offload; do
        for u in $STEP4_USERS; do
          for m in rps errps mean_ms; do
            h=$(value hotpath "c4-$way-$u" "$m"); d=$(value dotnet "c4-$way-$u" "$m")
            printf '%-11s %-14s %10s %10s %6s\n' "$way" "$m@$u" "$h" "$d" "$(ratio "$h" "$d")"
          done
        done
        for m in timeouts connect_fail peak_kb threads; do
          h=$(value hotpath "c4-$way" "$m"); d=$(value dotnet "c4-$way" "$m")
          printf '%-11s %-14s %10s %10s %6s\n' "$way" "$m" "$h" "$d" "$(ratio "$h" "$d")"
        done
      done
    fi
  done
  for svc in platform avatar freight; do
    [[ -d $PEERS/$svc ]] || continue
    printf '%-11s %-14s %10s %10s %6s\n' "$svc" disk_bytes "$(size_of hotpath "$svc")" "$(size_of dotnet "$svc")" \
      "$(ratio "$(size_of hotpath "$svc")" "$(size_of dotnet "$svc")")"
  done
  echo "runs: $RUNS x $DURATION; medians; rps/rpcpu: wrk -t1 -c$CONNECTIONS (avatar: ab -n $AB_REQUESTS -c 10) on CPU 1,"
  echo "servers on CPU 0 (hotpath --threads 1; Kestrel as it comes); p50/p99 at $RATE req/s from the scheduled send"
  echo "(hotpath load -c$CONNECTIONS); rest_kb after 1 s idle, peak_kb = VmHWM after the load; startup_ms to the first"
  echo "answer (bench/startup_probe.cpp); dotnet disk_bytes = the published folder (the shared .NET runtime not counted)"
  if [[ " $CASES " == *" 2 "* ]]; then
    echo "freight: examples/freight/quote.toml's carts by hotpath load -t1 -c$CONNECTIONS after $FREIGHT_WARMUP (closed: rps, rpcpu; errors ="
    echo "responses not 200/404), p50/p99 at $FREIGHT_RATE req/s from the scheduled send; one table (hotpath freight init)"
  fi
  if [[ " $CASES " == *" 4 "* ]]; then
    echo "profile (case 4): GET /profile/WAY/42 with a 2 s backing call; hotpath load -t1 closed model, steps of ${STEP4}s at"
    echo "$STEP4_USERS users, --timeout $TIMEOUT4; per step (X@USERS): rps = answers/s (503s included), errps = errors/s"
    echo "(timeouts, failed connections and answers other than 2xx, such as 503s), mean_ms of the answers (503s included);"
    echo "timeouts and connect_fail: totals of the run (failed connects are not in errps); peak_kb and threads of the"
    echo "server at the end; sync and offload stopped hard 5 s after the load (a backlog)"
  fi
  echo "dotnet: $(dotnet --version 2>/dev/null), runtime $(dotnet --list-runtimes 2>/dev/null | awk '/AspNetCore/ {print $2}' | tail -1)"
} | tee "$TMP/table"
if [[ -n $OUT ]]; then
  { echo; echo "\`$CMDLINE\` ($(date -u +%F))"; echo; echo '```'; cat "$TMP/table"; echo '```'; } >>"$OUT"
fi
