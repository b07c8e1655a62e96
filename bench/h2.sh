#!/usr/bin/env bash
# HTTP/2 servers compared, multiplexed as h2load's shape (-c CONNECTIONS -m STREAMS): hotpath serve platform (one
# loop), nginx (one worker, bench/nginx.conf.in with "listen ... http2") and the write-up's platform original on
# Kestrel (scripts/build-peers.sh; Protocols=Http2, Server GC as the TechEmpower entries run it, warmed WARMUP first
# for its JIT tiers), all h2c with prior knowledge, each server pinned to CPU 0 and h2load to CPU 1. Per run, each
# server in turn (the order rotates): h2load's requests over the server's CPU seconds (utime+stime from
# /proc/PID/stat around the load). A ratio is the median of the runs' ratios. Kestrel is left out without dotnet.
# BASELINE=OLD_BINARY: an A/B run instead, hotpath against an earlier build of itself (same shape, no peers).
# Env: DURATION (8s) RUNS (3) CONNECTIONS (16) STREAMS (100) WARMUP (15s) PATHS ("/plaintext /json")
#      HOTPATH (build/release/hotpath) PEERS (build/peers) NGINX (/usr/sbin/nginx) BASELINE OUT (append Markdown here)
# Example: RUNS=1 DURATION=3s WARMUP=5s bash bench/h2.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=${DURATION:-8s} RUNS=${RUNS:-3} CONNECTIONS=${CONNECTIONS:-16} STREAMS=${STREAMS:-100} WARMUP=${WARMUP:-15s}
PATHS=${PATHS:-/plaintext /json}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} PEERS=${PEERS:-$ROOT/build/peers} NGINX=${NGINX:-/usr/sbin/nginx}
OUT=${OUT:-} BASELINE=${BASELINE:-}
CMDLINE="DURATION=$DURATION RUNS=$RUNS CONNECTIONS=$CONNECTIONS STREAMS=$STREAMS WARMUP=$WARMUP${BASELINE:+ BASELINE=OLD} bash bench/h2.sh"
for tool in h2load curl python3 taskset getconf awk sed sort timeout; do
    command -v "$tool" >/dev/null || { echo "h2: missing tool: $tool" >&2; exit 2; }
done
[[ -x $HOTPATH ]] || { echo "h2: hotpath binary not found: $HOTPATH" >&2; exit 2; }
[[ -n $BASELINE || -x $NGINX ]] || { echo "h2: nginx not found: $NGINX" >&2; exit 2; }
[[ -z $BASELINE || -x $BASELINE ]] || { echo "h2: baseline binary not found: $BASELINE" >&2; exit 2; }
[[ $RUNS =~ ^[1-9][0-9]*$ && $CONNECTIONS =~ ^[1-9][0-9]*$ && $STREAMS =~ ^[1-9][0-9]*$ ]] ||
    { echo "h2: RUNS, CONNECTIONS and STREAMS must be positive integers" >&2; exit 2; }
dsec() { case $1 in *m) echo $((${1%m} * 60)) ;; *) echo "${1%s}" ;; esac; }
DSEC=$(dsec "$DURATION") WSEC=$(dsec "$WARMUP")
[[ $DSEC =~ ^[1-9][0-9]*$ && $WSEC =~ ^[0-9]+$ ]] ||
    { echo "h2: DURATION and WARMUP must be whole seconds (3s) or minutes (1m)" >&2; exit 2; }
TCK=$(getconf CLK_TCK)
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
T_START=$(date -u +%H:%M)

TMP=$(mktemp -d /tmp/h2_bench.XXXXXX)
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

if [[ -n $BASELINE ]]; then
    SERVERS=(hotpath baseline)
else
    SERVERS=(hotpath nginx)
    command -v dotnet >/dev/null && [[ -x $PEERS/platform/platform ]] && SERVERS+=(kestrel) ||
        log "no dotnet or no $PEERS/platform/platform (scripts/build-peers.sh): Kestrel is left out"
fi
read -r P_HP P_NG P_KE P_BA < <(python3 -c '
import socket; s=[socket.socket() for _ in range(4)]
[x.bind(("127.0.0.1", 0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
declare -A PORT=([hotpath]=$P_HP [nginx]=$P_NG [kestrel]=$P_KE [baseline]=$P_BA) SPID=()

taskset -c 0 "$HOTPATH" serve platform --port "$P_HP" --threads 1 >"$TMP/hotpath.log" 2>&1 &
SPID[hotpath]=$!; PIDS+=("$!")
if [[ -n $BASELINE ]]; then
    taskset -c 0 "$BASELINE" serve platform --port "$P_BA" --threads 1 >"$TMP/baseline.log" 2>&1 &
    SPID[baseline]=$!; PIDS+=("$!")
fi
if [[ " ${SERVERS[*]} " == *" nginx "* ]]; then
    mkdir -p "$TMP/nginx"
    sed -e "s|@PREFIX@|$TMP/nginx|g" -e "s|@PORT@|$P_NG|g" -e "s|listen 127.0.0.1:$P_NG;|listen 127.0.0.1:$P_NG http2;|" \
        "$ROOT/bench/nginx.conf.in" >"$TMP/nginx/nginx.conf"
    # nginx's h2 default of 128 streams per connection is above h2load's 100; its keepalive_requests bounds requests per
    # HTTP/2 connection too (1.19.7+): the config's 10^8 keeps the connections for the whole run, as the others do.
    taskset -c 0 "$NGINX" -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" >"$TMP/nginx.log" 2>&1 &
    SPID[nginx]=$!; PIDS+=("$!")
fi
if [[ " ${SERVERS[*]} " == *" kestrel "* ]]; then
    DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_gcServer=1 Kestrel__EndpointDefaults__Protocols=Http2 \
        taskset -c 0 "$PEERS/platform/platform" --urls "http://127.0.0.1:$P_KE" >"$TMP/kestrel.log" 2>&1 &
    SPID[kestrel]=$!; PIDS+=("$!")
fi
for s in "${SERVERS[@]}"; do
    for ((i = 0; i < 200; i++)); do
        curl -s -o /dev/null --max-time 1 --http2-prior-knowledge "http://127.0.0.1:${PORT[$s]}/plaintext" && break
        sleep 0.05
    done
    ((i < 200)) || { echo "h2: no h2c answer from $s in 10 s:" >&2; cat "$TMP/$s.log" >&2; exit 1; }
    v=$(curl -s -o /dev/null -w '%{http_version}' --http2-prior-knowledge "http://127.0.0.1:${PORT[$s]}/plaintext")
    [[ $v == 2 ]] || { echo "h2: $s did not answer over HTTP/2 ($v)" >&2; exit 1; }
done
if [[ " ${SERVERS[*]} " == *" kestrel "* ]] && ((WSEC > 0)); then
    log "warming Kestrel up for $WARMUP (h2load, JIT tiers)"
    for p in $PATHS; do
        taskset -c 1 h2load -t1 -c"$CONNECTIONS" -m"$STREAMS" -D$((WSEC / 2 + 1)) "http://127.0.0.1:$P_KE$p" >/dev/null
    done
fi

cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; } # utime+stime, every thread
: >"$TMP/res" # columns: server path run requests seconds server-CPU-s
for ((run = 1; run <= RUNS; run++)); do
    ORDER=("${SERVERS[@]:$((run - 1)) % ${#SERVERS[@]}}" "${SERVERS[@]:0:$(((run - 1) % ${#SERVERS[@]}))}")
    for p in $PATHS; do
        for s in "${ORDER[@]}"; do
            log "run $run/$RUNS: $s $p (h2load -c$CONNECTIONS -m$STREAMS -D$DSEC)"
            c0=$(cpu_ticks "${SPID[$s]}")
            timeout $((DSEC + 60)) taskset -c 1 h2load -t1 -c"$CONNECTIONS" -m"$STREAMS" -D"$DSEC" \
                "http://127.0.0.1:${PORT[$s]}$p" >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; exit 1; }
            c1=$(cpu_ticks "${SPID[$s]}")
            read -r ok failed < <(awk '/^requests:/ {print $8, $10}' "$TMP/out")
            secs=$(awk '/^finished in/ {v = $3; sub(/,$/, "", v); if (v ~ /ms$/) {sub(/ms$/, "", v); v /= 1000} else sub(/s$/, "", v); print v}' "$TMP/out")
            ((failed == 0)) || log "  $failed requests failed"
            echo "$s $p $run $ok $secs $(awk -v c=$((c1 - c0)) -v k="$TCK" 'BEGIN {printf "%.2f", c / k}')" >>"$TMP/res"
            log "  $(tail -n 1 "$TMP/res")"
        done
    done
done
for s in "${SERVERS[@]}"; do
    kill -0 "${SPID[$s]}" 2>/dev/null || { echo "h2: $s died during the run:" >&2; cat "$TMP/$s.log" >&2; exit 1; }
done

med() { sort -g | awk '{v[NR] = $1} END {if (!NR) print "nan"; else printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
col() { awk -v s="$1" -v p="$2" '$1 == s && $2 == p {print '"$3"'}' "$TMP/res" | med; }
ratio() { # per run: requests per server CPU-second of hotpath over OTHER's, median
    awk -v o="$1" -v p="$2" '$2 == p && $6 > 0 {v[$1, $3] = $4 / $6; if ($3 > n) n = $3}
        END {for (r = 1; r <= n; r++) if (v[o, r] > 0) print v["hotpath", r] / v[o, r]}' "$TMP/res" | med
}
{
    echo
    echo "### HTTP/2 servers, h2load -c$CONNECTIONS -m$STREAMS ($(date -u +%Y-%m-%d) $T_START-$(date -u +%H:%M) UTC, $(nproc) cores)"
    echo
    echo '```'
    echo "$CMDLINE"
    echo '```'
    echo
    echo "| server | path | requests/s | server CPU % | requests per server CPU-second |"
    echo "|--------|------|------------|--------------|--------------------------------|"
    for p in $PATHS; do
        for s in "${SERVERS[@]}"; do
            echo "| $s | $p | $(col "$s" "$p" '$4 / $5') | $(col "$s" "$p" '100 * $6 / $5') | $(col "$s" "$p" '($6 > 0 ? $4 / $6 : 0)') |"
        done
    done
    echo
    for p in $PATHS; do
        for s in "${SERVERS[@]:1}"; do
            echo "- $p: hotpath / $s, requests per server CPU-second: **$(ratio "$s" "$p")** (median of $RUNS runs' ratios)"
        done
    done
} | tee "$TMP/report"
[[ -z $OUT ]] || cat "$TMP/report" >>"$OUT"
