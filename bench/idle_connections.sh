#!/usr/bin/env bash
# Memory per idle keep-alive connection: hotpath vs nginx (one worker each, pinned to CPU 0; clients on CPU 1).
# Each of N connections sends one GET /plaintext, reads its response, then stays open and idle; the RSS growth
# over the server's RSS at rest, divided by N, is what one idle connection costs.
# PROTOCOL=h2c: each connection speaks HTTP/2 with prior knowledge instead (nginx with "listen ... http2"): the
# preface, SETTINGS (and the server's acknowledged), one stream's GET /plaintext answered, then idle.
# Env: N (10000) RUNS (3) IO (auto) PROTOCOL (http/1.1; h2c) HOTPATH (build/release/hotpath) NGINX (/usr/sbin/nginx)
#      OUT (append Markdown).
# Example: N=2000 RUNS=1 bash bench/idle_connections.sh
set -euo pipefail

# --- settings and tool checks -------------------------------------------------------------
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${N:-10000} RUNS=${RUNS:-3} IO=${IO:-auto} PROTOCOL=${PROTOCOL:-http/1.1}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} OUT=${OUT:-} NGINX=${NGINX:-/usr/sbin/nginx}
CMDLINE="N=$N RUNS=$RUNS IO=$IO PROTOCOL=$PROTOCOL $0${*:+ $*}"
[[ $PROTOCOL == http/1.1 || $PROTOCOL == h2c ]] || { echo "idle_connections: PROTOCOL is http/1.1 or h2c" >&2; exit 2; }
for tool in python3 curl taskset awk sed sort timeout; do
  command -v "$tool" >/dev/null || { echo "idle_connections: missing tool: $tool" >&2; exit 2; }
done
[[ -x $HOTPATH ]] || { echo "idle_connections: hotpath binary not found: $HOTPATH" >&2; exit 2; }
[[ -x $NGINX ]] || { echo "idle_connections: nginx binary not found: $NGINX" >&2; exit 2; }
[[ $RUNS =~ ^[1-9][0-9]*$ && $N =~ ^[1-9][0-9]*$ ]] || { echo "idle_connections: RUNS and N must be positive integers" >&2; exit 2; }
# Every process started here (servers and the opener) holds N sockets plus a few: raise the soft limit to the hard one.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
FDS=$(ulimit -n)
[[ $FDS == unlimited ]] || ((FDS >= N + 64)) || { echo "idle_connections: ulimit -n is $FDS, N=$N needs $((N + 64))" >&2; exit 2; }
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# --- cleanup: stop every server we started, by PID, even on error or Ctrl-C -----------------
TMP=$(mktemp -d /tmp/idle_connections.XXXXXX)
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
stop_all() { local p; for p in "${PIDS[@]}"; do stop_pid "$p"; done; PIDS=(); }
cleanup() { stop_all; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- helpers: ports, nginx config, server start ---------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# nginx starts closing idle keep-alive connections to free slots when fewer than 1/16 of worker_connections are
# free, so the one worker gets twice N. It allocates and initialises every slot at start, so their cost (a few
# hundred bytes each) is in its RSS at rest, not in the growth measured here.
NG_CONNECTIONS=$((2 * N + 64))
nginx_conf() {  # nginx_conf DIR PORT -> prints the config path
  mkdir -p "$1"
  local listen=""
  [[ $PROTOCOL == h2c ]] && listen=" http2"
  sed -e "s|@PREFIX@|$1|g" -e "s|@PORT@|$2|g" -e "s|worker_connections [0-9]*;|worker_connections $NG_CONNECTIONS;|" \
    -e "s|listen 127.0.0.1:$2;|listen 127.0.0.1:$2$listen;|" "$ROOT/bench/nginx.conf.in" >"$1/nginx.conf"
  echo "$1/nginx.conf"
}
start() {  # start NAME CMD... : pinned to CPU 0; sets LAST_PID
  taskset -c 0 "${@:2}" >"$TMP/$1.log" 2>&1 &
  LAST_PID=$!; PIDS+=("$LAST_PID")
}
wait_ready() {  # wait_ready URL : poll with curl for at most 10 s
  local i
  local h2=()
  [[ $PROTOCOL == h2c ]] && h2=(--http2-prior-knowledge)
  for ((i = 0; i < 100; i++)); do curl -s -o /dev/null --max-time 1 "${h2[@]}" "$1" && return 0; sleep 0.1; done
  echo "idle_connections: no answer from $1 after 10 s" >&2; exit 1
}

# --- the opener: N idle keep-alive connections, RSS before and after -------------------------
# Prints "rest_kb idle_kb alive": the server's VmRSS at rest and with N idle connections (after a 1 s settle),
# and how many of the N were still open (no EOF) once RSS was read. Every socket has a 10 s timeout.
open_idle() {  # open_idle PORT PID
  taskset -c 1 timeout 300 python3 - "$1" "$2" "$N" "$PROTOCOL" <<'PY'
import selectors, socket, struct, sys, time
port, pid, n, protocol = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
request = b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload
# HTTP/2: the preface, an empty SETTINGS, and stream 1's HEADERS (HPACK: :method GET, :scheme http, :path and
# :authority as literals with indexed names), END_STREAM|END_HEADERS.
authority = b"127.0.0.1"
block = b"\x82\x86\x44" + bytes([10]) + b"/plaintext" + b"\x41" + bytes([len(authority)]) + authority
h2_request = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0) + frame(1, 5, 1, block)
def read_h2_response(s):  # frames until stream 1 ends; the server's SETTINGS acknowledged
    data, status = b"", None
    while True:
        while len(data) < 9 or len(data) < 9 + int.from_bytes(data[:3], "big"):
            chunk = s.recv(65536)
            if not chunk: sys.exit("idle_connections: the server closed an HTTP/2 connection before answering")
            data += chunk
        length = int.from_bytes(data[:3], "big")
        kind, flags, stream = data[3], data[4], int.from_bytes(data[5:9], "big") & 0x7fffffff
        data = data[9 + length:]
        if kind == 4 and not flags & 1:
            s.sendall(frame(4, 1, 0))
        if kind == 7: sys.exit("idle_connections: GOAWAY from the server")
        if stream == 1 and kind in (0, 1) and flags & 1:
            return
def rss_kb():
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
def read_response(s):  # the head, then Content-Length bytes of body
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk: sys.exit("idle_connections: the server closed a connection before answering")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = s.recv(4096)
        if not chunk: sys.exit("idle_connections: the server closed a connection mid-response")
        body += chunk
    if not head.startswith(b"HTTP/1.1 200"): sys.exit("idle_connections: not a 200: %r" % head[:40])
time.sleep(0.5)
rest = rss_kb()
socks = []
try:
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        if protocol == "h2c":
            s.sendall(h2_request)
            read_h2_response(s)
        else:
            s.sendall(request)
            read_response(s)
        socks.append(s)
    time.sleep(1)
    idle = rss_kb()
    sel = selectors.DefaultSelector()  # a closed connection is readable (EOF); an idle one is not
    for s in socks: sel.register(s, selectors.EVENT_READ)
    closed = len(sel.select(timeout=0))
    print(rest, idle, n - closed)
finally:
    for s in socks: s.close()
PY
}

# --- runs: fresh servers per run, hotpath first in odd runs and nginx first in even ones ------
: >"$TMP/res"  # columns: server rest_kb idle_kb alive run
for ((run = 1; run <= RUNS; run++)); do
  ORDER=(hotpath nginx); ((run % 2)) || ORDER=(nginx hotpath)
  for s in "${ORDER[@]}"; do
    port=$(free_port)
    if [[ $s == hotpath ]]; then
      # The keep-alive timeout outlasts the run; max-connections is unlimited by default.
      start hotpath "$HOTPATH" serve platform --port "$port" --threads 1 --io "$IO" --keepalive-timeout 3600 \
        --drain-timeout 2000
    else
      start nginx "$NGINX" -p "$TMP/ng" -e "$TMP/ng/error.log" -c "$(nginx_conf "$TMP/ng" "$port")"
    fi
    pid=$LAST_PID
    wait_ready "http://127.0.0.1:$port/plaintext"
    log "run $run/$RUNS: $s, $N idle keep-alive connections ($PROTOCOL)"
    read -r rest idle alive < <(open_idle "$port" "$pid") || { log "the opener failed against $s"; exit 1; }
    [[ -n ${alive:-} ]] || { log "the opener failed against $s"; exit 1; }
    ((alive == N)) || log "WARNING: $s closed $((N - alive)) of the $N idle connections during the measure"
    echo "$s $rest $idle $alive $run" >>"$TMP/res"
    log "  rest $rest kB, with $N idle $idle kB, $alive still open"
    stop_all
  done
done

# --- report: aligned table on stdout, Markdown to OUT ---------------------------------------
med() {  # med SERVER EXPR : median over the runs of an awk expression of the columns
  awk -v s="$1" '$1 == s {print '"$2"'}' "$TMP/res" | sort -g |
    awk '{v[NR] = $1} END {if (!NR) print "nan"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}
PER_CONN='($3 - $2) / $4'
HEAD=(server "RSS at rest kB" "RSS with $N idle kB" "kB per idle connection")
ROWS=()
for s in hotpath nginx; do
  ROWS+=("$s|$(med "$s" '$2')|$(med "$s" '$3')|$(med "$s" "$PER_CONN" | awk '{printf "%.2f", $1}')")
done
RATIO=$(awk -v h="$(med hotpath "$PER_CONN")" -v n="$(med nginx "$PER_CONN")" 'BEGIN {if (n > 0) printf "%.2f", h / n; else print "n/a"}')
EXTRA=(
  "runs: $RUNS, fresh servers each; medians; one GET /plaintext per connection, then idle; servers on CPU 0, opener on CPU 1"
  "kB per idle connection hotpath / nginx: $RATIO; per run (server rest idle open): $(awk '{printf "%s %s %s %s; ", $1, $2, $3, $4}' "$TMP/res")"
  "hotpath: serve platform --threads 1 --io $IO; nginx: bench/nginx.conf.in, one worker, worker_connections $NG_CONNECTIONS (its slots, allocated at start, are in its RSS at rest)"
)
table() { (IFS='|'; echo "${HEAD[*]}"); printf '%s\n' "${ROWS[@]}"; }
table | awk -F'|' '{for (i = 1; i <= NF; i++) {c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i)}}
  END {for (r = 1; r <= NR; r++) {l = ""; for (i = 1; i <= NF; i++) l = l sprintf(i > 1 ? "  %" w[i] "s" : "%-" w[i] "s", c[r, i]); print l}}'
printf '%s\n' "${EXTRA[@]}"
if [[ -n $OUT ]]; then
  {
    echo; echo "### idle keep-alive connections ($PROTOCOL), $(date -u +%F)"; echo; echo "\`$CMDLINE\`"; echo
    table | sed 's/|/ | /g; s/^/| /; s/$/ |/; 1p; 1s/[^|]/-/g'
    echo; printf -- '- %s\n' "${EXTRA[@]}"
  } >>"$OUT"
  log "appended the Markdown table to $OUT"
fi
