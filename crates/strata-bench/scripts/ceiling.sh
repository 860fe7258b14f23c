#!/usr/bin/env bash
# The load generator's ceiling next to the servers, on `hello`: three rounds, servers alternated
# in each (fixed bytes, plain hyper, axum, Strata), server pinned to core 0 and generator to
# core 1, 1 s warm-up and 3 s measured per server (`strata-bench load`, 64 connections).
# `serve fixed` answers with the same bytes without any HTTP stack: what the generator gets from
# it is the most it can measure here. Run after `cargo build --release -p strata-bench`.
set -uo pipefail
bench=${BENCH:-target/release/strata-bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
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
        taskset -c 1 "$bench" load "$addr" hello --duration 1s >/dev/null
        echo "round $round ${server%% *}: $(taskset -c 1 "$bench" load "$addr" hello --duration 3s)"
        exec 3>&-
        rm -f "$fifo"
        wait "$pid"
    done
done
