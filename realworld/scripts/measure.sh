#!/usr/bin/env bash
# The figures of realworld/README.md: requests per second and latency of "list articles" (20 per
# page, with their authors, tags and the reader's favorites) and "create article", on this
# machine with SQLite. Needs wrk and curl; builds the release binary.
#
#   realworld/scripts/measure.sh [RUNS] [SECONDS] [CONNECTIONS]    (defaults 5, 10, 32)
#
# STRATA_REALWORLD_BIN=<binary> measures that binary instead of building one (to compare two
# versions under the same conditions). API_URL=<http://host:port/api> measures that running
# API instead (an empty database: replicas.sh sets it, `realworld/scripts/replicas.sh
# realworld/scripts/measure.sh` measures three replicas on PostgreSQL behind haproxy); only wrk
# is pinned then.
# One server (a fresh SQLite file in a temporary directory, WAL), pinned to core 0 when there
# are two cores or more; wrk (one thread) pinned to core 1. Seeded with one author, 100
# articles of three tags each and 8 readers who follow the author and favorite articles
# (1 to 8 favorites per article). Every "list" run reads `GET /api/articles?limit=20` as a
# signed-in reader (so `favorited` and `following` are computed); then every "create" run
# posts new articles (each title unique: one insert per request) as the author. Each run gives
# its requests per second and p50/p99 latency; the summary is the median of the runs with
# their range. Runs alternate with nothing else; what else ran on the machine is the
# caller's to state.
set -euo pipefail
cd "$(dirname "$0")/../.."

runs=${1:-5}
seconds=${2:-10}
connections=${3:-32}

for tool in wrk curl; do
    command -v "$tool" > /dev/null || { echo "measure.sh: $tool is not installed" >&2; exit 1; }
done

work=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2> /dev/null || true; wait "$server_pid" 2> /dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

server_cpu=() client_cpu=()
if [ "$(nproc)" -ge 2 ] && command -v taskset > /dev/null; then
    server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi
if [ -n "${API_URL:-}" ]; then
    base=${API_URL%/}
    server_cpu=()
    echo "measuring $base (started by the caller)" >&2
else
    binary=${STRATA_REALWORLD_BIN:-}
    if [ -z "$binary" ]; then
        cargo build --quiet --release -p strata-realworld
        binary=${CARGO_TARGET_DIR:-target}/release/strata-realworld
    fi
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    DATABASE_URL="sqlite://$work/conduit.db" JWT_SECRET=measure PORT=$port \
        "${server_cpu[@]}" "$binary" > "$work/server.log" 2>&1 &
    server_pid=$!
    base="http://127.0.0.1:$port/api"
fi
for _ in $(seq 100); do
    curl -sf -o /dev/null "$base/tags" && break
    sleep 0.1
done

# POSTs a JSON body, prints the response; fails on a status other than 2xx.
post() {
    local path=$1 body=$2 token=${3:-}
    curl -sf -X POST "$base$path" -H 'content-type: application/json' \
        ${token:+-H "authorization: Token $token"} -d "$body"
}
token_of() { sed -E 's/.*"token":"([^"]+)".*/\1/'; }

echo "seeding: 1 author, 100 articles, 8 readers" >&2
author=$(post /users '{"user":{"username":"author","email":"author@example.com","password":"secret-password"}}' | token_of)
tags=(rust tower sqlite strata http json tokio serde)
for i in $(seq 100); do
    t1=${tags[$((i % 8))]} t2=${tags[$(((i + 3) % 8))]} t3=${tags[$(((i + 5) % 8))]}
    post /articles "{\"article\":{\"title\":\"Article number $i\",\"description\":\"What article $i is about\",\"body\":\"$(printf 'The body of an article. %.0s' $(seq 20))\",\"tagList\":[\"$t1\",\"$t2\",\"$t3\"]}}" "$author" > /dev/null
done
reader=
for r in $(seq 8); do
    token=$(post /users "{\"user\":{\"username\":\"reader$r\",\"email\":\"reader$r@example.com\",\"password\":\"secret-password\"}}" | token_of)
    post /profiles/author/follow '' "$token" > /dev/null
    # Reader r favorites every article whose number is a multiple of r: 1 to 8 favorites each.
    for i in $(seq "$r" "$r" 100); do
        post "/articles/article-number-$i/favorite" '' "$token" > /dev/null
    done
    reader=${reader:-$token}
done
# The page a run reads, checked once: 20 articles of 100, with favorites.
page=$(curl -sf "$base/articles?limit=20" -H "authorization: Token $reader")
case $page in
    *'"articlesCount":100'*'"favorited":true'*) ;;
    *'"favorited":true'*'"articlesCount":100'*) ;;
    *) echo "measure.sh: unexpected page: ${page:0:300}" >&2; exit 1 ;;
esac

cat > "$work/list.lua" << EOF
wrk.headers["authorization"] = "Token $reader"
EOF
cat > "$work/create.lua" << EOF
wrk.method = "POST"
wrk.headers["authorization"] = "Token $author"
wrk.headers["content-type"] = "application/json"
local n = 0
request = function()
    n = n + 1
    return wrk.format(nil, nil, nil, '{"article":{"title":"Measured article ' .. n .. '",' ..
        '"description":"Written by the load generator","body":"A short body.",' ..
        '"tagList":["rust","bench"]}}')
end
response = function(status)
    if status ~= 201 then error("create answered " .. status) end
end
EOF
cat >> "$work/list.lua" << 'EOF'
response = function(status)
    if status ~= 200 then error("list answered " .. status) end
end
EOF

# One wrk run: "<req/s> <p50 ms> <p99 ms>".
once() {
    local script=$1 path=$2
    "${client_cpu[@]}" wrk -t1 -c"$connections" -d"${seconds}s" --latency -s "$script" "$base$path" > "$work/wrk.out"
    if grep -q 'Non-2xx\|Socket errors' "$work/wrk.out"; then cat "$work/wrk.out" >&2; exit 1; fi
    awk '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        /Requests\/sec/ { rps = $2 }
        $1 == "50%" { p50 = ms($2) }
        $1 == "99%" { p99 = ms($2) }
        END { printf "%.0f %.2f %.2f\n", rps, p50, p99 }
    ' "$work/wrk.out"
}

# The median and range of column $1 of the lines on standard input.
summary() {
    sort -n -k"$1" | awk -v c="$1" '{ v[NR] = $c } END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%s (%s–%s)", m, v[1], v[NR] }'
}

echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'), 1 thread, $connections connections, $runs runs of $seconds s per operation${server_cpu:+, server on core 0, wrk on core 1}"
for operation in list create; do
    if [ "$operation" = list ]; then script=$work/list.lua path="/articles?limit=20"; else script=$work/create.lua path=/articles; fi
    "${client_cpu[@]}" wrk -t1 -c"$connections" -d2s -s "$script" "$base$path" > /dev/null # warm-up
    : > "$work/$operation.runs"
    for run in $(seq "$runs"); do
        line=$(once "$script" "$path")
        echo "$operation run $run: $line (req/s, p50 ms, p99 ms)" >&2
        echo "$line" >> "$work/$operation.runs"
    done
    echo "$operation: req/s $(summary 1 < "$work/$operation.runs"); p50 ms $(summary 2 < "$work/$operation.runs"); p99 ms $(summary 3 < "$work/$operation.runs")"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
