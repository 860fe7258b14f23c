#!/usr/bin/env bash
# Instructions and allocations per request, by valgrind (counts, not seconds: repeatable on a
# busy machine). For each server and scenario: two loads of different lengths against the
# server under `valgrind --tool=callgrind` (then `--tool=dhat`); the difference of the totals
# over the difference of the request counts is the cost of one keep-alive request, start-up
# and connection set-up cancelled out.
#
#   bench/scripts/profile.sh [scenario] [servers...]
#   (default: hello, servers hyper axum strata; after `cd bench && cargo build --release`)
#   bench/scripts/profile.sh middleware [variants...]
#   (`strata-bench middleware`'s variants: plain, noop, one-header, cookies, cache, cache-304,
#   rate-limit, rate-limit-headers, plain+cookie-header, plain+if-none-match; default the first
#   eight)
#
# Prints one line per server: instructions/request, allocations/request, bytes/request.
# KEEP=dir keeps the callgrind and dhat output files there (for callgrind_annotate).
set -euo pipefail
bench=${BENCH:-target/release/strata-bench}
scenario=${1:-hello}
shift || true
servers=("$@")
if [ ${#servers[@]} -eq 0 ]; then
    if [ "$scenario" = middleware ]; then
        servers=(plain noop one-header cookies cache cache-304 rate-limit rate-limit-headers)
    else
        servers=(hyper axum strata)
    fi
fi
command -v valgrind >/dev/null || { echo "profile.sh needs valgrind" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
keep=${KEEP:-}

# run <tool> <server> <seconds>: the tool's output file; the request count on stdout.
run() {
    local tool=$1 server=$2 seconds=$3 out="$work/$1.$2.$3"
    local fifo="$work/fifo" log="$work/log"
    rm -f "$fifo" "$log"
    mkfifo "$fifo"
    exec 3<>"$fifo"
    local args=(serve "$server" "$scenario") target=$scenario
    [ "$server" = fixed ] && args=(serve fixed)
    if [ "$scenario" = middleware ]; then
        # A variant: its server (cache-304 is the cache server, plain+… plain's) and its
        # request.
        local of=${server%-304}
        args=(serve middleware "${of%%+*}") target="middleware:$server"
    fi
    valgrind --tool="$tool" --"$tool"-out-file="$out" "$bench" "${args[@]}" <"$fifo" 3>&- >"$log" 2>/dev/null &
    local pid=$!
    for _ in $(seq 1 600); do
        grep -q listening "$log" 2>/dev/null && break
        sleep 0.1
    done
    local addr
    addr=$(awk '/listening/ {print $2}' "$log")
    [ -n "$addr" ] || { echo "$server did not start under $tool" >&2; exit 1; }
    local requests
    requests=$("$bench" load "$addr" "$target" --connections 8 --duration "${seconds}s" | awk '{print $2}')
    echo "$requests"
    exec 3>&-
    wait "$pid" || true
    rm -f "$fifo"
    if [ -n "$keep" ]; then
        cp "$out" "$keep/"
        echo "$requests" >"$keep/requests.$tool.$server.$seconds"
    fi
}

total_ir() { awk '/^summary:|^totals:/ {print $2; exit}' "$1"; }
dhat_totals() {
    # "Total: 123 bytes in 45 blocks" from dhat's JSON-less text summary is on stderr; read the
    # JSON instead: the sums of the program points' total bytes and blocks.
    python3 - "$1" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
print(sum(p["tb"] for p in data["pps"]), sum(p["tbk"] for p in data["pps"]))
PY
}

printf '%-8s %-14s %14s %12s %12s\n' server scenario "instr/request" "allocs/req" "bytes/req"
for server in "${servers[@]}"; do
    short=$(run callgrind "$server" 2)
    long=$(run callgrind "$server" 6)
    ir_short=$(total_ir "$work/callgrind.$server.2")
    ir_long=$(total_ir "$work/callgrind.$server.6")
    dshort=$(run dhat "$server" 2)
    dlong=$(run dhat "$server" 6)
    read -r bytes_short blocks_short < <(dhat_totals "$work/dhat.$server.2")
    read -r bytes_long blocks_long < <(dhat_totals "$work/dhat.$server.6")
    python3 - "$server" "$scenario" "$short" "$long" "$ir_short" "$ir_long" \
        "$dshort" "$dlong" "$blocks_short" "$blocks_long" "$bytes_short" "$bytes_long" <<'PY'
import sys
server, scenario = sys.argv[1:3]
n1, n2, i1, i2, d1, d2, k1, k2, b1, b2 = map(int, sys.argv[3:])
ir = (i2 - i1) / max(n2 - n1, 1)
allocs = (k2 - k1) / max(d2 - d1, 1)
bytes_ = (b2 - b1) / max(d2 - d1, 1)
print(f"{server:<8} {scenario:<14} {ir:14.0f} {allocs:12.2f} {bytes_:12.0f}")
PY
done
