#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, then configures, builds and runs tests/consumer against it:
# once with the Boost hotpath was built with, once with a newer one (the installed config asks for a minimum).
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
include_dir="$work/prefix/include/hotpath"
# The machinery stays inside: none of it is installed.
for internal in net/uring.hpp net/epoll.hpp net/epoll_transport.hpp net/listener.hpp net/transport.hpp server/worker.hpp server/server_connection.hpp server/request_state.hpp \
    client/pool.hpp load/worker.hpp; do
    if [ -e "$include_dir/$internal" ]; then
        echo "consumer: an internal header was installed: $internal" >&2
        exit 1
    fi
done
# Each installed header compiles on its own, in a translation unit of its own, as a user includes it
# (#include <hotpath/...>): none may need another included first, nor include a header that was not installed.
mkdir -p "$work/headers"
(cd "$work/prefix/include" && find hotpath -name '*.hpp' | sort) | while read -r header; do
    echo "#include <$header>" >"$work/headers/$(echo "$header" | tr '/.' '__').cpp"
done
headers=$(find "$work/headers" -name '*.cpp' | sort | tr '\n' ';')
test -n "$headers" || { echo "consumer: no header installed" >&2; exit 1; }
test -e "$include_dir/server.hpp" || { echo "consumer: <hotpath/server.hpp> not installed" >&2; exit 1; }
cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
    -DHOTPATH_ALL_HEADERS="$headers" >/dev/null
cmake --build "$work/build" >/dev/null
test "$(find "$work/build" -name "*.hpp.cpp.o" -o -name "*_hpp.cpp.o" | wc -l)" -eq "$(echo "$headers" | tr ';' '\n' | grep -c .)" ||
    { echo "consumer: not every header was compiled on its own" >&2; exit 1; }
"$work/build/consumer"
# A user's profiling build: hotpath::alloc_counter linked in, the route report counts allocations.
"$work/build/consumer_counting" >/dev/null
echo "hotpath::alloc_counter counts a user's service's allocations"

# A Boost that says it is 1.99.0 and forwards to the real one, which is hidden from the search (under /lib as
# well, where a merged /usr shows it too): what a consumer with a newer Boost than hotpath's build sees.
real_dir=$(sed -n 's/^Boost_DIR:PATH=//p' "$build_dir/CMakeCache.txt")
real_version=$(sed -n 's/^set(PACKAGE_VERSION \(.*\))$/\1/p' "$real_dir/BoostConfigVersion.cmake")
newer="$work/newer-boost/Boost-1.99.0"
mkdir -p "$newer"
cat >"$newer/BoostConfig.cmake" <<CONFIG
set(Boost_VERSION $real_version)
include("$real_dir/BoostConfig.cmake")
set(Boost_VERSION 1.99.0)
CONFIG
sed "s/^set(PACKAGE_VERSION .*)$/set(PACKAGE_VERSION 1.99.0)/" "$real_dir/BoostConfigVersion.cmake" >"$newer/BoostConfigVersion.cmake"
cmake -S "$source_dir" -B "$work/build-newer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
    -DBoost_DIR="$newer" "-DCMAKE_IGNORE_PATH=$real_dir;${real_dir#/usr}" >"$work/newer.log" 2>&1 ||
    { echo "the installed hotpath refuses a newer Boost:"; grep -A4 "CMake Error" "$work/newer.log"; exit 1; }
cmake --build "$work/build-newer" >/dev/null
"$work/build-newer/consumer" >/dev/null
echo "a newer Boost is accepted"
