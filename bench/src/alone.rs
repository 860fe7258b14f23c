//! A measuring run refuses to start beside another strata-bench process: two harnesses (or
//! a harness and the servers a killed one left behind) share the two cores, and both report
//! what the other took from them. A leftover `serve` loop once did exactly that, and its
//! rounds showed the servers at half their core.

use std::path::Path;

/// The environment variable that lets a run start beside other strata-bench processes.
pub(crate) const ALLOW_VAR: &str = "STRATA_BENCH_ALLOW_OTHERS";

/// Whether a command line (`/proc/<pid>/cmdline`, arguments separated by NUL) is a
/// strata-bench process's: its program's file name starts with `strata-bench` (the harness,
/// or the copy of it that serves one side of an A/B run).
fn is_harness(cmdline: &[u8]) -> bool {
    let program = cmdline.split(|&b| b == 0).next().unwrap_or_default();
    Path::new(&*String::from_utf8_lossy(program))
        .file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with("strata-bench"))
}

/// The command line as text, its arguments separated by spaces.
fn printable(cmdline: &[u8]) -> String {
    String::from_utf8_lossy(cmdline.strip_suffix(&[0]).unwrap_or(cmdline)).replace('\0', " ")
}

/// Other strata-bench processes running now: their process ids and command lines.
fn others() -> Vec<(u32, String)> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<(u32, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            // A process may end between the listing and the read: it is then not running.
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            is_harness(&cmdline).then(|| (pid, printable(&cmdline)))
        })
        .collect();
    found.sort_unstable();
    found
}

/// `Ok` when no other strata-bench process runs (or `STRATA_BENCH_ALLOW_OTHERS` is set to
/// something other than empty or `0`); otherwise the error to print, naming them.
pub(crate) fn check() -> Result<(), String> {
    let allowed =
        std::env::var_os(ALLOW_VAR).is_some_and(|value| !value.is_empty() && value != "0");
    if allowed {
        return Ok(());
    }
    refusal(&others())
}

fn refusal(others: &[(u32, String)]) -> Result<(), String> {
    if others.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = others
        .iter()
        .map(|(pid, cmdline)| format!("  {pid} {cmdline}"))
        .collect();
    Err(format!(
        "other strata-bench processes are running, and would share the cores with this run's \
         servers and load:\n{}\nstop them (kill <pid>), or set {ALLOW_VAR}=1 to measure anyway",
        list.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_harness_is_told_by_its_program_s_file_name() {
        assert!(is_harness(
            b"target/release/strata-bench\0serve\0strata\0hello\0"
        ));
        assert!(is_harness(
            b"/tmp/ab/strata-bench-base\0serve\0middleware\0plain\0"
        ));
        assert!(is_harness(b"strata-bench\0"));
        assert!(!is_harness(
            b"/usr/bin/wrk\0-t1\0http://127.0.0.1:1/strata-bench\0"
        ));
        assert!(!is_harness(b"cargo\0run\0-p\0strata-bench\0"));
        assert!(!is_harness(b""));
    }

    #[test]
    fn the_refusal_names_each_process() {
        assert_eq!(refusal(&[]), Ok(()));
        let error = refusal(&[
            (41, "strata-bench serve strata hello".to_owned()),
            (42, "strata-bench middleware".to_owned()),
        ])
        .unwrap_err();
        assert!(
            error.contains("  41 strata-bench serve strata hello\n  42 strata-bench middleware\n"),
            "{error}"
        );
        assert!(error.contains("STRATA_BENCH_ALLOW_OTHERS=1"), "{error}");
    }

    #[test]
    fn another_harness_is_found_in_proc_and_this_process_is_not() {
        use std::os::unix::process::CommandExt;
        let mut probe = std::process::Command::new("sleep")
            .arg0("strata-bench-probe")
            .arg("30")
            .spawn()
            .unwrap();
        // Until the child has exec'd `sleep` under its new name (its cmdline is the test's
        // until then).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let found = loop {
            let found = others();
            if found.iter().any(|(pid, _)| *pid == probe.id())
                || std::time::Instant::now() > deadline
            {
                break found;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        probe.kill().unwrap();
        probe.wait().unwrap();
        assert!(
            found.contains(&(probe.id(), "strata-bench-probe 30".to_owned())),
            "{found:?}"
        );
        assert!(found.iter().all(|(pid, _)| *pid != std::process::id()));
    }

    #[test]
    fn a_command_line_is_printed_with_spaces() {
        assert_eq!(
            printable(b"strata-bench\0serve\0strata\0"),
            "strata-bench serve strata"
        );
    }
}
