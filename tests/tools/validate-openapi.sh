#!/usr/bin/env bash
# validate-openapi.sh FILE...
#
# Runs two independent OpenAPI validators on every FILE (JSON or YAML):
#   redocly                 @redocly/cli `lint` with redocly.yaml (`spec` ruleset,
#                           errors fatal), via redocly-lint.mjs
#   openapi-spec-validator  the Python validator from tests/tools/.venv
# Prints one verdict line per file per validator ("OK" or "FAIL" followed by
# the errors, indented). Exits 1 if any validator rejects any file, 2 on usage
# errors or when a tool is missing (run install.sh first). Nothing is skipped.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
osv="$venv/bin/openapi-spec-validator"
lint="$here/redocly-lint.mjs"

if [ "$#" -eq 0 ]; then
    echo "usage: $0 FILE..." >&2
    exit 2
fi

missing=()
command -v node >/dev/null 2>&1 || missing+=("node (Node.js) not on PATH")
[ -f "$here/node_modules/@redocly/cli/bin/cli.js" ] || missing+=("@redocly/cli ($here/node_modules)")
[ -x "$osv" ] || missing+=("openapi-spec-validator ($osv)")
if [ "${#missing[@]}" -gt 0 ]; then
    for m in "${missing[@]}"; do echo "validate-openapi: missing tool: $m" >&2; done
    echo "validate-openapi: run $here/install.sh first" >&2
    exit 2
fi

# Cut very long lines: openapi-spec-validator prints the whole document for an
# unresolvable $ref.
show() {
    awk '{ if (length($0) > 400) print "    " substr($0, 1, 400) " ...[" length($0) - 400 " more chars]"; else print "    " $0 }'
}

failures=0
for file in "$@"; do
    if [ ! -f "$file" ]; then
        echo "FAIL [both] $file: no such file"
        failures=$((failures + 1))
        continue
    fi

    set +e
    out="$(node "$lint" "$file" 2>&1)"
    rc=$?
    set -e
    if [ "$rc" -eq 0 ]; then
        echo "OK   [redocly] $file ($(printf '%s\n' "$out" | tail -n 1))"
    else
        echo "FAIL [redocly] $file"
        printf '%s\n' "$out" | show
        failures=$((failures + 1))
    fi

    set +e
    out="$("$osv" --validation-errors all "$file" 2>&1)"
    rc=$?
    set -e
    if [ "$rc" -eq 0 ]; then
        echo "OK   [openapi-spec-validator] $file"
    else
        echo "FAIL [openapi-spec-validator] $file (exit $rc)"
        printf '%s\n' "$out" | show
        failures=$((failures + 1))
    fi
done

if [ "$failures" -gt 0 ]; then
    echo "validate-openapi: $failures failure(s) in $# file(s)"
    exit 1
fi
echo "validate-openapi: all $# file(s) passed both validators"
