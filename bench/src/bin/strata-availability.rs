//! `strata-availability`: the goal figure of issue 25. While one address attacks a Strata
//! server with the default configuration, does another address keep getting answers?
//!
//! `(cd bench && cargo run --release --bin strata-availability -- [--seconds N] [--nofile N]
//! [--connections N] [--head-start N] [--addresses N] [--server-log LEVEL] [attack...]` runs each attack (all
//! four by default) against a fresh server, a child process (`strata-availability serve
//! <variant>`, killed by its process id afterwards) under `prlimit --nofile=N:N` (512 by
//! default: the default connection cap is then 448). The attacker connects from 127.0.0.1 (one
//! tokio thread); a health checker from 127.0.0.2 (another) opens a new connection every 100 ms
//! and sends `GET /health`, which is good when it is answered 200 within 1 s. The goal: at
//! least 95 % good health checks over the run (20 s by default); the process exits with 1 when
//! an attack misses it. The attacker starts 2 s before the checker (it is at full strength when
//! the run begins) and goes on until the last check has its answer. Each attack is bounded: 2×
//! the connection cap of connections (`--connections` to change it), each reopened as soon as
//! the server closes it. `--addresses N` spreads the connections over N source addresses
//! (127.0.0.1, then 127.0.0.10 onwards): with 8, each holds a quarter of the cap, its share. `none` (no attack, the control) and `slow-bodies` (the slow bodies
//! against the default server) can be named too.
//!
//! Each attack's report says what the checks that were not good got (a late 200, another
//! status, no connection or no answer within 3 s), what the attacker saw (connections, their
//! lifetimes, the answers), the server's peaks read from `/proc` (descriptors, RSS, the
//! listening socket's accept queue) and the kernel's `ListenOverflows` over the run.
//!
//! - `h2-downloads`: HTTP/2 connections that give every stream a flow-control window of 0 and
//!   open as many `GET /file` (a 4 MiB `FileResponse`) streams as the server allows; every 5 s
//!   one stream per connection gets 16 KiB of window (and the connection as much).
//! - `h2-idle`: HTTP/2 connections that send the preface and an empty SETTINGS frame, then
//!   nothing (not even the acknowledgement of the server's settings or pings).
//! - `budget-promises`: `POST /note` with `Content-Length: 1048576`, then one body byte every 5 s.
//! - `slow-bodies-library`: the same with `Content-Length: 65536` (bodies the budget admits),
//!   against the server with the library example's layers after the body (`timeout(30 s)` and
//!   `GlobalConcurrencyLimitLayer::new(1024)`).
//!
//! A `POST /note` with a small body is also sent from 127.0.0.2 every 500 ms and reported (not
//! part of the goal): a body that must wait for the body budget shows there.
//!
//! The HTTP/2 attackers write their frames themselves (a handful of bytes of HPACK): a client
//! library cannot give a stream window except by reading it, and one with a window of 0 never
//! reads.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::future::IntoFuture;
use std::io::{BufRead, BufReader, Write as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use strata::server::LogColor;
use strata::server::LoggerOptions;
use strata::{Config, FileResponse, Routing};

use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::Level;
use strata::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::watch;

/// The attacker's source address (the first, with `--addresses`).
const ATTACKER: Ipv4Addr = Ipv4Addr::LOCALHOST;
/// The most source addresses `--addresses` spreads the attack over.
const MAX_ADDRESSES: u64 = 200;

/// The `index`th attacking address: [`ATTACKER`], then 127.0.0.10, 127.0.0.11, ... (the
/// checker's address is never one).
fn attacker_address(index: usize) -> Ipv4Addr {
    match u8::try_from(index) {
        Ok(0) => ATTACKER,
        Ok(n) if n < 246 => Ipv4Addr::new(127, 0, 0, 9 + n),
        _ => ATTACKER,
    }
}
/// The health checker's source address (Linux routes all of 127/8 to loopback).
const CHECKER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
/// A health check starts this often.
const CHECK_EVERY: Duration = Duration::from_millis(100);
/// A health check is good when it is a 200 within this.
const GOOD_WITHIN: Duration = Duration::from_secs(1);
/// How long a check waits for its answer, to tell a late answer from none.
const CHECK_WAIT: Duration = Duration::from_secs(3);
/// A small `POST /note` starts this often.
const NOTE_EVERY: Duration = Duration::from_millis(500);
/// The goal: at least this share of the health checks good, in percent.
const GOAL_PERCENT: usize = 95;
/// The attacker starts this long before the checker (by default).
const HEAD_START_SECONDS: u64 = 2;
/// The slow attackers do something (a body byte, some window) this often.
const TRICKLE: Duration = Duration::from_secs(5);
/// The window given to one stream (and the connection) every [`TRICKLE`].
const WINDOW_GRANT: u32 = 16 * 1024;
/// The `Content-Length` `budget-promises` declares: the default JSON body limit, so the body
/// budget (256 MiB) holds 256 of them.
const PROMISED: usize = 1024 * 1024;
/// The `Content-Length` `slow-bodies-library` declares: 2× the cap of them fit in the body
/// budget, so every one reaches the layers (as in issue 25, where 1,100 slow bodies held the
/// library example's concurrency limit) instead of getting a 503 from the budget.
const SLOW_BODY: usize = 64 * 1024;
/// The size of the file behind `GET /file`.
const FILE_SIZE: usize = 4 * 1024 * 1024;
/// Streams opened per HTTP/2 connection when the server sets no maximum (hyper's default).
const STREAMS_WITHOUT_MAXIMUM: usize = 200;
const DEFAULT_SECONDS: u64 = 20;
const DEFAULT_NOFILE: u64 = 512;
const PRLIMIT: &str = "/usr/bin/prlimit";

const USAGE: &str = "\
strata-availability: while 127.0.0.1 attacks a default Strata server, are the health checks of
127.0.0.2 answered (a 200 within 1 s, for at least 95 % of them)?

usage:
  strata-availability [--seconds N] [--nofile N] [--connections N] [--head-start N]
                      [--addresses N] [--server-log LEVEL] [attack...]
      each attack (default: all) against a new server under `prlimit --nofile=N:N` (default
      512: a connection cap of 448), for N seconds (default 20) after the attacker's head start
      (default 2 s), with --connections attacking connections (default: twice the cap);
      --server-log writes the server's log at LEVEL (debug, info, warn, error) to
      strata-availability-<attack>.log in the temporary directory; exits with 1 when an
      attack misses the goal
  strata-availability serve <default|library> [--log LEVEL]
      the server alone: prints `listening <address>`, serves until its standard input closes

attacks: h2-downloads h2-idle budget-promises slow-bodies-library; not in the default list:
none (the control) and slow-bodies (slow-bodies-library against the default server)
";

fn main() -> ExitCode {
    match parse(std::env::args().skip(1)) {
        Err(message) => {
            eprintln!("strata-availability: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Ok(Command::Help) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Command::Serve { variant, log }) => match serve(variant, log) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("strata-availability serve: {message}");
                ExitCode::FAILURE
            }
        },
        Ok(Command::Run(options)) => match run(&options) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(message) => {
                eprintln!("strata-availability: {message}");
                ExitCode::FAILURE
            }
        },
    }
}

// Arguments

/// The server's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// `create_config().cors(Cors::Disabled)`, nothing more.
    Default,
    /// The same with the library example's layers after the body.
    Library,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Default => "default",
            Variant::Library => "library",
        }
    }
}

/// One attack, run from [`ATTACKER`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attack {
    /// No attack: the control.
    Nothing,
    H2Downloads,
    H2Idle,
    BudgetPromises,
    SlowBodiesLibrary,
    /// `slow-bodies-library` against the default server (not in [`Attack::ALL`]): whether
    /// the layers matter.
    SlowBodies,
}

impl Attack {
    const ALL: [Attack; 4] = [
        Attack::H2Downloads,
        Attack::H2Idle,
        Attack::BudgetPromises,
        Attack::SlowBodiesLibrary,
    ];

    fn name(self) -> &'static str {
        match self {
            Attack::Nothing => "none",
            Attack::H2Downloads => "h2-downloads",
            Attack::H2Idle => "h2-idle",
            Attack::BudgetPromises => "budget-promises",
            Attack::SlowBodiesLibrary => "slow-bodies-library",
            Attack::SlowBodies => "slow-bodies",
        }
    }

    fn variant(self) -> Variant {
        match self {
            Attack::SlowBodiesLibrary => Variant::Library,
            _ => Variant::Default,
        }
    }

    /// What each attacking connection does.
    fn describe(self) -> &'static str {
        match self {
            Attack::Nothing => "none (the control)",
            Attack::H2Downloads => {
                "HTTP/2, stream window 0, the most GET /file streams the server allows; \
                 16 KiB of window to one stream every 5 s"
            }
            Attack::H2Idle => "HTTP/2 preface and empty SETTINGS, then silence",
            Attack::BudgetPromises => "POST /note, Content-Length: 1048576, one byte every 5 s",
            Attack::SlowBodiesLibrary => {
                "POST /note, Content-Length: 65536, one byte every 5 s, \
                 to the library example's layers"
            }
            Attack::SlowBodies => "POST /note, Content-Length: 65536, one byte every 5 s",
        }
    }
}

/// What a run is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Options {
    /// Seconds of health checks per attack.
    seconds: u64,
    /// Seconds the attacker runs before the checker starts.
    head_start: u64,
    /// The server's open-file limit (soft and hard).
    nofile: u64,
    /// Attacking connections; `None`: twice the connection cap.
    connections: Option<usize>,
    /// Source addresses the attacking connections are spread over (round robin).
    addresses: usize,
    /// The server's log level, when its log is wanted.
    server_log: Option<Level>,
    attacks: Vec<Attack>,
}

impl Options {
    /// The server's default connection cap under `nofile` (as `ServerLimits::max_connections`
    /// documents it: the open-file limit less 64, at least 16).
    fn cap(&self) -> usize {
        usize::try_from(self.nofile.saturating_sub(64))
            .unwrap_or(usize::MAX)
            .max(16)
    }

    fn connections(&self) -> usize {
        self.connections.unwrap_or(2 * self.cap())
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Command {
    Help,
    Serve {
        variant: Variant,
        log: Option<Level>,
    },
    Run(Options),
}

fn parse_level(text: &str) -> Result<Level, String> {
    match text {
        "debug" => Ok(Level::Debug),
        "info" => Ok(Level::Info),
        "warn" => Ok(Level::Warn),
        "error" => Ok(Level::Error),
        _ => Err(format!(
            "{text:?} is not a log level (debug, info, warn, error)"
        )),
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Debug => "debug",
        Level::Info => "info",
        Level::Warn => "warn",
        Level::Error => "error",
    }
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut args = args.into_iter();
    let mut options = Options {
        seconds: DEFAULT_SECONDS,
        head_start: HEAD_START_SECONDS,
        nofile: DEFAULT_NOFILE,
        connections: None,
        addresses: 1,
        server_log: None,
        attacks: Vec::new(),
    };
    let mut first = true;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |name: &str, text: String| {
            text.parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{name} takes a positive number, not {text:?}"))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "serve" if first => return parse_serve(args),
            "--seconds" => options.seconds = number("--seconds", value("--seconds")?)?,
            "--head-start" => {
                let text = value("--head-start")?;
                options.head_start = text
                    .parse()
                    .map_err(|_| format!("--head-start takes seconds, not {text:?}"))?;
            }
            "--nofile" => {
                options.nofile = number("--nofile", value("--nofile")?)?;
                if options.nofile < 128 {
                    return Err("--nofile must be at least 128".to_owned());
                }
            }
            "--connections" => {
                let n = number("--connections", value("--connections")?)?;
                options.connections = Some(usize::try_from(n).map_err(|e| e.to_string())?);
            }
            "--addresses" => {
                let n = number("--addresses", value("--addresses")?)?;
                if n > MAX_ADDRESSES {
                    return Err(format!("--addresses takes at most {MAX_ADDRESSES}"));
                }
                options.addresses = usize::try_from(n).map_err(|e| e.to_string())?;
            }
            "--server-log" => options.server_log = Some(parse_level(&value("--server-log")?)?),
            name => {
                let attack = Attack::ALL
                    .into_iter()
                    .chain([Attack::Nothing, Attack::SlowBodies])
                    .find(|attack| attack.name() == name)
                    .ok_or_else(|| format!("unknown attack or option {name:?}"))?;
                if !options.attacks.contains(&attack) {
                    options.attacks.push(attack);
                }
            }
        }
        first = false;
    }
    if options.attacks.is_empty() {
        options.attacks = Attack::ALL.to_vec();
    }
    Ok(Command::Run(options))
}

fn parse_serve(mut args: impl Iterator<Item = String>) -> Result<Command, String> {
    let variant = match args.next().as_deref() {
        Some("default") => Variant::Default,
        Some("library") => Variant::Library,
        other => return Err(format!("serve takes default or library, not {other:?}")),
    };
    let log = match (args.next().as_deref(), args.next()) {
        (None, _) => None,
        (Some("--log"), Some(level)) => Some(parse_level(&level)?),
        (Some(other), _) => return Err(format!("serve: unexpected {other:?}")),
    };
    if let Some(extra) = args.next() {
        return Err(format!("serve: unexpected {extra:?}"));
    }
    Ok(Command::Serve { variant, log })
}

// The server

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Health {
    status: String,
}

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Note {
    text: String,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Noted {
    length: usize,
}

/// `GET /health`, `GET /file` (the file at `file`), `POST /note`.
fn routing(file: PathBuf) -> Routing {
    let factory = default_endpoints_factory();
    let health = factory.get().handler_without_input(async || {
        Ok(Health {
            status: "ok".to_owned(),
        })
    });
    let note = factory.post().handler(async |input: Note| {
        Ok(Noted {
            length: input.text.len(),
        })
    });
    let download = factory
        .with_state(Arc::new(file))
        .get()
        .handler_without_input(async |file: Arc<PathBuf>| FileResponse::open(file.as_path()).await);
    routing! { "health" => health, "file" => download, "note" => note }
}

/// The default configuration on 127.0.0.1 (the library example's layers for `Library`).
fn config(variant: Variant, log: Option<Level>) -> Config {
    let mut builder = create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
    if let Some(level) = log {
        builder = builder.logger(LoggerOptions::new(level).color(LogColor::Never));
    }
    if variant == Variant::Library {
        builder = builder.after_body(
            tower::ServiceBuilder::new()
                .timeout(Duration::from_secs(30))
                .layer(tower::limit::GlobalConcurrencyLimitLayer::new(1024)),
        );
    }
    builder.build()
}

/// The file a server process serves (removed by whoever stops it).
fn served_file(pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("strata-availability-{pid}.bin"))
}

/// The child's side: serves until standard input closes (or the process is killed).
fn serve(variant: Variant, log: Option<Level>) -> Result<(), String> {
    let file = served_file(std::process::id());
    std::fs::write(&file, vec![b'x'; FILE_SIZE])
        .map_err(|e| format!("writing {}: {e}", file.display()))?;
    // As `#[tokio::main]` builds it: a worker per core.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let routing = routing(file.clone());
    let server = runtime
        .block_on(create_server(&config(variant, log), &routing).into_future())
        .map_err(|e| e.to_string())?;
    let addr = server
        .servers()
        .iter()
        .find_map(|listening| match &listening.local_addr {
            strata::server::LocalAddr::Tcp(addr) => Some(*addr),
            strata::server::LocalAddr::Unix(_) => None,
        })
        .ok_or("the server listens on no TCP address")?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening {addr}")
        .and_then(|()| stdout.flush())
        .map_err(|e| e.to_string())?;
    let mut sink = String::new();
    while std::io::stdin()
        .lock()
        .read_line(&mut sink)
        .is_ok_and(|n| n > 0)
    {
        sink.clear();
    }
    drop(server);
    let _ = std::fs::remove_file(&file);
    Ok(())
}

/// A server in a child process under `prlimit`.
struct ChildServer {
    child: Child,
    addr: SocketAddr,
}

impl ChildServer {
    /// Starts `strata-availability serve <variant>` under `prlimit --nofile=<nofile>` and waits
    /// for its address. Its output after that goes to `log` (or nowhere).
    fn spawn(variant: Variant, nofile: u64, log: Option<(Level, PathBuf)>) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut command = std::process::Command::new(PRLIMIT);
        command
            .arg(format!("--nofile={nofile}:{nofile}"))
            .arg(exe)
            .args(["serve", variant.name()]);
        if let Some((level, _)) = &log {
            command.args(["--log", level_name(*level)]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting {PRLIMIT}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no standard output")?;
        let (announce, announced) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let addr = lines.by_ref().map_while(Result::ok).find_map(|line| {
                line.strip_prefix("listening ")
                    .and_then(|addr| addr.parse::<SocketAddr>().ok())
            });
            let _ = announce.send(addr);
            let mut sink: Box<dyn std::io::Write> =
                match log.map(|(_, path)| std::fs::File::create(path)) {
                    Some(Ok(file)) => Box::new(std::io::BufWriter::new(file)),
                    _ => Box::new(std::io::sink()),
                };
            for line in lines.map_while(Result::ok) {
                let _ = writeln!(sink, "{line}");
            }
            let _ = sink.flush();
        });
        if let Ok(Some(addr)) = announced.recv_timeout(Duration::from_secs(20)) {
            return Ok(Self { child, addr });
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(format!("the {} server did not start", variant.name()))
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server (by its process id) and removes its file.
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(served_file(self.pid()));
    }
}

// What the server holds, from /proc

/// The most the server held at one look.
#[derive(Debug, Default, Clone, Copy)]
struct ServerPeaks {
    /// Open descriptors.
    fds: usize,
    /// Established connections waiting in the listening socket's accept queue.
    accept_queue: u64,
    /// Resident memory, KiB.
    rss_kib: u64,
    /// The open-file limit it runs with.
    nofile: Option<u64>,
}

impl ServerPeaks {
    fn look(&mut self, pid: u32, port: u16) {
        if let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
            self.fds = self.fds.max(entries.count());
        }
        if let Ok(tcp) = std::fs::read_to_string("/proc/net/tcp")
            && let Some(queue) = accept_queue(&tcp, port)
        {
            self.accept_queue = self.accept_queue.max(queue);
        }
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            let kib = |field: &str| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix(field))
                    .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            };
            // The high-water mark, when the kernel keeps it.
            if let Some(rss) = kib("VmHWM:").or_else(|| kib("VmRSS:")) {
                self.rss_kib = self.rss_kib.max(rss);
            }
        }
        if self.nofile.is_none()
            && let Ok(limits) = std::fs::read_to_string(format!("/proc/{pid}/limits"))
        {
            self.nofile = limits
                .lines()
                .find_map(|line| line.strip_prefix("Max open files"))
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok());
        }
    }
}

/// The kernel's counts of connections dropped at a full accept queue (`ListenOverflows`) and
/// of all dropped at a listening socket (`ListenDrops`), from `/proc/net/netstat`: for the
/// whole machine.
fn listen_drops(netstat: &str) -> Option<(u64, u64)> {
    let mut tcp_ext = netstat
        .lines()
        .filter_map(|line| line.strip_prefix("TcpExt:"));
    let (names, values) = (tcp_ext.next()?, tcp_ext.next()?);
    let mut overflows = None;
    let mut drops = None;
    for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
        match name {
            "ListenOverflows" => overflows = value.parse().ok(),
            "ListenDrops" => drops = value.parse().ok(),
            _ => {}
        }
    }
    Some((overflows?, drops?))
}

fn read_listen_drops() -> Option<(u64, u64)> {
    listen_drops(&std::fs::read_to_string("/proc/net/netstat").ok()?)
}

/// The accept queue of the socket listening on `port` (`rx_queue` of its `/proc/net/tcp` line,
/// state `0A`).
fn accept_queue(proc_net_tcp: &str, port: u16) -> Option<u64> {
    let local = format!(":{port:04X}");
    proc_net_tcp.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (address, state, queues) = (fields.get(1)?, fields.get(3)?, fields.get(4)?);
        if !address.ends_with(&local) || *state != "0A" {
            return None;
        }
        u64::from_str_radix(queues.split(':').nth(1)?, 16).ok()
    })
}

// The attacker

/// What the attacker saw, by name.
#[derive(Debug, Default)]
struct Tally {
    counts: Mutex<BTreeMap<String, u64>>,
    /// How long each connection the attacker lost had been open.
    lifetimes: Mutex<Vec<Duration>>,
    open: AtomicUsize,
    peak_open: AtomicUsize,
}

impl Tally {
    fn count(&self, what: impl Into<String>) {
        self.add(what, 1);
    }

    fn add(&self, what: impl Into<String>, n: u64) {
        *self
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(what.into())
            .or_default() += n;
    }

    fn opened(&self) {
        let open = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_open.fetch_max(open, Ordering::Relaxed);
        self.count("connections opened");
    }

    fn closed(&self, lifetime: Duration) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        self.lifetimes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(lifetime);
    }

    /// One line: peak open connections, closes and their median lifetime, every count.
    fn describe(&self) -> String {
        let mut lifetimes = self
            .lifetimes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        lifetimes.sort_unstable();
        let mut text = format!(
            "peak {} open; {} closed",
            self.peak_open.load(Ordering::Relaxed),
            lifetimes.len()
        );
        if let Some(median) = median(&lifetimes) {
            let _ = write!(text, " (median lifetime {:.1} s)", median.as_secs_f64());
        }
        for (what, n) in self
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            let _ = write!(text, "; {what} {n}");
        }
        text
    }
}

/// A TCP connection to `addr` from `source`.
async fn connect_from(source: Ipv4Addr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    // Ports of connections this side closed first may still be in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from((source, 0)))?;
    let stream = socket.connect(addr).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// One attacking connection, reopened as soon as it closes, until the runtime stops.
async fn attacker_slot(attack: Attack, source: Ipv4Addr, addr: SocketAddr, tally: Arc<Tally>) {
    loop {
        let stream = match connect_from(source, addr).await {
            Ok(stream) => stream,
            Err(error) => {
                tally.count(format!("connect failed ({})", error.kind()));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let opened = Instant::now();
        tally.opened();
        match attack {
            Attack::H2Downloads => h2_downloads(stream, &tally).await,
            Attack::H2Idle => h2_idle(stream, &tally).await,
            Attack::BudgetPromises => body_promise(stream, PROMISED, &tally).await,
            Attack::SlowBodiesLibrary | Attack::SlowBodies => {
                body_promise(stream, SLOW_BODY, &tally).await;
            }
            Attack::Nothing => {}
        }
        tally.closed(opened.elapsed());
    }
}

/// `POST /note` promising `length` bytes, then one byte every [`TRICKLE`] until the server
/// answers and closes.
async fn body_promise(stream: TcpStream, length: usize, tally: &Tally) {
    let (mut read, mut write) = stream.into_split();
    let head = format!(
        "POST /note HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\n\r\n{{\"text\":\""
    );
    if write.write_all(head.as_bytes()).await.is_err() {
        tally.count("write failed");
        return;
    }
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + TRICKLE, TRICKLE);
    let mut buffer = vec![0_u8; 1024];
    let mut answered = false;
    loop {
        tokio::select! {
            read = read.read(&mut buffer) => match read {
                Ok(0) | Err(_) => {
                    if !answered {
                        tally.count("closed without an answer");
                    }
                    return;
                }
                Ok(n) => {
                    if !answered && let Some(status) = http1_status(&buffer[..n]) {
                        tally.count(format!("answered {status}"));
                        answered = true;
                    }
                }
            },
            _ = tick.tick() => if write.write_all(b"a").await.is_err() {
                // The server closed; the answer, if any, is still to be read.
                tally.count("write failed");
            },
        }
    }
}

/// The status of an HTTP/1 response that starts `bytes`.
fn http1_status(bytes: &[u8]) -> Option<u16> {
    let line = bytes.strip_prefix(b"HTTP/1.1 ".as_slice())?;
    std::str::from_utf8(line.get(..3)?).ok()?.parse().ok()
}

// HTTP/2 frames, written and read by hand

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
/// `END_STREAM` on DATA and HEADERS, `ACK` on SETTINGS and PING.
const END_STREAM_OR_ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const SETTINGS_ENABLE_PUSH: u16 = 0x2;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;

/// A frame: its 9-byte header and `payload`.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len())
        .unwrap_or(u32::MAX)
        .to_be_bytes();
    let mut frame = Vec::with_capacity(9 + payload.len());
    frame.extend_from_slice(&length[1..]);
    frame.extend_from_slice(&[kind, flags]);
    frame.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// A SETTINGS frame with `settings`.
fn settings_frame(settings: &[(u16, u32)]) -> Vec<u8> {
    let payload: Vec<u8> = settings
        .iter()
        .flat_map(|(id, value)| id.to_be_bytes().into_iter().chain(value.to_be_bytes()))
        .collect();
    frame(SETTINGS, 0, 0, &payload)
}

/// The HPACK block of `GET http://127.0.0.1/file`: `:method GET` and `:scheme http` from the
/// static table, `:path` and `:authority` as literals not indexed (the server's dynamic table
/// is left alone).
fn get_file_block() -> Vec<u8> {
    let mut block = vec![0x82, 0x86, 0x04, 5];
    block.extend_from_slice(b"/file");
    block.extend_from_slice(&[0x01, 9]);
    block.extend_from_slice(b"127.0.0.1");
    block
}

/// A frame read.
#[derive(Debug, PartialEq, Eq)]
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

/// The first whole frame of `buffer`, taken out of it.
fn next_frame(buffer: &mut Vec<u8>) -> Option<Frame> {
    let header = buffer.get(..9)?;
    let length = usize::try_from(u32::from_be_bytes([0, header[0], header[1], header[2]])).ok()?;
    if buffer.len() < 9 + length {
        return None;
    }
    let (kind, flags) = (header[3], header[4]);
    let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
    let payload = buffer[9..9 + length].to_vec();
    buffer.drain(..9 + length);
    Some(Frame {
        kind,
        flags,
        stream,
        payload,
    })
}

/// `SETTINGS_MAX_CONCURRENT_STREAMS` in the payload of a SETTINGS frame.
fn max_concurrent_streams(payload: &[u8]) -> Option<u32> {
    payload.chunks_exact(6).find_map(|setting| {
        (u16::from_be_bytes([setting[0], setting[1]]) == SETTINGS_MAX_CONCURRENT_STREAMS)
            .then(|| u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]))
    })
}

/// The HTTP/2 downloads of one connection: window 0 for every stream, as many `GET /file`
/// streams as the server's SETTINGS allow, and every [`TRICKLE`] [`WINDOW_GRANT`] bytes of
/// window for one of them (in turn) and for the connection. Settings and pings are answered.
struct Downloads {
    /// Streams whose response is not over, in the order they get window.
    open: VecDeque<u32>,
    next_id: u32,
    /// How many streams to keep open; `None` until the server's SETTINGS arrive.
    wanted: Option<usize>,
    goaway: bool,
    /// Frames to send.
    out: Vec<u8>,
}

impl Downloads {
    fn new() -> Self {
        let mut out = PREFACE.to_vec();
        out.extend(settings_frame(&[
            (SETTINGS_ENABLE_PUSH, 0),
            (SETTINGS_INITIAL_WINDOW_SIZE, 0),
        ]));
        Self {
            open: VecDeque::new(),
            next_id: 1,
            wanted: None,
            goaway: false,
            out,
        }
    }

    /// Opens streams up to the number wanted.
    fn top_up(&mut self, tally: &Tally) {
        let Some(wanted) = self.wanted else { return };
        let block = get_file_block();
        while !self.goaway && self.open.len() < wanted && self.next_id < 0x7fff_0000 {
            self.out.extend(frame(
                HEADERS,
                END_STREAM_OR_ACK | END_HEADERS,
                self.next_id,
                &block,
            ));
            self.open.push_back(self.next_id);
            self.next_id += 2;
            tally.count("streams opened");
        }
    }

    /// Some window for the next stream in turn, and the connection.
    fn grant(&mut self) {
        if let Some(stream) = self.open.pop_front() {
            let increment = WINDOW_GRANT.to_be_bytes();
            self.out.extend(frame(WINDOW_UPDATE, 0, stream, &increment));
            self.out.extend(frame(WINDOW_UPDATE, 0, 0, &increment));
            self.open.push_back(stream);
        }
    }

    fn ended(&mut self, stream: u32) {
        self.open.retain(|&open| open != stream);
    }

    fn on_frame(&mut self, frame_read: &Frame, tally: &Tally) {
        let flagged = frame_read.flags & END_STREAM_OR_ACK != 0;
        match frame_read.kind {
            SETTINGS if !flagged => {
                self.out.extend(frame(SETTINGS, END_STREAM_OR_ACK, 0, &[]));
                if self.wanted.is_none() {
                    let most = max_concurrent_streams(&frame_read.payload)
                        .and_then(|n| usize::try_from(n).ok())
                        .unwrap_or(STREAMS_WITHOUT_MAXIMUM);
                    self.wanted = Some(most.min(STREAMS_WITHOUT_MAXIMUM));
                    self.top_up(tally);
                }
            }
            PING if !flagged => {
                self.out
                    .extend(frame(PING, END_STREAM_OR_ACK, 0, &frame_read.payload));
            }
            HEADERS => {
                // `:status: 200` is entry 8 of HPACK's static table.
                let status = if frame_read.payload.first() == Some(&0x88) {
                    "responses 200"
                } else {
                    "responses not 200"
                };
                tally.count(status);
                if flagged {
                    self.ended(frame_read.stream);
                }
            }
            DATA => {
                tally.add("body bytes received", frame_read.payload.len() as u64);
                if flagged {
                    tally.count("downloads completed");
                    self.ended(frame_read.stream);
                }
            }
            RST_STREAM => {
                tally.count("streams reset by the server");
                self.ended(frame_read.stream);
            }
            GOAWAY => {
                tally.count("GOAWAY");
                self.goaway = true;
            }
            _ => {}
        }
    }
}

async fn h2_downloads(stream: TcpStream, tally: &Tally) {
    let (mut read, mut write) = stream.into_split();
    let mut downloads = Downloads::new();
    let mut buffer = Vec::with_capacity(32 * 1024);
    let mut chunk = vec![0_u8; 16 * 1024];
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + TRICKLE, TRICKLE);
    loop {
        if !downloads.out.is_empty() {
            let out = std::mem::take(&mut downloads.out);
            if write.write_all(&out).await.is_err() {
                tally.count("write failed");
                return;
            }
        }
        tokio::select! {
            read = read.read(&mut chunk) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    buffer.extend_from_slice(&chunk[..n]);
                    while let Some(frame_read) = next_frame(&mut buffer) {
                        downloads.on_frame(&frame_read, tally);
                    }
                }
            },
            _ = tick.tick() => {
                downloads.grant();
                downloads.top_up(tally);
            }
        }
    }
}

/// The HTTP/2 preface and an empty SETTINGS frame, then nothing until the server closes.
async fn h2_idle(mut stream: TcpStream, tally: &Tally) {
    let mut hello = PREFACE.to_vec();
    hello.extend(settings_frame(&[]));
    if stream.write_all(&hello).await.is_err() {
        tally.count("write failed");
        return;
    }
    let mut buffer = Vec::new();
    let mut chunk = vec![0_u8; 1024];
    while let Ok(n @ 1..) = stream.read(&mut chunk).await {
        buffer.extend_from_slice(&chunk[..n]);
        while let Some(frame_read) = next_frame(&mut buffer) {
            if frame_read.kind == GOAWAY {
                tally.count("GOAWAY");
            }
        }
    }
}

/// Runs `attack` with `connections` connections in a thread of its own (one tokio thread)
/// until `stop` says so; returns what it saw.
fn start_attacker(
    attack: Attack,
    addr: SocketAddr,
    connections: usize,
    addresses: usize,
    mut stop: watch::Receiver<bool>,
) -> std::thread::JoinHandle<Result<Arc<Tally>, String>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let tally = Arc::new(Tally::default());
        runtime.block_on(async {
            let connections = if attack == Attack::Nothing {
                0
            } else {
                connections
            };
            for index in 0..connections {
                let source = attacker_address(index % addresses.max(1));
                tokio::spawn(attacker_slot(attack, source, addr, Arc::clone(&tally)));
            }
            let _ = stop.wait_for(|stop| *stop).await;
        });
        // Dropping the runtime drops every connection.
        drop(runtime);
        Ok(tally)
    })
}

// The checker

/// What a probe got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// A response with this status.
    Answered(u16),
    /// No connection within [`CHECK_WAIT`].
    NotConnected,
    /// Connected, no response within [`CHECK_WAIT`].
    NoAnswer,
    /// The connection failed (refused, reset, closed without a response).
    Failed,
}

/// One probe from [`CHECKER`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Probe {
    outcome: Outcome,
    /// From the start of the connect to the whole response (or to giving up).
    elapsed: Duration,
    /// When the connection was established, from the start of the connect.
    connected: Option<Duration>,
}

impl Probe {
    fn good(&self) -> bool {
        self.outcome == Outcome::Answered(200) && self.elapsed <= GOOD_WITHIN
    }
}

/// Sends `request` on a new connection from [`CHECKER`] and reads the response.
async fn probe(addr: SocketAddr, request: &[u8]) -> Probe {
    let started = Instant::now();
    let mut connected = None;
    let exchange = async {
        let mut stream = connect_from(CHECKER, addr).await.ok()?;
        connected = Some(started.elapsed());
        stream.write_all(request).await.ok()?;
        read_response(&mut stream).await
    };
    let result = tokio::time::timeout(CHECK_WAIT, exchange).await;
    let outcome = match result {
        Ok(Some(status)) => Outcome::Answered(status),
        Ok(None) => Outcome::Failed,
        Err(_) if connected.is_some() => Outcome::NoAnswer,
        Err(_) => Outcome::NotConnected,
    };
    Probe {
        outcome,
        elapsed: started.elapsed(),
        connected,
    }
}

/// Reads one HTTP/1.1 response (its head, and its body by `Content-Length`, or to the end);
/// its status.
async fn read_response(stream: &mut TcpStream) -> Option<u16> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0_u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse::<usize>().ok());
            if n == 0 || length.is_some_and(|length| buffer.len() >= end + 4 + length) {
                return http1_status(&buffer);
            }
        } else if n == 0 {
            return None;
        }
    }
}

const HEALTH_REQUEST: &[u8] =
    b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
const NOTE_REQUEST: &[u8] = b"POST /note HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
    Content-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"text\":\"hi!\"}";

/// The health checks and the notes of a run.
type Probes = (Vec<Probe>, Vec<Probe>);

/// The checker's probes: health checks every [`CHECK_EVERY`] and notes every [`NOTE_EVERY`] for
/// `run`, each with its start time, all waited for. In a thread of its own (one tokio thread).
fn start_checker(
    addr: SocketAddr,
    run: Duration,
) -> std::thread::JoinHandle<Result<Probes, String>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(runtime.block_on(async move {
            let start = tokio::time::Instant::now();
            let mut health = Vec::new();
            let mut notes = Vec::new();
            let per_note = u32::try_from(NOTE_EVERY.as_millis() / CHECK_EVERY.as_millis())
                .unwrap_or(1)
                .max(1);
            let checks = u32::try_from(run.as_millis() / CHECK_EVERY.as_millis()).unwrap_or(0);
            for i in 0..checks {
                tokio::time::sleep_until(start + CHECK_EVERY * i).await;
                health.push(tokio::spawn(probe(addr, HEALTH_REQUEST)));
                if i % per_note == 0 {
                    notes.push(tokio::spawn(probe(addr, NOTE_REQUEST)));
                }
            }
            let mut done = (Vec::new(), Vec::new());
            for check in health {
                done.0.extend(check.await.ok());
            }
            for note in notes {
                done.1.extend(note.await.ok());
            }
            done
        }))
    })
}

// Figures

/// The figures of a set of probes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Summary {
    good: usize,
    total: usize,
    /// Of the good ones.
    median: Option<Duration>,
    max: Option<Duration>,
    /// 200s after [`GOOD_WITHIN`].
    late: usize,
    /// Answers other than 200, by status.
    statuses: BTreeMap<u16, usize>,
    not_connected: usize,
    no_answer: usize,
    failed: usize,
    /// The slowest connect of any probe (time spent in the server's accept queue, mostly).
    slowest_connect: Option<Duration>,
}

/// The median of sorted `values` (the mean of the middle two for an even count).
fn median(sorted: &[Duration]) -> Option<Duration> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2),
    }
}

fn summarize(probes: &[Probe]) -> Summary {
    let mut summary = Summary {
        total: probes.len(),
        ..Summary::default()
    };
    let mut good: Vec<Duration> = Vec::new();
    for probe in probes {
        summary.slowest_connect = summary.slowest_connect.max(probe.connected);
        match probe.outcome {
            _ if probe.good() => good.push(probe.elapsed),
            Outcome::Answered(200) => summary.late += 1,
            Outcome::Answered(status) => *summary.statuses.entry(status).or_default() += 1,
            Outcome::NotConnected => summary.not_connected += 1,
            Outcome::NoAnswer => summary.no_answer += 1,
            Outcome::Failed => summary.failed += 1,
        }
    }
    good.sort_unstable();
    summary.good = good.len();
    summary.median = median(&good);
    summary.max = good.last().copied();
    summary
}

impl Summary {
    fn meets_goal(&self) -> bool {
        self.total > 0 && self.good * 100 >= self.total * GOAL_PERCENT
    }

    /// `187/200 good (93.5 %)`.
    fn figure(&self) -> String {
        let tenths = (self.good * 1000).checked_div(self.total).unwrap_or(0);
        format!(
            "{}/{} good ({}.{} %)",
            self.good,
            self.total,
            tenths / 10,
            tenths % 10
        )
    }

    /// `median 1.2 ms, max 30.4 ms`.
    fn latencies(&self) -> String {
        match (self.median, self.max) {
            (Some(median), Some(max)) => format!("median {}, max {}", ms(median), ms(max)),
            _ => "median -, max -".to_owned(),
        }
    }

    /// What the probes that were not good got, or `none bad`.
    fn bad(&self) -> String {
        let mut parts = Vec::new();
        if self.late > 0 {
            parts.push(format!("{} 200 after 1 s", self.late));
        }
        for (status, n) in &self.statuses {
            parts.push(format!("{n} × {status}"));
        }
        if self.not_connected > 0 {
            parts.push(format!("{} not connected within 3 s", self.not_connected));
        }
        if self.no_answer > 0 {
            parts.push(format!(
                "{} connected, no answer within 3 s",
                self.no_answer
            ));
        }
        if self.failed > 0 {
            parts.push(format!("{} connection failed", self.failed));
        }
        if parts.is_empty() {
            "none bad".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

/// The result line of an attack: name, figure, latencies, verdict.
fn result_line(attack: Attack, health: &Summary) -> String {
    let verdict = if health.meets_goal() {
        "meets the goal"
    } else {
        "MISSES the goal"
    };
    format!(
        "{:<20} health {}, {}: {verdict} (>= {GOAL_PERCENT} % within 1 s)",
        attack.name(),
        health.figure(),
        health.latencies()
    )
}

// The run

/// Runs every attack of `options`; whether all met the goal.
fn run(options: &Options) -> Result<bool, String> {
    if !std::path::Path::new(PRLIMIT).is_file() {
        return Err(format!("{PRLIMIT} is missing (util-linux)"));
    }
    let run = Duration::from_secs(options.seconds);
    println!(
        "strata-availability: each attack against a new default server under prlimit \
         --nofile={n}:{n} (connection cap {cap}), {connections} attacking connections from \
         {from}, a health check from {CHECKER} every {every} ms for {seconds} s after a \
         {head} s head start",
        n = options.nofile,
        cap = options.cap(),
        connections = options.connections(),
        from = if options.addresses == 1 {
            ATTACKER.to_string()
        } else {
            format!(
                "{} addresses ({ATTACKER}, 127.0.0.10 to {})",
                options.addresses,
                attacker_address(options.addresses - 1)
            )
        },
        every = CHECK_EVERY.as_millis(),
        seconds = options.seconds,
        head = options.head_start,
    );
    let mut lines = Vec::new();
    let mut all_good = true;
    for &attack in &options.attacks {
        let (health, details) = run_attack(attack, options, run)?;
        all_good &= health.meets_goal();
        let line = result_line(attack, &health);
        println!("{line}\n{details}");
        lines.push(line);
    }
    println!("\nsummary:");
    for line in &lines {
        println!("{line}");
    }
    Ok(all_good)
}

/// One attack against a new server: the health checks' figures and the details.
fn run_attack(
    attack: Attack,
    options: &Options,
    run: Duration,
) -> Result<(Summary, String), String> {
    let log = options.server_log.map(|level| {
        let path = std::env::temp_dir().join(format!("strata-availability-{}.log", attack.name()));
        (level, path)
    });
    let log_path = log.as_ref().map(|(_, path)| path.clone());
    let server = ChildServer::spawn(attack.variant(), options.nofile, log)?;
    let (pid, addr) = (server.pid(), server.addr);
    let mut peaks = ServerPeaks::default();
    peaks.look(pid, addr.port());
    let drops_before = read_listen_drops();
    let (stop, stopped) = watch::channel(false);
    let attacker = start_attacker(
        attack,
        addr,
        options.connections(),
        options.addresses,
        stopped,
    );
    let head_start = Instant::now();
    while head_start.elapsed() < Duration::from_secs(options.head_start) {
        std::thread::sleep(Duration::from_millis(250));
        peaks.look(pid, addr.port());
    }
    let checker = start_checker(addr, run);
    while !checker.is_finished() {
        std::thread::sleep(Duration::from_millis(250));
        peaks.look(pid, addr.port());
    }
    let drops = read_listen_drops().zip(drops_before).map(
        |((overflows, drops), (overflows_before, drops_before))| {
            (overflows - overflows_before, drops - drops_before)
        },
    );
    let _ = stop.send(true);
    let probes = checker
        .join()
        .map_err(|_| "the checker panicked".to_owned())?;
    let tally = attacker
        .join()
        .map_err(|_| "the attacker panicked".to_owned())?;
    server.kill();
    let ((health, notes), tally) = (probes?, tally?);
    let health = summarize(&health);
    let notes = summarize(&notes);
    let mut details = String::new();
    let _ = writeln!(details, "  attack: {}", attack.describe());
    let _ = writeln!(
        details,
        "  health checks not good: {}; slowest connect {}",
        health.bad(),
        health.slowest_connect.map_or_else(|| "-".to_owned(), ms)
    );
    let _ = writeln!(
        details,
        "  POST /note from {CHECKER} (not in the goal): {}, {}; not good: {}",
        notes.figure(),
        notes.latencies(),
        notes.bad()
    );
    let _ = writeln!(details, "  attacker: {}", tally.describe());
    let _ = write!(
        details,
        "  server: open-file limit {}, peak {} descriptors, peak accept queue {}, peak RSS {:.1} MiB",
        peaks
            .nofile
            .map_or_else(|| "?".to_owned(), |n| n.to_string()),
        peaks.fds,
        peaks.accept_queue,
        f64::from(u32::try_from(peaks.rss_kib).unwrap_or(u32::MAX)) / 1024.0
    );
    if let Some((overflows, drops)) = drops {
        let _ = write!(
            details,
            "\n  kernel (whole machine, during the run): {overflows} ListenOverflows, \
             {drops} ListenDrops (connections dropped at a full accept queue)"
        );
    }
    if let Some(path) = log_path {
        let _ = write!(details, "\n  server log: {}", path.display());
    }
    Ok((health, details))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn defaults_run_every_attack_at_512_descriptors_for_20_s() {
        let Ok(Command::Run(options)) = parse(args("")) else {
            panic!("a run")
        };
        assert_eq!(options.attacks, Attack::ALL.to_vec());
        assert_eq!(
            (options.seconds, options.nofile, options.head_start),
            (20, 512, 2)
        );
        assert_eq!(options.cap(), 448);
        assert_eq!(options.connections(), 896);
        assert_eq!(options.server_log, None);
    }

    #[test]
    fn options_and_attacks_are_read() {
        let parsed = parse(args(
            "--seconds 5 h2-idle --nofile 1024 budget-promises h2-idle --connections 10 \
             --server-log warn --head-start 0 --addresses 8",
        ));
        let expected = Options {
            seconds: 5,
            head_start: 0,
            nofile: 1024,
            connections: Some(10),
            addresses: 8,
            server_log: Some(Level::Warn),
            attacks: vec![Attack::H2Idle, Attack::BudgetPromises],
        };
        assert_eq!(parsed, Ok(Command::Run(expected)));
        assert_eq!(
            parse(args("serve library")),
            Ok(Command::Serve {
                variant: Variant::Library,
                log: None
            })
        );
        assert_eq!(
            parse(args("serve default --log debug")),
            Ok(Command::Serve {
                variant: Variant::Default,
                log: Some(Level::Debug)
            })
        );
        assert_eq!(parse(args("h2-idle --help")), Ok(Command::Help));
    }

    #[test]
    fn bad_arguments_are_refused() {
        for bad in [
            "h2-uploads",
            "--seconds",
            "--seconds 0",
            "--seconds x",
            "--nofile 64",
            "serve",
            "serve other",
            "serve default --log loud",
            "serve default extra",
            "h2-idle serve default",
            "--server-log",
            "--head-start -1",
        ] {
            assert!(parse(args(bad)).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn the_attack_names_and_variants() {
        let names: Vec<_> = Attack::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(
            names,
            [
                "h2-downloads",
                "h2-idle",
                "budget-promises",
                "slow-bodies-library"
            ]
        );
        assert_eq!(Attack::SlowBodiesLibrary.variant(), Variant::Library);
        assert_eq!(Attack::BudgetPromises.variant(), Variant::Default);
        assert_eq!(Attack::SlowBodies.variant(), Variant::Default);
        let Ok(Command::Run(options)) = parse(args("none slow-bodies")) else {
            panic!("a run")
        };
        assert_eq!(options.attacks, [Attack::Nothing, Attack::SlowBodies]);
    }

    fn probe_of(outcome: Outcome, ms: u64) -> Probe {
        Probe {
            outcome,
            elapsed: Duration::from_millis(ms),
            connected: Some(Duration::from_millis(ms / 2)),
        }
    }

    #[test]
    fn good_means_a_200_within_a_second() {
        let probes = [
            probe_of(Outcome::Answered(200), 4),
            probe_of(Outcome::Answered(200), 2),
            probe_of(Outcome::Answered(200), 1000),
            probe_of(Outcome::Answered(200), 8),
            probe_of(Outcome::Answered(200), 1001),
            probe_of(Outcome::Answered(503), 3),
            probe_of(Outcome::Answered(503), 3),
            probe_of(Outcome::NotConnected, 3000),
            probe_of(Outcome::NoAnswer, 3000),
            probe_of(Outcome::Failed, 1),
        ];
        let summary = summarize(&probes);
        assert_eq!((summary.good, summary.total, summary.late), (4, 10, 1));
        // 2, 4, 8, 1000: the mean of the middle two.
        assert_eq!(summary.median, Some(Duration::from_millis(6)));
        assert_eq!(summary.max, Some(Duration::from_secs(1)));
        assert_eq!(summary.statuses, BTreeMap::from([(503, 2)]));
        assert_eq!(
            (summary.not_connected, summary.no_answer, summary.failed),
            (1, 1, 1)
        );
        assert_eq!(summary.slowest_connect, Some(Duration::from_millis(1500)));
        assert_eq!(summary.figure(), "4/10 good (40.0 %)");
        assert_eq!(summary.latencies(), "median 6.0 ms, max 1000.0 ms");
        assert_eq!(
            summary.bad(),
            "1 200 after 1 s, 2 × 503, 1 not connected within 3 s, \
             1 connected, no answer within 3 s, 1 connection failed"
        );
        assert!(!summary.meets_goal());
    }

    #[test]
    fn the_goal_is_95_percent() {
        let run = |good: usize, bad: usize| {
            let mut probes = vec![probe_of(Outcome::Answered(200), 3); good];
            probes.extend(vec![probe_of(Outcome::NotConnected, 3000); bad]);
            summarize(&probes)
        };
        assert!(run(190, 10).meets_goal());
        assert!(!run(189, 11).meets_goal());
        assert!(run(200, 0).meets_goal());
        assert!(!run(0, 0).meets_goal(), "no check is no evidence");
        assert_eq!(run(189, 11).figure(), "189/200 good (94.5 %)");
        assert_eq!(run(0, 0).latencies(), "median -, max -");
        let line = result_line(Attack::H2Idle, &run(199, 1));
        assert!(line.starts_with("h2-idle "), "{line}");
        assert!(
            line.contains("199/200 good (99.5 %), median 3.0 ms, max 3.0 ms"),
            "{line}"
        );
        assert!(line.contains("meets the goal"), "{line}");
        assert!(result_line(Attack::H2Idle, &run(1, 1)).contains("MISSES the goal"));
        assert_eq!(
            median(&[Duration::from_millis(7)]),
            Some(Duration::from_millis(7))
        );
    }

    #[test]
    fn http2_frames_are_written_and_read_back() {
        let mut buffer = settings_frame(&[(SETTINGS_MAX_CONCURRENT_STREAMS, 100), (0x6, 16384)]);
        buffer.extend(frame(PING, 0, 0, &[1, 2, 3, 4, 5, 6, 7, 8]));
        // Half of a third frame.
        let window = frame(WINDOW_UPDATE, 0, 3, &WINDOW_GRANT.to_be_bytes());
        buffer.extend_from_slice(&window[..6]);
        let settings = next_frame(&mut buffer).unwrap();
        assert_eq!(
            (settings.kind, settings.flags, settings.stream),
            (SETTINGS, 0, 0)
        );
        assert_eq!(max_concurrent_streams(&settings.payload), Some(100));
        assert_eq!(max_concurrent_streams(&[]), None);
        let ping = next_frame(&mut buffer).unwrap();
        assert_eq!((ping.kind, ping.payload.len()), (PING, 8));
        assert_eq!(next_frame(&mut buffer), None);
        buffer.extend_from_slice(&window[6..]);
        let update = next_frame(&mut buffer).unwrap();
        assert_eq!((update.kind, update.stream), (WINDOW_UPDATE, 3));
        assert_eq!(update.payload, 16384_u32.to_be_bytes());
        assert!(buffer.is_empty());
    }

    #[test]
    fn downloads_open_the_streams_the_server_allows_and_answer_it() {
        let tally = Tally::default();
        let mut downloads = Downloads::new();
        assert!(downloads.out.starts_with(PREFACE));
        downloads.out.clear();
        // Nothing opens before the server's settings.
        downloads.top_up(&tally);
        assert!(downloads.out.is_empty());
        let settings = next_frame(&mut settings_frame(&[(SETTINGS_MAX_CONCURRENT_STREAMS, 3)]));
        downloads.on_frame(&settings.unwrap(), &tally);
        let mut out = std::mem::take(&mut downloads.out);
        let ack = next_frame(&mut out).unwrap();
        assert_eq!((ack.kind, ack.flags), (SETTINGS, END_STREAM_OR_ACK));
        let streams: Vec<u32> = std::iter::from_fn(|| next_frame(&mut out))
            .map(|f| {
                assert_eq!(f.kind, HEADERS);
                assert_eq!(f.payload, get_file_block());
                f.stream
            })
            .collect();
        assert_eq!(streams, [1, 3, 5]);
        // A stream reset is replaced at the next top-up; window goes round the open streams.
        let reset = Frame {
            kind: RST_STREAM,
            flags: 0,
            stream: 3,
            payload: vec![0, 0, 0, 8],
        };
        downloads.on_frame(&reset, &tally);
        downloads.grant();
        downloads.top_up(&tally);
        let mut out = std::mem::take(&mut downloads.out);
        let granted: Vec<(u8, u32)> = std::iter::from_fn(|| next_frame(&mut out))
            .map(|f| (f.kind, f.stream))
            .collect();
        assert_eq!(
            granted,
            [(WINDOW_UPDATE, 1), (WINDOW_UPDATE, 0), (HEADERS, 7)]
        );
        assert_eq!(downloads.open, [5, 1, 7]);
        let ping = Frame {
            kind: PING,
            flags: 0,
            stream: 0,
            payload: vec![9; 8],
        };
        downloads.on_frame(&ping, &tally);
        let answer = next_frame(&mut downloads.out).unwrap();
        assert_eq!(
            (answer.kind, answer.flags, answer.payload),
            (PING, END_STREAM_OR_ACK, vec![9; 8])
        );
        let goaway = Frame {
            kind: GOAWAY,
            flags: 0,
            stream: 0,
            payload: vec![0; 8],
        };
        downloads.on_frame(&goaway, &tally);
        downloads.ended(5);
        downloads.top_up(&tally);
        assert!(downloads.out.is_empty(), "no stream after GOAWAY");
        let counts = tally.counts.lock().unwrap().clone();
        assert_eq!(counts["streams opened"], 4);
        assert_eq!(counts["streams reset by the server"], 1);
    }

    #[test]
    fn statuses_and_accept_queues_are_read() {
        assert_eq!(http1_status(b"HTTP/1.1 408 Request Timeout\r\n"), Some(408));
        assert_eq!(http1_status(b"HTTP/1.1 20"), None);
        assert_eq!(http1_status(b"\0\0\x12\x04"), None);
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
            0: 0100007F:1F90 00000000:0000 0A 00000000:000001C0 00:00000000 00000000  1000        0 1\n\
            1: 0100007F:1F90 0200007F:A000 01 00000000:00000000 00:00000000 00000000  1000        0 2\n";
        assert_eq!(accept_queue(tcp, 8080), Some(448));
        assert_eq!(accept_queue(tcp, 8081), None);
        let netstat = "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPHPHits\n\
            TcpExt: 1 35720 35721 9\nIpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(listen_drops(netstat), Some((35720, 35721)));
        assert_eq!(listen_drops("IpExt: a\nIpExt: 1\n"), None);
    }
}
