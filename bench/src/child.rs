//! Servers as child processes, pinned to their own core when `taskset` is available, so the
//! load generator does not share a core with them and each server's peak RSS and CPU time can
//! be read from `/proc`: this binary (`strata-bench serve <server> <scenario>`) for hyper, axum
//! and Strata, Node for express-zod-api (`ezapi/server.mjs`), and the project's quick start
//! example binary as shipped.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
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

/// The environment variable that overrides where express-zod-api's server is (the directory
/// with `server.mjs` and its `node_modules`).
pub(crate) const EZAPI_DIR_VARIABLE: &str = "STRATA_BENCH_EZAPI_DIR";

/// express-zod-api's server: its directory and the Node binary its packages pinned.
#[derive(Debug, Clone)]
pub(crate) struct Ezapi {
    dir: PathBuf,
    node: PathBuf,
}

impl Ezapi {
    /// `ezapi/` next to this crate's manifest (as compiled), or [`EZAPI_DIR_VARIABLE`]; an error
    /// saying what is missing and how to install it when its packages are not there.
    pub(crate) fn locate() -> Result<Self, String> {
        let dir = std::env::var_os(EZAPI_DIR_VARIABLE).map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("ezapi"),
            PathBuf::from,
        );
        Self::locate_in(dir)
    }

    fn locate_in(dir: PathBuf) -> Result<Self, String> {
        let install = format!(
            "run bench/scripts/install-tools.sh (or `npm ci` in {})",
            dir.display()
        );
        if !dir.join("server.mjs").is_file() {
            return Err(format!(
                "{} has no server.mjs (set {EZAPI_DIR_VARIABLE} to the ezapi directory)",
                dir.display()
            ));
        }
        let packages = dir.join("node_modules");
        if !packages
            .join("express-zod-api")
            .join("package.json")
            .is_file()
        {
            return Err(format!(
                "its Node packages are not installed ({} is missing): {install}",
                packages.join("express-zod-api").display()
            ));
        }
        let node = packages.join("node").join("bin").join("node");
        if !node.is_file() {
            return Err(format!(
                "the pinned Node binary is not installed ({} is missing): {install}",
                node.display()
            ));
        }
        Ok(Self { dir, node })
    }

    /// `express-zod-api 29.8.1 on Node v24.21.0`, from the installed packages.
    pub(crate) fn describe(&self) -> String {
        let version = std::fs::read(
            self.dir
                .join("node_modules/express-zod-api")
                .join("package.json"),
        )
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "(version unknown)".to_owned());
        let node = Command::new(&self.node)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        format!("express-zod-api {version} on Node {node}")
    }
}

/// The quick start example as built next to this binary (`target/<profile>/examples/
/// quick_start`), or why it is not there.
pub(crate) fn quick_start_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let dir = exe.parent().ok_or("the executable has no directory")?;
    let binary = dir.join("examples").join("quick_start");
    if binary.is_file() {
        return Ok(binary);
    }
    // The same profile as this binary's.
    let release = if dir.ends_with("debug") {
        ""
    } else {
        " --release"
    };
    Err(format!(
        "{} is missing: build it with `cargo build{release} --example quick_start`",
        binary.display()
    ))
}

/// `program`, under `taskset -c <SERVER_CORE>` when `pin`.
fn server_command(program: &Path, pin: bool) -> Command {
    if pin {
        let mut command = Command::new("taskset");
        command.args(["-c", SERVER_CORE]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// A server running in a child process.
pub(crate) struct ChildServer {
    pub(crate) kind: ServerKind,
    pub(crate) addr: SocketAddr,
    child: Child,
    /// Closing it stops the server; `None` for the quick start, which is killed instead.
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
        match kind {
            ServerKind::ExpressZodApi => Self::spawn_ezapi(&Ezapi::locate()?, scenario.name(), pin),
            ServerKind::QuickStart => Self::spawn_quick_start(&quick_start_binary()?, pin),
            _ => {
                if let Some(binary) = solo_binary(kind) {
                    let mut command = server_command(&binary, pin);
                    command
                        .args([scenario.name(), "--workers"])
                        .arg(workers.to_string());
                    return Self::announced(kind, command);
                }
                let args = ["serve", kind.name(), scenario.name(), "--workers"];
                Self::start(kind, &args, workers, pin)
            }
        }
    }

    /// Starts `binary`, a `strata-bench-strata` of some build (`<binary> <scenario>`), and
    /// waits until it listens (`strata-bench compare`).
    pub(crate) fn spawn_from(
        binary: &Path,
        scenario: Scenario,
        workers: usize,
        pin: bool,
    ) -> Result<Self, String> {
        let mut command = server_command(binary, pin);
        command
            .args([scenario.name(), "--workers"])
            .arg(workers.to_string());
        Self::announced(ServerKind::Strata, command)
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

    /// Starts the server of `strata-bench client` (`serve client`, Strata) and waits until it
    /// listens.
    pub(crate) fn spawn_client_app(workers: usize, pin: bool) -> Result<Self, String> {
        Self::start(
            ServerKind::Strata,
            &["serve", "client", "--workers"],
            workers,
            pin,
        )
    }

    /// Starts a server of `strata-bench middleware` (`serve middleware <server>`) from this
    /// program, or from `binary` (another build of it), and waits until it listens; a traced
    /// one exports to the OTLP endpoint `otlp`.
    pub(crate) fn spawn_middleware(
        server: crate::middleware::Server,
        binary: Option<&Path>,
        workers: usize,
        pin: bool,
        otlp: Option<&str>,
    ) -> Result<Self, String> {
        let exe = match binary {
            Some(binary) => binary.to_path_buf(),
            None => std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?,
        };
        let mut command = server_command(&exe, pin);
        command
            .args(["serve", "middleware", server.name(), "--workers"])
            .arg(workers.to_string());
        if let Some(otlp) = otlp {
            command.args(["--otlp", otlp]);
        }
        Self::announced(ServerKind::Strata, command)
    }

    /// Starts `kind`'s server of `strata-bench uploads` in `mode` (`serve upload <kind>
    /// <mode>`, or `node server.mjs upload` for express-zod-api, spooled only) and waits until
    /// it listens.
    pub(crate) fn spawn_upload(
        kind: ServerKind,
        mode: crate::servers::upload_app::Mode,
        workers: usize,
        pin: bool,
    ) -> Result<Self, String> {
        if kind == ServerKind::ExpressZodApi {
            return Self::spawn_ezapi(&Ezapi::locate()?, "upload", pin);
        }
        Self::start(
            kind,
            &["serve", "upload", kind.name(), mode.name(), "--workers"],
            workers,
            pin,
        )
    }

    /// Starts `kind`'s server of `strata-bench fanout` (`serve fanout <kind>`, one worker) and
    /// waits until it listens.
    pub(crate) fn spawn_fanout(kind: ServerKind, pin: bool) -> Result<Self, String> {
        Self::start(kind, &["serve", "fanout", kind.name(), "--workers"], 1, pin)
    }

    /// Runs this program with `args` and `workers` after them; reads the address it listens on.
    fn start(kind: ServerKind, args: &[&str], workers: usize, pin: bool) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut command = server_command(&exe, pin);
        command.args(args).arg(workers.to_string());
        Self::announced(kind, command)
    }

    /// `node server.mjs <scenario>` in production mode (`upload` for `strata-bench uploads`);
    /// reads the address it listens on.
    fn spawn_ezapi(ezapi: &Ezapi, scenario: &str, pin: bool) -> Result<Self, String> {
        let mut command = server_command(&ezapi.node, pin);
        command
            .arg(ezapi.dir.join("server.mjs"))
            .arg(scenario)
            .current_dir(&ezapi.dir)
            .env("NODE_ENV", "production");
        Self::announced(ServerKind::ExpressZodApi, command)
    }

    /// Spawns `command` (standard input a pipe that stops it when closed, standard output the
    /// announcement) and reads the `listening <addr>` line, skipping any line before it (Node's
    /// logger warns at startup). The rest of its output is drained, so that a child writing
    /// later neither blocks on a full pipe nor fails on a closed one.
    fn announced(kind: ServerKind, mut command: Command) -> Result<Self, String> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting the {kind} server: {e}"))?;
        let stdin = child.stdin.take();
        let (addr, said) = match child.stdout.take() {
            Some(stdout) => read_announcement(stdout),
            None => (None, String::new()),
        };
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the {kind} server did not start (it said {said:?})"
            ));
        };
        Ok(Self {
            kind,
            addr,
            child,
            stdin,
        })
    }

    /// The quick start as shipped: `PORT` set to a free port, its output (request logs at
    /// `info`) to /dev/null; ready when the port accepts connections.
    fn spawn_quick_start(binary: &Path, pin: bool) -> Result<Self, String> {
        let port = TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("finding a free port: {e}"))?
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut child = server_command(binary, pin)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            let exited = child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the quick start ({}) did not listen on {addr}{}",
                    binary.display(),
                    exited
                        .map(|s| format!(" (it exited: {s})"))
                        .unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Self {
            kind: ServerKind::QuickStart,
            addr,
            child,
            stdin: None,
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
        status_kib(&status, field)
    }

    /// CPU time used so far by every thread of the process (`/proc/<pid>/task/*/schedstat`,
    /// nanoseconds on the CPU).
    pub(crate) fn cpu_time(&self) -> Option<Duration> {
        process_cpu_time(&format!("/proc/{}", self.child.id()))
    }

    /// The child's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes the child's standard input, which stops it; kills it if it lingers. The quick
    /// start, which serves until a signal, is killed at once (it keeps no state).
    pub(crate) fn stop(mut self) {
        if self.stdin.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return;
        }
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

/// The `kB` field `field` (`VmHWM:`, `VmRSS:`) of a `/proc/<pid>/status` text.
pub(crate) fn status_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// CPU time used so far by every live thread of the process whose `/proc` directory is `proc`
/// (`/proc/<pid>`, or `/proc/self`): the sum of `task/*/schedstat`'s first field, nanoseconds
/// on the CPU.
pub(crate) fn process_cpu_time(proc: &str) -> Option<Duration> {
    let tasks = std::fs::read_dir(format!("{proc}/task")).ok()?;
    let mut total = 0u64;
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// Reads lines from a child's standard output until `listening <addr>`; returns the address
/// (or `None` at the end of the output) and what was said before it. Then drains the rest in
/// a thread of its own.
fn read_announcement<R: Read + Send + 'static>(stdout: R) -> (Option<SocketAddr>, String) {
    let mut reader = BufReader::new(stdout);
    let mut said = String::new();
    let mut line = String::new();
    let addr = loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break None,
            Ok(_) => {}
        }
        if let Some(addr) = line.trim().strip_prefix("listening ") {
            break addr.parse().ok();
        }
        said.push_str(&line);
    };
    if addr.is_some() {
        std::thread::spawn(move || {
            let mut sink = [0u8; 4096];
            while reader.read(&mut sink).is_ok_and(|n| n > 0) {}
        });
    } else {
        said.push_str(&line);
    }
    (addr, said)
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

/// The side of `strata-bench client`'s server (`serve client`): serves until standard input
/// closes.
pub(crate) fn serve_client(workers: usize) -> Result<(), String> {
    serve_until_closed("client", workers, crate::servers::start_client_app())
}

/// The side of a `strata-bench middleware` server (`serve middleware <server>`): serves until
/// standard input closes.
pub(crate) fn serve_middleware(
    server: crate::middleware::Server,
    workers: usize,
    otlp: Option<&str>,
) -> Result<(), String> {
    serve_until_closed(
        server.name(),
        workers,
        crate::servers::start_middleware(server, otlp),
    )
}

/// The side of a `strata-bench uploads` server (`serve upload <server> <mode>`): serves until
/// standard input closes.
pub(crate) fn serve_upload(
    kind: ServerKind,
    mode: crate::servers::upload_app::Mode,
    workers: usize,
) -> Result<(), String> {
    serve_until_closed(
        kind.name(),
        workers,
        crate::servers::start_upload(kind, mode),
    )
}

/// The side of a `strata-bench fanout` server (`serve fanout <server>`): serves until standard
/// input closes.
pub(crate) fn serve_fanout(kind: ServerKind, workers: usize) -> Result<(), String> {
    serve_until_closed(kind.name(), workers, crate::servers::start_fanout(kind))
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

/// The binary of its own that serves `kind` (`strata-bench-<kind>`, built with this one by
/// `cd bench && cargo build --release`), when it is there and up to date: no source it was
/// built from is newer than it (cargo's dep-info beside it, `strata-bench-<kind>.d`, lists
/// them; `cargo run` rebuilds only this binary, and a stale server would be measured). Without
/// dep-info: when it is not older than this binary by more than a minute.
pub(crate) fn solo_binary(kind: ServerKind) -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let binary = exe.with_file_name(format!("strata-bench-{}", kind.name()));
    let modified = |path: &std::path::Path| std::fs::metadata(path).and_then(|m| m.modified());
    let built = modified(&binary).ok()?;
    let stale = match std::fs::read_to_string(binary.with_extension("d")) {
        Ok(dep_info) => dep_info_sources(&dep_info).iter().any(|source| {
            // A source gone since (a file removed) is a change too.
            modified(std::path::Path::new(source)).map_or(true, |changed| changed > built)
        }),
        Err(_) => modified(&exe)
            .ok()?
            .duration_since(built)
            .is_ok_and(|older| older > Duration::from_secs(60)),
    };
    (!stale).then_some(binary)
}

/// The sources a Makefile-style dep-info file (`target: a.rs b\ c.rs`) lists for its first
/// target, spaces in paths unescaped.
fn dep_info_sources(dep_info: &str) -> Vec<String> {
    let Some(line) = dep_info.lines().next() else {
        return Vec::new();
    };
    // The target ends at the first `: ` (a path may hold a colon, never followed by a space
    // unescaped).
    let Some((_, sources)) = line.split_once(": ") else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    let mut current = String::new();
    let mut chars = sources.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            ' ' => {
                if !current.is_empty() {
                    paths.push(std::mem::take(&mut current));
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        paths.push(current);
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_announcement_may_follow_other_lines() {
        let said = "2026-11-25T09:17:39.288Z warn: Using the built-in logger in production\n\
                    listening 127.0.0.1:44607\nlater\n";
        let (addr, before) = read_announcement(std::io::Cursor::new(said));
        assert_eq!(addr, Some(SocketAddr::from(([127, 0, 0, 1], 44607))));
        assert!(
            before.starts_with("2026-11-25T09:17:39.288Z warn"),
            "{before}"
        );
        let (addr, before) = read_announcement(std::io::Cursor::new("Error: no\n"));
        assert_eq!((addr, before.as_str()), (None, "Error: no\n"));
    }

    #[test]
    fn dep_info_lists_the_sources_with_spaces_unescaped() {
        let dep_info = "/t/release/strata-bench-hyper: /w/src/a.rs /w/my\\ dir/b.rs  /w/c:d.rs\n\n\
                        /w/src/a.rs:\n";
        assert_eq!(
            dep_info_sources(dep_info),
            ["/w/src/a.rs", "/w/my dir/b.rs", "/w/c:d.rs"]
        );
        assert!(dep_info_sources("").is_empty());
        assert!(dep_info_sources("no target line").is_empty());
    }

    #[test]
    fn status_fields_are_read_in_kib() {
        let status = "Name:\tstrata-bench\nVmPeak:\t  812340 kB\nVmHWM:\t   45012 kB\n\
                      VmRSS:\t   39876 kB\nThreads:\t2\n";
        assert_eq!(status_kib(status, "VmHWM:"), Some(45_012));
        assert_eq!(status_kib(status, "VmRSS:"), Some(39_876));
        assert_eq!(status_kib(status, "VmSwap:"), None);
        assert_eq!(status_kib("VmRSS:\tlots kB\n", "VmRSS:"), None);
    }

    #[test]
    fn missing_node_packages_are_explained() {
        let dir = std::env::temp_dir().join(format!("strata-bench-ezapi-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let message = Ezapi::locate_in(dir.clone()).unwrap_err();
        assert!(message.contains("no server.mjs"), "{message}");
        std::fs::write(dir.join("server.mjs"), "").unwrap();
        let message = Ezapi::locate_in(dir.clone()).unwrap_err();
        assert!(
            message.contains("Node packages are not installed"),
            "{message}"
        );
        assert!(message.contains("install-tools.sh"), "{message}");
        let package = dir.join("node_modules/express-zod-api");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(package.join("package.json"), r#"{"version":"29.0.0"}"#).unwrap();
        let message = Ezapi::locate_in(dir.clone()).unwrap_err();
        assert!(message.contains("Node binary"), "{message}");
        std::fs::create_dir_all(dir.join("node_modules/node/bin")).unwrap();
        std::fs::write(dir.join("node_modules/node/bin/node"), "").unwrap();
        let ezapi = Ezapi::locate_in(dir.clone()).unwrap();
        assert!(
            ezapi
                .describe()
                .starts_with("express-zod-api 29.0.0 on Node")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
