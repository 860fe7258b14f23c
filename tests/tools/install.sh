#!/usr/bin/env bash
# install.sh — installs the outside tools that judge generated OpenAPI documents and clients:
#   * npm packages from package-lock.json into tests/tools/node_modules (npm ci):
#     redocly, swagger-ui-dist, typescript, @types/node
#   * a Python venv at tests/tools/.venv with requirements.txt (fully pinned)
#   * Debian's chromium (apt) if /usr/bin/chromium is missing
#   * Debian packages at the exact versions of debian-packages.txt (redis-server,
#     haproxy, prometheus): installed with apt when missing or at another version; the run fails
#     when apt cannot install that version
# Idempotent and fast when everything is already there: each step is skipped
# when a stamp (sha256 of its lock file) or the installed version matches. Works from any cwd.
# Usage: install.sh          every step
#        install.sh debian   only the pinned Debian packages (what `cargo test` needs)
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

# apt as root, or through sudo; `$1` names what needs it, for the error.
apt_sudo=""
need_apt() {
    command -v apt-get >/dev/null 2>&1 || die "$1: apt-get not available"
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "$1: need root or sudo for apt-get"
        apt_sudo="sudo"
    fi
}

# ---- pinned Debian packages (debian-packages.txt) ---------------------------
debian_packages() {
    local list="$here/debian-packages.txt" pkg version installed
    local -a wanted=() missing=()
    [ -f "$list" ] || die "$list is missing"
    while read -r pkg version _; do
        case "$pkg" in '' | '#'*) continue ;; esac
        [ -n "$version" ] || die "$list: no version for $pkg"
        wanted+=("$pkg=$version")
        installed="$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$pkg" 2>/dev/null || true)"
        [ "$installed" = "installed $version" ] || missing+=("$pkg=$version")
    done <"$list"
    if [ "${#missing[@]}" -eq 0 ]; then
        echo "install.sh: Debian packages at their pinned versions (${wanted[*]})"
    else
        need_apt "${missing[*]}"
        echo "install.sh: apt-get install ${missing[*]}"
        # Packages whose scripts start a daemon (redis-server, haproxy) must not start one
        # here: the tests start their own on free ports. Containers usually have a
        # policy-rc.d that says so; one is put in place for the install when there is none.
        local policy=/usr/sbin/policy-rc.d made_policy=0
        if [ ! -e "$policy" ]; then
            printf '#!/bin/sh\nexit 101\n' | $apt_sudo tee "$policy" >/dev/null && $apt_sudo chmod 755 "$policy"
            made_policy=1
        fi
        local status=0
        $apt_sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || status=$?
        if [ "$status" -eq 0 ]; then
            $apt_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                --allow-downgrades "${missing[@]}" >/dev/null || status=$?
        fi
        [ "$made_policy" = 0 ] || $apt_sudo rm -f "$policy"
        [ "$status" -eq 0 ] || die "apt-get could not install ${missing[*]} (exit $status); if apt no longer has a pinned version, see debian-packages.txt"
        for pin in "${wanted[@]}"; do
            pkg="${pin%%=*}"
            version="${pin#*=}"
            installed="$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$pkg" 2>/dev/null || true)"
            [ "$installed" = "installed $version" ] || die "$pkg is '$installed' after apt-get install, not $version"
        done
    fi
    # The programs the tests run, there and working.
    redis-server --version >/dev/null 2>&1 || die "redis-server does not run"
    redis-cli --version >/dev/null 2>&1 || die "redis-cli does not run"
    haproxy -v >/dev/null 2>&1 || die "haproxy does not run"
    promtool --version >/dev/null 2>&1 || die "promtool does not run"
}

case "${1:-all}" in
    all) ;;
    debian)
        debian_packages
        echo "install.sh: done"
        exit 0
        ;;
    *) die "unknown step '$1' (usage: install.sh [debian])" ;;
esac

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
    need_apt "/usr/bin/chromium missing"
    echo "install.sh: apt-get install chromium"
    $apt_sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed"
    $apt_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null \
        || die "apt-get install chromium failed"
    [ -x /usr/bin/chromium ] || die "chromium installed but /usr/bin/chromium is missing"
fi

# ---- pinned Debian packages --------------------------------------------------
debian_packages

echo "install.sh: done"
