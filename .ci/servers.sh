# Sourced by the CI scripts that run the examples: free ports, starting an example and waiting
# until it answers, stopping every started example on exit. The caller sets `work` (a temporary
# directory for logs) and `examples` (the directory of the built examples).

pids=()
stop_servers() {
    for pid in ${pids[@]+"${pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start NAME PORT [VAR=VALUE...]: starts an example on PORT; waits until /openapi.json answers.
start() {
    local name=$1 port=$2
    shift 2
    env PORT="$port" "$@" "$examples/$name" >"$work/$name.log" 2>&1 &
    pids+=("$!")
    for _ in $(seq 1 100); do
        # Ours, not another server that took the port first.
        if ! kill -0 "${pids[-1]}" 2>/dev/null; then
            echo "the $name example exited:" >&2
            cat "$work/$name.log" >&2
            return 1
        fi
        if python3 -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$port/openapi.json', timeout=1)" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "the $name example did not start:" >&2
    cat "$work/$name.log" >&2
    return 1
}

# start_redis PORT [ARG...]: a redis-server on 127.0.0.1:PORT without persistence (no snapshots, no
# append-only file, its directory under $work), in the foreground of a background job so that
# its PID is ours; waits until it answers as ours (INFO's process_id), then sets `redis_pid`
# (also in `pids`: stop_servers stops it). A missing redis-server fails: CI installs it
# (tests/tools/install.sh debian).
start_redis() {
    local port=$1 dir="$work/redis-$1"
    shift
    command -v redis-server >/dev/null 2>&1 || {
        echo "redis-server is not installed (bash tests/tools/install.sh debian)" >&2
        return 1
    }
    mkdir -p "$dir"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
        --dir "$dir" "$@" >"$work/redis-$port.log" 2>&1 &
    redis_pid=$!
    pids+=("$redis_pid")
    for _ in $(seq 1 200); do
        if ! kill -0 "$redis_pid" 2>/dev/null; then
            echo "redis-server on port $port exited:" >&2
            cat "$work/redis-$port.log" >&2
            return 1
        fi
        if redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | tr -d '\r' \
            | grep -qx "process_id:$redis_pid"; then
            return 0
        fi
        sleep 0.05
    done
    echo "redis-server on port $port did not answer:" >&2
    cat "$work/redis-$port.log" >&2
    return 1
}

# start_redis_cluster PORT...: a Redis Cluster of one primary per PORT (three at least), no
# replicas: each a start_redis in cluster mode (its nodes.conf in its directory), joined by
# `redis-cli --cluster create`; waits until every node says cluster_state:ok. Sets
# `cluster_pids` (also in `pids`).
start_redis_cluster() {
    local port nodes=()
    cluster_pids=()
    for port in "$@"; do
        # The bus port, by default PORT + 10000: past 65535 for a free port above 55535.
        start_redis "$port" --cluster-enabled yes --cluster-config-file nodes.conf \
            --cluster-node-timeout 5000 --cluster-port "$(free_port)" || return 1
        cluster_pids+=("$redis_pid")
        nodes+=("127.0.0.1:$port")
    done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes \
        >"$work/redis-cluster.log" 2>&1 || {
        echo "redis-cli --cluster create failed:" >&2
        cat "$work/redis-cluster.log" >&2
        return 1
    }
    for _ in $(seq 1 400); do
        local ok=0
        for port in "$@"; do
            if redis-cli -p "$port" cluster info 2>/dev/null | tr -d '\r' \
                | grep -qx 'cluster_state:ok'; then
                ok=$((ok + 1))
            fi
        done
        [ "$ok" = "$#" ] && return 0
        sleep 0.05
    done
    echo "the Redis Cluster on ports $* is not ok after 20 s" >&2
    return 1
}

# stop_pid PID: stops a server started here and waits until it has exited (its port is free).
stop_pid() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
