//! `strata-bench uploads`: a file uploaded as `multipart/form-data`, over and over, to each
//! server's upload endpoint (`servers/upload_app.rs`) in two modes, side by side: **spooled**
//! (the file goes to a temporary file and the handler reads it back from disk: Strata's
//! `UploadedFile` with its default spool threshold, axum's `Multipart` streamed to a tokio file,
//! express-zod-api's `useTempFiles`) and **streamed** (counted as it arrives, nothing kept:
//! Strata's `StreamedFile`, axum's `Multipart` chunk by chunk, hyper with multer by hand). MiB
//! per second and each server's peak memory, for 32 MiB files and, when asked, 1 GiB ones.
//!
//! For each file size and each mode, the servers run in child processes of their own
//! (`strata-bench serve upload <server> <mode>`, one worker, or `node server.mjs upload`; pinned
//! to core 0), so that each peak RSS is that of one size and one mode. The client (this process,
//! one current-thread runtime pinned to core 1) never holds a file: a body is the part's head,
//! then one MiB of deterministic pseudo-random bytes ([`BLOCK`]) sent again and again (the same
//! `Bytes`, no copy), then the closing delimiter. It opens a few keep-alive connections
//! (hyper's HTTP/1.1 client connection, 4 by default), each uploading again and again for the
//! round's length; an upload counts when its answer came back, 200 with the expected size and
//! CRC-32. Pre-flight: every server answers the upload with the same JSON (the file's size and
//! CRC-32 as the client computed them). Then a warm-up per server, and rounds that load each
//! server once, in an order that rotates every round. Reported per size, mode and server: the
//! median MiB/s of the rounds and their spread, the server's CPU use over the rounds, its RSS
//! before the first upload and its peak RSS (`VmHWM`) at the end, and per round its MiB/s over
//! axum's.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};
use hyper_util::rt::TokioIo;
use serde::Serialize;

use crate::args::{parse_duration, positive, split_flag};
use crate::child::{self, ChildServer};
use crate::report::Machine;
use crate::scenario::ServerKind;
use crate::servers::upload_app::{Counter, FIELD, Mode, PATH, UploadSummary, success_body};
use crate::stats::Spread;

/// The multipart boundary of the client's body.
pub(crate) const BOUNDARY: &str = "strata-bench-upload-5f0c2a9d71e4b83c";
/// One MiB.
const MIB: f64 = 1024.0 * 1024.0;
/// The bytes a file is made of, repeated: one MiB.
const BLOCK: usize = 1024 * 1024;
/// The largest file, in MiB: 1 GiB (the servers' file limit is 1 GiB and 1 MiB).
const MAX_MIB: usize = 1024;

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
    /// The files' sizes in MiB, each measured in turn (1 to [`MAX_MIB`]).
    pub(crate) sizes: Vec<usize>,
    /// The modes measured, each in turn.
    pub(crate) modes: Vec<Mode>,
    /// The servers measured (each in the modes it has a server for).
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
            sizes: vec![32],
            modes: Mode::ALL.to_vec(),
            servers: vec![
                ServerKind::Strata,
                ServerKind::Axum,
                ServerKind::Hyper,
                ServerKind::ExpressZodApi,
            ],
            workers: 1,
            pin: true,
            json: None,
        }
    }
}

/// The usage of `uploads` and `serve upload`.
pub(crate) const USAGE: &str = "\
UPLOADS: a file (32 MiB by default; 1 GiB with --mib 32,1024) in a multipart/form-data body,
uploaded again and again to POST /v1/upload; each server answers the file's size and CRC-32.
  spooled:  the file written to a temporary file as it arrives, then read back from disk:
            Strata (UploadedFile, the default 1 MiB spool threshold), axum (Multipart, each
            chunk written to a tokio file) and express-zod-api (useTempFiles, bench/ezapi)
  streamed: the file counted as it arrives, nothing kept: Strata (StreamedFile), axum
            (Multipart, chunk by chunk) and hyper with multer by hand
Servers `serve upload <server> <mode>` (express-zod-api: node server.mjs upload), one process
per size and mode, pinned to core 0; the client one thread on core 1, the body generated as it
is sent (one MiB of pseudo-random bytes, repeated).
    strata-bench uploads [--quick] [--duration <time>] [--warmup <time>] [--rounds N]
                         [--connections N] [--mib N,...] [--mode spooled,streamed]
                         [--server strata,axum,hyper,ezapi] [--workers N] [--no-pin]
                         [--json <path>]
    strata-bench serve upload <strata|axum|hyper> <spooled|streamed> [--workers N]
    --duration <time>       one measured round of one server (default 3s, quick 1s)
    --warmup <time>         warm-up of each server (default 1s, quick 500ms)
    --rounds <N>            measured rounds per server (default 5, quick 3)
    --connections <N>       connections uploading at once (default 4)
    --mib <N,...>           the files' sizes in MiB, 1 to 1024, each in turn (default 32)
    --mode <modes>          spooled, streamed or both (default both)
    --server <servers>      default strata,axum,hyper,ezapi (each where it has a server;
                            express-zod-api left out with a note when not installed)
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
            "--mib" => options.sizes = sizes(&value()?)?,
            "--mode" | "--modes" => options.modes = list(&value()?)?,
            "--workers" => options.workers = positive(name, &value()?)?,
            "--server" | "--servers" => options.servers = servers(&value()?)?,
            "--json" => options.json = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown uploads argument {other:?}\n\n{USAGE}")),
        }
    }
    Ok(options)
}

/// `32,1024`: each size once, in the order given, 1 to [`MAX_MIB`].
fn sizes(text: &str) -> Result<Vec<usize>, String> {
    let sizes: Vec<usize> = list(text)?;
    if let Some(size) = sizes.iter().find(|&&size| size == 0 || size > MAX_MIB) {
        return Err(format!(
            "--mib: {size} is not 1 to {MAX_MIB} (the servers' file limit is 1 GiB and 1 MiB)"
        ));
    }
    Ok(sizes)
}

/// A comma-separated list: each item once, in the order given; an error when it names none.
fn list<T: std::str::FromStr<Err = impl std::fmt::Display> + PartialEq>(
    text: &str,
) -> Result<Vec<T>, String> {
    let mut items = Vec::new();
    for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let item: T = name.parse().map_err(|e| format!("{name:?}: {e}"))?;
        if !items.contains(&item) {
            items.push(item);
        }
    }
    if items.is_empty() {
        return Err(format!("{text:?} names nothing"));
    }
    Ok(items)
}

/// `strata,axum,hyper,ezapi`: each once, in the order given; only those with an upload server.
fn servers(text: &str) -> Result<Vec<ServerKind>, String> {
    let kinds: Vec<ServerKind> = list(text)?;
    if let Some(kind) = kinds
        .iter()
        .find(|kind| !Mode::ALL.iter().any(|mode| mode.servers().contains(kind)))
    {
        return Err(format!(
            "{kind} has no upload server (strata, axum, hyper, ezapi)"
        ));
    }
    Ok(kinds)
}

/// `bytes` of pseudo-random bytes (xorshift64*, a fixed seed): the same every run.
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

/// What every upload sends and expects back: a file of `blocks` times [`BLOCK`] (the same
/// bytes, repeated) in one file part named [`FIELD`].
pub(crate) struct Upload {
    head: Bytes,
    block: Bytes,
    blocks: usize,
    tail: Bytes,
    pub(crate) file_bytes: u64,
    pub(crate) expected: UploadSummary,
}

impl Upload {
    /// A file of `mib` MiB; an error when the repeated block would hold the boundary's
    /// delimiter (it would end the part early).
    pub(crate) fn new(mib: usize) -> Result<Self, String> {
        let block = file_data(BLOCK);
        let delimiter = format!("\r\n--{BOUNDARY}");
        // Across two blocks too: the file is the block repeated.
        let seam = [&block[..], &block[..delimiter.len()]].concat();
        if seam
            .windows(delimiter.len())
            .any(|w| w == delimiter.as_bytes())
        {
            return Err("the file holds the multipart delimiter".to_owned());
        }
        let mut counter = Counter::default();
        for _ in 0..mib {
            counter.add(&block);
        }
        let head = format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{FIELD}\"; \
             filename=\"upload.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        );
        Ok(Self {
            head: Bytes::from(head),
            block: Bytes::from(block),
            blocks: mib,
            tail: Bytes::from(format!("\r\n--{BOUNDARY}--\r\n")),
            file_bytes: (mib * BLOCK) as u64,
            expected: counter.finish(),
        })
    }

    /// The length of the whole body.
    fn body_bytes(&self) -> u64 {
        (self.head.len() + self.tail.len()) as u64 + self.file_bytes
    }

    /// The body, generated as it is sent.
    fn body(&self) -> FileBody {
        FileBody {
            head: Some(self.head.clone()),
            block: self.block.clone(),
            blocks: self.blocks,
            tail: Some(self.tail.clone()),
            remaining: self.body_bytes(),
        }
    }

    fn request(&self, addr: SocketAddr) -> http::Request<FileBody> {
        let mut request = http::Request::new(self.body());
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

/// An upload's body: the part's head, the block `blocks` times, the closing delimiter; its
/// exact length is known (sent as `Content-Length`).
pub(crate) struct FileBody {
    head: Option<Bytes>,
    block: Bytes,
    blocks: usize,
    tail: Option<Bytes>,
    remaining: u64,
}

impl hyper::body::Body for FileBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let next = if let Some(head) = self.head.take() {
            Some(head)
        } else if self.blocks > 0 {
            self.blocks -= 1;
            Some(self.block.clone())
        } else {
            self.tail.take()
        };
        if let Some(chunk) = &next {
            self.remaining -= chunk.len() as u64;
        }
        Poll::Ready(next.map(|chunk| Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
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

/// One server's rounds and summary, for one size and mode.
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

/// The servers of one file size in one mode.
#[derive(Debug, Clone, Serialize)]
struct CaseResult {
    mode: &'static str,
    file_bytes: u64,
    body_bytes: u64,
    crc32: u32,
    servers: Vec<ServerResult>,
}

#[derive(Debug, Clone, Serialize)]
struct UploadReport {
    command: String,
    machine: Machine,
    /// express-zod-api's version and Node's, when it ran.
    express_zod_api: Option<String>,
    /// Servers left out, with the reason.
    skipped: Vec<String>,
    connections: usize,
    round_seconds: f64,
    warmup_seconds: f64,
    rounds: usize,
    server_workers: usize,
    pinned: bool,
    load_average_before: String,
    load_average_after: String,
    cases: Vec<CaseResult>,
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
    let mut servers = options.servers.clone();
    let (mut express_zod_api, mut skipped) = (None, Vec::new());
    if servers.contains(&ServerKind::ExpressZodApi) && options.modes.contains(&Mode::Spooled) {
        match child::Ezapi::locate() {
            Ok(found) => express_zod_api = Some(found.describe()),
            Err(reason) => {
                eprintln!("uploads: express-zod-api left out: {reason}");
                skipped.push(format!("express-zod-api: {reason}"));
                servers.retain(|&kind| kind != ServerKind::ExpressZodApi);
            }
        }
    }
    let mut cases = Vec::new();
    for &mib in &options.sizes {
        let upload = Rc::new(Upload::new(mib)?);
        for &mode in &options.modes {
            let kinds: Vec<_> = servers
                .iter()
                .copied()
                .filter(|kind| mode.servers().contains(kind))
                .collect();
            if kinds.is_empty() {
                continue;
            }
            eprintln!("uploads: {mib} MiB, {mode}: {}", names(&kinds));
            cases.push(case(&kinds, mode, &upload, options, pinned)?);
        }
    }
    let report = UploadReport {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        express_zod_api,
        skipped,
        connections: options.connections,
        round_seconds: options.duration.as_secs_f64(),
        warmup_seconds: options.warmup.as_secs_f64(),
        rounds: options.rounds,
        server_workers: options.workers,
        pinned,
        load_average_before: load_before,
        load_average_after: load_average(),
        cases,
    };
    print!("{}", markdown(&report));
    if let Some(path) = &options.json {
        crate::report::write_json(path, &report)?;
    }
    Ok(())
}

fn names(kinds: &[ServerKind]) -> String {
    kinds
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One size in one mode: `kinds`' servers started (a process each, for this case alone),
/// measured and stopped.
fn case(
    kinds: &[ServerKind],
    mode: Mode,
    upload: &Rc<Upload>,
    options: &UploadOptions,
    pinned: bool,
) -> Result<CaseResult, String> {
    let mut children: Vec<ChildServer> = Vec::new();
    for &kind in kinds {
        match ChildServer::spawn_upload(kind, mode, options.workers, pinned) {
            Ok(child) => children.push(child),
            Err(e) => {
                children.into_iter().for_each(ChildServer::stop);
                return Err(format!("{kind} ({mode}): {e}"));
            }
        }
    }
    let idle: Vec<_> = children.iter().map(ChildServer::rss_kib).collect();
    let measured = measure(&children, upload, options, pinned);
    let peak: Vec<_> = children.iter().map(ChildServer::peak_rss_kib).collect();
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
    Ok(CaseResult {
        mode: mode.name(),
        file_bytes: upload.file_bytes,
        body_bytes: upload.body_bytes(),
        crc32: upload.expected.crc32,
        servers,
    })
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
    let _ = writeln!(
        out,
        "# strata-bench uploads: files in multipart bodies, spooled to disk and streamed\n\n\
         {} cores ({}), {}; {} connections uploading at once; {} rounds of {} s after {} s of \
         warm-up per server, rotating; a server process per size and mode, {} worker(s){}; \
         load average {} before, {} after",
        report.machine.cores,
        report.machine.cpu,
        report.machine.rustc,
        report.connections,
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
    if let Some(ezapi) = &report.express_zod_api {
        let _ = writeln!(out, "\nComparison: {ezapi} (NODE_ENV=production).");
    }
    for skipped in &report.skipped {
        let _ = writeln!(out, "\nLeft out: {skipped}.");
    }
    let _ = writeln!(
        out,
        "\n| file | mode | server | MiB/s, median (min–max) | ÷ axum, per round | server CPU \
         use | server CPU ms per MiB | RSS idle | peak RSS |\n\
         |---:|---|---|---:|---:|---:|---:|---:|---:|"
    );
    for case in &report.cases {
        #[allow(clippy::cast_precision_loss)]
        let file_mib = case.file_bytes as f64 / MIB;
        for server in &case.servers {
            let _ = writeln!(
                out,
                "| {file_mib:.0} MiB | {} | {} | {} | {} | {:.0} % | {} | {} | {} |",
                case.mode,
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
    }
    let verdicts: Vec<_> = report.cases.iter().filter_map(verdict).collect();
    if !verdicts.is_empty() {
        let _ = writeln!(
            out,
            "\nStrata against axum (goal: ≥ 1.00 × its MiB/s, peak RSS within 16 MiB of its):"
        );
        for line in verdicts {
            let _ = writeln!(out, "- {line}");
        }
    }
    out
}

/// `32 MiB spooled: 1.02 × axum's MiB/s (0.98–1.05), peak RSS +3.1 MiB`, when both ran.
fn verdict(case: &CaseResult) -> Option<String> {
    let find = |kind: ServerKind| case.servers.iter().find(|s| s.server == kind.name());
    let (strata, axum) = (find(ServerKind::Strata)?, find(ServerKind::Axum)?);
    let ratio = strata.over_axum.as_ref()?;
    #[allow(clippy::cast_precision_loss)]
    let memory = match (strata.peak_rss_kib, axum.peak_rss_kib) {
        (Some(own), Some(axum)) => {
            format!("peak RSS {:+.1} MiB", (own as f64 - axum as f64) / 1024.0)
        }
        _ => "peak RSS unknown".to_owned(),
    };
    #[allow(clippy::cast_precision_loss)]
    let file_mib = case.file_bytes as f64 / MIB;
    Some(format!(
        "{file_mib:.0} MiB {}: {:.2} × axum's MiB/s ({:.2}–{:.2}), {memory}",
        case.mode, ratio.median, ratio.min, ratio.max
    ))
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
        assert_eq!((defaults.connections, defaults.rounds), (4, 5));
        assert_eq!(defaults.sizes, [32]);
        assert_eq!(defaults.modes, [Mode::Spooled, Mode::Streamed]);
        assert_eq!(
            defaults.servers,
            [
                ServerKind::Strata,
                ServerKind::Axum,
                ServerKind::Hyper,
                ServerKind::ExpressZodApi
            ]
        );
        assert!(defaults.pin && defaults.json.is_none());
        let options = parse(&args(&[
            "--quick",
            "--connections=2",
            "--mib",
            "32,1024,32",
            "--mode=streamed",
            "--server",
            "axum,strata,axum,ezapi",
            "--no-pin",
            "--duration",
            "500ms",
            "--json",
            "/tmp/u.json",
        ]))
        .unwrap();
        assert_eq!((options.connections, options.rounds), (2, 3));
        assert_eq!(options.sizes, [32, 1024]);
        assert_eq!(options.modes, [Mode::Streamed]);
        assert_eq!(
            options.servers,
            [
                ServerKind::Axum,
                ServerKind::Strata,
                ServerKind::ExpressZodApi
            ]
        );
        assert_eq!(options.duration, Duration::from_millis(500));
        assert!(!options.pin);
        assert_eq!(options.json, Some(PathBuf::from("/tmp/u.json")));
        assert_eq!(parse(&args(&["--mib", "8"])).unwrap().sizes, [8]);
        for bad in [
            &["--mib", "1025"][..],
            &["--mib", "0"],
            &["--mib", "32,x"],
            &["--mib", ","],
            &["--mode", "memory"],
            &["--mode", ""],
            &["--server", "quick-start"],
            &["--server", ","],
            &["--connections"],
            &["--scenario", "hello"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn each_mode_has_its_servers() {
        assert_eq!("spooled".parse(), Ok(Mode::Spooled));
        assert_eq!("streamed".parse(), Ok(Mode::Streamed));
        assert!(Mode::Spooled.servers().contains(&ServerKind::ExpressZodApi));
        assert!(!Mode::Spooled.servers().contains(&ServerKind::Hyper));
        assert!(Mode::Streamed.servers().contains(&ServerKind::Hyper));
        assert!(
            !Mode::Streamed
                .servers()
                .contains(&ServerKind::ExpressZodApi)
        );
        for mode in Mode::ALL {
            assert!(
                mode.servers()
                    .starts_with(&[ServerKind::Strata, ServerKind::Axum])
            );
        }
    }

    /// The body is generated as it is sent: the head, the block again and again, the closing
    /// delimiter; its length is announced, and the file in it has the expected size and CRC.
    #[tokio::test(flavor = "current_thread")]
    async fn the_body_is_one_file_part_of_the_block_repeated() {
        assert_eq!(file_data(1000), file_data(1000));
        assert_ne!(file_data(16)[..8], file_data(16)[8..]);
        let upload = Upload::new(3).unwrap();
        assert_eq!(upload.file_bytes, 3 * 1024 * 1024);
        let body = upload.body();
        assert_eq!(
            hyper::body::Body::size_hint(&body).exact(),
            Some(upload.body_bytes())
        );
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(bytes.len() as u64, upload.body_bytes());
        let head = format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; \
             filename=\"upload.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        );
        let tail = format!("\r\n--{BOUNDARY}--\r\n");
        assert!(bytes.starts_with(head.as_bytes()));
        assert!(bytes.ends_with(tail.as_bytes()));
        let file = &bytes[head.len()..bytes.len() - tail.len()];
        assert_eq!(UploadSummary::of(file), upload.expected);
        assert_eq!(&file[..BLOCK], &file_data(BLOCK)[..]);
        assert_eq!(file[..BLOCK], file[2 * BLOCK..]);
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

    /// Every Rust server answers a small upload (2 MiB: past Strata's 1 MiB spool threshold)
    /// with its size and CRC-32, in both modes, in this process; the spooled servers leave no
    /// temporary file behind.
    #[test]
    fn every_server_counts_an_upload() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            let upload = Rc::new(Upload::new(2).unwrap());
            for mode in Mode::ALL {
                for &kind in mode.servers().iter().filter(|kind| kind.in_process()) {
                    let running = crate::servers::start_upload(kind, mode).await.unwrap();
                    let answer = preflight(running.addr, &upload).await.unwrap();
                    assert!(answer.starts_with("200 "), "{kind} {mode}: {answer}");
                    // Two connections, a short load: each upload's answer is checked.
                    let (uploads, _) = load(running.addr, &upload, 2, Duration::from_millis(50))
                        .await
                        .unwrap();
                    assert!(uploads >= 2, "{kind} {mode}: {uploads}");
                    running.stop().await;
                }
            }
            let prefix = crate::servers::upload_app::axum_temporary_prefix();
            let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
                .unwrap()
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .filter(|name| name.starts_with(&prefix))
                .collect();
            assert!(left.is_empty(), "{left:?}");
            assert!(
                crate::servers::start_upload(ServerKind::ExpressZodApi, Mode::Spooled)
                    .await
                    .is_err()
            );
            assert!(
                crate::servers::start_upload(ServerKind::Hyper, Mode::Spooled)
                    .await
                    .is_err()
            );
        });
    }
}
