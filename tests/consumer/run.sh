#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, then configures, builds and runs tests/consumer against it.
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
include_dir="$work/prefix/include/hotpath"
# The machinery stays inside: none of it is installed.
for internal in net/uring.hpp net/listener.hpp net/transport.hpp server/worker.hpp server/connection.hpp \
    client/pool.hpp load/worker.hpp; do
    if [ -e "$include_dir/$internal" ]; then
        echo "consumer: an internal header was installed: $internal" >&2
        exit 1
    fi
done
# Every installed header in one translation unit: none may include a header that was not installed.
(cd "$include_dir" && find . -name '*.hpp' | sort | sed 's|^\./\(.*\)$|#include "\1"|') >"$work/all_headers.cpp"
cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
    -DHOTPATH_ALL_HEADERS="$work/all_headers.cpp" >/dev/null
cmake --build "$work/build" >/dev/null
test -n "$(find "$work/build" -name "all_headers.cpp.o")" || { echo "consumer: all_headers not built" >&2; exit 1; }
"$work/build/consumer"
