#!/usr/bin/env bash
# install.sh — installs the outside tools that judge generated OpenAPI documents and clients:
#   * npm packages from package-lock.json into tests/tools/node_modules (npm ci):
#     redocly, swagger-ui-dist, typescript, @types/node
#   * a Python venv at tests/tools/.venv with requirements.txt (fully pinned)
#   * Debian's chromium (apt) if /usr/bin/chromium is missing
# Idempotent and fast when everything is already there: each step is skipped
# when a stamp (sha256 of its lock file) matches. Works from any cwd.
# Env: PYTHON (default python3), FORCE=1 to redo the npm and pip steps.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
venv="$here/.venv"
python="${PYTHON:-python3}"

die() {
    echo "install.sh: ERROR: $*" >&2
    exit 1
}
trap 'echo "install.sh: FAILED (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

# Run from here so that version managers (pyenv's .python-version) resolve the
# same interpreter whatever the caller's cwd is.
cd "$here"

sha() { sha256sum "$@" | sha256sum | cut -d" " -f1; }

# ---- npm -------------------------------------------------------------------
command -v node >/dev/null 2>&1 || die "node is not on PATH (Node.js >= 20.19 needed)"
command -v npm >/dev/null 2>&1 || die "npm is not on PATH"
# @redocly/cli 2.77.0 declares node ">=22.12.0 || >=20.19.0 <21.0.0"
node -e 'const [a, b] = process.versions.node.split(".").map(Number);
  process.exit((a === 20 && b >= 19) || (a === 22 && b >= 12) || a > 22 ? 0 : 1)' \
    || die "node $(node --version) is too old for @redocly/cli (need 20.19+ or 22.12+)"
[ -f "$here/package-lock.json" ] || die "$here/package-lock.json is missing"

npm_stamp="$here/node_modules/.strata-install-stamp"
npm_want="$(sha "$here/package.json" "$here/package-lock.json")-$(node --version)"
if [ "${FORCE:-0}" != 1 ] && [ -f "$npm_stamp" ] && [ "$(cat "$npm_stamp")" = "$npm_want" ]; then
    echo "install.sh: npm packages up to date"
else
    echo "install.sh: npm ci in $here"
    # --ignore-scripts: the only install script is @scarf/scarf's analytics ping.
    (cd "$here" && SCARF_ANALYTICS=false npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) \
        || die "npm ci failed in $here"
    [ -f "$here/node_modules/@redocly/cli/bin/cli.js" ] || die "npm ci did not install @redocly/cli"
    [ -f "$here/node_modules/swagger-ui-dist/swagger-ui-bundle.js" ] || die "npm ci did not install swagger-ui-dist"
    [ -f "$here/node_modules/@types/node/package.json" ] || die "npm ci did not install @types/node"
    # typescript 7 is a native binary from a per-platform optional package.
    "$here/node_modules/.bin/tsc" --version >/dev/null || die "npm ci did not install a working tsc (typescript)"
    printf '%s\n' "$npm_want" >"$npm_stamp"
fi

# ---- Python venv -------------------------------------------------------------
command -v "$python" >/dev/null 2>&1 || die "$python not found (set PYTHON=/path/to/python3.11)"
pyver="$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')" \
    || die "$python does not run"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
    || die "$python is $pyver; Python >= 3.10 is needed"

pip_stamp="$venv/.strata-install-stamp"
pip_want="$(sha "$here/requirements.txt")-$pyver"
# (the shebang test catches a venv that was moved: its scripts point elsewhere)
if [ "${FORCE:-0}" != 1 ] && [ -f "$pip_stamp" ] && [ "$(cat "$pip_stamp")" = "$pip_want" ] \
    && [ -x "$venv/bin/st" ] && [ -x "$venv/bin/openapi-spec-validator" ] \
    && [ "$(head -n 1 "$venv/bin/st")" = "#!$venv/bin/python" ] && "$venv/bin/python" -c '' 2>/dev/null; then
    echo "install.sh: Python venv up to date ($venv)"
else
    # Always from scratch, so that a package dropped from requirements.txt is gone too.
    echo "install.sh: creating venv $venv (Python $pyver) from requirements.txt"
    rm -rf "$venv"
    "$python" -m venv "$venv" || die "could not create venv $venv (is the venv module installed?)"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --quiet --require-virtualenv \
        -r "$here/requirements.txt" || die "pip install -r requirements.txt failed"
    "$venv/bin/python" -m pip check >/dev/null || die "pip check found broken requirements in $venv"
    [ -x "$venv/bin/st" ] || die "schemathesis (st) missing from $venv after pip install"
    [ -x "$venv/bin/openapi-spec-validator" ] || die "openapi-spec-validator missing from $venv after pip install"
    printf '%s\n' "$pip_want" >"$pip_stamp"
fi

# ---- chromium (Debian) -------------------------------------------------------
if [ -x /usr/bin/chromium ]; then
    echo "install.sh: chromium present (/usr/bin/chromium)"
else
    command -v apt-get >/dev/null 2>&1 || die "/usr/bin/chromium missing and apt-get not available"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "/usr/bin/chromium missing; need root or sudo to apt-get install chromium"
        sudo="sudo"
    fi
    echo "install.sh: apt-get install chromium"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null \
        || die "apt-get install chromium failed"
    [ -x /usr/bin/chromium ] || die "chromium installed but /usr/bin/chromium is missing"
fi

echo "install.sh: done"
