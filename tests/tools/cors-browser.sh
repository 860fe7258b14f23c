#!/usr/bin/env bash
# cors-browser.sh — CORS preflights in a real browser (issue 54). Starts the library and auth
# examples (built beforehand, in EXAMPLES or target/debug/examples) and a static server for
# fixtures/cors-page.html, each on its own free port of 127.0.0.1 (so three origins), then:
#   1. over plain HTTP, what the page relies on: a preflight lists the methods and allowed
#      headers, an actual answer has Access-Control-Allow-Origin and neither of them, and the
#      DELETE the page must not get to send would be a readable 405 if it were sent;
#   2. headless Chromium (docs-page.sh) loads the page, which makes four calls to the other
#      origins: a QUERY with a JSON body and a GET with the example's header credential must
#      succeed with their bodies read; a DELETE and a header the preflight does not list must
#      be refused by the browser.
# Any failure, or a missing tool (chromium, python3), fails. Servers are stopped by PID.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/tests/tools"
cd "$root"
examples="${EXAMPLES:-$root/target/debug/examples}"
for name in library auth; do
    [ -x "$examples/$name" ] || {
        echo "cors-browser.sh: $examples/$name is not built (cargo build --example $name)" >&2
        exit 1
    }
done
command -v python3 >/dev/null 2>&1 || {
    echo "cors-browser.sh: missing tool: python3" >&2
    exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/strata-cors-browser.XXXXXX")
source "$root/.ci/servers.sh"
cleanup() {
    stop_servers
    rm -rf "$work"
}
trap cleanup EXIT

library_port=$(free_port)
mkdir -p "$work/covers"
start library "$library_port" COVERS_DIR="$work/covers"
auth_port=$(free_port)
start auth "$auth_port"
library="http://127.0.0.1:$library_port"
auth="http://127.0.0.1:$auth_port"

# The page's own origin: Python's static server on a third port.
mkdir -p "$work/page"
cp "$here/fixtures/cors-page.html" "$work/page/"
page_port=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$work/page" "$page_port" \
    >"$work/page.log" 2>&1 &
pids+=("$!")
page_pid=$!
for attempt in $(seq 1 100); do
    kill -0 "$page_pid" 2>/dev/null || {
        echo "cors-browser.sh: the page server exited:" >&2
        cat "$work/page.log" >&2
        exit 1
    }
    if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$page_port/cors-page.html', timeout=1)" 2>/dev/null; then
        break
    fi
    [ "$attempt" -lt 100 ] || {
        echo "cors-browser.sh: the page server did not answer:" >&2
        cat "$work/page.log" >&2
        exit 1
    }
    sleep 0.1
done
page="http://127.0.0.1:$page_port"

echo "== cors-browser.sh: the headers, over plain HTTP"
python3 - "$library" "$auth" "$page" <<'PY'
import sys, urllib.error, urllib.request

library, auth, page = sys.argv[1:]
PREFLIGHT_ONLY = ("access-control-allow-methods", "access-control-allow-headers",
                  "access-control-max-age")


def send(method, url, headers, body=None):
    request = urllib.request.Request(url, data=body, method=method,
                                     headers={"origin": page, **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.headers


def check(what, condition, headers):
    if not condition:
        sys.exit(f"cors-browser.sh: FAIL: {what}; headers: {dict(headers)}")
    print(f"cors-browser.sh: ok: {what}")


search = f"{library}/v1/books/search"
status, headers = send("OPTIONS", search, {"access-control-request-method": "QUERY",
                                           "access-control-request-headers": "content-type"})
check("a preflight for QUERY answers 200 from any origin",
      status == 200 and headers["access-control-allow-origin"] == "*", headers)
check("a preflight lists the path's methods",
      headers["access-control-allow-methods"] == "QUERY, OPTIONS", headers)
check("a preflight allows content-type",
      "content-type" in headers.get("access-control-allow-headers", ""), headers)
status, headers = send("OPTIONS", search, {"access-control-request-method": "DELETE"})
check("the preflight for DELETE lists no DELETE (the page's DELETE must be refused)",
      "DELETE" not in headers["access-control-allow-methods"], headers)
status, headers = send("OPTIONS", f"{auth}/v1/profile",
                       {"access-control-request-method": "GET",
                        "access-control-request-headers": "token"})
check("auth's preflight allows its header credential `token`",
      "token" in headers["access-control-allow-headers"].split(", "), headers)

status, headers = send("QUERY", search, {"content-type": "application/json"},
                       b'{"words":["bleak"]}')
check("an actual QUERY answers 200 with Access-Control-Allow-Origin",
      status == 200 and headers["access-control-allow-origin"] == "*", headers)
check("an actual answer has no Allow-Methods, Allow-Headers or Max-Age",
      not any(name in headers for name in PREFLIGHT_ONLY), headers)
status, headers = send("OPTIONS", search, {})
check("an OPTIONS without Access-Control-Request-Method is no preflight",
      status == 200 and not any(name in headers for name in PREFLIGHT_ONLY), headers)
status, headers = send("DELETE", search, {})
check("a DELETE sent anyway would be a 405 a browser could read (Allow-Origin: *)",
      status == 405 and headers["access-control-allow-origin"] == "*", headers)
PY

echo "== cors-browser.sh: the page in headless Chromium, calling two other origins"
bash "$here/docs-page.sh" "$page/cors-page.html?library=$library&auth=$auth" \
    'id="query-json">read: 200 Bleak House<' \
    'id="header-credential">read: 200 Jane<' \
    'id="unlisted-method">refused: TypeError<' \
    'id="unlisted-header">refused: TypeError<' \
    'id="settled">all calls settled<'
