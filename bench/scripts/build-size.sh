#!/usr/bin/env bash
# What an application built on Strata compiles, with every feature (the default) and with none:
# the crates, the time of a clean release build, and the binary's size (as built, stripped).
#
# The application is `examples/quick_start.rs` as a package of its own outside the workspace
# (so that none of the workspace's dev-dependencies is built), depending on this checkout's
# `strata` with or without `default-features = false`, with the workspace's `Cargo.lock` for the
# same versions. Each variant builds in a fresh target directory.
#
#   bench/scripts/build-size.sh [runs]      (default 1 run per variant)
#
# Times are wall-clock: run it on an idle machine, and give the number of cores with them.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-1}
work=${WORK:-$(mktemp -d)}
printf '%-10s %4s %7s %10s %12s %14s\n' variant run crates "build s" "binary B" "stripped B"
for variant in default none; do
    app="$work/app-$variant"
    rm -rf "$app"
    mkdir -p "$app/src"
    defaults=true
    [ "$variant" = none ] && defaults=false
    cat >"$app/Cargo.toml" <<TOML
[package]
name = "strata-size-check"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[dependencies]
strata = { path = "$repo", default-features = $defaults }
garde = { version = "0.23", default-features = false, features = ["derive"] }
schemars = { version = "1", default-features = false, features = ["derive", "std"] }
serde = { version = "1", features = ["derive"] }
tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
TOML
    cp "$repo/examples/quick_start.rs" "$app/src/main.rs"
    cp "$repo/Cargo.lock" "$app/Cargo.lock"
    crates=$(cd "$app" && cargo tree -e normal --prefix none | sed 's/ (\*)$//' | sort -u | wc -l)
    for run in $(seq 1 "$runs"); do
        target="$work/target-$variant"
        rm -rf "$target"
        start=$(date +%s.%N)
        (cd "$app" && CARGO_TARGET_DIR="$target" cargo build --quiet --release)
        end=$(date +%s.%N)
        binary="$target/release/strata-size-check"
        size=$(stat -c %s "$binary")
        strip -o "$work/stripped" "$binary"
        stripped=$(stat -c %s "$work/stripped")
        printf '%-10s %4s %7s %10.1f %12s %14s\n' "$variant" "$run" "$crates" \
            "$(python3 -c "print($end - $start)")" "$size" "$stripped"
        rm -rf "$target"
    done
done
