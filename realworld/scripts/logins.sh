#!/usr/bin/env bash
# The README's Reliability figure (issue 49): the application's peak resident memory (VmHWM)
# under failed logins, many at a time. Needs curl; builds the release binary unless one is
# given.
#
#   realworld/scripts/logins.sh [LOGINS] [AT_ONCE] [BINARY]     (defaults 400, 50)
#
# One server on a fresh SQLite file and a free port; LOGINS logins of distinct unknown emails
# with a wrong password, AT_ONCE at a time (curl under xargs -P), each one an Argon2 check
# unless a limit answers first. The environment goes through to the server: with the defaults
# most are answered 429 (30 per minute per address); LOGIN_LIMIT_PER_ADDRESS=100000 lets all
# of them reach the hashing bound (HASHES_AT_ONCE, 2 per core by default). Prints the statuses
# and the peak and final resident memory; the server is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/../.."

logins=${1:-400}
at_once=${2:-50}
binary=${3:-}

command -v curl > /dev/null || { echo "logins.sh: curl is not installed" >&2; exit 1; }
if [ -z "$binary" ]; then
    cargo build --quiet --release -p strata-realworld
    binary=${CARGO_TARGET_DIR:-target}/release/strata-realworld
fi

work=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2> /dev/null || true; wait "$server_pid" 2> /dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DATABASE_URL="sqlite://$work/conduit.db" JWT_SECRET=logins PORT=$port "$binary" > "$work/server.log" 2>&1 &
server_pid=$!
base="http://127.0.0.1:$port/api"
for _ in $(seq 100); do
    curl -sf -o /dev/null "$base/tags" && break
    sleep 0.1
done
kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$server_pid/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
start_rss=$(kib VmRSS)

started=$(date +%s.%N)
seq "$logins" | xargs -P "$at_once" -I{} curl -s -o /dev/null -w '%{http_code}\n' \
    -X POST "$base/users/login" -H 'content-type: application/json' \
    -d '{"user":{"email":"nobody{}@example.com","password":"a wrong guess"}}' > "$work/statuses"
ended=$(date +%s.%N)

peak=$(kib VmHWM)
end_rss=$(kib VmRSS)
echo "$logins failed logins, $at_once at a time, in $(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.1f", b - a }') s; LOGIN_LIMIT_PER_ADDRESS=${LOGIN_LIMIT_PER_ADDRESS:-default} LOGIN_LIMIT_PER_EMAIL=${LOGIN_LIMIT_PER_EMAIL:-default} HASHES_AT_ONCE=${HASHES_AT_ONCE:-default}"
echo "statuses: $(sort "$work/statuses" | uniq -c | awk '{ printf "%s×%s ", $1, $2 }')"
echo "resident memory: $(mib "$start_rss") MiB at the start, peak (VmHWM) $(mib "$peak") MiB, $(mib "$end_rss") MiB at the end"
