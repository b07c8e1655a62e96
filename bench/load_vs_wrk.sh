#!/usr/bin/env bash
# Load generators compared: wrk, hotpath load and h2load against one nginx worker (CPU 0), each on CPU 1.
# Prints requests/s and each generator's CPU seconds per million requests (user+sys from /proc), medians.
# Env: DURATION (10s) RUNS (3) CONNECTIONS (64) HOTPATH (build/release/hotpath) OUT (append Markdown)
#      BASELINE (another hotpath binary, e.g. the previous main's: measured in the same runs, alternating, as
#      "baseline", with its CPU per request against this one's).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=${DURATION:-10s} RUNS=${RUNS:-3} CONNECTIONS=${CONNECTIONS:-64}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} OUT=${OUT:-} NGINX=${NGINX:-/usr/sbin/nginx} BASELINE=${BASELINE:-}
for tool in wrk h2load taskset getconf awk sed sort curl; do
    command -v "$tool" >/dev/null || { echo "load_vs_wrk: missing tool: $tool" >&2; exit 2; }
done
[[ -x $HOTPATH ]] || { echo "load_vs_wrk: hotpath binary not found: $HOTPATH" >&2; exit 2; }
[[ -z $BASELINE || -x $BASELINE ]] || { echo "load_vs_wrk: baseline binary not found: $BASELINE" >&2; exit 2; }
TCK=$(getconf CLK_TCK)
DSEC=${DURATION%s}
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# --- nginx on CPU 0 (bench/generators.sh), stopped by PID on exit ----------------------------
source "$ROOT/bench/generators.sh"
# Room for every connection of the largest runs (CONNECTIONS=9000) twice over (at 9,100 for 9,000 nginx reuses
# connections, closing them before they are answered): its worker_connections, at least 4096.
nginx_on_cpu0 load_vs_wrk "" $((2 * CONNECTIONS + 64 > 4096 ? 2 * CONNECTIONS + 64 : 4096))
URL="http://127.0.0.1:$PORT/plaintext"
for ((i = 0; i < 100; i++)); do curl -s -o /dev/null --max-time 1 "$URL" && break; sleep 0.1; done

: >"$TMP/res"
for ((run = 1; run <= RUNS; run++)); do
    log "run $run/$RUNS: wrk"
    echo "wrk $(measure wrk wrk -t1 -c"$CONNECTIONS" -d"$DURATION" "$URL")" >>"$TMP/res"
    # With a baseline, the two hotpath binaries take turns going first.
    if [[ -n $BASELINE && $((run % 2)) -eq 1 ]]; then
        log "run $run/$RUNS: baseline hotpath load"
        echo "baseline $(measure baseline "$BASELINE" load -t1 -c"$CONNECTIONS" -d"$DURATION" -q "$URL")" >>"$TMP/res"
    fi
    log "run $run/$RUNS: hotpath load"
    echo "hotpath $(measure hotpath "$HOTPATH" load -t1 -c"$CONNECTIONS" -d"$DURATION" -q "$URL")" >>"$TMP/res"
    if [[ -n $BASELINE && $((run % 2)) -eq 0 ]]; then
        log "run $run/$RUNS: baseline hotpath load"
        echo "baseline $(measure baseline "$BASELINE" load -t1 -c"$CONNECTIONS" -d"$DURATION" -q "$URL")" >>"$TMP/res"
    fi
    log "run $run/$RUNS: h2load"
    echo "h2load $(measure h2load h2load --h1 -t1 -c"$CONNECTIONS" -D"$DSEC" "$URL")" >>"$TMP/res"
done

# --- medians and ratios --------------------------------------------------------------------
table() {
    echo "generator|requests/s|CPU s per million requests|CPU per request vs wrk"
    local wrk_cpm
    wrk_cpm=$(awk -v r="$(med wrk 2)" -v c="$(med wrk 3)" 'BEGIN {printf "%.3f", c / r * 1e6}')
    local generators=(wrk hotpath)
    [[ -n $BASELINE ]] && generators+=(baseline)
    generators+=(h2load)
    for g in "${generators[@]}"; do
        local r c
        r=$(med $g 2); c=$(med $g 3)
        awk -v g="$g" -v r="$r" -v c="$c" -v d="$DSEC" -v w="$wrk_cpm" \
            'BEGIN {cpm = r > 0 ? c / r * 1e6 : 0; printf "%s|%.0f|%.2f|%.2f\n", g, r / d, cpm, (w > 0 ? cpm / w : 0)}'
    done
}
table | awk -F'|' '{printf "%-10s %12s %28s %24s\n", $1, $2, $3, $4}'
echo "runs: $RUNS x $DURATION, -t1 -c$CONNECTIONS on CPU 1 against nginx (one worker) on CPU 0; medians"
if [[ -n $BASELINE ]]; then
    awk -v a="$(med hotpath 3)" -v ar="$(med hotpath 2)" -v b="$(med baseline 3)" -v br="$(med baseline 2)" \
        'BEGIN {if (ar > 0 && br > 0) printf "hotpath / baseline CPU per request: %.3f\n", (a / ar) / (b / br)}'
    # The same ratio run by run (each run's two binaries back to back), and its median: the machine's drift over
    # the sitting moves both sides of a pair alike, where the medians above may take their rows from different runs.
    awk '$1 == "hotpath" {h[++nh] = $2 > 0 ? $3 / $2 : 0} $1 == "baseline" {b[++nb] = $2 > 0 ? $3 / $2 : 0}
         END {for (i = 1; i <= nh && i <= nb; i++) if (h[i] > 0 && b[i] > 0) printf "%.3f\n", h[i] / b[i]}' \
        "$TMP/res" | sort -g |
        awk '{v[NR] = $1; all = all " " $1}
             END {if (NR) printf "paired, run by run:%s; median %.3f\n", all, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'
fi
if [[ -n $OUT ]]; then
    {
        echo
        echo "### load generators vs nginx /plaintext, $(date -u +%F)"
        echo
        echo "\`DURATION=$DURATION RUNS=$RUNS CONNECTIONS=$CONNECTIONS${BASELINE:+ BASELINE=<binary>} bench/load_vs_wrk.sh\`"
        echo
        table | sed 's/|/ | /g; s/^/| /; s/$/ |/; 1p; 1s/[^|]/-/g' | sed '2s/ /-/g'
    } >>"$OUT"
fi
