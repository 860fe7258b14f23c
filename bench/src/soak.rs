//! `strata-bench soak`: a long run of mixed traffic against one Strata server in a child
//! process (`strata-bench serve soak`), with the child's resident memory sampled as it goes.
//!
//! Keep-alive connections from this process, over loopback, send a fixed mix of requests: a
//! success, a validation failure, an unknown path, a JSON body over the limit, an upload under
//! the file limit and one over it. Every response's status is checked against its kind's. A
//! connection the server closes is replaced: after a response saying `Connection: close`, or,
//! when the server closes a kept-alive connection without saying so, as soon as the next
//! request finds it closed (that request is then sent again on a new connection, once; both
//! kinds of close are counted and reported). Anything else is an error: a wrong status, a
//! failed connect, a connection that fails mid-exchange, no response within
//! [`RESPONSE_TIMEOUT`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::Method;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::ReadHalf;

use crate::args::SoakOptions;
use crate::child::ChildServer;
use crate::load::parse_head;
use crate::model::invalid_order;
use crate::scenario::RequestSpec;
use crate::servers::soak_app::{BODY_LIMIT, FILE_LIMIT, MULTIPART_LIMIT};

/// The longest a request may wait for its response.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// How much RSS may grow from the first sample under load to the last before the run says so
/// (and fails): this share of the first sample ...
const RSS_GROWTH_PERCENT: u64 = 10;
/// ... but at least this much.
const RSS_GROWTH_MIN_KIB: u64 = 2048;

/// The kinds of request in the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// `GET /v1/hello?name=Soak`: 200.
    Hello,
    /// `POST /v1/orders` with three violations: 400.
    Invalid,
    /// `GET` of an unknown path: 404.
    NotFound,
    /// `POST /v1/orders` with a 20 KiB JSON body, over the 16 KiB limit: 413.
    BodyTooLarge,
    /// `POST /v1/upload` with a 16 KiB file, under the 64 KiB limit: 200.
    Upload,
    /// `POST /v1/upload` with an 80 KiB file, over the 64 KiB limit: 413.
    UploadTooLarge,
}

impl Kind {
    /// Every kind, in report order.
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Hello,
        Kind::Invalid,
        Kind::NotFound,
        Kind::BodyTooLarge,
        Kind::Upload,
        Kind::UploadTooLarge,
    ];

    /// The kind's name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Hello => "hello",
            Kind::Invalid => "invalid",
            Kind::NotFound => "not-found",
            Kind::BodyTooLarge => "body-too-large",
            Kind::Upload => "upload",
            Kind::UploadTooLarge => "upload-too-large",
        }
    }

    /// Requests of this kind in every [`MIX_LENGTH`] of the mix.
    pub(crate) fn weight(self) -> usize {
        match self {
            Kind::Hello => 8,
            Kind::Invalid | Kind::NotFound | Kind::Upload => 3,
            Kind::BodyTooLarge => 2,
            Kind::UploadTooLarge => 1,
        }
    }

    /// The status the server must answer.
    pub(crate) fn expected_status(self) -> u16 {
        match self {
            Kind::Hello | Kind::Upload => 200,
            Kind::Invalid => 400,
            Kind::NotFound => 404,
            Kind::BodyTooLarge | Kind::UploadTooLarge => 413,
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The request sent.
    pub(crate) fn request(self) -> RequestSpec {
        let get = |path: &str| RequestSpec {
            method: Method::GET,
            path_and_query: path.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
        };
        let post = |path: &str, content_type: String, body: Vec<u8>| RequestSpec {
            method: Method::POST,
            path_and_query: path.to_owned(),
            headers: vec![("content-type", content_type)],
            body,
        };
        let json = || "application/json".to_owned();
        let upload = |size: u64| {
            let data: Vec<u8> = (0..size)
                .map(|i| b"0123456789abcdef"[(i % 16) as usize])
                .collect();
            let form = strata::upload::MultipartForm::new()
                .text("title", "Soak")
                .file(
                    "file",
                    strata::UploadedFile::new("soak.bin", "application/octet-stream", data),
                );
            post(
                "/v1/upload",
                form.content_type(),
                form.into_bytes().to_vec(),
            )
        };
        match self {
            Kind::Hello => get("/v1/hello?name=Soak"),
            Kind::Invalid => post(
                "/v1/orders",
                json(),
                serde_json::to_vec(&invalid_order()).unwrap_or_default(),
            ),
            Kind::NotFound => get("/v1/nothing/here"),
            Kind::BodyTooLarge => {
                // A well-formed JSON object, 4 KiB over the limit.
                let size = BODY_LIMIT + 4 * 1024;
                let filler = "x".repeat(size - r#"{"note":""}"#.len());
                post(
                    "/v1/orders",
                    json(),
                    format!(r#"{{"note":"{filler}"}}"#).into_bytes(),
                )
            }
            Kind::Upload => upload(FILE_LIMIT / 4),
            Kind::UploadTooLarge => upload(FILE_LIMIT + 16 * 1024),
        }
    }

    /// `POST /v1/orders (20480-byte body)`, for reports.
    fn describe(self) -> String {
        let request = self.request();
        let mut text = format!("{} {}", request.method, request.path_and_query);
        if !request.body.is_empty() {
            let what = match self {
                Kind::Upload | Kind::UploadTooLarge => "multipart",
                _ => "JSON",
            };
            let _ = write!(text, " ({} B {what})", request.body.len());
        }
        text
    }
}

/// Requests in one round of the mix (the sum of the weights).
pub(crate) const MIX_LENGTH: usize = 20;

/// One round of the mix: each kind [`Kind::weight`] times, spread evenly (the `i`-th request
/// of a kind of weight `w` at `(i + ½) / w` of the round).
pub(crate) fn mix() -> Vec<Kind> {
    let mut slots: Vec<(usize, usize, Kind)> = Kind::ALL
        .iter()
        .flat_map(|&kind| (0..kind.weight()).map(move |i| (2 * i + 1, 2 * kind.weight(), kind)))
        .collect();
    slots.sort_by(|a, b| (a.0 * b.1).cmp(&(b.0 * a.1)).then(a.2.cmp(&b.2)));
    slots.into_iter().map(|(_, _, kind)| kind).collect()
}

/// What happened to one kind's requests (shared by the connections).
#[derive(Debug, Default)]
struct KindTally {
    /// Requests sent (each once, however many connections it took).
    requests: AtomicU64,
    /// Answered with the expected status.
    ok: AtomicU64,
    /// Answered with another status.
    wrong_status: AtomicU64,
    /// No response: connect, write or read failed, or it timed out.
    transport_errors: AtomicU64,
    /// The server closed the connection after this kind's response, saying so.
    announced_closes: AtomicU64,
    /// The server closed the connection after this kind's response without saying so; the next
    /// request found it closed.
    silent_closes: AtomicU64,
}

/// Counters of the whole run.
#[derive(Debug, Default)]
struct Tally {
    kinds: [KindTally; 6],
    /// Sum of requests over the kinds (for the samples).
    requests: AtomicU64,
    /// Sum of wrong statuses and transport errors over the kinds.
    errors: AtomicU64,
    /// Connections opened, the first of each connection task included.
    connects: AtomicU64,
    /// Each problem's description, with how often it happened.
    problems: Mutex<BTreeMap<String, u64>>,
}

impl Tally {
    fn problem(&self, kind: Kind, what: &str) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut problems = self
            .problems
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *problems
            .entry(format!("{}: {what}", kind.describe()))
            .or_default() += 1;
    }
}

/// One response, read whole.
#[derive(Debug)]
struct Response {
    status: u16,
    /// It said `Connection: close`.
    close: bool,
    /// The body, when asked for.
    body: Vec<u8>,
}

/// Whether a response head says `Connection: close`.
fn says_close(head: &[u8]) -> bool {
    String::from_utf8_lossy(head)
        .split("\r\n")
        .skip(1)
        .any(|line| {
            line.split_once(':').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("connection")
                    && value
                        .split(',')
                        .any(|token| token.trim().eq_ignore_ascii_case("close"))
            })
        })
}

/// How an exchange failed.
#[derive(Debug)]
enum Failure {
    /// The connection was closed (EOF or reset) before a byte of the response arrived.
    ClosedBeforeResponse(io::Error),
    /// Any other failure.
    Other(String),
}

/// Reads one response, leaving any extra bytes in `buf`.
async fn read_response(
    reader: &mut ReadHalf<'_>,
    buf: &mut Vec<u8>,
    keep_body: bool,
) -> Result<Response, Failure> {
    let mut received = !buf.is_empty();
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let (status, length) =
                parse_head(&buf[..end]).map_err(|e| Failure::Other(format!("response: {e}")))?;
            let close = says_close(&buf[..end]);
            let total = end + 4 + length;
            while buf.len() < total {
                buf.reserve(total - buf.len());
                match reader.read_buf(buf).await {
                    Ok(0) => {
                        return Err(Failure::Other(
                            "the server closed the connection mid-response".to_owned(),
                        ));
                    }
                    Ok(_) => {}
                    Err(e) => return Err(Failure::Other(format!("reading the response: {e}"))),
                }
            }
            let body = if keep_body {
                buf[end + 4..total].to_vec()
            } else {
                Vec::new()
            };
            buf.drain(..total);
            return Ok(Response {
                status,
                close,
                body,
            });
        }
        buf.reserve(8192);
        match reader.read_buf(buf).await {
            Ok(0) if !received => {
                return Err(Failure::ClosedBeforeResponse(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "closed",
                )));
            }
            Ok(0) => {
                return Err(Failure::Other(
                    "the server closed the connection mid-response".to_owned(),
                ));
            }
            Ok(_) => received = true,
            Err(e) if !received => return Err(Failure::ClosedBeforeResponse(e)),
            Err(e) => return Err(Failure::Other(format!("reading the response: {e}"))),
        }
    }
}

/// A connection and the bytes read past the last response.
struct Connection {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Responses read on it.
    responses: u64,
}

impl Connection {
    async fn open(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: Vec::with_capacity(16 * 1024),
            responses: 0,
        })
    }

    /// Sends `request` and reads its response, reading while still writing: a server may answer
    /// before it has read the whole request (a 413) and stop reading. The second value is
    /// whether the connection can carry another request.
    async fn exchange(
        &mut self,
        request: &[u8],
        keep_body: bool,
    ) -> Result<(Response, bool), Failure> {
        let (mut reader, mut writer) = self.stream.split();
        let write = writer.write_all(request);
        let read = read_response(&mut reader, &mut self.buf, keep_body);
        tokio::pin!(write, read);
        let mut written = None;
        let response = tokio::time::timeout(RESPONSE_TIMEOUT, async {
            loop {
                tokio::select! {
                    result = &mut write, if written.is_none() => written = Some(result),
                    result = &mut read => break result,
                }
            }
        })
        .await
        .map_err(|_| {
            Failure::Other(format!(
                "no response within {} s",
                RESPONSE_TIMEOUT.as_secs()
            ))
        })?;
        match (response, written) {
            (Ok(response), written) => {
                self.responses += 1;
                // A request not sent whole (or not at all) leaves the connection unusable.
                let reusable = !response.close && matches!(written, Some(Ok(())));
                Ok((response, reusable))
            }
            // The read's error says more than the write's (a reset, usually).
            (Err(Failure::ClosedBeforeResponse(e)), _) => Err(Failure::ClosedBeforeResponse(e)),
            (Err(Failure::Other(e)), Some(Err(write))) => {
                Err(Failure::Other(format!("{e} (writing: {write})")))
            }
            (Err(failure), _) => Err(failure),
        }
    }
}

/// One connection task: requests of the mix from `offset` on, until `deadline`.
async fn drive(
    addr: SocketAddr,
    requests: Arc<[Vec<u8>]>,
    mix: Arc<[Kind]>,
    offset: usize,
    deadline: Instant,
    tally: Arc<Tally>,
) {
    let mut connection: Option<Connection> = None;
    // The kind of the last response on `connection`.
    let mut previous: Option<Kind> = None;
    let mut next = offset;
    while Instant::now() < deadline {
        let kind = mix[next % mix.len()];
        next += 1;
        let counters = &tally.kinds[kind.index()];
        counters.requests.fetch_add(1, Ordering::Relaxed);
        tally.requests.fetch_add(1, Ordering::Relaxed);
        let request = &requests[kind.index()];
        let mut retried = false;
        let outcome = loop {
            let fresh = connection.is_none();
            if fresh {
                tally.connects.fetch_add(1, Ordering::Relaxed);
                match Connection::open(addr).await {
                    Ok(opened) => connection = Some(opened),
                    Err(e) => break Err(format!("connecting: {e}")),
                }
            }
            let Some(open) = connection.as_mut() else {
                break Err("no connection".to_owned());
            };
            match open.exchange(request, false).await {
                Ok((response, reusable)) => {
                    if response.close {
                        counters.announced_closes.fetch_add(1, Ordering::Relaxed);
                    }
                    if !reusable {
                        connection = None;
                    }
                    break Ok(response.status);
                }
                // A kept-alive connection the server closed since its last response: count the
                // close against that response's kind, send again on a new connection, once.
                Err(Failure::ClosedBeforeResponse(_)) if !fresh && !retried => {
                    if let Some(previous) = previous {
                        tally.kinds[previous.index()]
                            .silent_closes
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    connection = None;
                    retried = true;
                }
                Err(Failure::ClosedBeforeResponse(e)) => {
                    connection = None;
                    let age = if fresh { "a new" } else { "a reopened" };
                    break Err(format!("{age} connection closed before any response ({e})"));
                }
                Err(Failure::Other(e)) => {
                    let responses = open.responses;
                    connection = None;
                    break Err(format!(
                        "{e} (after {responses} responses on the connection)"
                    ));
                }
            }
        };
        match outcome {
            Ok(status) if status == kind.expected_status() => {
                counters.ok.fetch_add(1, Ordering::Relaxed);
                previous = Some(kind);
            }
            Ok(status) => {
                counters.wrong_status.fetch_add(1, Ordering::Relaxed);
                tally.problem(
                    kind,
                    &format!("answered {status}, expected {}", kind.expected_status()),
                );
                previous = Some(kind);
            }
            Err(message) => {
                counters.transport_errors.fetch_add(1, Ordering::Relaxed);
                tally.problem(kind, &message);
                previous = None;
                // Do not spin on a server that refuses connections.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// One RSS sample.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Sample {
    /// Since the load started.
    pub(crate) seconds: f64,
    /// Requests sent so far.
    pub(crate) requests: u64,
    /// Errors so far.
    pub(crate) errors: u64,
    /// The server's `VmRSS`.
    pub(crate) rss_kib: Option<u64>,
}

/// One kind's figures.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct KindSummary {
    pub(crate) kind: &'static str,
    pub(crate) request: String,
    pub(crate) expected_status: u16,
    pub(crate) weight: usize,
    pub(crate) requests: u64,
    pub(crate) ok: u64,
    pub(crate) wrong_status: u64,
    pub(crate) transport_errors: u64,
    /// Connections the server closed after this kind's response with `Connection: close`.
    pub(crate) announced_closes: u64,
    /// Connections the server closed after this kind's response without saying so.
    pub(crate) silent_closes: u64,
}

/// The whole run's figures (`--json`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SoakSummary {
    pub(crate) command: String,
    pub(crate) duration_seconds: f64,
    pub(crate) connections: usize,
    pub(crate) sample_seconds: f64,
    pub(crate) server_workers: usize,
    pub(crate) body_limit: usize,
    pub(crate) file_limit: u64,
    pub(crate) multipart_limit: u64,
    pub(crate) kinds: Vec<KindSummary>,
    pub(crate) requests: u64,
    pub(crate) errors: u64,
    /// Each error's description and count.
    pub(crate) problems: BTreeMap<String, u64>,
    pub(crate) connects: u64,
    pub(crate) server_cpu_seconds: Option<f64>,
    /// RSS before any load.
    pub(crate) rss_idle_kib: Option<u64>,
    /// The first sample under load.
    pub(crate) rss_first_kib: Option<u64>,
    /// The sample at the end of the load.
    pub(crate) rss_last_kib: Option<u64>,
    pub(crate) rss_max_kib: Option<u64>,
    /// `VmHWM` at the end.
    pub(crate) rss_peak_kib: Option<u64>,
    pub(crate) rss_growth_kib: Option<i64>,
    pub(crate) rss_growth_limit_kib: Option<u64>,
    pub(crate) rss_grew: bool,
    pub(crate) samples: Vec<Sample>,
}

/// How much growth from `first` the run accepts.
pub(crate) fn growth_limit_kib(first: u64) -> u64 {
    (first * RSS_GROWTH_PERCENT / 100).max(RSS_GROWTH_MIN_KIB)
}

/// Runs the soak: starts the server, drives it, prints the samples and the summary.
pub(crate) fn run(options: &SoakOptions) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.client_threads)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let child = ChildServer::spawn_soak(options.workers, false)?;
    let outcome = runtime.block_on(soak(&child, options));
    let peak = child.peak_rss_kib();
    child.stop();
    let mut summary = outcome?;
    summary.rss_peak_kib = peak;
    print!("{}", summary.text());
    if let Some(path) = &options.json {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let json = serde_json::to_vec_pretty(&summary).map_err(|e| e.to_string())?;
        std::fs::write(path, json).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("summary written to {}", path.display());
    }
    match (summary.errors, summary.rss_grew) {
        (0, false) => Ok(()),
        (0, true) => Err("RSS grew past its limit".to_owned()),
        (errors, _) => Err(format!("{errors} errors")),
    }
}

/// Sends each kind once, on a connection of its own, and checks its status.
async fn check_each_kind(child: &ChildServer, requests: &[Vec<u8>]) -> Result<(), String> {
    for kind in Kind::ALL {
        let mut connection = Connection::open(child.addr)
            .await
            .map_err(|e| format!("connecting to {}: {e}", child.addr))?;
        let (response, _) = connection
            .exchange(&requests[kind.index()], true)
            .await
            .map_err(|failure| format!("{}: {failure:?}", kind.describe()))?;
        let body = String::from_utf8_lossy(&response.body);
        if response.status != kind.expected_status() {
            return Err(format!(
                "{}: answered {} {body}, expected {}",
                kind.describe(),
                response.status,
                kind.expected_status()
            ));
        }
        eprintln!(
            "soak: {} → {}{} {}",
            kind.describe(),
            response.status,
            if response.close { " (closes)" } else { "" },
            cut(&body, 120)
        );
    }
    Ok(())
}

/// Checks every kind once, then the load and the samples.
async fn soak(child: &ChildServer, options: &SoakOptions) -> Result<SoakSummary, String> {
    let requests: Arc<[Vec<u8>]> = Kind::ALL
        .iter()
        .map(|kind| kind.request().to_http1())
        .collect();
    eprintln!(
        "soak: Strata (production, body limit {BODY_LIMIT} B, files up to {FILE_LIMIT} B, \
         multipart up to {MULTIPART_LIMIT} B) pid {} on {}",
        child.pid(),
        child.addr
    );
    check_each_kind(child, &requests).await?;

    let tally = Arc::new(Tally::default());
    let mix: Arc<[Kind]> = mix().into();
    let cpu_before = child.cpu_time();
    let idle = child.rss_kib();
    let start = Instant::now();
    let deadline = start + options.duration;
    let tasks: Vec<_> = (0..options.connections)
        .map(|i| {
            tokio::spawn(drive(
                child.addr,
                Arc::clone(&requests),
                Arc::clone(&mix),
                // Connections start at different points of the mix.
                i * 7 % mix.len(),
                deadline,
                Arc::clone(&tally),
            ))
        })
        .collect();

    println!(
        "soak: {} connections for {} s, RSS every {} s (idle before load: {} KiB)",
        options.connections,
        options.duration.as_secs_f64(),
        options.sample.as_secs_f64(),
        idle.map_or_else(|| "?".to_owned(), |kib| kib.to_string()),
    );
    println!();
    println!("| time (s) | requests | errors | RSS (KiB) | req/s |");
    println!("|---:|---:|---:|---:|---:|");
    let mut samples = Vec::new();
    let mut last = (start, 0);
    let take = |at: Instant, last: &mut (Instant, u64), samples: &mut Vec<Sample>| {
        let sample = Sample {
            seconds: at.duration_since(start).as_secs_f64(),
            requests: tally.requests.load(Ordering::Relaxed),
            errors: tally.errors.load(Ordering::Relaxed),
            rss_kib: child.rss_kib(),
        };
        #[allow(clippy::cast_precision_loss)]
        let rate =
            (sample.requests - last.1) as f64 / at.duration_since(last.0).as_secs_f64().max(1e-9);
        *last = (at, sample.requests);
        println!(
            "| {:.0} | {} | {} | {} | {rate:.0} |",
            sample.seconds,
            sample.requests,
            sample.errors,
            sample
                .rss_kib
                .map_or_else(|| "?".to_owned(), |kib| kib.to_string()),
        );
        let _ = std::io::stdout().flush();
        samples.push(sample);
    };
    let mut next = start + options.sample;
    while next < deadline {
        tokio::time::sleep_until(next.into()).await;
        take(Instant::now(), &mut last, &mut samples);
        next += options.sample;
    }
    for task in tasks {
        task.await
            .map_err(|e| format!("a connection task failed: {e}"))?;
    }
    take(Instant::now(), &mut last, &mut samples);
    let server_cpu =
        cpu_before.and_then(|before| Some(child.cpu_time()?.saturating_sub(before).as_secs_f64()));
    Ok(summarize(
        options,
        &tally,
        idle,
        samples,
        server_cpu,
        std::env::args().collect::<Vec<_>>().join(" "),
    ))
}

fn summarize(
    options: &SoakOptions,
    tally: &Tally,
    idle: Option<u64>,
    samples: Vec<Sample>,
    server_cpu_seconds: Option<f64>,
    command: String,
) -> SoakSummary {
    let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    let kinds: Vec<KindSummary> = Kind::ALL
        .iter()
        .zip(&tally.kinds)
        .map(|(&kind, counters)| KindSummary {
            kind: kind.name(),
            request: kind.describe(),
            expected_status: kind.expected_status(),
            weight: kind.weight(),
            requests: load(&counters.requests),
            ok: load(&counters.ok),
            wrong_status: load(&counters.wrong_status),
            transport_errors: load(&counters.transport_errors),
            announced_closes: load(&counters.announced_closes),
            silent_closes: load(&counters.silent_closes),
        })
        .collect();
    let first = samples.first().and_then(|s| s.rss_kib);
    let last = samples.last().and_then(|s| s.rss_kib);
    let growth = first.zip(last).map(|(first, last)| {
        i64::try_from(last).unwrap_or(i64::MAX) - i64::try_from(first).unwrap_or(i64::MAX)
    });
    let limit = first.map(growth_limit_kib);
    SoakSummary {
        command,
        duration_seconds: options.duration.as_secs_f64(),
        connections: options.connections,
        sample_seconds: options.sample.as_secs_f64(),
        server_workers: options.workers,
        body_limit: BODY_LIMIT,
        file_limit: FILE_LIMIT,
        multipart_limit: MULTIPART_LIMIT,
        requests: kinds.iter().map(|k| k.requests).sum(),
        errors: load(&tally.errors),
        kinds,
        problems: tally
            .problems
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone(),
        connects: load(&tally.connects),
        server_cpu_seconds,
        rss_idle_kib: idle,
        rss_first_kib: first,
        rss_last_kib: last,
        rss_max_kib: samples.iter().filter_map(|s| s.rss_kib).max(),
        rss_peak_kib: None,
        rss_growth_kib: growth,
        rss_grew: growth
            .zip(limit)
            .is_some_and(|(growth, limit)| growth > i64::try_from(limit).unwrap_or(i64::MAX)),
        rss_growth_limit_kib: limit,
        samples,
    }
}

impl SoakSummary {
    /// The summary as Markdown.
    pub(crate) fn text(&self) -> String {
        let kib = |value: Option<u64>| value.map_or_else(|| "?".to_owned(), |v| v.to_string());
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\n| kind | request | expected | share | requests | wrong status | transport errors | closes announced | closes silent |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
        for kind in &self.kinds {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {}/{MIX_LENGTH} | {} | {} | {} | {} | {} |",
                kind.kind,
                kind.request,
                kind.expected_status,
                kind.weight,
                kind.requests,
                kind.wrong_status,
                kind.transport_errors,
                kind.announced_closes,
                kind.silent_closes,
            );
        }
        let _ = writeln!(
            out,
            "| **total** | | | | {} | {} | {} | {} | {} |",
            self.requests,
            self.kinds.iter().map(|k| k.wrong_status).sum::<u64>(),
            self.kinds.iter().map(|k| k.transport_errors).sum::<u64>(),
            self.kinds.iter().map(|k| k.announced_closes).sum::<u64>(),
            self.kinds.iter().map(|k| k.silent_closes).sum::<u64>(),
        );
        let seconds = self
            .samples
            .last()
            .map_or(self.duration_seconds, |s| s.seconds);
        #[allow(clippy::cast_precision_loss)]
        let rate = self.requests as f64 / seconds.max(1e-9);
        let _ = writeln!(
            out,
            "\nrequests: {} in {seconds:.1} s ({rate:.0} req/s) over {} connections ({} opened)",
            self.requests, self.connections, self.connects
        );
        if let Some(cpu) = self.server_cpu_seconds {
            #[allow(clippy::cast_precision_loss)]
            let per_request = cpu * 1e6 / (self.requests.max(1) as f64);
            let _ = writeln!(
                out,
                "server CPU: {cpu:.1} s ({per_request:.1} µs per request)"
            );
        }
        let _ = writeln!(out, "errors: {}", self.errors);
        for (problem, count) in &self.problems {
            let _ = writeln!(out, "    {count} × {problem}");
        }
        let _ = writeln!(
            out,
            "RSS (KiB): idle {}, first {} (at {:.0} s), last {} (at {:.0} s), max {}, peak (VmHWM) {}; {} samples",
            kib(self.rss_idle_kib),
            kib(self.rss_first_kib),
            self.samples.first().map_or(0.0, |s| s.seconds),
            kib(self.rss_last_kib),
            self.samples.last().map_or(0.0, |s| s.seconds),
            kib(self.rss_max_kib),
            kib(self.rss_peak_kib),
            self.samples.len(),
        );
        let _ = writeln!(
            out,
            "RSS growth (last − first): {} KiB, limit {} KiB ({RSS_GROWTH_PERCENT} % of first, at least {RSS_GROWTH_MIN_KIB} KiB): {}",
            self.rss_growth_kib
                .map_or_else(|| "?".to_owned(), |g| format!("{g:+}")),
            kib(self.rss_growth_limit_kib),
            if self.rss_grew { "GREW" } else { "flat" },
        );
        let verdict = if self.errors == 0 && !self.rss_grew {
            "PASS"
        } else {
            "FAIL"
        };
        let _ = writeln!(out, "soak: {verdict}");
        out
    }
}

/// At most `max` characters of `text`.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_has_each_kind_its_weight_spread_out() {
        let mix = mix();
        assert_eq!(mix.len(), MIX_LENGTH);
        assert_eq!(
            Kind::ALL.iter().map(|k| k.weight()).sum::<usize>(),
            MIX_LENGTH
        );
        for kind in Kind::ALL {
            let count = mix.iter().filter(|&&k| k == kind).count();
            assert_eq!(count, kind.weight(), "{kind:?} in {mix:?}");
        }
        // Hello, the heaviest, never comes three times in a row, even across rounds.
        let twice: Vec<Kind> = mix.iter().chain(&mix).copied().collect();
        assert!(
            twice
                .windows(3)
                .all(|w| w.iter().any(|&k| k != Kind::Hello)),
            "{mix:?}"
        );
    }

    #[test]
    fn requests_are_what_their_kinds_say() {
        let length = |kind: Kind| kind.request().body.len();
        assert!(length(Kind::BodyTooLarge) > BODY_LIMIT);
        assert!(length(Kind::Invalid) < BODY_LIMIT);
        // The uploads stay under the multipart limit, so only the file limit can refuse them.
        let upload = |kind: Kind| u64::try_from(length(kind)).unwrap_or(u64::MAX);
        assert!(upload(Kind::Upload) < FILE_LIMIT);
        assert!(upload(Kind::UploadTooLarge) > FILE_LIMIT + 1024);
        assert!(upload(Kind::UploadTooLarge) < MULTIPART_LIMIT);
        let body = Kind::BodyTooLarge.request().body;
        assert!(serde_json::from_slice::<serde_json::Value>(&body).is_ok());
        let head = String::from_utf8_lossy(&Kind::Upload.request().to_http1()).into_owned();
        assert!(
            head.contains("content-type: multipart/form-data; boundary="),
            "{head}"
        );
    }

    #[test]
    fn connection_close_is_read_from_the_head() {
        assert!(says_close(
            b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 2\r\nConnection: close"
        ));
        assert!(says_close(
            b"HTTP/1.1 200 OK\r\nconnection: keep-alive, Close"
        ));
        assert!(!says_close(b"HTTP/1.1 200 OK\r\ncontent-length: 2"));
        assert!(!says_close(b"HTTP/1.1 200 OK\r\nx-connection: close"));
    }

    /// A server that answers every request 200 and then closes the connection, saying so or
    /// not; returns its address.
    async fn closing_server(announce: bool) -> io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        if stream.read_buf(&mut head).await.unwrap_or(0) == 0 {
                            return;
                        }
                    }
                    let close = if announce {
                        "connection: close\r\n"
                    } else {
                        ""
                    };
                    let response = format!("HTTP/1.1 200 OK\r\n{close}content-length: 2\r\n\r\nok");
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        Ok(addr)
    }

    async fn drive_hellos(addr: SocketAddr) -> Tally {
        let requests: Arc<[Vec<u8>]> = Kind::ALL
            .iter()
            .map(|_| Kind::Hello.request().to_http1())
            .collect();
        let tally = Arc::new(Tally::default());
        let deadline = Instant::now() + Duration::from_millis(300);
        let tasks: Vec<_> = (0..2)
            .map(|i| {
                tokio::spawn(drive(
                    addr,
                    Arc::clone(&requests),
                    vec![Kind::Hello].into(),
                    i,
                    deadline,
                    Arc::clone(&tally),
                ))
            })
            .collect();
        for task in tasks {
            assert!(task.await.is_ok());
        }
        Arc::try_unwrap(tally).unwrap_or_default()
    }

    #[tokio::test]
    async fn closed_connections_are_replaced_and_counted() {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        for announce in [true, false] {
            let addr = closing_server(announce).await;
            let tally = drive_hellos(addr.unwrap_or_else(|e| panic!("{e}"))).await;
            let hello = &tally.kinds[Kind::Hello.index()];
            let requests = load(&hello.requests);
            assert!(requests > 2, "{tally:?}");
            assert_eq!(load(&tally.errors), 0, "{tally:?}");
            assert_eq!(load(&hello.ok), requests);
            // Every request but the first of each task needed a new connection.
            assert_eq!(load(&tally.connects), requests, "{tally:?}");
            let (announced, silent) = (load(&hello.announced_closes), load(&hello.silent_closes));
            if announce {
                assert_eq!((announced, silent), (requests, 0), "{tally:?}");
            } else {
                assert_eq!((announced, silent), (0, requests - 2), "{tally:?}");
            }
        }
    }

    #[test]
    fn growth_limit() {
        assert_eq!(growth_limit_kib(100_000), 10_000);
        assert_eq!(growth_limit_kib(5_000), RSS_GROWTH_MIN_KIB);
    }
}
