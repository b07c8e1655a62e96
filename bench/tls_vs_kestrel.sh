#!/usr/bin/env bash
# HTTPS: hotpath serve platform against the write-up's platform original on Kestrel (peers/dotnet/platform, built by
# scripts/build-peers.sh), both serving the same certificate (scripts/make-test-certs.sh, ECDSA P-256) at their TLS
# defaults, each pinned to CPU 0 (hotpath with one loop; Kestrel as it comes, with Server GC as the TechEmpower
# entries run it, warmed WARMUP over TLS first for its JIT tiers), every client pinned to CPU 1. In one run, per
# server: keep-alive requests per server CPU-second on /plaintext and /json with `hotpath load -c CONNECTIONS`, and
# wrk on /plaintext as a cross-check; the two servers alternate within each run (hotpath first in odd runs).
# CPU seconds are utime+stime from /proc/PID/stat around each load. A ratio is the median of the runs' ratios, each
# from a back-to-back pair.
# Env: DURATION (8s) RUNS (3) CONNECTIONS (64) WARMUP (15s) HOTPATH (build/release/hotpath) PEERS (build/peers)
#      OUT (append the results block to this file). A full run takes about 2.5 minutes.
# Example: RUNS=1 DURATION=3s bash bench/tls_vs_kestrel.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=${DURATION:-8s} RUNS=${RUNS:-3} CONNECTIONS=${CONNECTIONS:-64} WARMUP=${WARMUP:-15s}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} PEERS=${PEERS:-$ROOT/build/peers} OUT=${OUT:-}
CMDLINE="DURATION=$DURATION RUNS=$RUNS CONNECTIONS=$CONNECTIONS WARMUP=$WARMUP bash bench/tls_vs_kestrel.sh"
for tool in wrk curl python3 taskset getconf awk sort timeout; do
  command -v "$tool" >/dev/null || { echo "tls_vs_kestrel: missing tool: $tool" >&2; exit 2; }
done
[[ -x $HOTPATH ]] || { echo "tls_vs_kestrel: hotpath binary not found: $HOTPATH" >&2; exit 2; }
if ! command -v dotnet >/dev/null; then
  echo "tls_vs_kestrel: dotnet not found: the Kestrel original is skipped (nothing to compare)"
  exit 0
fi
[[ -x $PEERS/platform/platform ]] ||
  { echo "tls_vs_kestrel: $PEERS/platform/platform not built: run scripts/build-peers.sh" >&2; exit 2; }
[[ $RUNS =~ ^[1-9][0-9]*$ && $CONNECTIONS =~ ^[1-9][0-9]*$ ]] ||
  { echo "tls_vs_kestrel: RUNS and CONNECTIONS must be positive integers" >&2; exit 2; }
dsec() { case $1 in *m) echo $((${1%m} * 60)) ;; *) echo "${1%s}" ;; esac; }
DSEC=$(dsec "$DURATION")
[[ $DSEC =~ ^[1-9][0-9]*$ && $(dsec "$WARMUP") =~ ^[0-9]+$ ]] ||
  { echo "tls_vs_kestrel: DURATION and WARMUP must be whole seconds (3s) or minutes (1m)" >&2; exit 2; }
TCK=$(getconf CLK_TCK)
TIMEFORMAT='%U %S'
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
T_START=$(date -u +%H:%M)

# --- cleanup: stop every server we started, by PID, even on error or Ctrl-C -----------------
TMP=$(mktemp -d /tmp/tls_vs_kestrel.XXXXXX)
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

bash "$ROOT/scripts/make-test-certs.sh" "$TMP/certs" >/dev/null
CERT=$TMP/certs/server.pem KEY=$TMP/certs/server.key
read -r P_HP P_KE < <(python3 -c '
import socket; s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
declare -A PORT=([hotpath]=$P_HP [kestrel]=$P_KE) SPID=()
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
log "starting hotpath (:$P_HP) and Kestrel (:$P_KE) over HTTPS, pinned to CPU 0"
taskset -c 0 "$HOTPATH" serve platform --port "$P_HP" --threads 1 --tls-cert "$CERT" --tls-key "$KEY" \
  >"$TMP/hotpath.log" 2>&1 &
SPID[hotpath]=$!; PIDS+=("$!")
Kestrel__Certificates__Default__Path=$CERT Kestrel__Certificates__Default__KeyPath=$KEY DOTNET_gcServer=1 \
  taskset -c 0 "$PEERS/platform/platform" --urls "https://127.0.0.1:$P_KE" >"$TMP/kestrel.log" 2>&1 &
SPID[kestrel]=$!; PIDS+=("$!")
for s in hotpath kestrel; do
  for ((i = 0; i < 200; i++)); do
    curl -sk -o /dev/null --max-time 1 "https://127.0.0.1:${PORT[$s]}/plaintext" && break
    sleep 0.05
  done
  ((i < 200)) || { echo "tls_vs_kestrel: no answer from $s in 10 s:" >&2; cat "$TMP/$s.log" >&2; exit 1; }
  for t in plaintext json; do
    curl -sk "https://127.0.0.1:${PORT[$s]}/$t" >"$TMP/body.$s.$t"
  done
done
for t in plaintext json; do
  cmp -s "$TMP/body.hotpath.$t" "$TMP/body.kestrel.$t" ||
    log "WARNING: /$t bodies differ: hotpath '$(cat "$TMP/body.hotpath.$t")', Kestrel '$(cat "$TMP/body.kestrel.$t")'"
done
NEGOTIATED=$(for s in hotpath kestrel; do
  timeout 10 openssl s_client -connect "127.0.0.1:${PORT[$s]}" -servername localhost </dev/null 2>/dev/null |
    awk -v s="$s" '/^New, / {p = $2; c = $NF} END {sub(/,$/, "", p); printf "%s %s %s; ", s, p, c}'
done)
log "negotiated (openssl s_client): $NEGOTIATED"
for s in hotpath kestrel; do
  log "warming $s up over TLS for $WARMUP (wrk, JIT tiers for Kestrel)"
  for t in plaintext json; do
    taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$(($(dsec "$WARMUP") / 2 + 1))s" "https://127.0.0.1:${PORT[$s]}/$t" >/dev/null
  done
done

cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; } # utime+stime, every thread
: >"$TMP/res" # columns: server test generator run responses seconds server-CPU-s client-CPU-s
measure() { # measure SERVER TEST GENERATOR
  local s=$1 t=$2 g=$3 pid=${SPID[$1]} c0 c1 rc=0 line url=https://127.0.0.1:${PORT[$1]}/$2
  c0=$(cpu_ticks "$pid")
  if [[ $g == wrk ]]; then
    { time timeout $((DSEC + 60)) taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" "$url" >"$TMP/out" 2>&1 || rc=$?; } \
      2>"$TMP/time"
  else
    { time timeout $((DSEC + 60)) taskset -c 1 "$HOTPATH" load "$url" -k -t 1 -c "$CONNECTIONS" -d "$DURATION" -q \
      --json "$TMP/out.json" >"$TMP/out" 2>&1 || rc=$?; } 2>"$TMP/time"
  fi
  c1=$(cpu_ticks "$pid")
  ((rc == 0)) || { log "$g against $s ($t) exited with $rc:"; cat "$TMP/out" >&2; exit 1; }
  if [[ $g == wrk ]]; then
    grep -E 'Socket errors|Non-2xx' "$TMP/out" >&2 || true
    line=$(awk '/ requests in / {n = $1} /^Requests\/sec:/ {r = $2} END {if (n > 0 && r > 0) printf "%d %.3f", n, n / r}' "$TMP/out")
  else
    line=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
e = sum(d["errors"].values()) + d.get("connect_failures", 0)
if e: print("errors: %s, connect failures %d" % (d["errors"], d.get("connect_failures", 0)), file=sys.stderr)
print(d["responses"], d["measured_s"])' "$TMP/out.json") || true
  fi
  [[ -n $line ]] || { log "could not read the results of $g:"; cat "$TMP/out" >&2; exit 1; }
  echo "$s $t $g $run $line $(awk -v c=$((c1 - c0)) -v k="$TCK" 'BEGIN {printf "%.2f", c / k}') $(awk '{print $1 + $2}' "$TMP/time")" \
    >>"$TMP/res"
  log "  $(tail -n 1 "$TMP/res")"
}
for ((run = 1; run <= RUNS; run++)); do
  ORDER=(hotpath kestrel); ((run % 2)) || ORDER=(kestrel hotpath)
  for t in plaintext json; do
    for g in load wrk; do
      [[ $t == json && $g == wrk ]] && continue # wrk's cross-check on /plaintext only
      for s in "${ORDER[@]}"; do
        log "run $run/$RUNS: $s keep-alive /$t ($g -c$CONNECTIONS -d$DURATION)"
        measure "$s" "$t" "$g"
      done
    done
  done
done
for s in hotpath kestrel; do
  [[ -e /proc/${SPID[$s]} ]] || { echo "tls_vs_kestrel: $s died during the run:" >&2; cat "$TMP/$s.log" >&2; exit 1; }
done

# --- report -------------------------------------------------------------------------------------
med() { sort -g | awk '{v[NR] = $1} END {if (!NR) print "nan"; else printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
col() { awk -v s="$1" -v t="$2" -v g="$3" '$1 == s && $2 == t && $3 == g {print '"$4"'}' "$TMP/res" | med; }
ratios() { # per run: EXPR of hotpath / EXPR of Kestrel
  awk -v t="$1" -v g="$2" '$2 == t && $3 == g {v[$1, $4] = '"$3"'; if ($4 > n) n = $4}
    END {for (r = 1; r <= n; r++) if (v["kestrel", r] > 0) print v["hotpath", r] / v["kestrel", r]}' "$TMP/res" | med
}
RATE='$5 / $6' PER_CPU='($7 > 0 ? $5 / $7 : 0)' SRV='100 * $7 / $6'
{
  echo
  echo "### HTTPS against the Kestrel original ($(date -u +%Y-%m-%d) $T_START-$(date -u +%H:%M) UTC, $(nproc) cores)"
  echo
  echo "\`$CMDLINE\`; negotiated: $NEGOTIATED"
  echo
  echo "| figure | hotpath | Kestrel | ratio h/k (median of runs) | server CPU % h/k |"
  echo "|---|---|---|---|---|"
  for spec in "plaintext load" "plaintext wrk" "json load"; do
    read -r t g <<<"$spec"
    gname=$([[ $g == wrk ]] && echo wrk || echo "hotpath load")
    echo "| keep-alive /$t req/s ($gname) | $(col hotpath "$t" "$g" "$RATE") | $(col kestrel "$t" "$g" "$RATE") | $(ratios "$t" "$g" "$RATE") | $(col hotpath "$t" "$g" "$SRV")/$(col kestrel "$t" "$g" "$SRV") |"
    echo "| keep-alive /$t req/CPU-s ($gname) | $(col hotpath "$t" "$g" "$PER_CPU") | $(col kestrel "$t" "$g" "$PER_CPU") | $(ratios "$t" "$g" "$PER_CPU") | - |"
  done
} | tee -a "${OUT:-/dev/null}"
