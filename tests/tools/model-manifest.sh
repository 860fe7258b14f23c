#!/usr/bin/env bash
# `#[strata::model]` from a user's crate whose manifest names only strata, garde and tokio (no
# serde, no schemars): it builds; with another garde than Strata's, the first error names the
# mismatch. The crate is written to a temporary directory; the build shares this checkout's
# target directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
manifest() {
    cat >"$work/Cargo.toml" <<TOML
[package]
name = "model-manifest"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
strata = { path = "$root", default-features = false }
garde = { version = "$1", features = ["derive"] }
tokio = { version = "1", features = ["macros", "rt-multi-thread"] }

[workspace]
TOML
}
cat >"$work/src/main.rs" <<'RS'
use strata::prelude::*;

#[strata::model]
struct Hello {
    #[garde(length(chars, min = 1))]
    name: String,
}

#[strata::model(output)]
struct Greeting {
    greeting: String,
}

fn main() {
    let hello = default_endpoints_factory()
        .get()
        .handler(async |input: Hello| {
            Ok(Greeting { greeting: format!("Hello, {}!", input.name) })
        });
    let _ = routing! { "hello" => hello };
}
RS
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
manifest 0.23
cargo build --quiet --manifest-path "$work/Cargo.toml"
manifest 0.22
if cargo build --quiet --manifest-path "$work/Cargo.toml" 2>"$work/errors"; then
    echo "model-manifest: a garde 0.22 crate built against Strata's garde 0.23" >&2
    exit 1
fi
first=$(grep -m1 '^error' "$work/errors")
expected="implements the \`Validate\` of another \`garde\` than Strata's (0.23)"
if [[ "$first" != *"$expected"* ]]; then
    echo "model-manifest: the first error is not the mismatch's:" >&2
    cat "$work/errors" >&2
    exit 1
fi
echo "model-manifest: builds with strata, garde and tokio only; another garde: \"${first#error*: }\""
