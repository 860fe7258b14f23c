#!/usr/bin/env bash
# selftest.sh — proves the three judges work, using only the fixtures here:
#   1. validate-openapi.sh accepts fixtures/valid.json and valid-3.2.json and
#      rejects fixtures/invalid.json and invalid-3.2.json (with BOTH validators)
#   2. schemathesis.sh passes against fixtures/mock_server.py (good) and fails
#      against the same server in error500 mode
#   3. docs-page.sh finds the operations of fixtures/valid.json in Swagger UI
#      (fixtures/swagger-ui.html, assets from node_modules/swagger-ui-dist)
#      and reports a missing string
#   4. tsc (client settings) accepts fixtures/ts/good.ts and rejects a type
#      error and a stale `@ts-expect-error` (the compile-fail checks rely on it)
#   5. `node --test` fails on a failing test (fixtures/failing.test.mjs)
# Servers bind 127.0.0.1 on free ports and are killed on exit.
# Run install.sh first. Takes about a minute (SCHEMATHESIS_MAX_EXAMPLES=10).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
fx="$here/fixtures"
export SCHEMATHESIS_MAX_EXAMPLES="${SCHEMATHESIS_MAX_EXAMPLES:-10}"

pids=()
logs="$(mktemp -d "${TMPDIR:-/tmp}/strata-selftest.XXXXXX")"
cleanup() {
    for pid in ${pids[@]+"${pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$logs"
}
trap cleanup EXIT

passed=0
failed=0
ok() { echo "selftest: PASS: $*"; passed=$((passed + 1)); }
ko() { echo "selftest: FAIL: $*"; failed=$((failed + 1)); }
expect() { # expect 0|nonzero NAME CMD...
    local want="$1" name="$2"
    shift 2
    local rc=0
    "$@" >"$logs/out" 2>&1 || rc=$?
    if { [ "$want" = 0 ] && [ "$rc" -eq 0 ]; } || { [ "$want" = nonzero ] && [ "$rc" -ne 0 ]; }; then
        ok "$name (exit $rc)"
    else
        ko "$name (exit $rc, wanted $want)"
        sed 's/^/    | /' "$logs/out" | tail -n 60
    fi
}
# start LOG CMD... : start a server, wait for its first stdout line with a URL
start() {
    local log="$1"
    shift
    "$@" >"$log" 2>&1 &
    pids+=("$!")
    for _ in $(seq 1 100); do
        url="$(grep -o -m1 'http://127\.0\.0\.1:[0-9]*' "$log" || true)"
        [ -n "$url" ] && return 0
        sleep 0.1
    done
    echo "selftest: server did not start: $*" >&2
    cat "$log" >&2
    exit 1
}

expect 0 "validate-openapi.sh accepts fixtures/valid.json" ./validate-openapi.sh "$fx/valid.json"
expect nonzero "validate-openapi.sh rejects fixtures/invalid.json" ./validate-openapi.sh "$fx/invalid.json"
if [ "$(grep -c '^FAIL ' "$logs/out")" -eq 2 ]; then
    ok "both validators rejected fixtures/invalid.json"
else
    ko "not both validators rejected fixtures/invalid.json"
    sed 's/^/    | /' "$logs/out"
fi

# OpenAPI 3.2 (QUERY operations, event streams by their items): read as 3.2, not let through.
expect 0 "validate-openapi.sh accepts fixtures/valid-3.2.json" ./validate-openapi.sh "$fx/valid-3.2.json"
expect nonzero "validate-openapi.sh rejects fixtures/invalid-3.2.json" ./validate-openapi.sh "$fx/invalid-3.2.json"
if [ "$(grep -c '^FAIL ' "$logs/out")" -eq 2 ]; then
    ok "both validators rejected fixtures/invalid-3.2.json"
else
    ko "not both validators rejected fixtures/invalid-3.2.json"
    sed 's/^/    | /' "$logs/out"
fi

start "$logs/good.log" python3 -u "$fx/mock_server.py" 0 good
expect 0 "schemathesis.sh passes against a conforming server" ./schemathesis.sh "$fx/valid.json" "$url"
start "$logs/500.log" python3 -u "$fx/mock_server.py" 0 error500
expect nonzero "schemathesis.sh fails against a server answering 500" ./schemathesis.sh "$fx/valid.json" "$url"

start "$logs/http.log" python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$here"
page="$url/fixtures/swagger-ui.html"
expect 0 "docs-page.sh finds the operations in Swagger UI" ./docs-page.sh \
    --absent 'class="errors-wrapper"' --absent 'Failed to load API definition' \
    "$page" 'Strata fixture API' \
    'data-path="/v1/users"' 'data-path="/v1/users/{id}"' '<span>/v1<wbr>/users<wbr>/{id}</span>' \
    '<span class="opblock-summary-method">GET</span>' '<span class="opblock-summary-method">POST</span>' \
    '<span class="opblock-summary-method">DELETE</span>' 'id="operations-users-getUser"'
expect nonzero "docs-page.sh reports a missing string" ./docs-page.sh "$page" 'data-path="/v1/nope"'

tsc_strict() {
    ./node_modules/.bin/tsc --noEmit --strict --noUncheckedIndexedAccess --exactOptionalPropertyTypes \
        --target es2022 --lib es2022,dom "$@"
}
expect 0 "tsc accepts fixtures/ts/good.ts" tsc_strict "$fx/ts/good.ts"
expect nonzero "tsc rejects a type error" tsc_strict "$fx/ts/type-error.ts"
expect nonzero "tsc rejects a stale @ts-expect-error" tsc_strict "$fx/ts/stale-expect-error.ts"
expect nonzero "node --test fails on a failing test" node --test "$fx/failing.test.mjs"

echo "selftest: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
