#!/usr/bin/env bash
# What a build of Strata costs, with every feature (the default) and with none: the crates it
# compiles, the time of a clean release build of the quick start example, and that binary's
# size (as built, and stripped). Each variant builds in a target directory of its own.
#
#   crates/strata-bench/scripts/build-size.sh [runs]      (default 1 run per variant)
#
# Prints one line per variant and run. Times are wall-clock on the machine at hand: run it on
# an idle machine, and give the number of cores with the figures.
set -euo pipefail
cd "$(dirname "$0")/../../.."
runs=${1:-1}
work=${WORK:-$(mktemp -d)}
printf '%-10s %4s %7s %10s %12s %14s\n' variant run crates "build s" "binary B" "stripped B"
for variant in default none; do
    flags=()
    [ "$variant" = none ] && flags=(--no-default-features)
    crates=$(cargo tree -p strata -e normal --prefix none "${flags[@]}" | sed 's/ (\*)$//' | sort -u | wc -l)
    for run in $(seq 1 "$runs"); do
        target="$work/target-$variant"
        rm -rf "$target"
        start=$(date +%s.%N)
        CARGO_TARGET_DIR="$target" cargo build --quiet --release --example quick_start "${flags[@]}"
        end=$(date +%s.%N)
        binary="$target/release/examples/quick_start"
        size=$(stat -c %s "$binary")
        strip -o "$work/stripped" "$binary"
        stripped=$(stat -c %s "$work/stripped")
        printf '%-10s %4s %7s %10.1f %12s %14s\n' "$variant" "$run" "$crates" \
            "$(python3 -c "print($end - $start)")" "$size" "$stripped"
        rm -rf "$target"
    done
done
