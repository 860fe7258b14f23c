//! The test process's peak resident memory, from `/proc` (Linux): what the memory tests
//! (`file_memory.rs`, `upload_spool_memory.rs`, each alone in its binary) measure.

/// The process's peak resident memory since the last reset, in KiB.
pub(crate) fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Resets the peak to the memory resident now (Linux 4.0 and later).
pub(crate) fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting the peak resident memory");
}
