#!/usr/bin/env bash
# Installs the Debian 12 packages hotpath needs to build, test and benchmark; skips those present. With
# --build-only, only what building the release preset needs (deploy/Dockerfile's build stage).
set -euo pipefail

build_packages=(
    g++ cmake ninja-build pkg-config
    libboost1.81-dev libboost-json1.81-dev libfmt-dev libcli11-dev liburing-dev
    libgtest-dev libgmock-dev libbenchmark-dev libsqlite3-dev libtomlplusplus-dev
    # TLS: OpenSSL 3, and its command for the tests' throw-away certificates (scripts/make-test-certs.sh)
    libssl-dev openssl
    # HTTP/2's framing: nghttp2 (src/hotpath/http/h2_session.cpp)
    libnghttp2-dev
    # hotpath load --out: Prometheus remote-write and OTLP messages, snappy's block compression (src/hotpath/load_out)
    libprotobuf-dev protobuf-compiler libsnappy-dev
)
packages=(
    "${build_packages[@]}"
    # sanitizers and fuzzing (clang 14)
    clang-14 libclang-rt-14-dev
    # peers for tests and benchmarks
    curl nginx-light wrk apache2-utils nghttp2-client nghttp2-server python3-h2 procps
    # script(1): a terminal for the CLI tests of the progress display
    bsdutils
    # promtool checks the metrics exposition
    prometheus
    # scale-out: HAProxy in front of several instances (deploy/haproxy), YAML of the Kubernetes manifests (deploy/k8s)
    haproxy python3-yaml
    # hotpath lab's report.html: headless chromium opens the page in lab_report_browser_test (npm: below)
    chromium
)

if [ "${1:-}" = "--build-only" ]; then
    packages=("${build_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

# npm installs the pinned uPlot of the lab's report.html at configure (web/package-lock.json). Debian's npm
# package only when no npm command exists: NodeSource's nodejs bundles npm and conflicts with Debian's.
if ! command -v npm >/dev/null 2>&1; then
    missing+=(npm)
fi
# kubectl renders deploy/k8s (kubectl kustomize) in the manifests' test: Debian's client only when no kubectl
# command exists (another package's kubectl owns the same path).
if [ "${1:-}" != "--build-only" ] && ! command -v kubectl >/dev/null 2>&1; then
    missing+=(kubernetes-client)
fi

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages and npm present"
    exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    sudo=sudo
else
    sudo=
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The nginx package starts a system service on install; hotpath runs its own nginx instances.
# So does haproxy's (deploy/haproxy's tests run their own).
for service in nginx haproxy; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
        $sudo systemctl stop "$service" || true
    fi
done
echo "install-deps: done"
