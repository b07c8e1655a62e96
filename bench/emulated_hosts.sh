#!/usr/bin/env bash
# One plan from N emulated hosts against one target: N `hotpath load` processes, each in a network namespace of
# its own behind a veth pair (as N machines behind their network cards), running --segment I/N and started
# together (--start-at), their results merged; against the same plan from one process on loopback, in the same run.
# Prints, as medians of RUNS, the answers, requests/s and latency percentiles of both and their ratios: the merged
# figures should be the one process's within noise. Needs root (ip netns). Server on CPU 0, generators on CPU 1.
# Env: HOSTS (3) RATE (20000) DURATION (5s) RUNS (3) HOTPATH (build/release/hotpath) OUT (append Markdown)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HOSTS=${HOSTS:-3} RATE=${RATE:-20000} DURATION=${DURATION:-5s} RUNS=${RUNS:-3}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath}
[[ $(id -u) -eq 0 ]] || { echo "emulated_hosts: network namespaces need root" >&2; exit 2; }
[[ -x $HOTPATH ]] || { echo "emulated_hosts: $HOTPATH not found (cmake --build build/release)" >&2; exit 2; }
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
TMP=$(mktemp -d)
TAG=hpb$(($$ % 10000))
SERVER=
cleanup() {
    [[ -n $SERVER ]] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    for ((i = 0; i < HOSTS; i++)); do ip netns del "${TAG}h$i" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT

for ((i = 0; i < HOSTS; i++)); do
    ip netns add "${TAG}h$i"
    ip link add "${TAG}o$i" type veth peer name "${TAG}i$i"
    ip link set "${TAG}i$i" netns "${TAG}h$i"
    ip addr add "10.213.$i.1/30" dev "${TAG}o$i"
    ip link set "${TAG}o$i" up
    ip -n "${TAG}h$i" addr add "10.213.$i.2/30" dev "${TAG}i$i"
    ip -n "${TAG}h$i" link set "${TAG}i$i" up
    ip -n "${TAG}h$i" link set lo up
    ip -n "${TAG}h$i" route add default via "10.213.$i.1"
done
taskset -c 0 "$HOTPATH" serve platform --address 0.0.0.0 --port 0 --threads 1 >"$TMP/server.log" 2>&1 &
SERVER=$!
for ((t = 0; t < 50; t++)); do grep -q 'http://' "$TMP/server.log" 2>/dev/null && break; sleep 0.1; done
PORT=$(grep -o 'http://0.0.0.0:[0-9]*' "$TMP/server.log" | head -1 | cut -d: -f3)
PLAN=(-R "$RATE" -d "$DURATION" -c 64 -t 1 -q --no-thresholds)

# One JSON's answers, requests/s and percentiles (µs): "responses rps p50 p90 p99".
figures() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["latency"]["percentiles_us"]
print(d["responses"], round(d["requests_per_second"]), p["50"], p["90"], p["99"])' "$1"
}

: >"$TMP/res"
for ((run = 1; run <= RUNS; run++)); do
    log "run $run/$RUNS: one process on loopback"
    taskset -c 1 "$HOTPATH" load "http://127.0.0.1:$PORT/plaintext" "${PLAN[@]}" --json "$TMP/one.json" >/dev/null
    echo "one $(figures "$TMP/one.json")" >>"$TMP/res"
    # The same split twice: its processes on loopback (what N processes on one core cost), then each in its
    # namespace (what the veth hop adds to that).
    for where in split hosts; do
        log "run $run/$RUNS: $HOSTS processes, $where"
        AT=$(($(date +%s) + 2))
        pids=()
        for ((i = 0; i < HOSTS; i++)); do
            if [[ $where == hosts ]]; then
                in=(ip netns exec "${TAG}h$i") url="http://10.213.$i.1:$PORT/plaintext"
            else
                in=() url="http://127.0.0.1:$PORT/plaintext"
            fi
            "${in[@]}" taskset -c 1 "$HOTPATH" load "$url" "${PLAN[@]}" --segment "$i/$HOSTS" --start-at "$AT" \
                --json "$TMP/part-$i.json" >/dev/null &
            pids+=($!)
        done
        wait "${pids[@]}"
        "$HOTPATH" load merge "$TMP"/part-*.json >"$TMP/merged.json" 2>/dev/null
        echo "$where $(figures "$TMP/merged.json")" >>"$TMP/res"
    done
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
col() { awk -v k="$1" -v c="$2" '$1 == k {print $c}' "$TMP/res" | median; }
{
    echo "| generators | answers | requests/s | p50 µs | p90 µs | p99 µs |"
    echo "|---|---:|---:|---:|---:|---:|"
    for k in one split hosts; do
        case $k in
        one) name="one process, loopback" ;;
        split) name="$HOSTS processes, loopback, merged" ;;
        hosts) name="$HOSTS emulated hosts (netns + veth), merged" ;;
        esac
        echo "| $name | $(col $k 2) | $(col $k 3) | $(col $k 4) | $(col $k 5) | $(col $k 6) |"
    done
    echo
    ratio() { awk -v a="$(col "$1" "$3")" -v b="$(col "$2" "$3")" 'BEGIN {printf "%.2f", a / b}'; }
    echo "emulated hosts / $HOSTS processes on loopback (the veth hop): p50 $(ratio hosts split 4)," \
        "p90 $(ratio hosts split 5), p99 $(ratio hosts split 6); $HOSTS processes / one (sharing CPU 1):" \
        "p50 $(ratio split one 4), p90 $(ratio split one 5), p99 $(ratio split one 6)" \
        "(medians of $RUNS runs of -R $RATE for $DURATION, server on CPU 0, generators on CPU 1)"
} | tee -a "${OUT:-/dev/null}"
