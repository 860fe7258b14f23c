#!/usr/bin/env bash
# The tools the benchmark uses beyond cargo: wrk (Debian's package, a pinned version), the
# external load generator `strata-bench --generator auto` picks when it is on PATH, and the
# express-zod-api comparison server's Node packages (`npm ci` in ../ezapi, which also brings
# the Node binary it runs on: the npm package `node`, pinned in package.json). Run as root
# (or with sudo for apt-get); fails loudly if anything cannot be installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

# The version Debian bookworm ships; bump it together with BENCHMARKS.md when Debian moves.
WRK_VERSION="4.1.0-3+b2"

if [ "$(dpkg-query -W -f='${Version}' wrk 2>/dev/null || true)" != "$WRK_VERSION" ]; then
    apt-get update
    if ! apt-get install -y "wrk=$WRK_VERSION"; then
        echo "install-tools.sh: could not install wrk=$WRK_VERSION" \
            "(apt-cache policy wrk says: $(apt-cache policy wrk | tr -s ' \n' ' '))" >&2
        exit 1
    fi
fi
wrk --version 2>&1 | head -n 1 || true

# h2load, the load generator of `strata-bench protocols` (HTTP/2 with prior knowledge, HTTP/2
# over TLS by ALPN, HTTP/1.1 over TLS): Debian bookworm's nghttp2-client, pinned the same way.
NGHTTP2_CLIENT_VERSION="1.52.0-1+deb12u3"
if [ "$(dpkg-query -W -f='${Version}' nghttp2-client 2>/dev/null || true)" != "$NGHTTP2_CLIENT_VERSION" ]; then
    apt-get update
    if ! apt-get install -y "nghttp2-client=$NGHTTP2_CLIENT_VERSION"; then
        echo "install-tools.sh: could not install nghttp2-client=$NGHTTP2_CLIENT_VERSION" \
            "(apt-cache policy nghttp2-client says: $(apt-cache policy nghttp2-client | tr -s ' \n' ' '))" >&2
        exit 1
    fi
fi
h2load --version | head -n 1

cd "$here/../ezapi"
npm ci --no-audit --no-fund
node_modules/.bin/node --version
