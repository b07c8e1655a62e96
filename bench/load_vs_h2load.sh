#!/usr/bin/env bash
# HTTP/2 load generators compared: hotpath load --h2c --streams M and h2load -m M against one nginx worker (CPU 0)
# serving h2c (prior knowledge), each generator on CPU 1. Prints requests/s and each generator's CPU seconds per
# million requests (user+sys from /proc), medians of RUNS, and hotpath's CPU per request over h2load's.
# Env: DURATION (10s) RUNS (3) CONNECTIONS (16) STREAMS (100) HOTPATH (build/release/hotpath) OUT (append Markdown)
#      BASELINE (another hotpath binary, e.g. the previous main's: measured in the same runs, its CPU per request
#      beside hotpath's, for an A/B of a change to the load generator)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=${DURATION:-10s} RUNS=${RUNS:-3} CONNECTIONS=${CONNECTIONS:-16} STREAMS=${STREAMS:-100}
HOTPATH=${HOTPATH:-$ROOT/build/release/hotpath} OUT=${OUT:-} NGINX=${NGINX:-/usr/sbin/nginx} BASELINE=${BASELINE:-}
[[ -z $BASELINE || -x $BASELINE ]] || { echo "load_vs_h2load: baseline binary not found: $BASELINE" >&2; exit 2; }
for tool in h2load taskset getconf awk sed sort curl; do
    command -v "$tool" >/dev/null || { echo "load_vs_h2load: missing tool: $tool" >&2; exit 2; }
done
[[ -x $HOTPATH ]] || { echo "load_vs_h2load: hotpath binary not found: $HOTPATH" >&2; exit 2; }
TCK=$(getconf CLK_TCK)
DSEC=${DURATION%s}
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# --- nginx (h2c) on CPU 0 (bench/generators.sh), stopped by PID on exit ----------------------
# nginx 1.22's h2c: "listen ... http2" speaks HTTP/2 with prior knowledge only.
source "$ROOT/bench/generators.sh"
nginx_on_cpu0 load_vs_h2load http2 4096
URL="http://127.0.0.1:$PORT/plaintext"
for ((i = 0; i < 100; i++)); do curl -s -o /dev/null --max-time 1 --http2-prior-knowledge "$URL" && break; sleep 0.1; done

: >"$TMP/res"
for ((run = 1; run <= RUNS; run++)); do
    # The two take turns going first.
    if ((run % 2)); then order=(hotpath h2load); else order=(h2load hotpath); fi
    [[ -z $BASELINE ]] || { if ((run % 2)); then order=(baseline "${order[@]}"); else order+=(baseline); fi; }
    for g in "${order[@]}"; do
        log "run $run/$RUNS: $g"
        if [[ $g == hotpath || $g == baseline ]]; then
            bin=$HOTPATH
            [[ $g == baseline ]] && bin=$BASELINE
            echo "$g $(measure "$g" "$bin" load --h2c -t1 -c"$CONNECTIONS" --streams "$STREAMS" \
                -d"$DURATION" -q "$URL")" >>"$TMP/res"
        else
            echo "h2load $(measure h2load h2load -t1 -c"$CONNECTIONS" -m"$STREAMS" -D"$DSEC" "$URL")" >>"$TMP/res"
        fi
    done
done
grep -q "Protocol     h2c" "$TMP/hotpath.out" || { echo "load_vs_h2load: hotpath did not speak h2c:" >&2; cat "$TMP/hotpath.out" >&2; exit 1; }

# --- medians and ratios --------------------------------------------------------------------
table() {
    echo "generator|requests/s|CPU s per million requests|CPU per request vs h2load"
    local h2_cpm
    h2_cpm=$(awk -v r="$(med h2load 2)" -v c="$(med h2load 3)" 'BEGIN {printf "%.3f", (r > 0 ? c / r * 1e6 : 0)}')
    for g in hotpath ${BASELINE:+baseline} h2load; do
        awk -v g="$g" -v r="$(med $g 2)" -v c="$(med $g 3)" -v d="$DSEC" -v w="$h2_cpm" \
            'BEGIN {cpm = r > 0 ? c / r * 1e6 : 0; printf "%s|%.0f|%.2f|%.2f\n", g, r / d, cpm, (w > 0 ? cpm / w : 0)}'
    done
}
table | awk -F'|' '{printf "%-10s %12s %28s %26s\n", $1, $2, $3, $4}'
echo "runs: $RUNS x $DURATION, -t1 -c$CONNECTIONS, $STREAMS streams each, on CPU 1 against nginx h2c (one worker) on CPU 0; medians"
if [[ -n $BASELINE ]]; then
    echo "hotpath / baseline CPU per request: $(awk -v r1="$(med hotpath 2)" -v c1="$(med hotpath 3)" -v r0="$(med baseline 2)" \
        -v c0="$(med baseline 3)" 'BEGIN {printf "%.3f", (r1 > 0 && r0 > 0 && c0 > 0 ? (c1 / r1) / (c0 / r0) : 0)}')"
fi
if [[ -n $OUT ]]; then
    {
        echo
        echo "### HTTP/2 load generators vs nginx h2c /plaintext, $(date -u +%F)"
        echo
        echo "\`DURATION=$DURATION RUNS=$RUNS CONNECTIONS=$CONNECTIONS STREAMS=$STREAMS bench/load_vs_h2load.sh\`"
        echo
        table | sed 's/|/ | /g; s/^/| /; s/$/ |/; 1p; 1s/[^|]/-/g' | sed '2s/ /-/g'
    } >>"$OUT"
fi
