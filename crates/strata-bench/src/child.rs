//! Servers as child processes of this binary (`strata-bench serve <server> <scenario>`), pinned
//! to their own core when `taskset` is available, so the load generator does not share a core
//! with them and each server's peak RSS can be read from `/proc`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::scenario::{Scenario, ServerKind};

/// The core servers run on; the load generator takes [`CLIENT_CORE`].
pub(crate) const SERVER_CORE: &str = "0";
/// The core of the load generator.
pub(crate) const CLIENT_CORE: &str = "1";

/// Whether servers and load generator can be pinned to different cores.
pub(crate) fn can_pin() -> bool {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores >= 2
        && Command::new("taskset")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// Pins every thread of this process (and the threads it starts later) to `core`.
pub(crate) fn pin_self(core: &str) -> Result<(), String> {
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", core, &std::process::id().to_string()])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("taskset: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("taskset failed: {status}"))
    }
}

/// A server running in a child process.
pub(crate) struct ChildServer {
    pub(crate) kind: ServerKind,
    pub(crate) addr: SocketAddr,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl ChildServer {
    /// Starts `kind` for `scenario` and waits until it listens.
    pub(crate) fn spawn(
        kind: ServerKind,
        scenario: Scenario,
        workers: usize,
        pin: bool,
    ) -> Result<Self, String> {
        let args = ["serve", kind.name(), scenario.name(), "--workers"];
        Self::start(kind, &args, workers, pin)
    }

    /// Starts the soak server (`serve soak`, Strata) and waits until it listens.
    pub(crate) fn spawn_soak(workers: usize, pin: bool) -> Result<Self, String> {
        Self::start(
            ServerKind::Strata,
            &["serve", "soak", "--workers"],
            workers,
            pin,
        )
    }

    /// Runs this program with `args` and `workers` after them; reads the address it listens on.
    fn start(kind: ServerKind, args: &[&str], workers: usize, pin: bool) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut command = if pin {
            let mut command = Command::new("taskset");
            command.args(["-c", SERVER_CORE]).arg(&exe);
            command
        } else {
            Command::new(&exe)
        };
        command
            .args(args)
            .arg(workers.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting the {kind} server: {e}"))?;
        let stdin = child.stdin.take();
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut line);
        }
        let addr = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|addr| addr.parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the {kind} server did not start (it said {line:?})"
            ));
        };
        Ok(Self {
            kind,
            addr,
            child,
            stdin,
        })
    }

    /// The process's peak resident set size (`VmHWM`), in KiB.
    pub(crate) fn peak_rss_kib(&self) -> Option<u64> {
        self.status_kib("VmHWM:")
    }

    /// The process's resident set size now (`VmRSS`), in KiB.
    pub(crate) fn rss_kib(&self) -> Option<u64> {
        self.status_kib("VmRSS:")
    }

    /// A `kB` field of `/proc/<pid>/status`.
    fn status_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// CPU time used so far by every thread of the process (`/proc/<pid>/task/*/schedstat`,
    /// nanoseconds on the CPU).
    pub(crate) fn cpu_time(&self) -> Option<Duration> {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.child.id())).ok()?;
        let mut total = 0u64;
        for task in tasks.flatten() {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
        }
        Some(Duration::from_nanos(total))
    }

    /// The child's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes the child's standard input, which stops it; kills it if it lingers.
    pub(crate) fn stop(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child's side: serves until standard input closes.
pub(crate) fn serve(kind: ServerKind, scenario: Scenario, workers: usize) -> Result<(), String> {
    serve_until_closed(
        kind.name(),
        workers,
        crate::servers::start(kind, scenario.many_routes()),
    )
}

/// The ceiling reference (`serve fixed`): serves until standard input closes.
pub(crate) fn serve_fixed(workers: usize) -> Result<(), String> {
    serve_until_closed("fixed", workers, crate::servers::start_fixed())
}

/// The soak server's side (`serve soak`): serves until standard input closes.
pub(crate) fn serve_soak(workers: usize) -> Result<(), String> {
    serve_until_closed("soak", workers, crate::servers::start_soak())
}

fn serve_until_closed(
    name: &str,
    workers: usize,
    start: impl Future<Output = std::io::Result<crate::servers::Running>>,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let running = runtime
        .block_on(start)
        .map_err(|e| format!("{name}: {e}"))?;
    println!("listening {}", running.addr);
    // Block until the parent closes our standard input (or goes away).
    let mut sink = String::new();
    while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {
        sink.clear();
    }
    runtime.block_on(running.stop());
    Ok(())
}
