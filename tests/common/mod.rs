//! Helpers shared by integration tests (included with `mod common;`).

/// Compares `actual` with the reviewed file `tests/snapshots/<name>`; with `UPDATE_SNAPSHOTS`
/// set it rewrites the file first (review the diff, then commit it). `test` names the test
/// target to run again.
pub(crate) fn compare_snapshot(name: &str, actual: &str, test: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).expect("a writable snapshot");
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 writes it)", path.display()));
    assert!(
        actual == expected,
        "{name} changed; review the diff of UPDATE_SNAPSHOTS=1 cargo test --test {test}"
    );
}
