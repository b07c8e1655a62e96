#!/usr/bin/env bash
# HTTPS: hotpath serve platform against nginx with TLS (one loop / one worker each, pinned to CPU 0; every client
# pinned to CPU 1), the same certificate (scripts/make-test-certs.sh, ECDSA P-256, made anew in a temp dir) and both
# at OpenSSL's defaults (the negotiated protocol, cipher and key exchange of each are printed). In one run:
#   1. keep-alive requests per server CPU-second, /plaintext and /json: `hotpath load -k -t1 -c64`, and wrk (which
#      speaks TLS too) on /plaintext as a cross-check;
#   2. handshakes per server CPU-second: `hotpath load --no-keepalive` (a new connection, handshake and request
#      each time), full (--no-tls-resume) and resumed (session tickets: both servers' default);
#   3. the load generators' own CPU per response over TLS, `hotpath load` against wrk, from the /plaintext runs of
#      1 against nginx (the same server for both);
#   4. memory per idle TLS keep-alive connection: N connections each make one request over TLS then stay open; the
#      server's VmRSS growth over its RSS at rest, divided by N (fresh servers);
#   5. kernel TLS: what `hotpath serve` says of this kernel (not measured here).
# CPU seconds are utime+stime from /proc/PID/stat: the server's around each run, the client's (user+sys) from the
# shell's `time`. Medians over the runs; a ratio is the median of the runs' ratios, each from a back-to-back pair,
# hotpath first in odd runs and nginx first in even ones.
# Env: QUICK=1 (DURATION=3s RUNS=1 N=2000, about a minute) DURATION (8s) RUNS (3) CONNECTIONS (64) N (10000)
#      IDLE_RUNS (RUNS) IO (auto: hotpath's backend) HOTPATH (build/release/hotpath) NGINX (/usr/sbin/nginx)
#      OUT (append the results block to this file). A full run takes about 7 minutes.
# Example: QUICK=1 bash bench/tls.sh
# shellcheck disable=SC2016,SC2034  # awk expressions in single quotes; the tables' arrays are read through namerefs
set -euo pipefail

# --- settings and tool checks -------------------------------------------------------------
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then
  DURATION=${DURATION:-3s} RUNS=${RUNS:-1} N=${N:-2000}
else
  DURATION=${DURATION:-8s} RUNS=${RUNS:-3} N=${N:-10000}
fi
CONNECTIONS=${CONNECTIONS:-64} IDLE_RUNS=${IDLE_RUNS:-$RUNS} IO=${IO:-auto}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} NGINX=${NGINX:-/usr/sbin/nginx} OUT=${OUT:-}
CMDLINE="QUICK=$QUICK DURATION=$DURATION RUNS=$RUNS CONNECTIONS=$CONNECTIONS N=$N IDLE_RUNS=$IDLE_RUNS IO=$IO bash bench/tls.sh${*:+ $*}"
for tool in wrk curl openssl python3 taskset getconf awk sed sort timeout; do
  command -v "$tool" >/dev/null || { echo "tls: missing tool: $tool" >&2; exit 2; }
done
[[ -x $HOTPATH ]] || { echo "tls: hotpath binary not found: $HOTPATH" >&2; exit 2; }
[[ -x $NGINX ]] || { echo "tls: nginx binary not found: $NGINX" >&2; exit 2; }
"$HOTPATH" serve platform --help 2>/dev/null | grep -q -- --tls-cert ||
  { echo "tls: $HOTPATH has no --tls-cert (older than 566a6c7): rebuild it (under flock /tmp/hotpath-build.lock)" >&2; exit 2; }
for v in RUNS CONNECTIONS N IDLE_RUNS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "tls: $v must be a positive integer" >&2; exit 2; }
done
case $DURATION in *m) DSEC=$((${DURATION%m} * 60));; *) DSEC=${DURATION%s};; esac
[[ $DSEC =~ ^[1-9][0-9]*$ ]] || { echo "tls: DURATION must be whole seconds (3s) or minutes (1m)" >&2; exit 2; }
# Every server and the idle opener hold N sockets plus a few: the soft limit raised to the hard one.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
FDS=$(ulimit -n)
[[ $FDS == unlimited ]] || ((FDS >= N + 64)) || { echo "tls: ulimit -n is $FDS, N=$N needs $((N + 64))" >&2; exit 2; }
TCK=$(getconf CLK_TCK)
TIMEFORMAT='%U %S'
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
T_START=$(date -u +%H:%M) S_START=$SECONDS

# --- cleanup: stop every server we started, by PID, even on error or Ctrl-C -----------------
TMP=$(mktemp -d /tmp/tls_bench.XXXXXX)
PIDS=()
stop_pid() {  # SIGTERM, wait up to 5 s (a zombie counts as gone), then SIGKILL
  local pid=$1 i state=
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
    [[ $state == Z || $state == gone ]] && break
    sleep 0.1
  done
  [[ $state == Z || $state == gone ]] || kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
stop_all() { local p; for p in "${PIDS[@]}"; do stop_pid "$p"; done; PIDS=(); }
cleanup() { stop_all; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- certificates, nginx config, server start, /proc readings --------------------------------
bash "$ROOT/scripts/make-test-certs.sh" "$TMP/certs" >/dev/null
CERT=$TMP/certs/server.pem KEY=$TMP/certs/server.key
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# nginx: bench/nginx.conf.in with `listen ... ssl`, the certificate, TLS 1.2 and 1.3 (hotpath's default --tls-min
# 1.2; nginx 1.22's default list has no 1.3), session tickets on (its default; no session cache, like hotpath) and
# room for N idle connections twice over (it closes idle ones when fewer than 1/16 of its slots are free).
# Both servers keep an idle connection for an hour, so that the idle measure is never cut short.
NG_CONNECTIONS=$((2 * N + 64 > 4096 ? 2 * N + 64 : 4096))
nginx_conf() {  # nginx_conf DIR PORT -> prints the config path
  mkdir -p "$1"
  sed -e "s|@PREFIX@|$1|g" -e "s|@PORT@|$2|g" \
    -e "s|worker_connections [0-9]*;|worker_connections $NG_CONNECTIONS;|" \
    -e "s|keepalive_timeout 130s;|keepalive_timeout 3600s;|" \
    -e "s|listen 127.0.0.1:$2;|listen 127.0.0.1:$2 ssl;\n        ssl_certificate $CERT;\n        ssl_certificate_key $KEY;\n        ssl_protocols TLSv1.2 TLSv1.3;\n        ssl_session_tickets on;|" \
    "$ROOT/bench/nginx.conf.in" >"$1/nginx.conf"
  grep -q 'listen .* ssl;' "$1/nginx.conf" || { echo "tls: could not add ssl to bench/nginx.conf.in's listen" >&2; exit 1; }
  echo "$1/nginx.conf"
}
start() {  # start NAME CMD... : pinned to CPU 0; sets LAST_PID
  taskset -c 0 "${@:2}" >"$TMP/$1.log" 2>&1 &
  LAST_PID=$!; PIDS+=("$LAST_PID")
}
start_server() {  # start_server hotpath|nginx PORT : sets LAST_PID, waits for an answer over TLS
  if [[ $1 == hotpath ]]; then
    start "hotpath.$2" "$HOTPATH" serve platform --port "$2" --threads 1 --io "$IO" --tls-cert "$CERT" --tls-key "$KEY" \
      --keepalive-timeout 3600 --drain-timeout 2000
  else
    start "nginx.$2" "$NGINX" -p "$TMP/ng$2" -e "$TMP/ng$2/error.log" -c "$(nginx_conf "$TMP/ng$2" "$2")"
  fi
  local i
  for ((i = 0; i < 100; i++)); do
    curl -sk -o /dev/null --max-time 1 "https://127.0.0.1:$2/plaintext" && return 0
    sleep 0.1
  done
  echo "tls: no answer from $1 on https://127.0.0.1:$2 after 10 s:" >&2; cat "$TMP/$1.$2.log" >&2; exit 1
}
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }  # utime+stime (fields 14, 15)
now_ns() { date +%s%N; }

# --- start both servers; check their answers and what TLS each negotiates ---------------------
read -r P_HP P_NG < <(python3 -c '
import socket; s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
log "starting hotpath (:$P_HP) and nginx (:$P_NG) with TLS, pinned to CPU 0"
declare -A PORT=([hotpath]=$P_HP [nginx]=$P_NG) SPID=()
start_server hotpath "$P_HP"; SPID[hotpath]=$LAST_PID
start_server nginx "$P_NG"; SPID[nginx]=$LAST_PID
KTLS=$(grep -o 'kernel TLS: .*' "$TMP/hotpath.$P_HP.log" | head -n 1 || true)
declare -A NEGOTIATED
for s in hotpath nginx; do
  for t in plaintext json; do
    curl -sk -o "$TMP/body.$s.$t" -w '%{http_code} %{content_type}\n' "https://127.0.0.1:${PORT[$s]}/$t" >"$TMP/meta.$s.$t"
  done
  # openssl s_client with its defaults, as hotpath load and wrk (OpenSSL too) offer: protocol, cipher, key exchange.
  timeout 10 openssl s_client -connect "127.0.0.1:${PORT[$s]}" -servername localhost </dev/null >"$TMP/s_client.$s" 2>&1 || true
  NEGOTIATED[$s]=$(awk '/^New, / {p = $2; c = $NF} /^Server Temp Key:/ {k = $4} END {sub(/,$/, "", p); sub(/,$/, "", k); print p " " c " " k}' \
    "$TMP/s_client.$s")
done
for t in plaintext json; do
  if ! cmp -s "$TMP/meta.hotpath.$t" "$TMP/meta.nginx.$t" || ! cmp -s "$TMP/body.hotpath.$t" "$TMP/body.nginx.$t"; then
    log "WARNING: $t responses differ: hotpath '$(cat "$TMP/meta.hotpath.$t")' vs nginx '$(cat "$TMP/meta.nginx.$t")'"
  fi
done
[[ ${NEGOTIATED[hotpath]} == "${NEGOTIATED[nginx]}" ]] ||
  log "WARNING: the servers negotiate differently: hotpath ${NEGOTIATED[hotpath]}, nginx ${NEGOTIATED[nginx]}"
log "negotiated (openssl s_client): hotpath ${NEGOTIATED[hotpath]}; nginx ${NEGOTIATED[nginx]}"

# --- one measured run: the client on CPU 1, the server's CPU ticks around it -------------------
: >"$TMP/res"  # columns: server test generator run count seconds server-CPU-s client-CPU-s wall-s full resumed hs-p50-ms
measure() {  # measure SERVER TEST GENERATOR CLIENT-ARGS... : appends one line to $TMP/res
  local s=$1 t=$2 g=$3 pid=${SPID[$1]} c0 c1 w0 w1 rc=0 line n secs full resumed p50
  local url=https://127.0.0.1:${PORT[$s]}/${t/full/plaintext}
  url=${url/resumed/plaintext}
  rm -f "$TMP/out.json"
  c0=$(cpu_ticks "$pid"); w0=$(now_ns)
  if [[ $g == wrk ]]; then
    { time timeout $((DSEC + 60)) taskset -c 1 wrk -t1 "-c$CONNECTIONS" "-d$DURATION" "${@:4}" "$url" >"$TMP/out" 2>&1 || rc=$?; } \
      2>"$TMP/time"
  else
    { time timeout $((DSEC + 60)) taskset -c 1 "$HOTPATH" load "$url" -k -t 1 -c "$CONNECTIONS" -d "$DURATION" -q \
      --json "$TMP/out.json" "${@:4}" >"$TMP/out" 2>&1 || rc=$?; } 2>"$TMP/time"
  fi
  c1=$(cpu_ticks "$pid"); w1=$(now_ns)
  ((rc == 0)) || { log "$g against $s ($t) exited with $rc:"; cat "$TMP/out" >&2; exit 1; }
  if [[ $g == wrk ]]; then
    grep -E 'Socket errors|Non-2xx' "$TMP/out" >&2 || true
    line=$(awk '/ requests in / {n = $1} /^Requests\/sec:/ {r = $2} END {if (n > 0 && r > 0) printf "%d %.3f - - -", n, n / r}' "$TMP/out")
  else
    line=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); t = d.get("tls") or {}
e = sum(d["errors"].values()) + d.get("connect_failures", 0)
if e: print("errors: %s, connect failures %d" % (d["errors"], d.get("connect_failures", 0)), file=sys.stderr)
h = t.get("handshakes", 0); r = t.get("resumed", 0)
p50 = (t.get("handshake_time") or {}).get("percentiles_us", {}).get("50", 0) / 1000
n = h if sys.argv[2] in ("full", "resumed") else d["responses"]
print(n, d["measured_s"], h - r, r, "%.2f" % p50)' "$TMP/out.json" "$t") || true
  fi
  [[ -n $line ]] || { log "could not read the results of $g:"; cat "$TMP/out" >&2; exit 1; }
  read -r n secs full resumed p50 <<<"$line"
  awk -v s="$s" -v t="$t" -v g="$g" -v run="$run" -v n="$n" -v secs="$secs" -v c=$((c1 - c0)) -v k="$TCK" \
    -v u="$(cat "$TMP/time")" -v w=$((w1 - w0)) -v f="$full" -v r="$resumed" -v p="$p50" \
    'BEGIN {split(u, l, " "); printf "%s %s %s %d %d %s %.2f %.2f %.3f %s %s %s\n", s, t, g, run, n, secs, c / k,
      l[1] + l[2], w / 1e9, f, r, p}' >>"$TMP/res"
  log "  $(tail -n 1 "$TMP/res")"
}

# --- 1-3: keep-alive and handshakes, per run the two servers back to back --------------------
for ((run = 1; run <= RUNS; run++)); do
  ORDER=(hotpath nginx) GENS=(load wrk)
  ((run % 2)) || { ORDER=(nginx hotpath); GENS=(wrk load); }
  for t in plaintext json; do
    for g in "${GENS[@]}"; do
      [[ $t == json && $g == wrk ]] && continue  # wrk's cross-check on /plaintext only
      for s in "${ORDER[@]}"; do
        log "run $run/$RUNS: $s keep-alive /$t ($g -c$CONNECTIONS -d$DURATION)"
        measure "$s" "$t" "$g"
      done
    done
  done
  for t in full resumed; do
    extra=(--no-keepalive); [[ $t == full ]] && extra+=(--no-tls-resume)
    for s in "${ORDER[@]}"; do
      log "run $run/$RUNS: $s $t handshakes (hotpath load ${extra[*]} -c$CONNECTIONS -d$DURATION)"
      measure "$s" "$t" load "${extra[@]}"
    done
  done
done
log "stopping the servers"
stop_all

# --- 4: idle TLS keep-alive connections, fresh servers ----------------------------------------
# Prints "rest_kb idle_kb alive": the server's VmRSS at rest and with N idle connections (after a 1 s settle), and
# how many were still open once RSS was read. Each connection: a full handshake, GET /plaintext, its response read.
# Four threads open them (blocking sockets, 10 s timeout each), so that the server's share overlaps the client's.
open_idle() {  # open_idle PORT PID
  taskset -c 1 timeout 900 python3 - "$1" "$2" "$N" <<'PY'
import concurrent.futures, selectors, socket, ssl, sys, time
port, pid, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
request = b"GET /plaintext HTTP/1.1\r\nHost: localhost\r\n\r\n"
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE  # like hotpath load -k
def rss_kb():
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
def open_one(_):  # the head, then Content-Length bytes of body
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="localhost")
    s.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk: sys.exit("tls: the server closed a connection before answering")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = s.recv(4096)
        if not chunk: sys.exit("tls: the server closed a connection mid-response")
        body += chunk
    if not head.startswith(b"HTTP/1.1 200"): sys.exit("tls: not a 200: %r" % head[:40])
    return s
time.sleep(0.5)
rest = rss_kb()
socks = []
try:
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        socks = list(pool.map(open_one, range(n)))
    time.sleep(1)
    idle = rss_kb()
    sel = selectors.DefaultSelector()  # a closed connection is readable (EOF); an idle one is not
    for s in socks: sel.register(s, selectors.EVENT_READ)
    closed = 0
    for key, _ in sel.select(timeout=0):
        s = key.fileobj; s.setblocking(False)
        try: closed += s.recv(1) == b""
        except ssl.SSLWantReadError: pass
        except OSError: closed += 1
    print(rest, idle, n - closed)
finally:
    for s in socks: s.close()
PY
}
: >"$TMP/idle"  # columns: server rest_kb idle_kb alive run
for ((run = 1; run <= IDLE_RUNS; run++)); do
  ORDER=(hotpath nginx); ((run % 2)) || ORDER=(nginx hotpath)
  for s in "${ORDER[@]}"; do
    port=$(free_port)
    start_server "$s" "$port"
    log "idle run $run/$IDLE_RUNS: $s, $N idle TLS keep-alive connections"
    read -r rest idle alive < <(open_idle "$port" "$LAST_PID") || true
    [[ -n ${alive:-} ]] || { log "the opener failed against $s"; exit 1; }
    ((alive == N)) || log "WARNING: $s closed $((N - alive)) of the $N idle connections during the measure"
    echo "$s $rest $idle $alive $run" >>"$TMP/idle"
    log "  rest $rest kB, with $N idle $idle kB, $alive still open"
    stop_all
  done
done

# --- report: a results block for bench/RESULTS.md on stdout (and appended to OUT) ---------------
# med FILE SERVER TEST GENERATOR EXPR: the median over the runs of an awk expression of the columns.
med() {
  awk -v s="$2" -v t="$3" -v g="$4" '$1 == s && $2 == t && $3 == g {print '"$5"'}' "$1" | sort -g |
    awk '{v[NR] = $1} END {if (!NR) print "nan"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}
# pairs TEST GENERATOR EXPR [A B [KEY-COLUMN]]: per run, EXPR of A / EXPR of B, where A and B are servers (column
# 1, default) or generators (column 3, the server then nginx); prints the ratios in run order.
pairs() {
  local a=${4:-hotpath} b=${5:-nginx} k=${6:-1}
  awk -v t="$1" -v g="$2" -v a="$a" -v b="$b" -v k="$k" '
    $2 == t && (k == 1 ? $3 == g : $1 == "nginx") {v[$k, $4] = '"$3"'; if ($4 > n) n = $4}
    END {for (r = 1; r <= n; r++) if (v[b, r] > 0) printf "%s%.2f", (c++ ? " " : ""), v[a, r] / v[b, r]}' "$TMP/res"
}
median_of() { tr ' ' '\n' | sed '/^$/d' | sort -g |
  awk '{v[NR] = $1} END {if (!NR) print "n/a"; else printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
fmt() { awk -v v="$1" -v d="${2:-0}" 'BEGIN {if (v == "nan") print "-"; else printf "%.*f", d, v}'; }
RATE='$5 / $6' PER_CPU='($7 > 0 ? $5 / $7 : 0)' SRV='100 * $7 / $9' CLI='100 * $8 / $9'
HEAD=(figure hotpath nginx "ratio h/n" "server CPU% h/n" "client CPU% h/n")
ROWS=()
row() {  # row LABEL TEST GENERATOR EXPR
  local h n
  h=$(fmt "$(med "$TMP/res" hotpath "$2" "$3" "$4")") n=$(fmt "$(med "$TMP/res" nginx "$2" "$3" "$4")")
  ROWS+=("$1|$h|$n|$(pairs "$2" "$3" "$4" | median_of)|$(fmt "$(med "$TMP/res" hotpath "$2" "$3" "$SRV")")/$(fmt "$(med "$TMP/res" nginx "$2" "$3" "$SRV")")|$(fmt "$(med "$TMP/res" hotpath "$2" "$3" "$CLI")")/$(fmt "$(med "$TMP/res" nginx "$2" "$3" "$CLI")")")
}
row "keep-alive /plaintext req/s (hotpath load)" plaintext load "$RATE"
row "keep-alive /plaintext req/CPU-s (hotpath load)" plaintext load "$PER_CPU"
row "keep-alive /plaintext req/s (wrk)" plaintext wrk "$RATE"
row "keep-alive /plaintext req/CPU-s (wrk)" plaintext wrk "$PER_CPU"
row "keep-alive /json req/s (hotpath load)" json load "$RATE"
row "keep-alive /json req/CPU-s (hotpath load)" json load "$PER_CPU"
row "full handshakes/s" full load "$RATE"
row "full handshakes/CPU-s" full load "$PER_CPU"
row "resumed handshakes/s" resumed load "$RATE"
row "resumed handshakes/CPU-s" resumed load "$PER_CPU"
imed() { awk -v s="$1" '$1 == s {print '"$2"'}' "$TMP/idle" | sort -g |
  awk '{v[NR] = $1} END {if (!NR) print "nan"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
PER_IDLE='($3 - $2) / $4'
IDLE_PAIRS=$(awk '{v[$1, $5] = ($3 - $2) / $4; if ($5 > n) n = $5}
  END {for (r = 1; r <= n; r++) if (v["nginx", r] > 0) printf "%s%.2f", (c++ ? " " : ""), v["hotpath", r] / v["nginx", r]}' "$TMP/idle")
ROWS+=("idle TLS connection kB (N=$N)|$(fmt "$(imed hotpath "$PER_IDLE")" 2)|$(fmt "$(imed nginx "$PER_IDLE")" 2)|$(median_of <<<"$IDLE_PAIRS")|-|-")
# The load generators against nginx's /plaintext: CPU microseconds per response and the share of their core.
US='1e6 * $8 / $5'
LHEAD=("client against nginx, keep-alive /plaintext" "hotpath load" wrk "ratio h/w")
LROWS=(
  "responses/s|$(fmt "$(med "$TMP/res" nginx plaintext load "$RATE")")|$(fmt "$(med "$TMP/res" nginx plaintext wrk "$RATE")")|$(pairs plaintext - "$RATE" load wrk 3 | median_of)"
  "client CPU us per response|$(fmt "$(med "$TMP/res" nginx plaintext load "$US")" 2)|$(fmt "$(med "$TMP/res" nginx plaintext wrk "$US")" 2)|$(pairs plaintext - "$US" load wrk 3 | median_of)"
  "client CPU %|$(fmt "$(med "$TMP/res" nginx plaintext load "$CLI")")|$(fmt "$(med "$TMP/res" nginx plaintext wrk "$CLI")")|-"
)
hs_split() { echo "$(fmt "$(med "$TMP/res" "$1" "$2" load '$10')") full + $(fmt "$(med "$TMP/res" "$1" "$2" load '$11')") resumed, p50 $(fmt "$(med "$TMP/res" "$1" "$2" load '$12')" 2) ms"; }
if [[ -e /sys/module/tls || -e /proc/net/tls_stat ]]; then
  KTLS_NOTE="the kernel has a tls module, but neither server is set to use it here (hotpath does not; nginx would need ssl_conf_command Options KTLS): not measured"
else
  KTLS_NOTE="this kernel has no tls module: kernel TLS could not be measured here"
fi
T_END=$(date -u +%H:%M)
EXTRA=(
  "runs: $RUNS x $DURATION per figure, -t1 -c$CONNECTIONS on CPU 1, servers on CPU 0 (hotpath serve platform --threads 1 --io $IO; nginx one worker, master_process off); medians; ratio = median of the runs' hotpath / nginx ratios, each from a back-to-back pair"
  "TLS (openssl s_client at its defaults, as hotpath load, wrk and Python's ssl offer): hotpath ${NEGOTIATED[hotpath]}; nginx ${NEGOTIATED[nginx]}; certificate ECDSA P-256 (scripts/make-test-certs.sh), the same file for both; clients do not verify it (-k)"
  "req/CPU-s ratio per run: plaintext (hotpath load) $(pairs plaintext load "$PER_CPU"); plaintext (wrk) $(pairs plaintext wrk "$PER_CPU"); json $(pairs json load "$PER_CPU")"
  "handshakes: hotpath load --no-keepalive -k (a connection, a handshake and one GET /plaintext each); full with --no-tls-resume; per run ratio of handshakes/CPU-s: full $(pairs full load "$PER_CPU"); resumed $(pairs resumed load "$PER_CPU")"
  "handshakes per run (median): full test: hotpath $(hs_split hotpath full), nginx $(hs_split nginx full); resumed test: hotpath $(hs_split hotpath resumed), nginx $(hs_split nginx resumed) (p50: the client's handshake time; a full handshake in the resumed test is one where hotpath load offered no session ticket)"
  "load generators: their own user+sys CPU per response against nginx's TLS /plaintext (same runs as above); per run ratio hotpath load / wrk (below 1: hotpath load spends less): $(pairs plaintext - "$US" load wrk 3); against hotpath's server: hotpath load $(fmt "$(med "$TMP/res" hotpath plaintext load "$US")" 2) us, wrk $(fmt "$(med "$TMP/res" hotpath plaintext wrk "$US")" 2) us per response"
  "idle: $IDLE_RUNS run(s), fresh servers; N=$N connections (full handshake, one GET /plaintext, then idle); RSS at rest / with N: hotpath $(fmt "$(imed hotpath '$2')") / $(fmt "$(imed hotpath '$3')") kB, nginx $(fmt "$(imed nginx '$2')") / $(fmt "$(imed nginx '$3')") kB (nginx's $NG_CONNECTIONS slots are in its RSS at rest); still open: hotpath $(fmt "$(imed hotpath '$4')"), nginx $(fmt "$(imed nginx '$4')"); per run ratio $IDLE_PAIRS"
  "${KTLS:-kernel TLS: hotpath serve printed no kernel TLS line} (hotpath serve's start line); $KTLS_NOTE"
)
table() {  # table HEAD-ARRAY-NAME ROWS-ARRAY-NAME
  local -n h=$1 r=$2
  (IFS='|'; echo "${h[*]}"); printf '%s\n' "${r[@]}"
}
align() { awk -F'|' '{for (i = 1; i <= NF; i++) {c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i)}}
  END {for (r = 1; r <= NR; r++) {l = ""; for (i = 1; i <= NF; i++) l = l sprintf(i > 1 ? "  %" w[i] "s" : "%-" w[i] "s", c[r, i]); print l}}'; }
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -z $(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null) ]] || COMMIT+=" (working tree modified)"
MODEL=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
block() {
  echo "### HTTPS: hotpath vs nginx with TLS, $(date -u +%F) ($T_START-$T_END UTC), $COMMIT, \`$CMDLINE\`"
  echo
  echo "Machine: nproc $(nproc), Linux $(uname -r) $(uname -m)${MODEL:+, $MODEL}; $("$NGINX" -v 2>&1 | sed 's/.*: //'), $(openssl version | awk '{print $1, $2}'), wrk $(wrk -v 2>&1 | awk 'NR == 1 {print $2}'); took $(((SECONDS - S_START) / 60)) min $(((SECONDS - S_START) % 60)) s."
  echo
  echo '```'
  table HEAD ROWS | align
  echo
  table LHEAD LROWS | align
  echo '```'
  echo
  printf -- '- %s\n' "${EXTRA[@]}"
}
block
if [[ -n $OUT ]]; then
  { echo; block; } >>"$OUT"
  log "appended the results block to $OUT"
fi
