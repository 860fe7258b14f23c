#!/usr/bin/env bash
# docs-page.sh [--absent TEXT]... URL EXPECTED_TEXT...
#
# Loads URL in Debian's headless chromium (fresh profile, no background
# networking), lets the page run for up to 15 s of virtual time
# (--virtual-time-budget=15000), dumps the resulting DOM (serialized HTML, so
# text is HTML-escaped: & -> &amp;, < -> &lt;) and checks that every
# EXPECTED_TEXT occurs in it as a plain substring, and that no --absent TEXT
# does. Prints each missing / unexpectedly present string.
# Exit: 0 all good; 1 a check failed or chromium failed; 2 usage / no chromium.
#
# Env: CHROMIUM (default /usr/bin/chromium), DOCS_PAGE_TIMEOUT (120 s, wall
#      clock), DOCS_PAGE_DUMP=FILE to keep the dumped DOM,
#      DOCS_PAGE_VIRTUAL_TIME_BUDGET (15000 ms).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chromium="${CHROMIUM:-/usr/bin/chromium}"
usage() {
    echo "usage: $0 [--absent TEXT]... URL EXPECTED_TEXT..." >&2
    exit 2
}

absent=()
while [ "$#" -gt 0 ]; do
    case "$1" in
        --absent)
            [ "$#" -ge 2 ] || usage
            absent+=("$2")
            shift 2
            ;;
        --absent=*)
            absent+=("${1#--absent=}")
            shift
            ;;
        --)
            shift
            break
            ;;
        *) break ;;
    esac
done
[ "$#" -ge 2 ] || usage
url="$1"
shift

if [ ! -x "$chromium" ]; then
    echo "docs-page.sh: missing tool: $chromium (run $here/install.sh first)" >&2
    exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/strata-docs-page.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir "$work/profile"

set +e
timeout --kill-after=10 "${DOCS_PAGE_TIMEOUT:-120}" "$chromium" \
    --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --no-default-browser-check --mute-audio \
    --user-data-dir="$work/profile" \
    --virtual-time-budget="${DOCS_PAGE_VIRTUAL_TIME_BUDGET:-15000}" \
    --dump-dom "$url" >"$work/dom.html" 2>"$work/chromium.log" </dev/null
rc=$?
set -e

if [ -n "${DOCS_PAGE_DUMP:-}" ]; then
    cp "$work/dom.html" "$DOCS_PAGE_DUMP"
fi
if [ "$rc" -ne 0 ] || [ ! -s "$work/dom.html" ]; then
    echo "docs-page.sh: FAIL: chromium exited $rc with $(wc -c <"$work/dom.html") bytes of DOM for $url"
    echo "docs-page.sh: chromium stderr (last 30 lines, dbus noise removed):"
    grep -v -e 'dbus' -e '^\s*$' "$work/chromium.log" | tail -n 30 | sed 's/^/    /' || true
    exit 1
fi

missing=0
for text in "$@"; do
    if grep -q -F -e "$text" "$work/dom.html"; then
        echo "docs-page.sh: found:   $text"
    else
        echo "docs-page.sh: MISSING: $text"
        missing=$((missing + 1))
    fi
done
for text in ${absent[@]+"${absent[@]}"}; do
    if grep -q -F -e "$text" "$work/dom.html"; then
        echo "docs-page.sh: PRESENT (must be absent): $text"
        missing=$((missing + 1))
    else
        echo "docs-page.sh: absent:  $text"
    fi
done

bytes="$(wc -c <"$work/dom.html")"
if [ "$missing" -gt 0 ]; then
    echo "docs-page.sh: FAIL: $missing check(s) failed on $url ($bytes bytes of DOM; set DOCS_PAGE_DUMP=FILE to keep it)"
    exit 1
fi
echo "docs-page.sh: OK: $# expected string(s) found on $url ($bytes bytes of DOM)"
