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
