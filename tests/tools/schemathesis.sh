#!/usr/bin/env bash
# schemathesis.sh SCHEMA_FILE BASE_URL
#
# Property-based tests of a live server against its OpenAPI document with the
# pinned schemathesis (tests/tools/.venv, see requirements.txt):
#   * every operation in SCHEMA_FILE, requests sent to BASE_URL only
#     (the document's `servers` are ignored; --url wins)
#   * checks: not_a_server_error, status_code_conformance,
#     content_type_conformance, response_schema_conformance (SCHEMATHESIS_CHECKS=all:
#     every check)
#   * positive and negative inputs (--mode all) in all phases: examples,
#     coverage, fuzzing, stateful
#   * --max-examples $SCHEMATHESIS_MAX_EXAMPLES (default 50), --seed
#     $SCHEMATHESIS_SEED (default 42), one worker, no example database, no
#     crash cache: the same server gives the same run
# Exit status: 0 only if schemathesis exited 0 and every selected operation was
# tested; 1 on any failure/error; 2 on usage errors or a missing tool.
#
# Optional env:
#   SCHEMATHESIS_MAX_EXAMPLES  (50)     max test cases per operation and phase
#   SCHEMATHESIS_SEED          (42)
#   SCHEMATHESIS_PHASES        (examples,coverage,fuzzing,stateful)
#   SCHEMATHESIS_CHECKS        (the four above) comma-separated
#   SCHEMATHESIS_WORKERS       (1)
#   SCHEMATHESIS_REQUEST_TIMEOUT (10)   seconds per request
#   SCHEMATHESIS_REPORT_DIR    (unset)  keep report.json and junit.xml there
#   SCHEMATHESIS_EXTRA_ARGS    (unset)  appended to `st run` (word-split)
#   SCHEMATHESIS_CONFIG        (schemathesis.toml here) the config file (per-operation settings)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
st="$here/.venv/bin/st"
python="$here/.venv/bin/python"

if [ "$#" -ne 2 ]; then
    echo "usage: $0 SCHEMA_FILE BASE_URL" >&2
    exit 2
fi
schema="$1"
base_url="$2"
if [ ! -x "$st" ] || [ ! -x "$python" ]; then
    echo "schemathesis.sh: missing tool: $st (run $here/install.sh first)" >&2
    exit 2
fi
if [ ! -f "$schema" ]; then
    echo "schemathesis.sh: no such schema file: $schema" >&2
    exit 2
fi
case "$base_url" in
    http://* | https://*) ;;
    *)
        echo "schemathesis.sh: BASE_URL must start with http:// or https://: $base_url" >&2
        exit 2
        ;;
esac
schema="$(cd "$(dirname "$schema")" && pwd)/$(basename "$schema")"
config="${SCHEMATHESIS_CONFIG:-$here/schemathesis.toml}"
if [ ! -f "$config" ]; then
    echo "schemathesis.sh: no such config file: $config" >&2
    exit 2
fi
# st runs in a directory of its own (below): the config by its absolute path.
config="$(cd "$(dirname "$config")" && pwd)/$(basename "$config")"

max_examples="${SCHEMATHESIS_MAX_EXAMPLES:-50}"
seed="${SCHEMATHESIS_SEED:-42}"
phases="${SCHEMATHESIS_PHASES:-examples,coverage,fuzzing,stateful}"
checks="${SCHEMATHESIS_CHECKS:-not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance}"
workers="${SCHEMATHESIS_WORKERS:-1}"
request_timeout="${SCHEMATHESIS_REQUEST_TIMEOUT:-10}"

# schemathesis must not reach anything but BASE_URL: refuse documents with
# non-local $refs (st would fetch them).
"$python" - "$schema" <<'EOF'
import json, sys
try:
    import yaml
except ImportError:
    yaml = None
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
try:
    doc = json.loads(text)
except ValueError:
    if yaml is None:
        raise
    doc = yaml.safe_load(text)
bad = []
def walk(node, where):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            bad.append(f"{where}/$ref = {ref}")
        for k, v in node.items():
            walk(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk(v, f"{where}/{i}")
walk(doc, "#")
if bad:
    print("schemathesis.sh: document has non-local $ref (would need network):", file=sys.stderr)
    for b in bad[:20]:
        print("  " + b, file=sys.stderr)
    sys.exit(2)
EOF

# st writes .hypothesis/ (and would write .schemathesis/) into its cwd: run it
# in a throw-away directory.
work="$(mktemp -d "${TMPDIR:-/tmp}/strata-st.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# shellcheck disable=SC2054 # the commas are inside option values
cmd=(
    "$st" --config-file "$config" --no-color
    run "$schema"
    --url "$base_url"
    --checks "$checks"
    --phases "$phases"
    --mode all
    --max-examples "$max_examples"
    --seed "$seed"
    --workers "$workers"
    --generation-database none
    --request-timeout "$request_timeout"
    --report junit,json
    --report-dir "$work/report"
    --report-json-path "$work/report/report.json"
    --report-junit-path "$work/report/junit.xml"
)
if [ -n "${SCHEMATHESIS_EXTRA_ARGS:-}" ]; then
    # shellcheck disable=SC2206
    cmd+=($SCHEMATHESIS_EXTRA_ARGS)
fi

echo "schemathesis.sh: ${cmd[*]}"
set +e
(cd "$work" && env SCHEMATHESIS_TELEMETRY=false NO_COLOR=1 COLUMNS="${COLUMNS:-120}" "${cmd[@]}")
rc=$?
set -e

if [ -n "${SCHEMATHESIS_REPORT_DIR:-}" ] && [ -d "$work/report" ]; then
    mkdir -p "$SCHEMATHESIS_REPORT_DIR"
    cp -f "$work/report/"* "$SCHEMATHESIS_REPORT_DIR/" 2>/dev/null || true
fi

# One-line summary from the JSON run report; also enforce "every operation".
set +e
"$python" - "$work/report/report.json" "$rc" <<'EOF'
import json, sys
path, rc = sys.argv[1], int(sys.argv[2])
try:
    r = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"schemathesis.sh: no run report ({e}); st exited {rc}")
    sys.exit(1)
ops, tc = r["operations"], r["test_cases"]
failures = sum(f.get("count", 0) for f in r.get("failures", []))
phases = " ".join(f"{k}={v['status']}" for k, v in r.get("phases", {}).items())
print(f"schemathesis.sh: operations: {ops['tested']} tested / {ops['selected']} selected / {ops['total']} total"
      f" (errored {ops['errored']}, skipped {ops['skipped']})")
print(f"schemathesis.sh: test cases: {tc['generated']} generated, {tc['with_failures']} with failures"
      f" ({tc['unique_failures']} unique), {tc['errored']} errored")
print(f"schemathesis.sh: failures: {failures}; errors: {len(r.get('errors', []))}; phases: {phases}; seed {r.get('seed')}")
for f in r.get("failures", []):
    print(f"schemathesis.sh:   {f['code']} {f['title']} x{f['count']}: {', '.join(f.get('operations', []))}")
for e in r.get("errors", []):
    print(f"schemathesis.sh:   error: {json.dumps(e)[:300]}")
for name, items in r.get("warnings", {}).items():
    if items:
        print(f"schemathesis.sh:   warning {name}: {json.dumps(items)[:300]}")
bad = rc != 0 or r.get("exit_code", 1) != 0 or ops["tested"] == 0 or ops["tested"] < ops["selected"] or ops["errored"] or r.get("errors")
if not r.get("complete", False):
    print(f"schemathesis.sh: run did not complete (stop_reason: {r.get('stop_reason')})")
    bad = True
if ops["tested"] < ops["selected"]:
    print("schemathesis.sh: not every selected operation was tested:", r["operations"].get("skip_reasons"))
sys.exit(1 if bad else 0)
EOF
verdict=$?
set -e

if [ "$rc" -ne 0 ] || [ "$verdict" -ne 0 ]; then
    echo "schemathesis.sh: FAILED (st exit $rc)"
    exit 1
fi
echo "schemathesis.sh: OK"
