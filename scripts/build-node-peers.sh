#!/usr/bin/env bash
# Installs the Node.js test services (peers/node/*, see peers/node/inventory/README.md) into OUT_DIR/node/<name>/
# (default build/peers): the folder's files copied there and `npm ci` run there, so that node_modules live in the
# build folder, never in the source tree. The packages come from the npm registry, at the versions
# package-lock.json pins. A service whose sources are older than its stamp (OUT_DIR/node/<name>/.installed) is
# left as it is. Without node and npm, or with a Node older than the packages need (18.19, or 20.6 on 20 and
# later), it says so in one line and exits 0: whatever uses these services skips them.
set -euo pipefail
# A relative OUT_DIR is taken from where the script is called.
OUT_DIR=$(realpath -m "${1:-$(dirname "$0")/../build/peers}")
cd "$(dirname "$0")/.."
NODE=${NODE:-node}
NPM=${NPM:-npm}
PEERS=(inventory otlp-receiver)

if ! command -v "$NODE" >/dev/null 2>&1 || ! command -v "$NPM" >/dev/null 2>&1; then
    echo "build-node-peers: node or npm not found: the Node.js services are skipped"
    exit 0
fi
version=$("$NODE" --version) # v20.19.2
IFS=. read -r major minor _ <<<"${version#v}"
if ((major < 18 || (major == 18 && minor < 19) || (major == 20 && minor < 6) || major == 19)); then
    echo "build-node-peers: node $version does not meet the packages' ^18.19.0 || >=20.6.0: the Node.js services are skipped"
    exit 0
fi

for name in "${PEERS[@]}"; do
    src=peers/node/$name
    dest=$OUT_DIR/node/$name
    stamp=$dest/.installed
    if [[ -f $stamp && -z $(find "$src" -path "$src/node_modules" -prune -o -type f -newer "$stamp" -print -quit) ]]; then
        echo "build-node-peers: $name up to date ($dest)"
        continue
    fi
    mkdir -p "$dest"
    rm -f "$stamp"
    find "$src" -maxdepth 1 -type f -exec cp {} "$dest/" \;
    (cd "$dest" && "$NPM" ci --no-audit --no-fund --loglevel=error >/dev/null)
    touch "$stamp"
    echo "build-node-peers: $name → $dest ($NODE $version)"
done
