#!/usr/bin/env bash
# "Scaling out" figures (README): GET /v1/hello of examples/replicas.rs (rate-limited in Redis)
# served by one replica directly, by one replica behind haproxy, and by three replicas behind
# haproxy (round robin), all on one redis-server; and the Redis round trips per request
# (INFO commandstats around the three-replica load: the EVALSHA calls, not the commands the
# script runs inside). wrk: one thread, 64 connections.
#
#   bench/scripts/scale-out.sh [rounds (default 3)] [seconds per load (default 5)]
#
# Needs redis-server, redis-cli, haproxy and wrk (tests/tools/install.sh debian; wrk:
# bench/scripts/install-tools.sh). Every process it starts is stopped by PID.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
seconds=${2:-5}

cargo build --release --quiet --example replicas --features redis
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_http() {
    for _ in $(seq 1 100); do
        curl -fs "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "nothing answers on port $1" >&2
    return 1
}

redis=$(free_port)
redis-server --port "$redis" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
    >"$work/redis.log" 2>&1 &
pids+=("$!")
ports=()
for n in 1 2 3; do
    port=$(free_port)
    ports+=("$port")
    PORT=$port REPLICA="r$n" RATE=4000000000 REDIS_URL="redis://127.0.0.1:$redis/" \
        target/release/examples/replicas >"$work/r$n.log" 2>&1 &
    pids+=("$!")
done
for port in "${ports[@]}"; do wait_http "$port"; done

# haproxy FRONT PORT...: a haproxy as tests/replicas.rs configures it.
haproxy_over() {
    local front=$1 cfg="$work/haproxy-$1.cfg" n=0
    shift
    cat >"$cfg" <<CFG
global
    maxconn 4096
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    option forwardfor
    option http-no-delay
    option redispatch
    retries 3
frontend web
    bind 127.0.0.1:$front
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk GET /health
CFG
    for port in "$@"; do
        n=$((n + 1))
        echo "    server r$n 127.0.0.1:$port check" >>"$cfg"
    done
    haproxy -db -f "$cfg" >"$work/haproxy-$front.log" 2>&1 &
    pids+=("$!")
    wait_http "$front"
}
one=$(free_port)
three=$(free_port)
haproxy_over "$one" "${ports[0]}"
haproxy_over "$three" "${ports[@]}"

# load PORT: requests per second of one wrk run.
load() {
    wrk -t1 -c64 -d"${seconds}s" "http://127.0.0.1:$1/v1/hello" | awk '/Requests\/sec/ {print $2}'
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for port in "${ports[0]}" "$one" "$three"; do load "$port" >/dev/null; done # warm-up
: >"$work/direct"; : >"$work/one"; : >"$work/three"
for _ in $(seq 1 "$rounds"); do
    load "${ports[0]}" >>"$work/direct"
    load "$one" >>"$work/one"
    load "$three" >>"$work/three"
done
echo "machine: $(nproc) cores, $(uptime | sed 's/.*load average/load average/')"
for name in direct one three; do
    echo "$name: median $(median <"$work/$name") req/s of $(tr '\n' ' ' <"$work/$name")"
done
awk -v one="$(median <"$work/one")" -v three="$(median <"$work/three")" \
    'BEGIN {printf "three replicas / one, both behind haproxy: %.2f\n", three / one}'

# Round trips: Redis commands per request, over one load through haproxy to three replicas.
redis-cli -p "$redis" config resetstat >/dev/null
requests=$(wrk -t1 -c64 -d"${seconds}s" "http://127.0.0.1:$three/v1/hello" | awk '/requests in/ {print $1}')
commands=$(redis-cli -p "$redis" info commandstats | tr -d '\r' | grep -v '^cmdstat_info:' |
    sed -n 's/^cmdstat_\([a-z|]*\):calls=\([0-9]*\),.*/\1 \2/p')
# A script's own commands (GET, TIME, SET in the GCRA) are counted too: the round trips are
# the commands a client sent, EVALSHA and anything else but those.
trips=$(echo "$commands" | awk '$1 != "get" && $1 != "set" && $1 != "time" && $1 != "config|resetstat" {s += $2} END {print s + 0}')
echo "Redis commands during $requests requests: $(echo "$commands" | tr '\n' ' ')"
awk -v c="$trips" -v r="$requests" 'BEGIN {printf "Redis round trips per request: %.3f\n", c / r}'
