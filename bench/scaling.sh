#!/usr/bin/env bash
# Case 3's many-core question: hotpath, nginx and Kestrel (the TechEmpower platform original) given N cores each.
# For each N of CORES the servers run on the first N CPUs this shell may use, the load generator (hotpath load, one
# thread per core) on all the others; per workload (plaintext, json, plaintext pipelined PIPELINE deep) and server:
# requests/s and requests per server CPU-second (utime+stime of the server's whole process tree over the measured
# window: nginx's master and workers summed), medians of RUNS runs in alternating order, the load generator's CPU %
# beside the server's to show which side was the limit, and per workload the ratios hotpath/nginx and
# hotpath/Kestrel (medians of each run's back-to-back ratios).
# hotpath: `serve platform --threads N`. nginx: bench/nginx.conf.in with N workers under a master, `reuseport`.
# Kestrel: build/peers/platform (scripts/build-peers.sh), DOTNET_PROCESSOR_COUNT=N, Server GC, warmed for WARMUP on
# each workload first (its JIT tiers); skipped in one line without dotnet or the peer.
# Env: CORES (powers of two up to half the CPUs: "1" on 2 CPUs; e.g. "1 2 4 8") DURATION (10s) RUNS (3)
#      CONNECTIONS (64, per server core: the load opens CONNECTIONS x N) PIPELINE (16) WARMUP (15s, Kestrel; shorter
#      only to test the script) LOAD_CORES (all CPUs after the server's) IO (auto; hotpath's backend)
#      HOTPATH (build/release/hotpath) NGINX (/usr/sbin/nginx) PEERS (build/peers) OUT (append Markdown).
# Example: CORES="1 2 4 8" bash bench/scaling.sh   Test: DURATION=3s RUNS=1 WARMUP=5s bash bench/scaling.sh
# To choose the CPUs (one socket, no SMT siblings shared between server and load), run it under taskset:
# `taskset -c 0-15 bash bench/scaling.sh` takes the server's CPUs from the front of 0-15, the load's from the rest.
set -euo pipefail

# --- settings and tool checks -------------------------------------------------------------
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "scaling: $*" >&2; exit 2; }
for tool in taskset timeout curl python3 ps awk sed sort nproc getconf; do
  command -v "$tool" >/dev/null || die "missing tool: $tool"
done
# The CPUs this shell may run on, in order (a cpuset or taskset may leave out some, or not start at 0).
mapfile -t CPUS < <(awk '/^Cpus_allowed_list:/ {print $2}' /proc/self/status | tr ',' '\n' |
  awk -F- '{if (NF == 2) for (i = $1; i <= $2; i++) print i; else print $1}')
NPROC=$(nproc)
((${#CPUS[@]} == NPROC)) || die "nproc ($NPROC) and Cpus_allowed_list (${#CPUS[@]} CPUs) disagree"
default_cores() { local n=1 out=""; while ((2 * n <= NPROC)); do out+="${out:+ }$n"; n=$((2 * n)); done; echo "${out:-1}"; }
CORES=${CORES:-$(default_cores)} DURATION=${DURATION:-10s} RUNS=${RUNS:-3} CONNECTIONS=${CONNECTIONS:-64}
PIPELINE=${PIPELINE:-16} WARMUP=${WARMUP:-15s} LOAD_CORES=${LOAD_CORES:-} IO=${IO:-auto} OUT=${OUT:-}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} NGINX=${NGINX:-/usr/sbin/nginx} PEERS=${PEERS:-$ROOT/build/peers}
CMDLINE="CORES=\"$CORES\" DURATION=$DURATION RUNS=$RUNS CONNECTIONS=$CONNECTIONS PIPELINE=$PIPELINE WARMUP=$WARMUP${LOAD_CORES:+ LOAD_CORES=$LOAD_CORES} IO=$IO bench/scaling.sh"
seconds_of() {  # seconds_of 10s|2m|1h|10 -> whole seconds, or nothing when malformed
  case $1 in
    *[!0-9smh]* | "" | [smh]*) return 0 ;;
    *m) echo $((${1%m} * 60)) ;; *h) echo $((${1%h} * 3600)) ;; *) echo "${1%s}" ;;
  esac
}
DSEC=$(seconds_of "$DURATION") WSEC=$(seconds_of "$WARMUP")
[[ $DSEC =~ ^[1-9][0-9]*$ ]] || die "DURATION must be a positive whole number of seconds, minutes or hours (10s, 2m)"
[[ $WSEC =~ ^[0-9]+$ ]] || die "WARMUP must be a whole number of seconds, minutes or hours (15s)"
for v in RUNS CONNECTIONS PIPELINE; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"; done
[[ -z $LOAD_CORES || $LOAD_CORES =~ ^[1-9][0-9]*$ ]] || die "LOAD_CORES must be a positive integer"
[[ $IO =~ ^(auto|uring|epoll)$ ]] || die "IO must be auto, uring or epoll"
for n in $CORES; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "CORES must list positive integers: '$n'"
  ((n + ${LOAD_CORES:-1} <= NPROC)) ||
    die "N=$n needs $((n + ${LOAD_CORES:-1})) CPUs ($n for the server, at least ${LOAD_CORES:-1} for the load); this machine gives $NPROC"
done
[[ -x $HOTPATH ]] || die "hotpath binary not found: $HOTPATH"
[[ -x $NGINX ]] || die "nginx binary not found: $NGINX"
SERVERS=(hotpath nginx kestrel)
if ! command -v dotnet >/dev/null; then
  echo "scaling: dotnet not found: Kestrel skipped"; SERVERS=(hotpath nginx)
elif [[ ! -x $PEERS/platform/platform ]]; then
  echo "scaling: $PEERS/platform/platform not built (scripts/build-peers.sh): Kestrel skipped"; SERVERS=(hotpath nginx)
fi
WORKLOADS=(plaintext json pipeline)
declare -A PATH_OF=([plaintext]=/plaintext [json]=/json [pipeline]=/plaintext)
TCK=$(getconf CLK_TCK)
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1

# --- cleanup: every process started here is stopped by PID, even on error or Ctrl-C ---------
TMP=$(mktemp -d /tmp/scaling.XXXXXX)
PIDS=()  # roots we started (servers, the load); KIDS: "PID START" of their children seen at start (nginx's workers)
KIDS=()
alive() { [[ -e /proc/$1 ]] && [[ $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $1}') != Z ]]; }
stop_pid() {  # SIGTERM, up to 5 s, then SIGKILL
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
stop_all() {
  local p
  for p in "${PIDS[@]}"; do stop_pid "$p"; done
  for p in "${KIDS[@]}"; do  # orphaned workers, if a master was killed: the same process (start time), not a reused PID
    if [[ $(start_time "${p% *}") == "${p#* }" ]]; then kill -KILL "${p% *}" 2>/dev/null || true; fi
  done
  PIDS=() KIDS=()
}
start_time() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $20}' || true; }  # field 22, since boot
forget_pid() { local p kept=(); for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || kept+=("$p"); done; PIDS=("${kept[@]}"); }
cleanup() { stop_all; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- helpers: ports, process trees, CPU time -------------------------------------------------
free_ports() {  # free_ports K -> K ports the kernel picked, on one line
  python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
[x.bind(("127.0.0.1", 0)) for x in s]; print(*[x.getsockname()[1] for x in s])' "$1"
}
tree_pids() {  # tree_pids PID -> it and its descendants, one per line
  local c
  echo "$1"
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null || true); do tree_pids "$c"; done
}
tree_ticks() {  # tree_ticks PID -> utime+stime of the process tree (every thread counted), clock ticks
  local p t=0 v
  for p in $(tree_pids "$1"); do
    v=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}') || true
    t=$((t + ${v:-0}))
  done
  echo "$t"
}
# The load's CPU: `times` (run in this shell, not a subshell) gives the user+sys of every child reaped so far, the
# load and its threads included once `wait` has reaped it; nothing else ends between the two readings.
times_s() {  # times_s FILE -> the children's user+sys seconds in a `times` output
  awk 'NR == 2 {n = 0; for (i = 1; i <= 2; i++) {split($i, a, "m"); n += a[1] * 60 + a[2]}; printf "%.3f\n", n}' "$1"
}
now_ns() { date +%s%N; }
median() { sort -g | awk '{v[NR] = $1} END {if (!NR) print "-"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
join_by() { local IFS=$1; shift; echo "$*"; }

# --- the servers on SET (a CPU list), N loops, workers or processors each ---------------------
nginx_conf() {  # nginx_conf DIR PORT N -> the config path: bench/nginx.conf.in with N workers under a master
  mkdir -p "$1"
  sed -e "s|^worker_processes 1;|worker_processes $3;|" -e "s|^master_process off;.*|master_process on;|" \
    -e "s|listen 127.0.0.1:@PORT@;|listen 127.0.0.1:@PORT@ reuseport;|" \
    -e "s|@PREFIX@|$1|g" -e "s|@PORT@|$2|g" "$ROOT/bench/nginx.conf.in" >"$1/nginx.conf"
  if ! grep -q "^worker_processes $3;" "$1/nginx.conf" || ! grep -q '^master_process on;' "$1/nginx.conf" ||
    ! grep -q "reuseport;" "$1/nginx.conf"; then
    echo "scaling: bench/nginx.conf.in changed: cannot set its workers" >&2; exit 1
  fi
  echo "$1/nginx.conf"
}
declare -A PID URL
start_server() {  # start_server NAME N SET PORT
  local name=$1 n=$2 set=$3 port=$4 conf
  case $name in
    hotpath)
      taskset -c "$set" "$HOTPATH" serve platform --port "$port" --threads "$n" --drain-timeout 2000 --io "$IO" \
        >"$TMP/$name.log" 2>&1 & ;;
    nginx)
      conf=$(nginx_conf "$TMP/ng$n" "$port" "$n")
      taskset -c "$set" "$NGINX" -p "$TMP/ng$n" -e "$TMP/ng$n/error.log" -c "$conf" >"$TMP/$name.log" 2>&1 & ;;
    kestrel)
      DOTNET_PROCESSOR_COUNT=$n DOTNET_gcServer=1 taskset -c "$set" "$PEERS/platform/platform" \
        --urls "http://127.0.0.1:$port" >"$TMP/$name.log" 2>&1 & ;;
  esac
  PID[$name]=$! URL[$name]=http://127.0.0.1:$port
  PIDS+=("${PID[$name]}")
}
wait_ready() {  # wait_ready NAME : its /plaintext answers within 20 s, or the script stops
  local i
  for ((i = 0; i < 200; i++)); do
    curl -s -o /dev/null --max-time 1 "${URL[$1]}/plaintext" && return 0
    alive "${PID[$1]}" || break
    sleep 0.1
  done
  echo "scaling: $1 does not answer on ${URL[$1]}:" >&2; cat "$TMP/$1.log" "$TMP"/ng*/error.log >&2 2>/dev/null || true
  exit 1
}
check_bodies() {  # the same bodies from every server (status lines and fields may differ)
  local s w want
  for w in plaintext json; do
    want='Hello, World!'; [[ $w == json ]] && want='{"message":"Hello, World!"}'
    for s in "${SERVERS[@]}"; do
      [[ $(curl -s --max-time 2 "${URL[$s]}/$w") == "$want" ]] || log "WARNING: $s /$w does not answer '$want'"
    done
  done
}

# --- the load: hotpath load on the load CPUs, its CPU time from `times`, the server's from /proc ---
LOAD_SET='' LOAD_THREADS='' CONNS=''
run_load() {  # run_load URL WORKLOAD SECONDS JSON : hotpath load, bounded in time; returns its exit status
  local extra=() rc=0 pid
  [[ $2 == pipeline ]] && extra=(--pipeline "$PIPELINE")
  taskset -c "$LOAD_SET" timeout -k 5 $(($3 + 60)) "$HOTPATH" load "$1${PATH_OF[$2]}" -t "$LOAD_THREADS" \
    -c "$CONNS" -d "$3s" -q --json "$4" "${extra[@]}" >"$TMP/load.out" 2>&1 &
  pid=$!; PIDS+=("$pid")
  wait "$pid" || rc=$?
  forget_pid "$pid"
  return "$rc"
}
: >"$TMP/res"  # columns: N run workload server req/s req/CPU-s server-CPU% load-CPU% errors
measure() {  # measure N RUN SERVER WORKLOAD : one measured run, one line appended to $TMP/res
  local n=$1 run=$2 s=$3 w=$4 c0 c1 w0 w1 figures responses rps errors
  rm -f "$TMP/load.json"
  c0=$(tree_ticks "${PID[$s]}"); w0=$(now_ns); times >"$TMP/times0"
  run_load "${URL[$s]}" "$w" "$DSEC" "$TMP/load.json" || true  # errors show in the figures
  times >"$TMP/times1"; w1=$(now_ns); c1=$(tree_ticks "${PID[$s]}")
  [[ -s $TMP/load.json ]] || { log "hotpath load against $s $w failed:"; cat "$TMP/load.out" >&2; exit 1; }
  figures=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
bad = sum(d["errors"].values()) + d["connect_failures"]
print(d["responses"], "%.1f" % d["requests_per_second"], bad)' "$TMP/load.json")
  read -r responses rps errors <<<"$figures"
  awk -v n="$n" -v run="$run" -v w="$w" -v s="$s" -v r="$responses" -v rps="$rps" -v e="$errors" \
    -v c=$((c1 - c0)) -v k="$TCK" -v wall=$((w1 - w0)) -v l="$(times_s "$TMP/times1") - $(times_s "$TMP/times0")" \
    -v lc="$LOAD_THREADS" 'BEGIN {cs = c / k; ws = wall / 1e9; split(l, t, " - "); l = t[1] - t[2]
      printf "%d %d %s %s %.0f %.0f %.0f %.0f %d\n", n, run, w, s, rps, (cs > 0 ? r / cs : 0), 100 * cs / ws / n,
        100 * l / ws / lc, e}' >>"$TMP/res"
  log "  $(tail -n 1 "$TMP/res")"
  ((errors == 0)) || log "  WARNING: $errors failed requests or connections ($s $w)"
}
warm() {  # warm SERVER SECONDS : each workload for that long, not measured
  local w
  (($2 > 0)) || return 0
  for w in "${WORKLOADS[@]}"; do run_load "${URL[$1]}" "$w" "$2" "$TMP/warm.json" || true; done
}

# --- the table of one N, and the ratios ------------------------------------------------------
col() {  # col N WORKLOAD SERVER COLUMN -> median over the runs
  awk -v n="$1" -v w="$2" -v s="$3" -v c="$4" '$1 == n && $3 == w && $4 == s {print $c}' "$TMP/res" | median |
    awk '{if ($1 == "-") print "-"; else printf "%.0f\n", $1}'
}
pair_ratio() {  # pair_ratio N WORKLOAD A B COLUMN -> median of the runs' A/B ratios (pairs measured back to back)
  awk -v n="$1" -v w="$2" -v a="$3" -v b="$4" -v c="$5" '$1 == n && $3 == w {v[$4, $2] = $c; if ($2 > m) m = $2}
    END {for (r = 1; r <= m; r++) if (v[b, r] > 0) printf "%.3f\n", v[a, r] / v[b, r]}' "$TMP/res" | median |
    awk '{if ($1 == "-") print "-"; else printf "%.2f\n", $1}'
}
limit_of() {  # limit_of SERVER% LOAD% -> which side ran out of CPU (>= 90 % of its cores)
  awk -v s="$1" -v l="$2" 'BEGIN {if (s >= 90 && l >= 90) print "both"; else if (s >= 90) print "server";
    else if (l >= 90) print "load"; else print "neither"}'
}
align() { awk -F'|' '{for (i = 1; i <= NF; i++) {c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i)}; if (NF > nf) nf = NF}
  END {for (r = 1; r <= NR; r++) {l = ""; for (i = 1; i <= nf; i++) l = l sprintf(i > 1 ? "  %" w[i] "s" : "%-" w[i] "s", c[r, i]); print l}}'; }
markdown() { sed 's/|/ | /g; s/^/| /; s/$/ |/; 1p; 1s/[^|]/-/g'; }
table_of() {  # table_of N -> rows "workload|server|req/s|req/CPU-s|server CPU%|load CPU%|errors|limit"
  local n=$1 w s sc lc
  echo "workload|server|req/s|req/CPU-s|server CPU %|load CPU %|errors|limit"
  for w in "${WORKLOADS[@]}"; do
    for s in "${SERVERS[@]}"; do
      sc=$(col "$n" "$w" "$s" 7) lc=$(col "$n" "$w" "$s" 8)
      echo "$w|$s|$(col "$n" "$w" "$s" 5)|$(col "$n" "$w" "$s" 6)|$sc|$lc|$(col "$n" "$w" "$s" 9)|$(limit_of "$sc" "$lc")"
    done
  done
}
ratios_of() {  # ratios_of N -> rows "workload|hotpath/nginx req/CPU-s|req/s[|hotpath/Kestrel req/CPU-s|req/s]"
  local n=$1 w line
  line="workload|hotpath/nginx req/CPU-s|hotpath/nginx req/s"
  [[ " ${SERVERS[*]} " == *" kestrel "* ]] && line+="|hotpath/Kestrel req/CPU-s|hotpath/Kestrel req/s"
  echo "$line"
  for w in "${WORKLOADS[@]}"; do
    line="$w|$(pair_ratio "$n" "$w" hotpath nginx 6)|$(pair_ratio "$n" "$w" hotpath nginx 5)"
    [[ " ${SERVERS[*]} " == *" kestrel "* ]] &&
      line+="|$(pair_ratio "$n" "$w" hotpath kestrel 6)|$(pair_ratio "$n" "$w" hotpath kestrel 5)"
    echo "$line"
  done
}
scaling_of() {  # scaling_of -> rows "workload|server|req/s at each N|req/CPU-s at each N|req/s per core, last N / first"
  local w s n first last line
  first=${CORES%% *} last=${CORES##* }
  line="workload|server"; for n in $CORES; do line+="|req/s N=$n"; done
  for n in $CORES; do line+="|req/CPU-s N=$n"; done
  echo "$line|per core N=$last vs N=$first"
  for w in "${WORKLOADS[@]}"; do
    for s in "${SERVERS[@]}"; do
      line="$w|$s"; for n in $CORES; do line+="|$(col "$n" "$w" "$s" 5)"; done
      for n in $CORES; do line+="|$(col "$n" "$w" "$s" 6)"; done
      echo "$line|$(awk -v a="$(col "$last" "$w" "$s" 5)" -v b="$(col "$first" "$w" "$s" 5)" -v m="$last" -v f="$first" \
        'BEGIN {if (b > 0) printf "%.2f", (a / m) / (b / f); else print "-"}')"
    done
  done
}

# --- the runs: per N, the servers side by side on the same CPUs ------------------------------
MACHINE="$(lscpu 2>/dev/null | awk -F: '/^Model name/ {gsub(/^ +/, "", $2); print $2; exit}'), $NPROC CPUs"
MACHINE+=" ($(lscpu 2>/dev/null | awk -F: '/^Thread\(s\) per core/ {gsub(/ /, "", $2); print $2}') per core), Linux $(uname -r)"
VERSIONS="nginx $("$NGINX" -v 2>&1 | sed 's|.*/||')"
[[ " ${SERVERS[*]} " == *" kestrel "* ]] &&
  VERSIONS+=", ASP.NET Core $(dotnet --list-runtimes 2>/dev/null | awk '/AspNetCore/ {print $2}' | tail -1)"
REPORT=$TMP/report.md
: >"$REPORT"
{
  echo; echo "### scaling: hotpath, nginx and Kestrel on N cores, $(date -u +%F)"; echo
  echo "\`$CMDLINE\`"; echo
  echo "- machine: $MACHINE; $VERSIONS"
} >>"$REPORT"
for n in $CORES; do
  SET=$(join_by , "${CPUS[@]:0:n}")
  LOADS=("${CPUS[@]:n}"); [[ -z $LOAD_CORES ]] || LOADS=("${LOADS[@]:0:LOAD_CORES}")
  LOAD_SET=$(join_by , "${LOADS[@]}") CONNS=$((CONNECTIONS * n))
  LOAD_THREADS=${#LOADS[@]}; ((LOAD_THREADS <= CONNS)) || LOAD_THREADS=$CONNS
  read -r -a ports <<<"$(free_ports 3)"
  log "N=$n: servers on CPU $SET, hotpath load -t $LOAD_THREADS -c $CONNS on CPU $LOAD_SET"
  for i in "${!SERVERS[@]}"; do start_server "${SERVERS[$i]}" "$n" "$SET" "${ports[$i]}"; done
  for s in "${SERVERS[@]}"; do wait_ready "$s"; done
  for s in "${SERVERS[@]}"; do
    for p in $(tree_pids "${PID[$s]}" | tail -n +2); do KIDS+=("$p $(start_time "$p")"); done
  done
  HP_LINE=$(head -n 1 "$TMP/hotpath.log")
  NG_WORKERS=$(($(tree_pids "${PID[nginx]}" | wc -l) - 1))
  check_bodies
  for s in "${SERVERS[@]}"; do
    if [[ $s == kestrel ]]; then
      log "N=$n: warming Kestrel up, $WARMUP on each workload (JIT tiers)"; warm "$s" "$WSEC"
    else
      log "N=$n: warming $s up, 1 s on each workload"; warm "$s" 1
    fi
  done
  for ((run = 1; run <= RUNS; run++)); do
    # Each workload's servers run back to back, in reversed order every other run: none is always measured first.
    order=("${SERVERS[@]}"); ((run % 2)) || mapfile -t order < <(printf '%s\n' "${SERVERS[@]}" | tac)
    for w in "${WORKLOADS[@]}"; do
      for s in "${order[@]}"; do
        log "N=$n run $run/$RUNS: $s $w"
        measure "$n" "$run" "$s" "$w"
      done
    done
  done
  KT=""
  [[ -z ${PID[kestrel]:-} ]] || KT="; Kestrel: DOTNET_PROCESSOR_COUNT=$n, Server GC, warmed $WARMUP per workload, \
$(awk '/^Threads:/ {print $2}' "/proc/${PID[kestrel]}/status") threads at the end"
  stop_all
  HEAD="N=$n: servers on CPU $SET, load on CPU $LOAD_SET (hotpath load -t $LOAD_THREADS -c $CONNS; pipeline: --pipeline $PIPELINE)"
  NOTES=(
    "hotpath: ${HP_LINE#hotpath: }; nginx: worker_processes $n ($NG_WORKERS seen), a master, reuseport$KT"
    "$RUNS x $DURATION per server and workload, medians; ratios: medians of each run's back-to-back ratios"
    "req/CPU-s: responses / the server's user+sys CPU seconds over the run (its whole process tree, nginx's master and workers)"
    "server CPU %: of its $n core(s); load CPU %: of the load's $LOAD_THREADS; limit: the side at 90 % or more of its cores"
  )
  { echo; echo "$HEAD"; table_of "$n" | align; echo; ratios_of "$n" | align; printf '%s\n' "${NOTES[@]}"; }
  {
    echo; echo "#### N = $n"; echo; echo "$HEAD"; echo; table_of "$n" | markdown; echo; ratios_of "$n" | markdown
    echo; printf -- '- %s\n' "${NOTES[@]}"
  } >>"$REPORT"
done
if [[ $CORES == *" "* ]]; then
  { echo; echo "across N (per core: req/s / N at the largest N over the same at the smallest; 1.00 = linear scaling)"
    scaling_of | align; }
  { echo; echo "#### Across N"; echo; scaling_of | markdown; } >>"$REPORT"
fi
((WSEC >= 15)) || [[ " ${SERVERS[*]} " != *" kestrel "* ]] || {
  echo "note: WARMUP=$WARMUP is under 15 s: Kestrel's figures are not its steady state (for testing the script only)"
  echo "- WARMUP=$WARMUP is under 15 s: Kestrel's figures are not its steady state" >>"$REPORT"
}
if [[ -n $OUT ]]; then
  cat "$REPORT" >>"$OUT"
  log "appended the Markdown tables to $OUT"
fi
