//! The memory this process may use: defaults that hold what clients send are derived from it,
//! so that a handful of addresses cannot push a default server past it.

use std::sync::OnceLock;

/// The memory this process may use, in bytes: its cgroup's limit (cgroup v2 `memory.max`)
/// when it has one, else the machine's (`MemTotal` of `/proc/meminfo`); `None` where neither
/// can be read (not Linux). Read once.
pub fn memory_limit() -> Option<u64> {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let machine = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| mem_total(&text));
        let cgroup = std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|text| cgroup_v2_path(&text).map(str::to_owned))
            .and_then(|path| {
                std::fs::read_to_string(format!("/sys/fs/cgroup{path}/memory.max")).ok()
            })
            .and_then(|text| cgroup_memory_max(&text));
        match (machine, cgroup) {
            (Some(machine), Some(cgroup)) => Some(machine.min(cgroup)),
            (one, other) => one.or(other),
        }
    })
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let amount: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => amount.checked_mul(1024),
        None => Some(amount),
        Some(_) => None,
    }
}

/// The process's cgroup v2 path (the `0::` line of `/proc/self/cgroup`).
fn cgroup_v2_path(cgroup: &str) -> Option<&str> {
    cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .filter(|path| path.starts_with('/') && !path.contains(".."))
}

/// A cgroup v2 `memory.max`: bytes, or `max` (no limit: `None`).
fn cgroup_memory_max(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machines_and_the_cgroups_limits_are_read() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:        19000000 kB\n";
        assert_eq!(mem_total(meminfo), Some(24_576_000 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total("MemTotal: lots kB\n"), None);
        assert_eq!(
            cgroup_v2_path("0::/user.slice/app.scope\n"),
            Some("/user.slice/app.scope")
        );
        assert_eq!(cgroup_v2_path("12:memory:/docker/abc\n"), None, "cgroup v1");
        assert_eq!(cgroup_v2_path("0::/../etc\n"), None);
        assert_eq!(cgroup_memory_max("536870912\n"), Some(512 * 1024 * 1024));
        assert_eq!(cgroup_memory_max("max\n"), None);
        // This machine's, whatever it is, is some memory.
        if cfg!(target_os = "linux") {
            assert!(memory_limit().is_some_and(|bytes| bytes > 0));
        }
    }
}
