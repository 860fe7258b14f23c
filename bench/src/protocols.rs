//! `strata-bench protocols`: hyper, axum and Strata over HTTP/2 with prior knowledge (h2c),
//! HTTP/2 over TLS by ALPN (h2) and HTTP/1.1 over TLS, side by side in the same run (issue 32,
//! scenario 1).
//!
//! The parent makes a self-signed certificate for `127.0.0.1` and `localhost` (rcgen) and
//! writes it to a temporary directory; each server runs in a child process (`strata-bench
//! serve protocols <server> <scenario> --cert <pem> --key <pem>`, pinned to core 0, one tokio
//! worker thread), listening plain and over TLS (`servers/protocols_app.rs`). Before anything
//! is timed, every server answers the scenario's request over each protocol, through hyper's
//! client (HTTP/2 handshake on the bare socket for h2c; rustls trusting the certificate alone,
//! ALPN `h2` or `http/1.1`, for the others): the negotiated protocol and the response's version
//! must be the ones asked for, and the status and JSON body the same for every server and
//! every protocol (`preflight::compare`).
//!
//! Then h2load (`h2load.rs`, pinned to core 1, one thread) loads each server over each
//! protocol: a warm-up each, then rounds; every round loads each protocol's three servers in
//! an order that rotates every round. Per run: h2load's req/s, its request time (mean, sd and
//! max: h2load gives no percentiles), and the server's CPU time (`utime` + `stime` of
//! `/proc/<pid>/stat`, read before and after the h2load process) per request done. Any
//! failed, errored or timed-out request, a wrong status count or another protocol than asked
//! for fails the run.

use std::fmt;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Version};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::Serialize;
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;

use crate::args::parse_duration;
use crate::child;
use crate::h2load;
use crate::preflight::{self, Observed};
use crate::report::Machine;
use crate::scenario::{RequestSpec, Scenario, ServerKind};
use crate::servers::protocols_app::{self, Certificate, CertificateFiles};
use crate::stats::Spread;

/// A protocol measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Protocol {
    /// HTTP/2 with prior knowledge on the plain listener.
    H2c,
    /// HTTP/2 over TLS, by ALPN `h2`.
    H2,
    /// HTTP/1.1 over TLS, by ALPN `http/1.1`.
    H1Tls,
}

impl Protocol {
    pub(crate) const ALL: [Protocol; 3] = [Protocol::H2c, Protocol::H2, Protocol::H1Tls];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Protocol::H2c => "h2c",
            Protocol::H2 => "h2",
            Protocol::H1Tls => "h1-tls",
        }
    }

    /// What the report calls it.
    fn title(self) -> &'static str {
        match self {
            Protocol::H2c => "HTTP/2 with prior knowledge (h2c, no TLS)",
            Protocol::H2 => "HTTP/2 over TLS (ALPN h2)",
            Protocol::H1Tls => "HTTP/1.1 over TLS (ALPN http/1.1)",
        }
    }

    fn tls(self) -> bool {
        self != Protocol::H2c
    }

    /// The ALPN protocol asked for over TLS.
    fn alpn(self) -> Option<&'static str> {
        match self {
            Protocol::H2c => None,
            Protocol::H2 => Some("h2"),
            Protocol::H1Tls => Some("http/1.1"),
        }
    }

    /// The application protocol h2load must report (`Application protocol:`).
    fn h2load_protocol(self) -> &'static str {
        match self {
            Protocol::H2c => "h2c",
            Protocol::H2 => "h2",
            Protocol::H1Tls => "http/1.1",
        }
    }

    /// The version of HTTP the answers must carry.
    fn version(self) -> Version {
        match self {
            Protocol::H2c | Protocol::H2 => Version::HTTP_2,
            Protocol::H1Tls => Version::HTTP_11,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Protocol {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown protocol {s:?} (h2c, h2 or h1-tls)"))
    }
}

/// Options of `strata-bench protocols`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProtocolsOptions {
    /// Length of one measured run (whole seconds: h2load's `-D`).
    pub(crate) duration: Duration,
    /// Warm-up of each server over each protocol, before the rounds.
    pub(crate) warmup: Duration,
    /// Measured rounds.
    pub(crate) rounds: usize,
    /// h2load's connections (`-c`).
    pub(crate) connections: usize,
    /// Concurrent streams per HTTP/2 connection (`-m`); HTTP/1.1 runs one request at a time
    /// per connection (no pipelining).
    pub(crate) streams: usize,
    pub(crate) scenarios: Vec<Scenario>,
    pub(crate) protocols: Vec<Protocol>,
    /// Server runtime worker threads.
    pub(crate) workers: usize,
    /// Pin the servers and h2load to different cores (with `taskset`).
    pub(crate) pin: bool,
    /// Where to write the results as JSON, if anywhere.
    pub(crate) json: Option<PathBuf>,
}

impl ProtocolsOptions {
    fn defaults(quick: bool) -> Self {
        let (duration, warmup, rounds) = if quick {
            (Duration::from_secs(1), Duration::from_secs(1), 2)
        } else {
            (Duration::from_secs(3), Duration::from_secs(2), 3)
        };
        Self {
            duration,
            warmup,
            rounds,
            connections: 64,
            streams: 10,
            scenarios: vec![Scenario::Hello, Scenario::ValidatedPost],
            protocols: Protocol::ALL.to_vec(),
            workers: 1,
            pin: true,
            json: None,
        }
    }
}

/// The child's side: `serve protocols <server> <scenario> --cert <path> --key <path>
/// [--workers N]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServeOptions {
    pub(crate) server: ServerKind,
    pub(crate) scenario: Scenario,
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
    pub(crate) workers: usize,
}

fn positive(name: &str, text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name} needs a positive number, got {text:?}")),
    }
}

/// `--flag=value` as `("--flag", Some("value"))`; anything else as itself with no value.
fn split_flag(arg: &str) -> (&str, Option<String>) {
    match arg.split_once('=') {
        Some((name, value)) if name.starts_with("--") => (name, Some(value.to_owned())),
        _ => (arg, None),
    }
}

/// The comma-separated names of `text`, each once, in their declared order.
fn list<T: FromStr<Err = String> + Ord>(text: &str) -> Result<Vec<T>, String> {
    let mut names = text
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse())
        .collect::<Result<Vec<T>, _>>()?;
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Err(format!("{text:?} names nothing"));
    }
    Ok(names)
}

/// `protocols`' options (the arguments after `protocols`): `--flag value` or `--flag=value`.
pub(crate) fn parse(args: &[String]) -> Result<crate::args::Command, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut options = ProtocolsOptions::defaults(quick);
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let (name, inline) = split_flag(arg);
        let mut value = || {
            inline
                .clone()
                .or_else(|| iter.next().cloned())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name {
            "--quick" => {}
            "-h" | "--help" => return Ok(crate::args::Command::Help),
            "--no-pin" => options.pin = false,
            "--duration" => options.duration = parse_duration(&value()?)?,
            "--warmup" => options.warmup = parse_duration(&value()?)?,
            "--rounds" => options.rounds = positive(name, &value()?)?,
            "--connections" => options.connections = positive(name, &value()?)?,
            "--streams" => options.streams = positive(name, &value()?)?,
            "--workers" => options.workers = positive(name, &value()?)?,
            "--scenario" | "--scenarios" => options.scenarios = list(&value()?)?,
            "--protocol" | "--protocols" => options.protocols = list(&value()?)?,
            "--json" => options.json = Some(PathBuf::from(value()?)),
            other => {
                return Err(format!(
                    "unknown protocols argument {other:?}\n\n{}",
                    crate::args::USAGE
                ));
            }
        }
    }
    // h2load counts an answer of 400 or above as a failed request.
    if let Some(scenario) = options
        .scenarios
        .iter()
        .find(|s| !s.expected_status().is_success())
    {
        return Err(format!(
            "protocols: {scenario} is answered {}, and h2load counts an error status as a \
             failed request: choose scenarios answered 2xx",
            scenario.expected_status()
        ));
    }
    Ok(crate::args::Command::Protocols(options))
}

/// `serve protocols`' arguments (after `serve protocols`).
pub(crate) fn parse_serve(args: &[String]) -> Result<crate::args::Command, String> {
    let server: ServerKind = args
        .first()
        .ok_or("serve protocols needs a server")?
        .parse()?;
    if !server.in_process() {
        return Err(format!(
            "serve protocols runs hyper, axum or strata; {server} is another program"
        ));
    }
    let scenario: Scenario = args
        .get(1)
        .ok_or("serve protocols needs a scenario")?
        .parse()?;
    let (mut cert, mut key, mut workers) = (None, None, 1);
    let mut rest = args[2..].iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--cert" => cert = Some(PathBuf::from(value)),
            "--key" => key = Some(PathBuf::from(value)),
            "--workers" => workers = positive(flag, value)?,
            other => return Err(format!("unknown serve protocols argument {other:?}")),
        }
    }
    Ok(crate::args::Command::ServeProtocols(ServeOptions {
        server,
        scenario,
        cert: cert.ok_or("serve protocols needs --cert <path>")?,
        key: key.ok_or("serve protocols needs --key <path>")?,
        workers,
    }))
}

/// The child's side: serves plain and over TLS, announces `listening <plain> tls <tls>` and
/// serves until standard input closes.
pub(crate) fn serve(options: &ServeOptions) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.workers)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let running = runtime
        .block_on(protocols_app::start(
            options.server,
            options.scenario.many_routes(),
            &options.cert,
            &options.key,
        ))
        .map_err(|e| format!("{}: {e}", options.server))?;
    println!("listening {} tls {}", running.plain, running.tls);
    let mut sink = String::new();
    while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {
        sink.clear();
    }
    runtime.block_on(running.stop());
    Ok(())
}

/// `listening <plain> tls <tls>`.
fn parse_announcement(line: &str) -> Option<(SocketAddr, SocketAddr)> {
    let rest = line.trim().strip_prefix("listening ")?;
    let (plain, tls) = rest.split_once(" tls ")?;
    Some((plain.parse().ok()?, tls.parse().ok()?))
}

/// A server of `strata-bench protocols` in a child process.
struct ProtocolServer {
    kind: ServerKind,
    plain: SocketAddr,
    tls: SocketAddr,
    child: Child,
    /// Closing it stops the server.
    stdin: Option<ChildStdin>,
}

impl ProtocolServer {
    /// Starts `kind` for `scenario` from this program (`serve protocols`), pinned to the
    /// server core when `pin`, and waits for its announcement.
    fn spawn(
        kind: ServerKind,
        scenario: Scenario,
        files: &CertificateFiles,
        workers: usize,
        pin: bool,
    ) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut command = if pin {
            let mut command = Command::new("taskset");
            command.args(["-c", child::SERVER_CORE]).arg(exe);
            command
        } else {
            Command::new(exe)
        };
        command
            .args(["serve", "protocols", kind.name(), scenario.name(), "--cert"])
            .arg(&files.cert)
            .arg("--key")
            .arg(&files.key)
            .arg("--workers")
            .arg(workers.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut process = command
            .spawn()
            .map_err(|e| format!("starting the {kind} server: {e}"))?;
        let stdin = process.stdin.take();
        let mut line = String::new();
        let mut reader = process.stdout.take().map(BufReader::new);
        if let Some(reader) = &mut reader {
            let _ = reader.read_line(&mut line);
        }
        let Some((plain, tls)) = parse_announcement(&line) else {
            let _ = process.kill();
            let _ = process.wait();
            return Err(format!(
                "the {kind} server did not start (it said {line:?})"
            ));
        };
        // Drain the rest, so that a later write neither blocks nor fails.
        if let Some(mut reader) = reader {
            std::thread::spawn(move || {
                let mut sink = [0u8; 4096];
                while reader.read(&mut sink).is_ok_and(|n| n > 0) {}
            });
        }
        Ok(Self {
            kind,
            plain,
            tls,
            child: process,
            stdin,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process's CPU time so far: `utime` + `stime` of `/proc/<pid>/stat`.
    fn cpu_time(&self, ticks_per_second: u64) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).ok()?;
        stat_cpu_time(&stat, ticks_per_second)
    }

    fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// Closes the child's standard input, which stops it; kills it if it lingers.
    fn stop(mut self) {
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

/// `utime` + `stime` (fields 14 and 15, in clock ticks) of a `/proc/<pid>/stat` line. The
/// command name (field 2) is in parentheses and may hold spaces or parentheses itself: the
/// fields are counted from the last `)`.
fn stat_cpu_time(stat: &str, ticks_per_second: u64) -> Option<Duration> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `fields[0]` is field 3 (the state): field n is `fields[n - 3]`.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let ticks = utime + stime;
    let per = ticks_per_second.max(1);
    Some(
        Duration::from_secs(ticks / per)
            + Duration::from_nanos((ticks % per) * 1_000_000_000 / per),
    )
}

/// Clock ticks per second of `/proc/<pid>/stat` (`getconf CLK_TCK`; 100, Linux's `USER_HZ`
/// everywhere, when getconf is missing).
fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .filter(|&ticks| ticks > 0)
        .unwrap_or(100)
}

/// What one server answered over one protocol.
#[derive(Debug, Clone)]
pub(crate) struct ProtocolAnswer {
    /// The TLS application protocol negotiated (`None` for h2c).
    pub(crate) alpn: Option<String>,
    /// The response's HTTP version.
    pub(crate) version: Version,
    pub(crate) observed: Observed,
}

/// Sends `spec` over `protocol` to a server listening on `plain` and `tls`, on a new
/// connection: h2c by an HTTP/2 handshake on the bare socket; otherwise rustls trusting
/// `certificate` alone (server name `localhost`), ALPN `protocol`'s alone.
pub(crate) async fn ask(
    protocol: Protocol,
    plain: SocketAddr,
    tls: SocketAddr,
    spec: &RequestSpec,
    certificate: &Certificate,
) -> Result<ProtocolAnswer, String> {
    let addr = if protocol.tls() { tls } else { plain };
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let authority = if protocol.tls() {
        format!("localhost:{}", addr.port())
    } else {
        addr.to_string()
    };
    let scheme = if protocol.tls() { "https" } else { "http" };
    let uri = match protocol.version() {
        Version::HTTP_2 => format!("{scheme}://{authority}{}", spec.path_and_query),
        _ => spec.path_and_query.clone(),
    };
    let mut request = Request::builder().method(spec.method.clone()).uri(uri);
    if protocol.version() == Version::HTTP_11 {
        request = request.header("host", &authority);
    }
    for (name, value) in &spec.headers {
        request = request.header(*name, value);
    }
    let request = request
        .body(Full::new(Bytes::from(spec.body.clone())))
        .map_err(|e| e.to_string())?;
    let (alpn, response) = if let Some(wanted) = protocol.alpn() {
        let connector = certificate.connector(&[wanted.as_bytes()])?;
        let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
        let stream = connector
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS handshake with {addr}: {e}"))?;
        let alpn = stream
            .get_ref()
            .1
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        let response = send(protocol.version(), TokioIo::new(stream), request).await?;
        (alpn, response)
    } else {
        let response = send(protocol.version(), TokioIo::new(stream), request).await?;
        (None, response)
    };
    Ok(ProtocolAnswer {
        alpn,
        version: response.version(),
        observed: Observed::of(&response),
    })
}

/// One request over `io` with hyper's HTTP/2 or HTTP/1.1 client connection; the response with
/// its whole body.
async fn send<I>(
    version: Version,
    io: I,
    request: Request<Full<Bytes>>,
) -> Result<http::Response<Bytes>, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let response = if version == Version::HTTP_2 {
        let (mut sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                .await
                .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
        tokio::spawn(connection);
        sender.send_request(request).await
    } else {
        let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| format!("HTTP/1.1 handshake: {e}"))?;
        tokio::spawn(connection);
        sender.send_request(request).await
    }
    .map_err(|e| format!("request: {e}"))?;
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    Ok(http::Response::from_parts(parts, body))
}

/// Checks every server's answer over every protocol: the protocol negotiated and the version
/// answered are the ones asked for, and (`preflight::compare`) the status, content type,
/// CORS header and JSON body agree across the servers of each protocol and across the
/// protocols. Returns the agreed body.
pub(crate) fn check_answers(
    scenario: Scenario,
    answers: &[(Protocol, Vec<(ServerKind, ProtocolAnswer)>)],
) -> Result<serde_json::Value, String> {
    let mut agreed: Option<(Protocol, serde_json::Value)> = None;
    for (protocol, servers) in answers {
        for (kind, answer) in servers {
            if answer.alpn.as_deref() != protocol.alpn() {
                return Err(format!(
                    "{scenario}: {kind} over {protocol} negotiated {:?}, expected {:?}",
                    answer.alpn,
                    protocol.alpn()
                ));
            }
            if answer.version != protocol.version() {
                return Err(format!(
                    "{scenario}: {kind} over {protocol} answered in {:?}, expected {:?}",
                    answer.version,
                    protocol.version()
                ));
            }
        }
        let observed: Vec<(ServerKind, Observed)> = servers
            .iter()
            .map(|(kind, answer)| (*kind, answer.observed.clone()))
            .collect();
        let body =
            preflight::compare(scenario, &observed).map_err(|e| format!("{protocol}: {e}"))?;
        match &agreed {
            None => agreed = Some((*protocol, body)),
            Some((first, value)) if *value != body => {
                return Err(format!(
                    "{scenario}: the answers over {protocol} differ from those over {first}: {} \
                     vs {}",
                    preflight::abridged(&body),
                    preflight::abridged(value)
                ));
            }
            Some(_) => {}
        }
    }
    agreed
        .map(|(_, body)| body)
        .ok_or_else(|| format!("{scenario}: no answers"))
}

/// One measured run of one server over one protocol.
#[derive(Debug, Clone, Serialize)]
struct RunResult {
    requests: u64,
    seconds: f64,
    requests_per_second: f64,
    /// The server's `utime` + `stime` over the h2load process, per request done, µs.
    cpu_us_per_request: f64,
    /// The server's CPU time over the measured period.
    cpu_utilization: f64,
    request_time_mean_us: f64,
    request_time_sd_us: f64,
    request_time_max_us: f64,
}

/// One server's runs over one protocol, summarized.
#[derive(Debug, Clone, Serialize)]
struct ServerRow {
    server: ServerKind,
    requests_per_second: Spread,
    cpu_us_per_request: Spread,
    cpu_utilization: Spread,
    request_time_mean_us: Spread,
    request_time_sd_us: Spread,
    request_time_max_us: Spread,
    runs: Vec<RunResult>,
}

/// Strata's numbers over another server's, per round.
#[derive(Debug, Clone, Serialize)]
struct Ratios {
    over: ServerKind,
    /// Strata's req/s ÷ the other's (higher is better for Strata).
    requests_per_second: Spread,
    /// Strata's CPU per request ÷ the other's (lower is better for Strata).
    cpu_per_request: Spread,
}

/// One protocol's table.
#[derive(Debug, Clone, Serialize)]
struct ProtocolTable {
    protocol: Protocol,
    /// h2load's `-m`.
    streams: usize,
    /// h2load's command line of the first server's runs (the port aside, the others').
    command: String,
    servers: Vec<ServerRow>,
    strata_over: Vec<Ratios>,
}

/// One scenario's tables.
#[derive(Debug, Clone, Serialize)]
struct ScenarioTables {
    scenario: Scenario,
    request: String,
    /// The body every server answered over every protocol (checked before measuring).
    response: serde_json::Value,
    protocols: Vec<ProtocolTable>,
    peak_rss_kib: Vec<(ServerKind, Option<u64>)>,
}

#[derive(Debug, Clone, Serialize)]
struct ProtocolsReport {
    command: String,
    machine: Machine,
    h2load: String,
    connections: usize,
    round_seconds: f64,
    warmup_seconds: f64,
    rounds: usize,
    server_workers: usize,
    pinned: bool,
    clock_ticks_per_second: u64,
    load_average_before: String,
    load_average_after: String,
    scenarios: Vec<ScenarioTables>,
}

/// The servers, in the order of the first round.
const SERVERS: [ServerKind; 3] = ServerKind::IN_PROCESS;

/// h2load's `-m` over `protocol`: HTTP/1.1 is not pipelined (as clients send it).
fn streams_of(protocol: Protocol, options: &ProtocolsOptions) -> usize {
    if protocol == Protocol::H1Tls {
        1
    } else {
        options.streams
    }
}

/// `/proc/loadavg`'s first three fields.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// `strata-bench protocols`.
pub(crate) fn run(options: &ProtocolsOptions) -> Result<(), String> {
    let h2load_version = h2load::version().ok_or(
        "h2load is not on PATH: bench/scripts/install-tools.sh installs it \
         (Debian's nghttp2-client 1.52.0-1+deb12u3)",
    )?;
    let machine = Machine::probe();
    let load_before = load_average();
    let pinned = options.pin && child::can_pin();
    let ticks = clock_ticks();
    let duration = Duration::from_secs(h2load::whole_seconds(options.duration));
    let warmup = Duration::from_secs(h2load::whole_seconds(options.warmup));
    eprintln!(
        "strata-bench protocols: {h2load_version}, {} connections, {} streams per HTTP/2 \
         connection, runs of {} s, load average {load_before}",
        options.connections,
        options.streams,
        duration.as_secs()
    );
    let certificate = Certificate::generate()?;
    let files = CertificateFiles::write(&certificate)?;
    if pinned {
        child::pin_self(child::CLIENT_CORE)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut scenarios = Vec::new();
    for &scenario in &options.scenarios {
        let mut servers = Vec::new();
        for kind in SERVERS {
            match ProtocolServer::spawn(kind, scenario, &files, options.workers, pinned) {
                Ok(server) => servers.push(server),
                Err(e) => {
                    servers.into_iter().for_each(ProtocolServer::stop);
                    return Err(format!("{scenario}: {e}"));
                }
            }
        }
        let measured = runtime.block_on(measure(
            scenario,
            &servers,
            &certificate,
            options,
            Timing {
                duration,
                warmup,
                pinned,
                ticks,
            },
        ));
        let rss = servers.iter().map(|s| (s.kind, s.peak_rss_kib())).collect();
        servers.into_iter().for_each(ProtocolServer::stop);
        let (response, protocols) = measured?;
        let spec = scenario.request();
        scenarios.push(ScenarioTables {
            scenario,
            request: format!("{} {}", spec.method, spec.path_and_query),
            response: preflight::abridged(&response),
            protocols,
            peak_rss_kib: rss,
        });
    }
    let report = ProtocolsReport {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        h2load: h2load_version,
        connections: options.connections,
        round_seconds: duration.as_secs_f64(),
        warmup_seconds: warmup.as_secs_f64(),
        rounds: options.rounds,
        server_workers: options.workers,
        pinned,
        clock_ticks_per_second: ticks,
        load_average_before: load_before,
        load_average_after: load_average(),
        scenarios,
    };
    print!("{}", markdown(&report));
    if let Some(path) = &options.json {
        crate::report::write_json(path, &report)?;
    }
    Ok(())
}

/// How long, where, and how CPU time is read.
#[derive(Clone, Copy)]
struct Timing {
    duration: Duration,
    warmup: Duration,
    pinned: bool,
    ticks: u64,
}

/// The pre-flight over every protocol, then the warm-ups and rounds of one scenario.
async fn measure(
    scenario: Scenario,
    servers: &[ProtocolServer],
    certificate: &Certificate,
    options: &ProtocolsOptions,
    timing: Timing,
) -> Result<(serde_json::Value, Vec<ProtocolTable>), String> {
    let spec = scenario.request();
    let response = preflight_all(scenario, servers, certificate, &options.protocols).await?;
    let body = BodyFile::write(&spec, scenario)?;
    let invocation = |server: &ProtocolServer, protocol: Protocol, duration| {
        let (scheme, addr) = if protocol.tls() {
            ("https", server.tls)
        } else {
            ("http", server.plain)
        };
        h2load::Invocation {
            uri: format!("{scheme}://{addr}{}", spec.path_and_query),
            connections: options.connections,
            streams: streams_of(protocol, options),
            duration,
            http1: protocol == Protocol::H1Tls,
            headers: spec
                .headers
                .iter()
                .map(|(name, value)| format!("{name}: {value}"))
                .collect(),
            body: body.path(),
            core: timing.pinned.then_some(child::CLIENT_CORE),
        }
    };
    for &protocol in &options.protocols {
        for server in servers {
            once(
                server,
                protocol,
                &invocation(server, protocol, timing.warmup),
                scenario,
                timing.ticks,
            )?;
        }
    }
    let mut runs = vec![vec![Vec::new(); servers.len()]; options.protocols.len()];
    for round in 0..options.rounds {
        let mut line = format!("{scenario}: round {}/{}:", round + 1, options.rounds);
        for (p, &protocol) in options.protocols.iter().enumerate() {
            let _ = write!(line, " {protocol}:");
            for step in 0..servers.len() {
                let index = (round + step) % servers.len();
                let server = &servers[index];
                let result = once(
                    server,
                    protocol,
                    &invocation(server, protocol, timing.duration),
                    scenario,
                    timing.ticks,
                )?;
                let _ = write!(
                    line,
                    " {} {:.0} req/s {:.1} µs",
                    server.kind, result.requests_per_second, result.cpu_us_per_request
                );
                runs[p][index].push(result);
            }
        }
        eprintln!("{line}");
    }
    let tables = options
        .protocols
        .iter()
        .zip(runs)
        .map(|(&protocol, runs)| {
            let command = invocation(&servers[0], protocol, timing.duration)
                .args()
                .iter()
                .map(|arg| {
                    if arg.contains(' ') {
                        format!("'{arg}'")
                    } else {
                        arg.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ");
            table(
                protocol,
                streams_of(protocol, options),
                command,
                servers,
                runs,
            )
        })
        .collect();
    Ok((response, tables))
}

/// The pre-flight of `scenario` over every protocol (`ask`, then `check_answers`), logged;
/// the agreed body.
async fn preflight_all(
    scenario: Scenario,
    servers: &[ProtocolServer],
    certificate: &Certificate,
    protocols: &[Protocol],
) -> Result<serde_json::Value, String> {
    let spec = scenario.request();
    let mut answers = Vec::new();
    for &protocol in protocols {
        let mut per_server = Vec::new();
        for server in servers {
            let answer = ask(protocol, server.plain, server.tls, &spec, certificate)
                .await
                .map_err(|e| format!("{scenario}: {} over {protocol}: {e}", server.kind))?;
            per_server.push((server.kind, answer));
        }
        answers.push((protocol, per_server));
    }
    let response = check_answers(scenario, &answers)?;
    for (protocol, per_server) in &answers {
        for (kind, answer) in per_server {
            eprintln!(
                "{scenario}: pre-flight over {protocol}: {kind} negotiated {}, answered {:?} {}",
                answer
                    .alpn
                    .as_deref()
                    .unwrap_or("(cleartext, prior knowledge)"),
                answer.version,
                answer.observed.status.as_u16()
            );
        }
    }
    eprintln!(
        "{scenario}: pre-flight ok ({} {}), servers: {}",
        scenario.expected_status().as_u16(),
        preflight::abridged(&response),
        servers
            .iter()
            .map(|s| format!(
                "{} pid {} on {} and {} (TLS)",
                s.kind,
                s.pid(),
                s.plain,
                s.tls
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(response)
}

/// One h2load run against `server` over `protocol`, checked, with the server's CPU time over
/// it. Blocks (the runtime has nothing else to do meanwhile).
fn once(
    server: &ProtocolServer,
    protocol: Protocol,
    invocation: &h2load::Invocation<'_>,
    scenario: Scenario,
    ticks: u64,
) -> Result<RunResult, String> {
    let context = |e: String| format!("{scenario}: {} over {protocol}: {e}", server.kind);
    let before = server
        .cpu_time(ticks)
        .ok_or_else(|| context("the server's CPU time is unknown".to_owned()))?;
    let output = invocation.run().map_err(context)?;
    let after = server
        .cpu_time(ticks)
        .ok_or_else(|| context("the server's CPU time is unknown".to_owned()))?;
    output
        .check(scenario.expected_status(), protocol.h2load_protocol())
        .map_err(context)?;
    let cpu = after.saturating_sub(before).as_secs_f64();
    #[allow(clippy::cast_precision_loss)]
    let done = output.done as f64;
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let seconds = if output.requests_per_sec > 0.0 {
        done / output.requests_per_sec
    } else {
        output.finished_in.as_secs_f64()
    };
    Ok(RunResult {
        requests: output.done,
        seconds,
        requests_per_second: output.requests_per_sec,
        cpu_us_per_request: cpu * 1e6 / done,
        cpu_utilization: cpu / seconds.max(1e-9),
        request_time_mean_us: micros(output.request_time.mean),
        request_time_sd_us: micros(output.request_time.sd),
        request_time_max_us: micros(output.request_time.max),
    })
}

/// Each server's summary over one protocol and Strata's ratios to the others, per round.
fn table(
    protocol: Protocol,
    streams: usize,
    command: String,
    servers: &[ProtocolServer],
    runs: Vec<Vec<RunResult>>,
) -> ProtocolTable {
    let kinds: Vec<ServerKind> = servers.iter().map(|s| s.kind).collect();
    summarize(protocol, streams, command, &kinds, runs)
}

fn summarize(
    protocol: Protocol,
    streams: usize,
    command: String,
    kinds: &[ServerKind],
    runs: Vec<Vec<RunResult>>,
) -> ProtocolTable {
    let rows: Vec<ServerRow> = kinds
        .iter()
        .zip(runs)
        .map(|(&server, runs)| {
            let each =
                |f: fn(&RunResult) -> f64| Spread::of(&runs.iter().map(f).collect::<Vec<_>>());
            ServerRow {
                server,
                requests_per_second: each(|r| r.requests_per_second),
                cpu_us_per_request: each(|r| r.cpu_us_per_request),
                cpu_utilization: each(|r| r.cpu_utilization),
                request_time_mean_us: each(|r| r.request_time_mean_us),
                request_time_sd_us: each(|r| r.request_time_sd_us),
                request_time_max_us: each(|r| r.request_time_max_us),
                runs,
            }
        })
        .collect();
    let strata = rows.iter().find(|r| r.server == ServerKind::Strata);
    let strata_over = [ServerKind::Axum, ServerKind::Hyper]
        .into_iter()
        .filter_map(|other| {
            let (strata, other_row) = (strata?, rows.iter().find(|r| r.server == other)?);
            let per_round = |f: fn(&RunResult) -> f64| {
                let ratios: Vec<f64> = strata
                    .runs
                    .iter()
                    .zip(&other_row.runs)
                    .map(|(s, o)| f(s) / f(o))
                    .collect();
                Spread::of(&ratios)
            };
            Some(Ratios {
                over: other,
                requests_per_second: per_round(|r| r.requests_per_second),
                cpu_per_request: per_round(|r| r.cpu_us_per_request),
            })
        })
        .collect();
    ProtocolTable {
        protocol,
        streams,
        command,
        servers: rows,
        strata_over,
    }
}

/// The request body in a temporary file for h2load's `-d`, removed when dropped; nothing for
/// a request without a body.
struct BodyFile(Option<PathBuf>);

impl BodyFile {
    fn write(spec: &RequestSpec, scenario: Scenario) -> Result<Self, String> {
        if spec.body.is_empty() {
            if spec.method != http::Method::GET {
                return Err(format!(
                    "{scenario}: h2load sends a bodiless request as a GET, not {}",
                    spec.method
                ));
            }
            return Ok(Self(None));
        }
        if spec.method != http::Method::POST {
            return Err(format!(
                "{scenario}: h2load sends a body as a POST, not {}",
                spec.method
            ));
        }
        let path = std::env::temp_dir().join(format!(
            "strata-bench-{}-protocols-{scenario}.body",
            std::process::id()
        ));
        std::fs::write(&path, &spec.body).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self(Some(path)))
    }

    fn path(&self) -> Option<&std::path::Path> {
        self.0.as_deref()
    }
}

impl Drop for BodyFile {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Thousands separated by commas: `84,211`.
fn grouped(value: f64) -> String {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let digits = (value.round().max(0.0) as u64).to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn markdown(report: &ProtocolsReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# strata-bench protocols: h2c, h2 and HTTP/1.1 over TLS\n\n\
         {} cores ({}), {}; {}, 1 thread, {} connections; {} rounds of {} s after {} s of \
         warm-up per server and protocol, the servers' order rotating; servers {} worker(s){}; \
         CPU from /proc/<pid>/stat (utime + stime, {} ticks/s); load average {} before, {} after",
        report.machine.cores,
        report.machine.cpu,
        report.machine.rustc,
        report.h2load,
        report.connections,
        report.rounds,
        report.round_seconds,
        report.warmup_seconds,
        report.server_workers,
        if report.pinned {
            ", pinned to core 0 (h2load to core 1)"
        } else {
            ", not pinned"
        },
        report.clock_ticks_per_second,
        report.load_average_before,
        report.load_average_after,
    );
    for scenario in &report.scenarios {
        let _ = writeln!(
            out,
            "\n## {} ({}): every server answered {} over every protocol\n",
            scenario.scenario, scenario.request, scenario.response
        );
        for table in &scenario.protocols {
            let _ = writeln!(
                out,
                "### {}, {} stream(s) per connection\n\n`{}`\n\n\
                 | server | req/s, median (min–max) | server CPU µs per request | server CPU use \
                 | request time mean (sd), ms | request time max, ms |\n\
                 |---|---:|---:|---:|---:|---:|",
                table.protocol.title(),
                table.streams,
                table.command
            );
            for row in &table.servers {
                let rps = &row.requests_per_second;
                let _ = writeln!(
                    out,
                    "| {} | {} ({}–{}) | {} | {:.0} % | {:.2} ({:.2}) | {:.1} |",
                    row.server,
                    grouped(rps.median),
                    grouped(rps.min),
                    grouped(rps.max),
                    row.cpu_us_per_request.show(2),
                    100.0 * row.cpu_utilization.median,
                    row.request_time_mean_us.median / 1000.0,
                    row.request_time_sd_us.median / 1000.0,
                    row.request_time_max_us.median / 1000.0,
                );
            }
            out.push('\n');
            for ratios in &table.strata_over {
                let _ = writeln!(
                    out,
                    "- Strata ÷ {}, per round: req/s {}; CPU per request {}",
                    ratios.over,
                    ratios.requests_per_second.show(3),
                    ratios.cpu_per_request.show(3)
                );
            }
            out.push('\n');
        }
        let rss: Vec<String> = scenario
            .peak_rss_kib
            .iter()
            .map(|(kind, kib)| {
                kib.map_or_else(
                    || format!("{kind} ?"),
                    |kib| {
                        format!(
                            "{kind} {:.1} MiB",
                            f64::from(u32::try_from(kib).unwrap_or(u32::MAX)) / 1024.0
                        )
                    },
                )
            })
            .collect();
        let _ = writeln!(out, "Peak RSS after every protocol: {}", rss.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Command as Parsed;

    fn options(args: &[&str]) -> ProtocolsOptions {
        let args: Vec<String> = args.iter().map(|&a| a.to_owned()).collect();
        match parse(&args) {
            Ok(Parsed::Protocols(options)) => options,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn arguments() {
        let defaults = options(&[]);
        assert_eq!(
            defaults.scenarios,
            [Scenario::Hello, Scenario::ValidatedPost]
        );
        assert_eq!(defaults.protocols, Protocol::ALL);
        assert_eq!((defaults.connections, defaults.streams), (64, 10));
        assert_eq!((defaults.rounds, defaults.workers), (3, 1));
        assert!(defaults.pin && defaults.json.is_none());
        let quick = options(&["--quick"]);
        assert!(quick.duration < defaults.duration && quick.rounds < defaults.rounds);
        let set = options(&[
            "--protocol",
            "h1-tls,h2c",
            "--scenario=hello",
            "--streams",
            "4",
            "--connections=16",
            "--duration",
            "2s",
            "--warmup",
            "1",
            "--rounds",
            "5",
            "--workers",
            "2",
            "--no-pin",
            "--json",
            "/tmp/p.json",
        ]);
        assert_eq!(set.protocols, [Protocol::H2c, Protocol::H1Tls]);
        assert_eq!(set.scenarios, [Scenario::Hello]);
        assert_eq!((set.streams, set.connections, set.rounds), (4, 16, 5));
        assert_eq!(set.duration, Duration::from_secs(2));
        assert_eq!(set.warmup, Duration::from_secs(1));
        assert!(!set.pin && set.workers == 2);
        assert_eq!(set.json, Some(PathBuf::from("/tmp/p.json")));
        assert_eq!(streams_of(Protocol::H1Tls, &set), 1);
        assert_eq!(streams_of(Protocol::H2, &set), 4);
        for bad in [
            &["--protocol", "h3"][..],
            &["--protocol", ","],
            &["--streams", "0"],
            &["--streams"],
            &["--scenario", "not-found"],
            &["--scenario", "hello,invalid"],
            &["--generator", "wrk"],
        ] {
            let args: Vec<String> = bad.iter().map(|&a| a.to_owned()).collect();
            assert!(parse(&args).is_err(), "{bad:?}");
        }
        // Through the program's own parser.
        assert!(matches!(
            crate::args::parse(["protocols", "--quick"]),
            Ok(Parsed::Protocols(_))
        ));
        assert_eq!(
            crate::args::parse(["protocols", "--help"]),
            Ok(Parsed::Help)
        );
    }

    #[test]
    fn serve_arguments() {
        assert_eq!(
            crate::args::parse([
                "serve",
                "protocols",
                "axum",
                "validated-post",
                "--cert",
                "/tmp/c.pem",
                "--key",
                "/tmp/k.pem",
                "--workers",
                "2"
            ]),
            Ok(Parsed::ServeProtocols(ServeOptions {
                server: ServerKind::Axum,
                scenario: Scenario::ValidatedPost,
                cert: PathBuf::from("/tmp/c.pem"),
                key: PathBuf::from("/tmp/k.pem"),
                workers: 2,
            }))
        );
        for bad in [
            &[
                "serve",
                "protocols",
                "ezapi",
                "hello",
                "--cert",
                "c",
                "--key",
                "k",
            ][..],
            &["serve", "protocols", "strata", "hello", "--cert", "c"],
            &["serve", "protocols", "strata", "hello", "--key", "k"],
            &["serve", "protocols", "strata"],
            &["serve", "protocols", "strata", "hello", "--cert"],
        ] {
            assert!(crate::args::parse(bad.iter().copied()).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_announcement("listening 127.0.0.1:8080 tls 127.0.0.1:8443\n"),
            Some((
                SocketAddr::from(([127, 0, 0, 1], 8080)),
                SocketAddr::from(([127, 0, 0, 1], 8443))
            ))
        );
        assert_eq!(parse_announcement("listening 127.0.0.1:8080\n"), None);
    }

    #[test]
    fn cpu_time_from_proc_stat() {
        // A real line (`cat /proc/self/stat`), the name with a space and a parenthesis.
        let stat = "4242 (tokio (rt) x) S 1 4242 4242 0 -1 4194304 1520 0 0 0 1234 567 0 0 \
                    20 0 2 0 12345 1000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 \
                    17 0 0 0 0 0 0";
        assert_eq!(
            stat_cpu_time(stat, 100),
            Some(Duration::from_millis(18_010))
        );
        assert_eq!(stat_cpu_time(stat, 1000), Some(Duration::from_millis(1801)));
        assert_eq!(stat_cpu_time("4242 (x) S 1", 100), None);
        // This process's own line parses, and grows with work done.
        let own = || {
            let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
            stat_cpu_time(&stat, clock_ticks()).unwrap()
        };
        let before = own();
        let began = Instant::now();
        let mut x = 0u64;
        // Busy until a tick is counted (10 ms at 100 ticks/s, however loaded the machine).
        while own() <= before {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            assert!(
                began.elapsed() < Duration::from_secs(20),
                "no CPU time counted over 20 s of work"
            );
        }
    }

    #[test]
    fn ratios_are_strata_s_over_the_other_s_per_round() {
        let run = |rps: f64, cpu: f64| RunResult {
            requests: 1,
            seconds: 1.0,
            requests_per_second: rps,
            cpu_us_per_request: cpu,
            cpu_utilization: 1.0,
            request_time_mean_us: 1.0,
            request_time_sd_us: 1.0,
            request_time_max_us: 1.0,
        };
        let table = summarize(
            Protocol::H2,
            10,
            String::new(),
            &SERVERS,
            vec![
                vec![run(100.0, 10.0), run(200.0, 5.0)],
                vec![run(50.0, 20.0), run(100.0, 10.0)],
                vec![run(80.0, 12.0), run(220.0, 4.0)],
            ],
        );
        let over = |kind| {
            table
                .strata_over
                .iter()
                .find(|r| r.over == kind)
                .unwrap()
                .clone()
        };
        let axum = over(ServerKind::Axum);
        // Per round 80/50 and 220/100: the median of two is their mean.
        assert!((axum.requests_per_second.median - f64::midpoint(1.6, 2.2)).abs() < 1e-9);
        assert!((axum.cpu_per_request.median - f64::midpoint(0.6, 0.4)).abs() < 1e-9);
        let hyper = over(ServerKind::Hyper);
        assert!((hyper.requests_per_second.min - 0.8).abs() < 1e-9);
        assert!((hyper.requests_per_second.max - 1.1).abs() < 1e-9);
        assert!((table.servers[2].requests_per_second.median - 150.0).abs() < 1e-9);
    }

    /// The three servers, in this process, each plain and over TLS: the pre-flight passes
    /// over every protocol for hello and validated-post (Strata's own TLS listener, and h2c
    /// on its plain one, included), and catches a server that answers otherwise.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_server_passes_the_pre_flight_over_every_protocol() {
        let certificate = Certificate::generate().unwrap();
        let files = CertificateFiles::write(&certificate).unwrap();
        let mut running = Vec::new();
        for kind in SERVERS {
            let server = protocols_app::start(kind, false, &files.cert, &files.key)
                .await
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            running.push((kind, server));
        }
        for scenario in [Scenario::Hello, Scenario::ValidatedPost] {
            let spec = scenario.request();
            let mut answers = Vec::new();
            for protocol in Protocol::ALL {
                let mut per_server = Vec::new();
                for (kind, server) in &running {
                    let answer = ask(protocol, server.plain, server.tls, &spec, &certificate)
                        .await
                        .unwrap_or_else(|e| panic!("{kind} over {protocol}: {e}"));
                    per_server.push((*kind, answer));
                }
                answers.push((protocol, per_server));
            }
            let agreed = check_answers(scenario, &answers).unwrap();
            if scenario == Scenario::Hello {
                assert_eq!(
                    agreed,
                    serde_json::json!({"status": "success", "data": {"greetings": "Hello, World"}})
                );
            }
            // Another version, another protocol or another body: caught.
            let mut tampered = answers.clone();
            tampered[1].1[2].1.version = Version::HTTP_11;
            assert!(check_answers(scenario, &tampered).is_err());
            let mut tampered = answers.clone();
            tampered[2].1[0].1.alpn = Some("h2".to_owned());
            assert!(check_answers(scenario, &tampered).is_err());
            let mut tampered = answers.clone();
            tampered[0].1[2].1.observed.body =
                Bytes::from_static(br#"{"status":"success","data":{}}"#);
            assert!(check_answers(scenario, &tampered).is_err());
            // Every server agrees, but one protocol's answers differ from another's.
            let mut tampered = answers.clone();
            for (_, answer) in &mut tampered[2].1 {
                answer.observed.body = Bytes::from_static(br#"{"status":"success","data":{}}"#);
            }
            let message = check_answers(scenario, &tampered).unwrap_err();
            assert!(message.contains("differ from those over h2c"), "{message}");
        }
        // A client that trusts another certificate does not get through.
        let other = Certificate::generate().unwrap();
        let strata = &running[2].1;
        let refused = ask(
            Protocol::H2,
            strata.plain,
            strata.tls,
            &Scenario::Hello.request(),
            &other,
        )
        .await;
        assert!(refused.is_err_and(|e| e.contains("TLS handshake")));
        for (_, server) in running {
            server.stop().await;
        }
    }
}
