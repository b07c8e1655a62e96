#!/usr/bin/env bash
# Fails when a layer's code includes a layer above it: each library of src/hotpath may include only the layers it is
# built on (src/CMakeLists.txt links them the same way). Also refuses the old include form ("server/app.hpp"):
# every hotpath header is included as <hotpath/server/app.hpp>. Run by ctest (layers_check); exit 1 with one line
# per include that breaks a rule.
set -euo pipefail
cd "$(dirname "$0")/../src/hotpath"

declare -A allowed=(
    [core]="core"
    [metrics]="metrics core"
    [net]="net metrics core"
    [http]="http core"
    [server]="server http net metrics core"
    [client]="client http net metrics core"
    [load]="load http net metrics core"
    [probe]="probe load http net metrics core"
    [load_out]="load_out probe load server http net metrics core"
    [lab]="lab probe load server http net metrics core"
)

bad=0
for layer in "${!allowed[@]}"; do
    [[ -d $layer ]] || { echo "check-layers: no folder src/hotpath/$layer" >&2; exit 1; }
done
for dir in */; do
    layer=${dir%/}
    if [[ -z ${allowed[$layer]+x} ]]; then
        echo "src/hotpath/$layer: a layer the table in scripts/check-layers.sh does not know" >&2
        bad=1
        continue
    fi
    while IFS=: read -r file line text; do
        used=$(sed -n 's|.*#include <hotpath/\([a-z_]*\)/.*|\1|p' <<<"$text")
        if [[ -n $used && " ${allowed[$layer]} " != *" $used "* ]]; then
            echo "src/hotpath/$file:$line: $layer includes $used, a layer above it: $text" >&2
            bad=1
        fi
    done < <(grep -rn --include='*.hpp' --include='*.cpp' '#include <hotpath/' "$layer" || true)
    while IFS=: read -r file line text; do
        echo "src/hotpath/$file:$line: a hotpath header is included as <hotpath/...>: $text" >&2
        bad=1
    done < <(grep -rnE --include='*.hpp' --include='*.cpp' \
        '#include "(core|metrics|net|http|server|client|load|load_out|probe|lab)/' "$layer" || true)
done
if [[ $bad -eq 0 ]]; then
    echo "check-layers: every include points down"
fi
exit $bad
