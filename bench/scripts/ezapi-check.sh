#!/usr/bin/env bash
# CI: the comparison server answers like the others. Installs express-zod-api's Node packages
# (`npm ci` in ../ezapi, which brings the pinned Node binary) when they are missing or older
# than the lock file, then runs `strata-bench preflight`: every server (hyper, axum, Strata,
# express-zod-api, and the quick start example when it is built) gets every scenario's request
# once and must answer like the others; nothing is timed. The debug build: CI has built it
# already (`cargo test --workspace`, `cd bench && cargo build`), and a release build would
# cost minutes on two cores. Extra arguments go to `preflight` (e.g. --scenario hello). Then
# the upload servers of `strata-bench uploads`, spooled and streamed, get one upload each.
set -euo pipefail
echo "== express-zod-api answers the benchmark's scenarios like the others (pre-flight only)"
root="$(cd "$(dirname "$0")/../.." && pwd)"
ezapi="$root/bench/ezapi"

if [ ! -f "$ezapi/node_modules/.package-lock.json" ] \
    || [ "$ezapi/package-lock.json" -nt "$ezapi/node_modules/.package-lock.json" ]; then
    (cd "$ezapi" && npm ci --no-audit --no-fund)
fi

# From bench/: its own workspace, built into the root's target directory (.cargo/config.toml).
cd "$root/bench"
cargo run --quiet -- preflight "$@"

# The upload servers of `strata-bench uploads` (express-zod-api's `useTempFiles` among them)
# answer a 2 MiB upload (past Strata's 1 MiB spool threshold) with its size and CRC-32: the
# pre-flight and one short load per server. The figures of so short a run mean nothing.
echo "== the upload servers answer like each other, spooled and streamed (pre-flight)"
cargo run --quiet -- uploads --mib 2 --duration 1ms --warmup 1ms --rounds 1 --no-pin >/dev/null
