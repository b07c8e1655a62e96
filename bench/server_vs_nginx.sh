#!/usr/bin/env bash
# End-to-end benchmark: hotpath vs nginx (one worker each, pinned to CPU 0; load on CPU 1).
# Env: DURATION (10s) RUNS (3) CONNECTIONS (64) HOTPATH (build/release/hotpath) IO (auto; uring or epoll: hotpath's
#      backend) OUT (append Markdown) ACCESS_LOG (0; 1: both log every request to a file, nginx as
#      `access_log FILE combined buffer=64k flush=1s`, hotpath as `--access-log FILE --access-log-format common`).
# Example: DURATION=2s RUNS=1 bash bench/server_vs_nginx.sh
set -euo pipefail

# --- settings and tool checks -------------------------------------------------------------
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=${DURATION:-10s} RUNS=${RUNS:-3} CONNECTIONS=${CONNECTIONS:-64}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} OUT=${OUT:-} NGINX=${NGINX:-/usr/sbin/nginx} IO=${IO:-auto}
ACCESS_LOG=${ACCESS_LOG:-0}
CMDLINE="DURATION=$DURATION RUNS=$RUNS CONNECTIONS=$CONNECTIONS IO=$IO ACCESS_LOG=$ACCESS_LOG $0${*:+ $*}"
for tool in wrk ab curl taskset getconf awk sed sort timeout; do
  command -v "$tool" >/dev/null || { echo "server_vs_nginx: missing tool: $tool" >&2; exit 2; }
done
[[ -x $HOTPATH ]] || { echo "server_vs_nginx: hotpath binary not found: $HOTPATH" >&2; exit 2; }
[[ -x $NGINX ]] || { echo "server_vs_nginx: nginx binary not found: $NGINX" >&2; exit 2; }
[[ $RUNS =~ ^[1-9][0-9]*$ && $CONNECTIONS =~ ^[1-9][0-9]*$ ]] || { echo "server_vs_nginx: RUNS and CONNECTIONS must be positive integers" >&2; exit 2; }
HAVE_PY=0; command -v python3 >/dev/null && HAVE_PY=1
TCK=$(getconf CLK_TCK)
case $DURATION in *m) DSEC=$((${DURATION%m} * 60));; *h) DSEC=$((${DURATION%h} * 3600));; *) DSEC=${DURATION%s};; esac
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# --- cleanup: stop every server we started, by PID, even on error or Ctrl-C -----------------
TMP=$(mktemp -d /tmp/server_vs_nginx.XXXXXX)
PIDS=()
stop_pid() {  # SIGTERM, wait up to 5 s (a zombie counts as gone), then SIGKILL
  local pid=$1 i state
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
    [[ $state == Z || $state == gone ]] && break
    sleep 0.1
  done
  [[ $state == Z || $state == gone ]] || kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() { local p; for p in "${PIDS[@]}"; do stop_pid "$p"; done; PIDS=(); rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- free ports: let the kernel pick them, or fall back to fixed high ports -----------------
if ((HAVE_PY)); then
  read -r P_HP P_AV P_NG P_HPS P_NGS < <(python3 -c '
import socket; s=[socket.socket() for _ in range(5)]
[x.bind(("127.0.0.1", 0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
else
  read -r P_HP P_AV P_NG P_HPS P_NGS <<<"18081 18082 18083 18084 18085"
  for p in $P_HP $P_AV $P_NG $P_HPS $P_NGS; do
    if (: <>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "server_vs_nginx: port $p busy" >&2; exit 2; fi
  done
fi

# --- helpers: nginx config, server start, /proc readings ------------------------------------
nginx_conf() {  # nginx_conf DIR PORT -> prints the config path
  mkdir -p "$1"
  local log=off
  [[ $ACCESS_LOG == 1 ]] && log="$1/access.log combined buffer=64k flush=1s"
  sed -e "s|access_log off;|access_log $log;|" -e "s|@PREFIX@|$1|g" -e "s|@PORT@|$2|g" "$ROOT/bench/nginx.conf.in" \
    >"$1/nginx.conf"
  echo "$1/nginx.conf"
}
hp_log() { [[ $ACCESS_LOG == 1 ]] && echo "--access-log $TMP/hp$1.access.log --access-log-format common"; }
hp_cmd() { echo "$HOTPATH serve platform --port $1 --threads 1 --drain-timeout 2000 --io $IO $(hp_log "$1")"; }
av_cmd() { echo "$HOTPATH serve avatar $1 0 --threads 1 --drain-timeout 2000 --io $IO $(hp_log "$1")"; }
ng_cmd() { echo "$NGINX -p $TMP/ng$1 -e $TMP/ng$1/error.log -c $(nginx_conf "$TMP/ng$1" "$1")"; }
start() {  # start NAME CMD... : pinned to CPU 0; sets LAST_PID
  taskset -c 0 "${@:2}" >"$TMP/$1.log" 2>&1 &
  LAST_PID=$!; PIDS+=("$LAST_PID")
}
wait_ready() {  # wait_ready URL : poll with curl for at most 10 s
  local i
  for ((i = 0; i < 100; i++)); do curl -s -o /dev/null --max-time 1 "$1" && return 0; sleep 0.1; done
  echo "server_vs_nginx: no answer from $1 after 10 s" >&2; exit 1
}
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }  # utime+stime (fields 14, 15)
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
now_ns() { date +%s%N; }
med() {  # med SERVER TEST COLUMN : median of that column over the runs in $TMP/res
  awk -v s="$1" -v t="$2" -v c="$3" '$1 == s && $2 == t {print $c}' "$TMP/res" | sort -g |
    awk '{v[NR] = $1} END {if (!NR) print "nan"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}

# --- start the servers and check that their responses match ---------------------------------
log "starting hotpath (platform :$P_HP, avatar :$P_AV) and nginx (:$P_NG), pinned to CPU 0"
start hotpath $(hp_cmd "$P_HP"); HP_PID=$LAST_PID
start avatar $(av_cmd "$P_AV"); AV_PID=$LAST_PID
start nginx $(ng_cmd "$P_NG"); NG_PID=$LAST_PID
declare -A URL=([hotpath.plaintext]=http://127.0.0.1:$P_HP/plaintext [hotpath.json]=http://127.0.0.1:$P_HP/json
  [hotpath.redirect]=http://127.0.0.1:$P_AV/ [nginx.plaintext]=http://127.0.0.1:$P_NG/plaintext
  [nginx.json]=http://127.0.0.1:$P_NG/json [nginx.redirect]=http://127.0.0.1:$P_NG/)
URL[hotpath.pipeline]=${URL[hotpath.plaintext]} URL[nginx.pipeline]=${URL[nginx.plaintext]}
declare -A PID=([hotpath.plaintext]=$HP_PID [hotpath.json]=$HP_PID [hotpath.pipeline]=$HP_PID
  [hotpath.redirect]=$AV_PID [nginx.plaintext]=$NG_PID [nginx.json]=$NG_PID [nginx.pipeline]=$NG_PID
  [nginx.redirect]=$NG_PID)
for s in hotpath nginx; do wait_ready "${URL[$s.plaintext]}"; wait_ready "${URL[$s.redirect]}"; done
IDLE_HP=$(rss_kb "$HP_PID") IDLE_NG=$(rss_kb "$NG_PID")
declare -A BYTES
for t in plaintext json redirect; do
  for s in hotpath nginx; do
    curl -s -o "$TMP/body.$s" -D "$TMP/head.$s" -w '%{http_code} %{content_type} %{redirect_url}\n' \
      "${URL[$s.$t]}" >"$TMP/meta.$s"
    BYTES[$s.$t]=$(($(wc -c <"$TMP/head.$s") + $(wc -c <"$TMP/body.$s")))
  done
  if ! cmp -s "$TMP/meta.hotpath" "$TMP/meta.nginx" || ! cmp -s "$TMP/body.hotpath" "$TMP/body.nginx"; then
    log "WARNING: $t responses differ: hotpath '$(cat "$TMP/meta.hotpath")' vs nginx '$(cat "$TMP/meta.nginx")'"
  fi
done

# --- wrk runs: per run, per test, the two servers back to back ------------------------------
: >"$TMP/res"  # columns: server test req/s req/CPU-s server-CPU% load-CPU% ab-ms/request|- run
measure() {  # measure SERVER TEST LOAD-COMMAND... : runs the load, appends one line to $TMP/res
  local s=$1 t=$2 pid=${PID[$1.$2]} c0 c1 w0 w1 rps n ms=""
  c0=$(cpu_ticks "$pid"); w0=$(now_ns)
  { TIMEFORMAT='%U %S'; time timeout $((DSEC + 300)) taskset -c 1 "${@:3}" >"$TMP/out" 2>&1; } 2>"$TMP/time"
  c1=$(cpu_ticks "$pid"); w1=$(now_ns)
  if [[ $3 == wrk ]]; then
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$TMP/out"); n=$(awk '/ requests in / {print $1}' "$TMP/out")
    grep -E 'Socket errors|Non-2xx' "$TMP/out" >&2 || true
  else
    rps=$(awk '/^Requests per second:/ {print $4}' "$TMP/out"); n=$(awk '/^Complete requests:/ {print $3}' "$TMP/out")
    ms=$(awk '/^Time per request:.*\(mean\)$/ {print $4}' "$TMP/out")
    awk '/^Failed requests:/ && $3 > 0' "$TMP/out" >&2
  fi
  [[ -n $rps && -n $n ]] || { log "could not parse the output of $3:"; cat "$TMP/out" >&2; exit 1; }
  awk -v s="$s" -v t="$t" -v r="$rps" -v n="$n" -v run="$run" -v c=$((c1 - c0)) -v k="$TCK" -v w=$((w1 - w0)) -v ms="$ms" \
    -v u="$(cat "$TMP/time")" 'BEGIN {split(u, l, " "); cs = c / k; ws = w / 1e9
      printf "%s %s %.0f %.0f %.0f %.0f %s %d\n", s, t, r, (cs > 0 ? n / cs : 0), 100 * cs / ws,
        100 * (l[1] + l[2]) / ws, (ms == "" ? "-" : ms), run}' \
    >>"$TMP/res"
  log "  $(tail -n 1 "$TMP/res")"
}
TESTS=(plaintext json redirect pipeline)
PID[hotpath.redirect-ab]=$AV_PID PID[nginx.redirect-ab]=$NG_PID
# Each pair runs back to back, hotpath first in odd runs and nginx first in even ones, so that a pair shares
# the machine's moment and neither server is always the one measured after the other.
for ((run = 1; run <= RUNS; run++)); do
  ORDER=(hotpath nginx); ((run % 2)) || ORDER=(nginx hotpath)
  for t in "${TESTS[@]}"; do
    for s in "${ORDER[@]}"; do
      log "run $run/$RUNS: $s $t (wrk -c$CONNECTIONS -d$DURATION)"
      extra=(); [[ $t == pipeline ]] && extra=(-s "$ROOT/bench/pipeline.lua")
      measure "$s" "$t" wrk -t1 "-c$CONNECTIONS" "-d$DURATION" --latency "${extra[@]}" "${URL[$s.$t]}" \
        ${extra[@]:+-- 16}
      [[ $t == plaintext ]] && declare "LOADED_${s}=$(rss_kb "${PID[$s.$t]}")"
    done
  done
  # --- ab: redirect without keep-alive (one connection per request, as in case 5) ------------
  for s in "${ORDER[@]}"; do
    log "run $run/$RUNS: $s redirect (ab -n 100000 -c 10, no keep-alive)"
    measure "$s" redirect-ab ab -q -s 10 -n 100000 -c 10 "${URL[$s.redirect]}"
  done
done
log "stopping the benchmark servers"
cleanup_servers() { local p; for p in "${PIDS[@]}"; do stop_pid "$p"; done; PIDS=(); }
cleanup_servers

# --- start-up time: fork+exec to the first answer, median of RUNS ---------------------------
# bench/startup_probe.cpp forks, pins and execs the server itself (no taskset or interpreter in the
# measured time) and retries GET /plaintext every 50 µs from CPU 1; without a compiler, a Python probe.
# bench/startup_floor.cpp gives the floor: a static 30-line server that only listens and answers.
PROBE=$TMP/startup_probe FLOOR=$TMP/startup_floor
command -v g++ >/dev/null && g++ -O2 -std=c++20 -o "$PROBE" "$ROOT/bench/startup_probe.cpp" 2>/dev/null || PROBE=
[[ -n $PROBE ]] && g++ -O2 -std=c++20 -static -o "$FLOOR" "$ROOT/bench/startup_floor.cpp" 2>/dev/null || FLOOR=
STARTUP_HOW="fork+exec to the first answer to GET /plaintext, bench/startup_probe.cpp"
[[ -n $PROBE ]] || STARTUP_HOW="exec of taskset+server to first accepted connection, Python probe"
startup_ms() {  # startup_ms PORT CMD... : prints milliseconds (with the probe: "to-answer to-connect")
  if [[ -n $PROBE ]]; then
    "$PROBE" "$1" 0 1 "${@:2}" | awk '{print $2, $1}'
  elif ((HAVE_PY)); then
    taskset -c 1 python3 - "$@" <<'PY'  # the polling loop stays off the server's CPU
import socket, subprocess, sys, time
port, cmd = int(sys.argv[1]), ["taskset", "-c", "0"] + sys.argv[2:]
t0 = time.perf_counter(); p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while True:
    try: socket.create_connection(("127.0.0.1", port), timeout=1).close(); break
    except OSError:
        if time.perf_counter() - t0 > 10: p.kill(); p.wait(); sys.exit("start-up: no answer in 10 s")
print("%.2f" % ((time.perf_counter() - t0) * 1e3))
p.terminate()
try: p.wait(5)
except subprocess.TimeoutExpired: p.kill(); p.wait()
PY
  else
    local port=$1 t0; shift; t0=$(now_ns)
    start startup "$@"
    until (: <>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
      (($(now_ns) - t0 < 10000000000)) || { echo "start-up: no answer in 10 s" >&2; exit 1; }
    done
    awk -v d=$(($(now_ns) - t0)) 'BEGIN {printf "%.2f\n", d / 1e6}'; cleanup_servers
  fi
}
for ((run = 1; run <= RUNS; run++)); do
  log "start-up time, run $run/$RUNS"
  echo "hotpath startup $(startup_ms "$P_HPS" $(hp_cmd "$P_HPS"))" >>"$TMP/res"
  echo "nginx startup $(startup_ms "$P_NGS" $(ng_cmd "$P_NGS"))" >>"$TMP/res"
  [[ -z $FLOOR ]] || echo "floor startup $(startup_ms "$P_NGS" "$FLOOR" "$P_NGS")" >>"$TMP/res"
done

# --- report: aligned table on stdout, Markdown to OUT ---------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }
# pairs TEST COLUMN: hotpath/nginx of that column for each run's back-to-back pair, in run order.
pairs() {
  awk -v t="$1" -v c="$2" '$2 == t && NF >= 8 {v[$1, $8] = $c; if ($8 > n) n = $8}
    END {for (r = 1; r <= n; r++) if (v["nginx", r] > 0) printf "%.2f ", v["hotpath", r] / v["nginx", r]}' "$TMP/res"
}
# pair_ratio TEST COLUMN: the median of the paired ratios; noise that moves both servers of a pair cancels out.
pair_ratio() {
  pairs "$1" "$2" | tr ' ' '\n' | sed '/^$/d' | sort -g |
    awk '{v[NR] = $1} END {if (!NR) print "n/a"; else printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}
HEAD=(test "hotpath req/s" "nginx req/s" ratio "hotpath req/CPU-s" "nginx req/CPU-s" ratio "server CPU% h/n" "load CPU% h/n")
ROWS=()
for t in "${TESTS[@]}" redirect-ab; do
  h1=$(med hotpath "$t" 3) n1=$(med nginx "$t" 3) h2=$(med hotpath "$t" 4) n2=$(med nginx "$t" 4)
  ROWS+=("$t|$h1|$n1|$(pair_ratio "$t" 3)|$h2|$n2|$(pair_ratio "$t" 4)|$(med hotpath "$t" 5)/$(med nginx "$t" 5)|$(med hotpath "$t" 6)/$(med nginx "$t" 6)")
done
SIZE_HP=$(stat -c %s "$HOTPATH") SIZE_NG=$(stat -c %s "$NGINX")
if command -v size >/dev/null; then
  SEG_HP=" ($(size "$HOTPATH" | awk 'NR == 2 {print "text " $1 ", data " $2 ", bss " $3}'))"
  SEG_NG=" ($(size "$NGINX" | awk 'NR == 2 {print "text " $1 ", data " $2 ", bss " $3}'))"
else SEG_HP="" SEG_NG=""; fi
STARTUP_MORE=""
[[ -z $PROBE ]] || STARTUP_MORE="; to the first connect (listening): hotpath $(med hotpath startup 4) ms, nginx $(med nginx startup 4) ms"
[[ -z $FLOOR ]] || STARTUP_MORE+="; the floor (bench/startup_floor.cpp): $(med floor startup 3) ms to its answer"
EXTRA=(
  "runs: $RUNS x $DURATION, wrk -t1 -c$CONNECTIONS on CPU 1, servers on CPU 0; medians; ratio = median of the runs' hotpath / nginx ratios, each from a back-to-back pair"
  "req/CPU-s ratio of each run's pair: plaintext $(pairs plaintext 4); json $(pairs json 4); redirect $(pairs redirect 4); redirect-ab $(pairs redirect-ab 4)"
  "pipeline = /plaintext with 16 requests per write; redirect-ab = ab -n 100000 -c 10, no keep-alive"
  "ab mean time per request: hotpath $(med hotpath redirect-ab 7) ms, nginx $(med nginx redirect-ab 7) ms"
  "response bytes (head+body) hotpath / nginx: plaintext ${BYTES[hotpath.plaintext]} / ${BYTES[nginx.plaintext]}, json ${BYTES[hotpath.json]} / ${BYTES[nginx.json]}, redirect ${BYTES[hotpath.redirect]} / ${BYTES[nginx.redirect]}"
  "RSS idle: hotpath $IDLE_HP kB, nginx $IDLE_NG kB; after plaintext load: hotpath $LOADED_hotpath kB, nginx $LOADED_nginx kB"
  "binary size: hotpath $SIZE_HP B$SEG_HP; nginx $SIZE_NG B$SEG_NG"
  "start-up ($STARTUP_HOW, median): hotpath $(med hotpath startup 3) ms, nginx $(med nginx startup 3) ms$STARTUP_MORE"
)
table() { (IFS='|'; echo "${HEAD[*]}"); printf '%s\n' "${ROWS[@]}"; }
table | awk -F'|' '{for (i = 1; i <= NF; i++) {c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i)}}
  END {for (r = 1; r <= NR; r++) {l = ""; for (i = 1; i <= NF; i++) l = l sprintf(i > 1 ? "  %" w[i] "s" : "%-" w[i] "s", c[r, i]); print l}}'
printf '%s\n' "${EXTRA[@]}"
if [[ -n $OUT ]]; then
  {
    echo; echo "### hotpath vs nginx, $(date -u +%F)"; echo; echo "\`$CMDLINE\`"; echo
    table | sed 's/|/ | /g; s/^/| /; s/$/ |/; 1p; 1s/[^|]/-/g'
    echo; printf -- '- %s\n' "${EXTRA[@]}"
  } >>"$OUT"
  log "appended the Markdown table to $OUT"
fi
