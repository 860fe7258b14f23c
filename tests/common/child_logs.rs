//! The JSON log lines a server writes to stdout, read by running the test again as a child
//! process (a subscriber is global to a process, and stdout is the test harness's).

use std::future::Future;
use std::process::Command;

/// Set in the child's environment: the test serves instead of spawning.
const CHILD: &str = "STRATA_TEST_LOGS_CHILD";

/// In the test named `test` (its full name, as `--exact` takes it): in the child, runs `serve`
/// and gives `None` (the test then returns); in the parent, runs the child and gives the JSON
/// records it wrote (the lines, or line ends after the harness's own text, that begin with
/// `{"timestamp"`), each parsed, panicking if the child failed.
pub(crate) fn json_records<F>(
    test: &str,
    serve: impl FnOnce() -> F,
) -> Option<Vec<serde_json::Value>>
where
    F: Future<Output = ()>,
{
    if std::env::var_os(CHILD).is_some() {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(serve());
        return None;
    }
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8(child.stdout).unwrap();
    assert!(
        child.status.success(),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
    // Among the test harness's own lines ("running 1 test", ...; the first record follows its
    // "test ... " on the same line): each record one object.
    Some(
        stdout
            .lines()
            .filter_map(|line| line.find("{\"timestamp\"").map(|at| &line[at..]))
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect(),
    )
}
