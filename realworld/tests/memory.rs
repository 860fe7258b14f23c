//! Failed logins cannot exhaust memory (issue 49): each Argon2 check allocates 19 MiB, and 24
//! failed logins at once raise the process's peak resident memory by a few checks' worth, not
//! 24 (before the bound: 40 at once raised it by 753 MiB). A test binary of its own, with this
//! one test: the peak (`VmHWM` of `/proc/self/status`) is then this test's alone.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use strata::ratelimit::Quota;
use strata_realworld::limits::Limits;

/// The process's peak resident memory, in KiB (`None` off Linux).
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_at_once_stay_within_the_hashing_bound() {
    const BOUND: usize = 3;
    // Every login reaches its hash: rate limits out of the way, and waits long enough for a
    // debug build's hashes (about 0.5 s each).
    let limits = Limits::default()
        .hashing(BOUND, Duration::from_secs(600))
        .per_email(Quota::per_minute(1_000))
        .per_address(Quota::per_minute(1_000));
    let conduit = common::start_with(common::Backend::Sqlite, limits.clone()).await;
    let Some(before) = peak_kib() else {
        eprintln!("skipped: no /proc/self/status");
        return;
    };
    let emails = (0..24).map(|i| format!("nobody{i}@example.com"));
    let answers = common::logins_at_once(&conduit, emails).await;
    let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
    assert_eq!(statuses, [401; 24]);
    assert_eq!(
        limits.hashes().peak(),
        BOUND,
        "at most BOUND at once, and BOUND reached"
    );
    let grown_mib = (peak_kib().unwrap() - before) / 1024;
    // 19 MiB per check, at most BOUND at once; slack of three checks for the allocator, the
    // connections and the test's own tasks (24 at once would be 456 MiB).
    let most = 19 * (BOUND as u64 + 3);
    println!("the peak grew by {grown_mib} MiB (at most {most})");
    assert!(
        grown_mib <= most,
        "the peak grew by {grown_mib} MiB under 24 failed logins at once (at most {most} MiB)"
    );
}
