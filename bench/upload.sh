#!/usr/bin/env bash
# Case 4's file store as bodies grow: uploads of 1 MB to 1 GB to `hotpath serve profile --data`, one loop pinned
# to CPU 0, curl on CPU 1. Per size: MB/s of the upload (curl's, fsync and rename included) and of the download, and
# the server's peak RSS (VmHWM) after it: memory must not grow with the body. Repeats REPEAT times, prints medians.
# Usage: bench/upload.sh [BINARY]
# Env: SIZES_MB ("1 16 256 1024") REPEAT (3) DATA (a temporary folder, removed at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/hotpath}
SIZES_MB=${SIZES_MB:-"1 16 256 1024"}
REPEAT=${REPEAT:-3}
WORK=$(mktemp -d)
DATA=${DATA:-$WORK/data}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
server=""
cleanup() {
    [[ -n $server ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
peak_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

taskset -c 0 "$BIN" serve profile --threads 1 --port "$PORT" --data "$DATA" --max-file-bytes $((2 << 30)) \
    --delay 1ms >"$WORK/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/profile/async/1" && break
    sleep 0.05
done
echo "upload: $(date -u +%FT%TZ) BIN=$BIN SIZES_MB=\"$SIZES_MB\" REPEAT=$REPEAT (server: 1 loop on CPU 0; curl on CPU 1)"
echo "| body | upload MB/s | download MB/s | server peak RSS after |"
echo "|---|---|---|---|"
for mb in $SIZES_MB; do
    head -c $((mb << 20)) /dev/urandom >"$WORK/body"
    up=()
    down=()
    for r in $(seq "$REPEAT"); do
        up+=("$(taskset -c 1 curl -s -o /dev/null -T "$WORK/body" -w '%{speed_upload}' \
            "http://127.0.0.1:$PORT/files/bench/f$mb")")
        down+=("$(taskset -c 1 curl -s -o /dev/null -w '%{speed_download}' "http://127.0.0.1:$PORT/files/bench/f$mb")")
    done
    cmp -s "$WORK/body" "$DATA/bench/f$mb" || { echo "upload: the stored file differs from the body" >&2; exit 1; }
    rm -f "$DATA/bench/f$mb"
    up_mb=$(printf '%s\n' "${up[@]}" | median | awk '{printf "%.0f", $1 / 1048576}')
    down_mb=$(printf '%s\n' "${down[@]}" | median | awk '{printf "%.0f", $1 / 1048576}')
    echo "| $mb MB | $up_mb | $down_mb | $(($(peak_kb "$server") / 1024)) MB |"
done
