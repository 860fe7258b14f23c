#!/usr/bin/env bash
# The load generator's ceiling next to the servers, on `hello`: three rounds, servers alternated
# in each (fixed bytes, plain hyper, axum, Strata), server pinned to core 0 and generator to
# core 1, 1 s warm-up and 3 s measured per server, 64 connections.
# `serve fixed` answers with the same bytes without any HTTP stack: what the generator gets from
# it is the most it can measure here. The generator is wrk when it is on PATH (as for
# `strata-bench --generator auto`), else the harness's own (`strata-bench load`); GENERATOR=wrk
# or GENERATOR=internal chooses. Run after `cd bench && cargo build --release`.
set -uo pipefail
bench=${BENCH:-target/release/strata-bench}
generator=${GENERATOR:-$(command -v wrk >/dev/null && echo wrk || echo internal)}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "generator: $generator"
load() { # address seconds -> one line with req/s
    if [ "$generator" = wrk ]; then
        taskset -c 1 wrk -t1 -c64 -d"$2"s "http://$1/v1/hello?name=World" | awk '/Requests\/sec/ {print $2 " req/s"}'
    else
        taskset -c 1 "$bench" load "$1" hello --duration "$2"s
    fi
}
for round in 1 2 3; do
    for server in "fixed" "hyper hello" "axum hello" "strata hello"; do
        fifo=$(mktemp -u)
        mkfifo "$fifo"
        exec 3<>"$fifo"
        # The server serves until its standard input closes (fd 3 is not handed to it).
        taskset -c 0 "$bench" serve $server <"$fifo" 3>&- >"$out" 2>&1 &
        pid=$!
        for _ in $(seq 1 100); do
            grep -q listening "$out" && break
            sleep 0.05
        done
        addr=$(awk '/listening/ {print $2}' "$out")
        load "$addr" 1 >/dev/null
        echo "round $round ${server%% *}: $(load "$addr" 3)"
        exec 3>&-
        rm -f "$fifo"
        wait "$pid"
    done
done
