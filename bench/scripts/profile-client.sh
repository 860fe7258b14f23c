#!/usr/bin/env bash
# Instructions and allocations per call of the clients of `strata-bench client` (the typed Rust
# client, the hand-written one, the typed one without a timeout), by valgrind: counts, not
# seconds, so repeatable on a busy machine. For each client, two runs of this process of
# different lengths (`--calls`) under callgrind, then under dhat; the difference of the totals
# over the difference of the calls is the cost of one call, start-up cancelled out. Over the
# network the server runs natively in its child process (valgrind does not follow children),
# so the counts are the client's own, user space only (the kernel's part of a call, the same
# for every client, is not counted); in memory they include the router's work.
#
#   bench/scripts/profile-client.sh [operation] [transport]
#   (default: order network; operation hello or order, transport network or memory; after
#   `cd bench && cargo build --release`)
#
# Prints one line per client (instructions/call, allocations/call, bytes/call), then the
# functions whose inclusive instructions per call differ most between typed and hand.
# KEEP=dir keeps the callgrind and dhat output files there (for callgrind_annotate).
set -euo pipefail
bench=${BENCH:-target/release/strata-bench}
operation=${1:-order}
transport=${2:-network}
ways=(hand typed typed-untimed)
short=${SHORT:-1000}
long=${LONG:-3000}
command -v valgrind >/dev/null || { echo "profile-client.sh needs valgrind" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
keep=${KEEP:-}

# run <tool> <way> <calls>: one warm-up and one round of <calls> calls each, under <tool>.
run() {
    local tool=$1 way=$2 calls=$3 out="$work/$1.$2.$3"
    valgrind --tool="$tool" --"$tool"-out-file="$out" "$bench" client --no-pin \
        --operation "$operation" --transport "$transport" --way "$way" --rounds 1 \
        --calls "$calls" >/dev/null 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
    if [ -n "$keep" ]; then cp "$out" "$keep/"; fi
}

for way in "${ways[@]}"; do
    for calls in "$short" "$long"; do
        run callgrind "$way" "$calls"
        run dhat "$way" "$calls"
        callgrind_annotate --inclusive=yes --threshold=100 "$work/callgrind.$way.$calls" \
            >"$work/inclusive.$way.$calls"
    done
done

python3 - "$work" "$short" "$long" "$operation" "$transport" "${ways[@]}" <<'PY'
import json, re, sys
work, short, long_, operation, transport, *ways = sys.argv[1:]
short, long_ = int(short), int(long_)
# One warm-up and one round of `calls` calls each: twice the difference.
calls = 2 * (long_ - short)

def total_ir(path):
    for line in open(path):
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no total in {path}")

def dhat(path):
    data = json.load(open(path))
    return sum(p["tb"] for p in data["pps"]), sum(p["tbk"] for p in data["pps"])

def inclusive(path):
    costs = {}
    for line in open(path):
        m = re.match(r"^\s*([\d,]+) \([ \d.]+%\)\s+(.*?) \[", line)
        if m:
            costs[m.group(2)] = int(m.group(1).replace(",", ""))
    return costs

print(f"{operation} over {transport}, per call (valgrind, {calls} calls of difference)")
print(f"{'client':<14} {'instr/call':>12} {'allocs/call':>12} {'bytes/call':>12}")
per_function = {}
for way in ways:
    ir = (total_ir(f"{work}/callgrind.{way}.{long_}") - total_ir(f"{work}/callgrind.{way}.{short}")) / calls
    b1, k1 = dhat(f"{work}/dhat.{way}.{short}")
    b2, k2 = dhat(f"{work}/dhat.{way}.{long_}")
    print(f"{way:<14} {ir:12.0f} {(k2 - k1) / calls:12.2f} {(b2 - b1) / calls:12.0f}")
    a = inclusive(f"{work}/inclusive.{way}.{short}")
    b = inclusive(f"{work}/inclusive.{way}.{long_}")
    per_function[way] = {name: (b.get(name, 0) - a.get(name, 0)) / calls for name in set(a) | set(b)}

if "typed" in per_function and "hand" in per_function:
    typed, hand = per_function["typed"], per_function["hand"]
    rows = sorted(
        ((typed.get(n, 0) - hand.get(n, 0), typed.get(n, 0), hand.get(n, 0), n) for n in set(typed) | set(hand)),
        reverse=True,
    )
    # The callers every call goes through (main, the runtime, the task) say nothing.
    common = re.compile(r"main|lang_start|block_on|enter_runtime|Scoped|run_task|task::(raw|harness|core)|round::|0x0000|backtrace|client::run")
    rows = [row for row in rows if not common.search(row[3])]
    print("\ninclusive instructions per call, typed - hand (typed, hand): most in typed")
    for diff, t, h, name in [row for row in rows if row[0] >= 200][:30]:
        print(f"{diff:9.0f} {t:9.0f} {h:9.0f}  {name[:150]}")
    print("... most in hand (what the typed client does instead)")
    for diff, t, h, name in [row for row in rows if row[0] <= -200][-10:]:
        print(f"{diff:9.0f} {t:9.0f} {h:9.0f}  {name[:150]}")
PY
