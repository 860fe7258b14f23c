//! `strata-bench uploads`: a 32 MiB file uploaded as `multipart/form-data`, over and over, to
//! Strata's upload endpoint, axum's `Multipart` and hyper with multer by hand
//! (`servers/upload_app.rs`): MiB per second and the server's peak memory.
//!
//! Each server runs in a child process (`strata-bench serve upload <server>`, one worker,
//! pinned to core 0). The client (this process, one current-thread runtime pinned to core 1)
//! builds the body once (a deterministic pseudo-random file in one file part) as `Bytes`, and
//! opens a few keep-alive connections (hyper's HTTP/1.1 client connection, 4 by default), each
//! uploading it again and again for the round's length; an upload counts when its answer came
//! back, 200 with the expected size and CRC-32. Pre-flight: every server answers the upload
//! with the same JSON (the file's size and CRC-32 as the client computed them). Then a warm-up
//! per server, and rounds that load each server once, in an order that rotates every round.
//! Reported per server: the median MiB/s of the rounds and their spread, the server's CPU use
//! over the rounds, its RSS before the first upload and its peak RSS (`VmHWM`) at the end, and
//! per round Strata's MiB/s over axum's.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde::Serialize;

use crate::args::{parse_duration, positive, split_flag};
use crate::child::{self, ChildServer};
use crate::report::Machine;
use crate::scenario::ServerKind;
use crate::servers::upload_app::{FIELD, PATH, UploadSummary, success_body};
use crate::stats::Spread;

/// The multipart boundary of the client's body.
pub(crate) const BOUNDARY: &str = "strata-bench-upload-5f0c2a9d71e4b83c";
/// One MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// Options of `strata-bench uploads`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UploadOptions {
    /// Length of one measured round of one server.
    pub(crate) duration: Duration,
    /// Warm-up of each server, before the rounds.
    pub(crate) warmup: Duration,
    /// Measured rounds per server.
    pub(crate) rounds: usize,
    /// Connections uploading at once.
    pub(crate) connections: usize,
    /// The file's size in MiB (at most 32: the servers' limits allow 33).
    pub(crate) mib: usize,
    /// The servers measured.
    pub(crate) servers: Vec<ServerKind>,
    /// Server runtime worker threads.
    pub(crate) workers: usize,
    /// Pin the servers and this process to different cores (with `taskset`).
    pub(crate) pin: bool,
    /// Where to write the results as JSON, if anywhere.
    pub(crate) json: Option<PathBuf>,
}

impl UploadOptions {
    fn defaults(quick: bool) -> Self {
        let (duration, warmup, rounds) = if quick {
            (Duration::from_secs(1), Duration::from_millis(500), 3)
        } else {
            (Duration::from_secs(3), Duration::from_secs(1), 5)
        };
        Self {
            duration,
            warmup,
            rounds,
            connections: 4,
            mib: 32,
            servers: vec![ServerKind::Strata, ServerKind::Axum, ServerKind::Hyper],
            workers: 1,
            pin: true,
            json: None,
        }
    }
}

/// The usage of `uploads` and `serve upload`.
pub(crate) const USAGE: &str = "\
UPLOADS: a file (32 MiB by default, pseudo-random bytes) in a multipart/form-data body, uploaded
again and again to POST /v1/upload of Strata (an UploadedFile input; files kept in memory),
axum (Multipart, counted as it streams) and hyper with multer by hand (the same); each answers
the file's size and CRC-32. Servers `serve upload <server>`, pinned to core 0; the client one
thread on core 1, the body built once.
    strata-bench uploads [--quick] [--duration <time>] [--warmup <time>] [--rounds N]
                         [--connections N] [--mib N] [--server strata,axum,hyper] [--workers N]
                         [--no-pin] [--json <path>]
    strata-bench serve upload <strata|axum|hyper> [--workers N]
    --duration <time>       one measured round of one server (default 3s, quick 1s)
    --warmup <time>         warm-up of each server (default 1s, quick 500ms)
    --rounds <N>            measured rounds per server (default 5, quick 3)
    --connections <N>       connections uploading at once (default 4)
    --mib <N>               the file's size in MiB, 1 to 32 (default 32)
";

/// `uploads`' options (after `uploads`).
pub(crate) fn parse(args: &[String]) -> Result<UploadOptions, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut options = UploadOptions::defaults(quick);
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
            "--no-pin" => options.pin = false,
            "--duration" => options.duration = parse_duration(&value()?)?,
            "--warmup" => options.warmup = parse_duration(&value()?)?,
            "--rounds" => options.rounds = positive(name, &value()?)?,
            "--connections" => options.connections = positive(name, &value()?)?,
            "--mib" => {
                options.mib = positive(name, &value()?)?;
                if options.mib > 32 {
                    return Err("--mib: at most 32 (the servers' file limit is 33 MiB)".into());
                }
            }
            "--workers" => options.workers = positive(name, &value()?)?,
            "--server" | "--servers" => options.servers = servers(&value()?)?,
            "--json" => options.json = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown uploads argument {other:?}\n\n{USAGE}")),
        }
    }
    Ok(options)
}

/// `strata,axum,hyper`: each once, in the order given; only the three Rust servers.
fn servers(text: &str) -> Result<Vec<ServerKind>, String> {
    let mut kinds = Vec::new();
    for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let kind: ServerKind = name.parse()?;
        if !matches!(
            kind,
            ServerKind::Strata | ServerKind::Axum | ServerKind::Hyper
        ) {
            return Err(format!("{kind} has no upload server (strata, axum, hyper)"));
        }
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    if kinds.is_empty() {
        return Err(format!("{text:?} names no server"));
    }
    Ok(kinds)
}

/// `mib` MiB of pseudo-random bytes (xorshift64*, a fixed seed): the same file every run.
pub(crate) fn file_data(bytes: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut data = Vec::with_capacity(bytes + 8);
    while data.len() < bytes {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        data.extend_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    data.truncate(bytes);
    data
}

/// The multipart body of one file part named [`FIELD`] holding `data`; an error when `data`
/// holds the boundary's delimiter (it would end the part early).
pub(crate) fn multipart_body(data: &[u8]) -> Result<Bytes, String> {
    let delimiter = format!("\r\n--{BOUNDARY}");
    if data
        .windows(delimiter.len())
        .any(|w| w == delimiter.as_bytes())
    {
        return Err("the file holds the multipart delimiter".to_owned());
    }
    let head = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{FIELD}\"; \
         filename=\"upload.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{BOUNDARY}--\r\n");
    let mut body = Vec::with_capacity(head.len() + data.len() + tail.len());
    body.extend_from_slice(head.as_bytes());
    body.extend_from_slice(data);
    body.extend_from_slice(tail.as_bytes());
    Ok(Bytes::from(body))
}

/// What every upload sends and expects back.
pub(crate) struct Upload {
    pub(crate) body: Bytes,
    pub(crate) file_bytes: u64,
    pub(crate) expected: UploadSummary,
}

impl Upload {
    pub(crate) fn new(file_bytes: usize) -> Result<Self, String> {
        let data = file_data(file_bytes);
        Ok(Self {
            expected: UploadSummary::of(&data),
            body: multipart_body(&data)?,
            file_bytes: file_bytes as u64,
        })
    }

    fn request(&self, addr: SocketAddr) -> http::Request<Full<Bytes>> {
        let mut request = http::Request::new(Full::new(self.body.clone()));
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() = http::Uri::from_static(PATH);
        let headers = request.headers_mut();
        if let Ok(host) = http::HeaderValue::from_str(&addr.to_string()) {
            headers.insert(http::header::HOST, host);
        }
        if let Ok(content_type) =
            http::HeaderValue::from_str(&format!("multipart/form-data; boundary={BOUNDARY}"))
        {
            headers.insert(http::header::CONTENT_TYPE, content_type);
        }
        request
    }
}

/// Checks an answer: 200 and the envelope with the expected summary (compared as JSON).
pub(crate) fn check_answer(
    status: http::StatusCode,
    body: &[u8],
    expected: UploadSummary,
) -> Result<(), String> {
    let shown = || String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
    if status != http::StatusCode::OK {
        return Err(format!("answered {status}: {}", shown()));
    }
    let got: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not JSON ({e}): {}", shown()))?;
    let want: serde_json::Value =
        serde_json::from_str(&success_body(expected)).map_err(|e| e.to_string())?;
    if got != want {
        return Err(format!("answered {}, expected {want}", shown()));
    }
    Ok(())
}

/// One connection uploading until `deadline` (each upload started before it is finished);
/// the uploads done.
async fn uploader(addr: SocketAddr, upload: Rc<Upload>, deadline: Instant) -> Result<u64, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let driver = tokio::task::spawn_local(connection);
    let mut done = 0;
    while Instant::now() < deadline {
        sender
            .ready()
            .await
            .map_err(|e| format!("connection: {e}"))?;
        let response = sender
            .send_request(upload.request(addr))
            .await
            .map_err(|e| format!("upload: {e}"))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("answer: {e}"))?
            .to_bytes();
        check_answer(status, &body, upload.expected)?;
        done += 1;
    }
    drop(sender);
    let _ = driver.await;
    Ok(done)
}

/// One load of `connections` uploaders for `duration`: uploads done and the time until the
/// last finished.
async fn load(
    addr: SocketAddr,
    upload: &Rc<Upload>,
    connections: usize,
    duration: Duration,
) -> Result<(u64, Duration), String> {
    let start = Instant::now();
    let deadline = start + duration;
    let tasks: Vec<_> = (0..connections)
        .map(|_| tokio::task::spawn_local(uploader(addr, Rc::clone(upload), deadline)))
        .collect();
    let mut uploads = 0;
    for task in tasks {
        uploads += task.await.map_err(|e| e.to_string())??;
    }
    Ok((uploads, start.elapsed()))
}

/// One round of one server.
#[derive(Debug, Clone, Serialize)]
struct RoundResult {
    uploads: u64,
    seconds: f64,
    mib_per_second: f64,
    /// The server's CPU time over the round's length.
    cpu_utilization: f64,
    /// The server's CPU time per MiB uploaded, ms.
    cpu_ms_per_mib: f64,
}

/// One server's rounds and summary.
#[derive(Debug, Clone, Serialize)]
struct ServerResult {
    server: String,
    mib_per_second: Spread,
    cpu_utilization: Spread,
    cpu_ms_per_mib: Spread,
    /// Per round, MiB/s over axum's in the same round (when axum ran).
    over_axum: Option<Spread>,
    idle_rss_kib: Option<u64>,
    peak_rss_kib: Option<u64>,
    rounds: Vec<RoundResult>,
}

#[derive(Debug, Clone, Serialize)]
struct UploadReport {
    command: String,
    machine: Machine,
    file_bytes: u64,
    body_bytes: usize,
    crc32: u32,
    connections: usize,
    round_seconds: f64,
    warmup_seconds: f64,
    rounds: usize,
    server_workers: usize,
    pinned: bool,
    load_average_before: String,
    load_average_after: String,
    servers: Vec<ServerResult>,
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

/// `strata-bench uploads`.
pub(crate) fn run(options: &UploadOptions) -> Result<(), String> {
    let machine = Machine::probe();
    let load_before = load_average();
    let pinned = options.pin && child::can_pin();
    let upload = Rc::new(Upload::new(options.mib * 1024 * 1024)?);
    let mut children: Vec<ChildServer> = Vec::new();
    for &kind in &options.servers {
        match ChildServer::spawn_upload(kind, options.workers, pinned) {
            Ok(child) => children.push(child),
            Err(e) => {
                children.into_iter().for_each(ChildServer::stop);
                return Err(format!("{kind}: {e}"));
            }
        }
    }
    let idle: Vec<_> = children.iter().map(ChildServer::rss_kib).collect();
    let measured = measure(&children, &upload, options, pinned);
    let peak: Vec<_> = children.iter().map(ChildServer::peak_rss_kib).collect();
    let kinds: Vec<_> = children.iter().map(|c| c.kind).collect();
    children.into_iter().for_each(ChildServer::stop);
    let rounds = measured?;
    let axum_rounds = kinds
        .iter()
        .position(|k| *k == ServerKind::Axum)
        .map(|i| rounds[i].clone());
    let servers = kinds
        .iter()
        .zip(rounds)
        .zip(idle.into_iter().zip(peak))
        .map(|((kind, rounds), (idle_rss_kib, peak_rss_kib))| {
            let each = |f: fn(&RoundResult) -> f64| rounds.iter().map(f).collect::<Vec<_>>();
            ServerResult {
                server: kind.name().to_owned(),
                mib_per_second: Spread::of(&each(|r| r.mib_per_second)),
                cpu_utilization: Spread::of(&each(|r| r.cpu_utilization)),
                cpu_ms_per_mib: Spread::of(&each(|r| r.cpu_ms_per_mib)),
                over_axum: axum_rounds.as_ref().map(|axum| {
                    Spread::of(
                        &rounds
                            .iter()
                            .zip(axum)
                            .map(|(own, axum)| own.mib_per_second / axum.mib_per_second)
                            .collect::<Vec<_>>(),
                    )
                }),
                idle_rss_kib,
                peak_rss_kib,
                rounds,
            }
        })
        .collect();
    let report = UploadReport {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        file_bytes: upload.file_bytes,
        body_bytes: upload.body.len(),
        crc32: upload.expected.crc32,
        connections: options.connections,
        round_seconds: options.duration.as_secs_f64(),
        warmup_seconds: options.warmup.as_secs_f64(),
        rounds: options.rounds,
        server_workers: options.workers,
        pinned,
        load_average_before: load_before,
        load_average_after: load_average(),
        servers,
    };
    print!("{}", markdown(&report));
    if let Some(path) = &options.json {
        crate::report::write_json(path, &report)?;
    }
    Ok(())
}

/// Pre-flight, warm-ups and rounds on a current-thread runtime (pinned to the client's core);
/// each server's rounds, in `children`'s order.
fn measure(
    children: &[ChildServer],
    upload: &Rc<Upload>,
    options: &UploadOptions,
    pinned: bool,
) -> Result<Vec<Vec<RoundResult>>, String> {
    if pinned {
        child::pin_self(child::CLIENT_CORE)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        for child in children {
            let answer = preflight(child.addr, upload).await;
            let answer = answer.map_err(|e| format!("{} pre-flight: {e}", child.kind))?;
            eprintln!(
                "uploads: {} pre-flight ok, pid {} on {}: {answer}",
                child.kind,
                child.pid(),
                child.addr
            );
        }
        for child in children {
            once(child, upload, options.connections, options.warmup).await?;
        }
        let mut rounds = vec![Vec::new(); children.len()];
        for round in 0..options.rounds {
            let mut line = format!("uploads: round {}/{}:", round + 1, options.rounds);
            for step in 0..children.len() {
                let index = (round + step) % children.len();
                let child = &children[index];
                let result = once(child, upload, options.connections, options.duration).await?;
                let _ = write!(
                    line,
                    " {} {:.0} MiB/s ({:.0}% CPU)",
                    child.kind,
                    result.mib_per_second,
                    100.0 * result.cpu_utilization
                );
                rounds[index].push(result);
            }
            eprintln!("{line}");
        }
        Ok(rounds)
    })
}

/// One upload on a connection of its own; the answer's body, checked.
async fn preflight(addr: SocketAddr, upload: &Rc<Upload>) -> Result<String, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::task::spawn_local(connection);
    let response = sender
        .send_request(upload.request(addr))
        .await
        .map_err(|e| format!("upload: {e}"))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("answer: {e}"))?
        .to_bytes();
    check_answer(status, &body, upload.expected)?;
    Ok(format!(
        "{} {}",
        status.as_u16(),
        String::from_utf8_lossy(&body)
    ))
}

/// One load of `child` with its CPU time over it.
async fn once(
    child: &ChildServer,
    upload: &Rc<Upload>,
    connections: usize,
    duration: Duration,
) -> Result<RoundResult, String> {
    let before = child.cpu_time();
    let (uploads, elapsed) = load(child.addr, upload, connections, duration)
        .await
        .map_err(|e| format!("{}: {e}", child.kind))?;
    let cpu = before
        .and_then(|before| Some(child.cpu_time()?.saturating_sub(before)))
        .ok_or_else(|| format!("{}: the server's CPU time is unknown", child.kind))?;
    Ok(round_result(uploads, upload.file_bytes, elapsed, cpu))
}

fn round_result(uploads: u64, file_bytes: u64, elapsed: Duration, cpu: Duration) -> RoundResult {
    #[allow(clippy::cast_precision_loss)]
    let mib = (uploads * file_bytes) as f64 / MIB;
    let seconds = elapsed.as_secs_f64().max(1e-9);
    RoundResult {
        uploads,
        seconds,
        mib_per_second: mib / seconds,
        cpu_utilization: cpu.as_secs_f64() / seconds,
        cpu_ms_per_mib: if mib > 0.0 {
            cpu.as_secs_f64() * 1e3 / mib
        } else {
            f64::NAN
        },
    }
}

fn mib_of(kib: Option<u64>) -> String {
    #[allow(clippy::cast_precision_loss)]
    kib.map_or_else(
        || "-".to_owned(),
        |kib| format!("{:.1} MiB", kib as f64 / 1024.0),
    )
}

fn markdown(report: &UploadReport) -> String {
    let mut out = String::new();
    #[allow(clippy::cast_precision_loss)]
    let file_mib = report.file_bytes as f64 / MIB;
    let _ = writeln!(
        out,
        "# strata-bench uploads: a {file_mib:.0} MiB file, multipart\n\n\
         {} cores ({}), {}; {} connections uploading at once (body {} bytes, CRC-32 {:08x}); \
         {} rounds of {} s after {} s of warm-up per server, rotating; server {} worker(s){}; \
         load average {} before, {} after",
        report.machine.cores,
        report.machine.cpu,
        report.machine.rustc,
        report.connections,
        report.body_bytes,
        report.crc32,
        report.rounds,
        report.round_seconds,
        report.warmup_seconds,
        report.server_workers,
        if report.pinned {
            ", pinned to core 0 (the client to core 1)"
        } else {
            ", not pinned"
        },
        report.load_average_before,
        report.load_average_after,
    );
    let _ = writeln!(
        out,
        "\n| server | MiB/s, median (min–max) | ÷ axum, per round | server CPU use | server CPU \
         ms per MiB | RSS idle | peak RSS |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for server in &report.servers {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.0} % | {} | {} | {} |",
            server.server,
            server.mib_per_second.show(0),
            server
                .over_axum
                .as_ref()
                .map(|s| s.show(2))
                .unwrap_or_default(),
            100.0 * server.cpu_utilization.median,
            server.cpu_ms_per_mib.show(2),
            mib_of(server.idle_rss_kib),
            mib_of(server.peak_rss_kib),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_are_parsed() {
        let defaults = parse(&[]).unwrap();
        assert_eq!(
            (defaults.connections, defaults.mib, defaults.rounds),
            (4, 32, 5)
        );
        assert_eq!(
            defaults.servers,
            [ServerKind::Strata, ServerKind::Axum, ServerKind::Hyper]
        );
        assert!(defaults.pin && defaults.json.is_none());
        let options = parse(&args(&[
            "--quick",
            "--connections=2",
            "--mib",
            "8",
            "--server",
            "axum,strata,axum",
            "--no-pin",
            "--duration",
            "500ms",
            "--json",
            "/tmp/u.json",
        ]))
        .unwrap();
        assert_eq!(
            (options.connections, options.mib, options.rounds),
            (2, 8, 3)
        );
        assert_eq!(options.servers, [ServerKind::Axum, ServerKind::Strata]);
        assert_eq!(options.duration, Duration::from_millis(500));
        assert!(!options.pin);
        assert_eq!(options.json, Some(PathBuf::from("/tmp/u.json")));
        for bad in [
            &["--mib", "33"][..],
            &["--mib", "0"],
            &["--server", "ezapi"],
            &["--server", ","],
            &["--connections"],
            &["--scenario", "hello"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_body_is_one_file_part_and_the_file_is_the_same_every_time() {
        let data = file_data(1000);
        assert_eq!(data.len(), 1000);
        assert_eq!(data, file_data(1000));
        assert_ne!(data[..8], data[8..16]);
        let body = multipart_body(&data).unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with(&format!("--{BOUNDARY}\r\n")), "{text}");
        assert!(text.contains("name=\"file\"; filename=\"upload.bin\""));
        assert!(text.ends_with(&format!("\r\n--{BOUNDARY}--\r\n")));
        let mut bad = data.clone();
        bad.extend_from_slice(format!("\r\n--{BOUNDARY}").as_bytes());
        assert!(multipart_body(&bad).is_err());
    }

    #[test]
    fn answers_are_checked_as_json() {
        let expected = UploadSummary { size: 5, crc32: 9 };
        let good = br#"{"data":{"crc32":9,"size":5},"status":"success"}"#;
        assert!(check_answer(http::StatusCode::OK, good, expected).is_ok());
        let wrong = br#"{"status":"success","data":{"size":5,"crc32":8}}"#;
        assert!(check_answer(http::StatusCode::OK, wrong, expected).is_err());
        assert!(check_answer(http::StatusCode::PAYLOAD_TOO_LARGE, good, expected).is_err());
        assert!(check_answer(http::StatusCode::OK, b"oops", expected).is_err());
    }

    #[test]
    fn rounds_are_in_mib_per_second() {
        let round = round_result(
            10,
            32 * 1024 * 1024,
            Duration::from_secs(2),
            Duration::from_secs(1),
        );
        assert!((round.mib_per_second - 160.0).abs() < 1e-9);
        assert!((round.cpu_utilization - 0.5).abs() < 1e-9);
        assert!((round.cpu_ms_per_mib - 1000.0 / 320.0).abs() < 1e-9);
    }

    /// Every server answers a small upload (1 MiB) with its size and CRC-32, in this process.
    #[test]
    fn every_server_counts_an_upload() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            let upload = Rc::new(Upload::new(1024 * 1024).unwrap());
            for kind in [ServerKind::Strata, ServerKind::Axum, ServerKind::Hyper] {
                let running = crate::servers::start_upload(kind).await.unwrap();
                let answer = preflight(running.addr, &upload).await.unwrap();
                assert!(answer.starts_with("200 "), "{kind}: {answer}");
                // Two connections, a short load: each upload's answer is checked.
                let (uploads, _) = load(running.addr, &upload, 2, Duration::from_millis(50))
                    .await
                    .unwrap();
                assert!(uploads >= 2, "{kind}: {uploads}");
                running.stop().await;
            }
        });
    }
}
