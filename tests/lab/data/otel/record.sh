#!/usr/bin/env bash
# Records the node_*.prom fixtures beside this file (README.md): for each case a fresh inventory service and
# pricing service from the build folder, a scrape of /metrics before, during (2.5 s in) and after (1 s past the
# end of) a 5 s load by hotpath load -c 16, and the load's report and JSON in OUT (default /tmp/otel-record).
# bash tests/lab/data/otel/record.sh [HOTPATH] [SERVICE_DIR]      (CASES="sequential together checksum" by default)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
HOTPATH=${1:-$HERE/../../../../build/release/hotpath}
SERVICE_DIR=$(realpath -m "${2:-$HERE/../../../../build/peers/node/inventory}")
OUT=${OUT:-/tmp/otel-record}
PORT=5300 METRICS=9464 PRICING=5301
mkdir -p "$OUT"

wait_for() { # LOG: the service's ready line
    for _ in $(seq 100); do grep -q 'listening' "$1" && return 0; sleep 0.1; done
    echo "record: no ready line in $1" >&2; return 1
}

# One scrape into a fixture, the machine's absolute paths in target_info made relative (the project names no
# machine's paths): the node executable and the service's script.
scrape() { # FILE
    curl -sf http://127.0.0.1:$METRICS/metrics |
        sed -e "s|$(command -v node)|node|g" -e "s|$SERVICE_DIR/server.js|build/peers/node/inventory/server.js|g" >"$1"
}

record() { # NAME PATH
    local name=$1 path=$2 pricing service load
    (cd "$SERVICE_DIR" && exec node server.js --role pricing --port $PRICING) >"$OUT/$name.pricing.log" 2>&1 &
    pricing=$!
    (cd "$SERVICE_DIR" && exec node server.js --port $PORT --metrics-port $METRICS \
        --downstream http://127.0.0.1:$PRICING) >"$OUT/$name.service.log" 2>&1 &
    service=$!
    wait_for "$OUT/$name.pricing.log" && wait_for "$OUT/$name.service.log"
    sleep 1
    scrape "$HERE/${name}_before.prom"
    "$HOTPATH" load "http://127.0.0.1:$PORT$path" -c 16 -d 5s -q --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 &
    load=$!
    sleep 2.5
    scrape "$HERE/${name}_during.prom"
    wait $load
    sleep 1
    scrape "$HERE/${name}_after.prom"
    kill -TERM $service $pricing
    wait $service $pricing || true
    echo "== $name: GET $path"
    cat "$OUT/$name.txt"
}

for case in ${CASES:-sequential together checksum}; do
    case $case in
    sequential) record node_inventory_sequential /inventory/SKU-1 ;;
    together) record node_inventory_together /inventory/together/SKU-1 ;;
    checksum) record node_checksum /checksum/20 ;;
    *) echo "record: no case $case" >&2; exit 2 ;;
    esac
done
