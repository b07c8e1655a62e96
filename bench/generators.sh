# Shared by bench/load_vs_wrk.sh and bench/load_vs_h2load.sh (sourced, not run): one nginx worker on CPU 0 as the
# target, and the measure of one load generator run on CPU 1. The caller sets ROOT, NGINX, DSEC and TCK first.

# Starts nginx (bench/nginx.conf.in) on CPU 0 in a new folder TMP, on a free PORT, stopped by PID on exit. Arguments:
# a name for the folder, the parameters added to the listen directive ("" or "http2" for h2c), and nginx's
# worker_connections. Sets TMP, PORT and NGINX_PID.
nginx_on_cpu0() {
    local name=$1 listen=$2 worker_connections=$3
    TMP=$(mktemp -d "/tmp/$name.XXXXXX")
    NGINX_PID=
    trap 'if [[ -n $NGINX_PID ]]; then kill -TERM "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; fi; rm -rf "$TMP"' EXIT
    trap 'exit 130' INT TERM
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 18181)
    sed -e "s|@PREFIX@|$TMP|g" -e "s|@PORT@|$PORT|g" \
        -e "s|worker_connections 4096;|worker_connections $worker_connections;|" \
        -e "s|listen 127.0.0.1:$PORT;|listen 127.0.0.1:$PORT${listen:+ $listen};|" \
        "$ROOT/bench/nginx.conf.in" >"$TMP/nginx.conf"
    grep -q "listen 127.0.0.1:$PORT${listen:+ $listen};" "$TMP/nginx.conf" ||
        { echo "$name: bench/nginx.conf.in's listen line changed" >&2; exit 2; }
    taskset -c 0 "$NGINX" -p "$TMP" -e "$TMP/error.log" -c "$TMP/nginx.conf" >"$TMP/nginx.out" 2>&1 &
    NGINX_PID=$!
}

# One run: the generator on CPU 1, its CPU ticks read until it exits. The generator is the process itself (taskset
# execs it), so /proc/PID/stat's utime+stime is its CPU; the last reading is at most 50 ms before it exits. A run
# over its time plus 30 s is killed. measure NAME CMD... prints "requests cpu_seconds"; NAME says how to read the
# requests from the output (wrk; hotpath or baseline: hotpath load; h2load).
measure() {
    local name=$1; shift
    taskset -c 1 "$@" >"$TMP/$name.out" 2>&1 &
    local pid=$! ticks=0 t deadline=$((SECONDS + DSEC + 30))
    while kill -0 "$pid" 2>/dev/null; do
        t=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $12 + $13}') || true
        [[ -n $t ]] && ticks=$t
        ((SECONDS < deadline)) || kill -KILL "$pid" 2>/dev/null || true
        sleep 0.05
    done
    wait "$pid" || true
    local req
    case $name in
        wrk) req=$(awk '/requests in/ {print $1}' "$TMP/$name.out") ;;
        hotpath | baseline) req=$(awk '/responses in/ {print $2}' "$TMP/$name.out") ;;
        h2load) req=$(awk '/^requests:/ {print $8}' "$TMP/$name.out") ;;
    esac
    echo "${req:-0} $(awk -v t="$ticks" -v h="$TCK" 'BEGIN {printf "%.3f", t / h}')"
}

# The median of column COLUMN over the rows of generator NAME in TMP/res ("name requests cpu_seconds" rows).
med() { awk -v n="$1" -v c="$2" '$1 == n {print $c}' "$TMP/res" | sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
