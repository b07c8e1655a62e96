#!/usr/bin/env bash
# HTTP/2's known attacks against a running server while ordinary clients measure it. hotpath serve platform (one
# loop) on CPU 0; on CPU 1, hotpath load over h2c at a fixed rate (the ordinary clients: CONNECTIONS connections,
# 10 streams each) and the attacker, tests/integration/h2_attack_client.py, which repeats its attack on new
# connections for the whole period. Per run: DURATION undisturbed, then DURATION during each attack, in turn. Per
# attack: the ordinary clients' p99 over the undisturbed run's (the median of the runs' ratios; the issue's bound is
# 2x), the attacking connections cut off and refusals counted by the server (/metrics), and what one attack had sent
# when it was cut off. The attacker shares CPU 1 with the load generator (two cores) at SCHED_IDLE (chrt --idle), so
# that it takes only the time the load generator leaves: what the figures show is the server's, not CPU 1's sharing.
# ATTACKER_CPU=0 puts the attacker (and the busy control) on the server's core instead, at SCHED_IDLE there too: it
# then runs only while the server's loop waits, and the load generator's core is its own, so that what is left is
# what the server does for the attacker's frames (on two cores, the one way to keep the attacker off both).
# Env: DURATION (5s) RUNS (3) RATE (10000) CONNECTIONS (4) HOTPATH (build/release/hotpath) OUT (append Markdown here)
#      ATTACKER_CPU (1)
#      ATTACKS ("busy rapid-reset made-you-reset continuation hpack-bomb ping settings empty-data window-update
#      priority"); "busy" is the control: a busy loop at SCHED_IDLE on CPU 1 that never talks to the server, to show
#      what sharing CPU 1 costs the load generator by itself; "bulk" (not in the default list) is the HPACK bomb's
#      control: as many bytes on a connection the server refuses at their first frame, then an ordinary request.
# Example: RUNS=1 DURATION=3s bash bench/h2_attacks.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=${DURATION:-5s} RUNS=${RUNS:-3} RATE=${RATE:-10000} CONNECTIONS=${CONNECTIONS:-4}
ATTACKS=${ATTACKS:-busy rapid-reset made-you-reset continuation hpack-bomb ping settings empty-data window-update priority}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} OUT=${OUT:-} ATTACKER_CPU=${ATTACKER_CPU:-1}
ATTACKER=$ROOT/tests/integration/h2_attack_client.py
CMDLINE="DURATION=$DURATION RUNS=$RUNS RATE=$RATE CONNECTIONS=$CONNECTIONS ATTACKER_CPU=$ATTACKER_CPU bash bench/h2_attacks.sh"
for tool in curl taskset chrt awk sort timeout; do
    command -v "$tool" >/dev/null || { echo "h2_attacks: missing tool: $tool" >&2; exit 2; }
done
[[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import hpack' 2>/dev/null ||
    { echo "h2_attacks: needs Debian's python3 with python3-hpack (python3-h2)" >&2; exit 2; }
[[ -x $HOTPATH ]] || { echo "h2_attacks: hotpath binary not found: $HOTPATH" >&2; exit 2; }
[[ $ATTACKER_CPU == 0 || $ATTACKER_CPU == 1 ]] || { echo "h2_attacks: ATTACKER_CPU is 0 or 1" >&2; exit 2; }
[[ $RUNS =~ ^[1-9][0-9]*$ && $RATE =~ ^[1-9][0-9]*$ && $CONNECTIONS =~ ^[1-9][0-9]*$ ]] ||
    { echo "h2_attacks: RUNS, RATE and CONNECTIONS must be positive integers" >&2; exit 2; }
DSEC=${DURATION%s}
[[ $DSEC =~ ^[1-9][0-9]*$ ]] || { echo "h2_attacks: DURATION must be whole seconds (5s)" >&2; exit 2; }
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
T_START=$(date -u +%H:%M)

TMP=$(mktemp -d /tmp/h2_attacks.XXXXXX)
SERVER=
cleanup() {
    if [[ -n $SERVER ]]; then
        kill -TERM "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
taskset -c 0 "$HOTPATH" serve platform --port "$PORT" --threads 1 >"$TMP/server.log" 2>&1 &
SERVER=$!
for ((i = 0; i < 200; i++)); do
    curl -s -o /dev/null --max-time 1 --http2-prior-knowledge "http://127.0.0.1:$PORT/plaintext" && break
    sleep 0.05
done
((i < 200)) || { echo "h2_attacks: the server did not answer:" >&2; cat "$TMP/server.log" >&2; exit 1; }

refusals() { # the server's HTTP/2 refusals and cut-offs so far, all limits
    curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" |
        awk '/^hotpath_http2_refusals_total\{/ {n += $2} END {print n + 0}'
}
args_of() { # the attack client's arguments for an attack
    case $1 in
    rapid-reset | made-you-reset | continuation) echo "$1 100000" ;;
    hpack-bomb | bulk) echo "$1" ;;
    *) echo "flood $1 1000000" ;;
    esac
}

# One measured period: the ordinary clients at RATE, with ATTACK (or none) repeated meanwhile. Appends a line:
# attack run p50_us p99_us requests errors attacks_made refusals sent_median
measure() {
    local attack=$1 run=$2 r0 r1 end made=0
    r0=$(refusals)
    taskset -c 1 "$HOTPATH" load "http://127.0.0.1:$PORT/plaintext" --h2c --streams 10 -c "$CONNECTIONS" \
        -R "$RATE" -d "${DSEC}s" --json "$TMP/load.json" >"$TMP/load.out" 2>&1 &
    local load=$!
    : >"$TMP/sent"
    if [[ $attack == busy ]]; then
        timeout "$DSEC" chrt --idle 0 taskset -c "$ATTACKER_CPU" /usr/bin/python3 -c 'while True: pass' || true
    elif [[ $attack != none ]]; then
        end=$((SECONDS + DSEC))
        while ((SECONDS < end)); do
            # shellcheck disable=SC2046
            timeout 20 chrt --idle 0 taskset -c "$ATTACKER_CPU" /usr/bin/python3 "$ATTACKER" "$PORT" $(args_of "$attack") >>"$TMP/attack.out" 2>&1 ||
                true
            made=$((made + 1))
            tail -n 1 "$TMP/attack.out" | awk '{for (i = 1; i < NF; i++) if ($i == "sent" || $i == "refs") print $(i + 1)}' \
                >>"$TMP/sent"
        done
    fi
    wait "$load" || { cat "$TMP/load.out" >&2; exit 1; }
    r1=$(refusals)
    /usr/bin/python3 - "$TMP/load.json" "$attack" "$run" "$made" $((r1 - r0)) "$TMP/sent" >>"$TMP/res" <<'EOF'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
p = d['latency']['percentiles_us']
sent = [int(x) for x in open(sys.argv[6]).read().split()]
print(sys.argv[2], sys.argv[3], p['50'], p['99'], d['responses'], d['responses'] - d['successes'], sys.argv[4], sys.argv[5],
      int(statistics.median(sent)) if sent else 0)
EOF
    log "  $(tail -n 1 "$TMP/res")"
}

: >"$TMP/res"
for ((run = 1; run <= RUNS; run++)); do
    log "run $run/$RUNS: undisturbed, then each attack for $DURATION (ordinary clients at $RATE/s)"
    measure none "$run"
    for a in $ATTACKS; do
        log "run $run/$RUNS: $a"
        measure "$a" "$run"
    done
done
kill -0 "$SERVER" 2>/dev/null || { echo "h2_attacks: the server died:" >&2; cat "$TMP/server.log" >&2; exit 1; }

med() { sort -g | awk '{v[NR] = $1} END {if (!NR) print "nan"; else printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
col() { awk -v a="$1" '$1 == a {print '"$2"'}' "$TMP/res" | med; }
ratio() { # per run: p99 during the attack over the undisturbed p99, median
    awk -v a="$1" '{v[$1, $2] = $4; if ($2 > n) n = $2} END {for (r = 1; r <= n; r++) if (v["none", r] > 0) print v[a, r] / v["none", r]}' \
        "$TMP/res" | med
}
{
    echo
    echo "### HTTP/2 attacks against hotpath serve, ordinary clients at $RATE/s ($(date -u +%Y-%m-%d) $T_START-$(date -u +%H:%M) UTC, $(nproc) cores)"
    echo
    echo '```'
    echo "$CMDLINE"
    echo '```'
    echo
    echo "| attack | ordinary p50 µs | ordinary p99 µs | p99 / undisturbed | ordinary errors | attacks made | refusals counted | sent when cut off (median) |"
    echo "|--------|-----------------|-----------------|-------------------|-----------------|--------------|------------------|----------------------------|"
    for a in none $ATTACKS; do
        echo "| $a | $(col "$a" '$3') | $(col "$a" '$4') | $([[ $a == none ]] && echo 1.00 || ratio "$a") | $(col "$a" '$6') | $(col "$a" '$7') | $(col "$a" '$8') | $(col "$a" '$9') |"
    done
} | tee "$TMP/report"
[[ -z $OUT ]] || cat "$TMP/report" >>"$OUT"
