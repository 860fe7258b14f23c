//! `strata-bench fanout`: server-sent events fanned out to many subscribers (1,000 by
//! default): Strata's event stream relaying a topic against axum's `Sse` over a
//! `tokio::sync::broadcast` channel (`servers/fanout_app.rs`), each server publishing at full
//! speed while anyone listens.
//!
//! The client: this process, one current-thread runtime pinned to core 1, opens the
//! subscribers' connections (`GET /v1/quotes`, HTTP/1.1 by hand), decodes the chunked bodies and
//! counts the events that carry a `data:` line ([`SseCounter`], which reads the `id:` too, so
//! that events skipped by a subscriber that fell behind are counted as missed).
//!
//! Per round and server: a new server process (`strata-bench serve fanout <server>`, one
//! worker, pinned to core 0); its RSS idle; every subscriber connected and its first event
//! received; a warm-up; then the events delivered over the round's length, the server's and the
//! client's CPU use over it, and the server's RSS at its end (subscribers connected, events
//! flowing). Memory per subscriber: that RSS less the idle RSS, over the subscribers. The
//! servers take turns, in an order that rotates every round. Pre-flight: one subscriber of each
//! server receives the same events (name, id `<instance>-1-<n>`, data with `seq` = n), the data
//! equal but for `seq`.

use std::cell::Cell;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::args::{parse_duration, positive, split_flag};
use crate::child::{self, ChildServer};
use crate::report::Machine;
use crate::scenario::ServerKind;
use crate::servers::fanout_app::PATH;
use crate::stats::Spread;

/// Options of `strata-bench fanout`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FanoutOptions {
    /// Length of one measured round of one server.
    pub(crate) duration: Duration,
    /// Time between the last subscriber's first event and the round.
    pub(crate) warmup: Duration,
    /// Measured rounds per server.
    pub(crate) rounds: usize,
    /// Subscribers connected at once.
    pub(crate) subscribers: usize,
    /// The servers measured.
    pub(crate) servers: Vec<ServerKind>,
    /// Pin the servers and this process to different cores (with `taskset`).
    pub(crate) pin: bool,
    /// Where to write the results as JSON, if anywhere.
    pub(crate) json: Option<PathBuf>,
}

impl FanoutOptions {
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
            subscribers: 1000,
            servers: vec![ServerKind::Strata, ServerKind::Axum],
            pin: true,
            json: None,
        }
    }
}

/// The usage of `fanout` and `serve fanout`.
pub(crate) const USAGE: &str = "\
FANOUT: server-sent events to many subscribers: Strata (an event stream relaying a Topic of a
MemoryBroadcaster) against axum (Sse over a tokio broadcast channel), each publishing the same
small JSON event at full speed while anyone listens. A new server per round (`serve fanout
<server>`, pinned to core 0, one worker); the subscribers on one thread on core 1. Events
delivered per second, missed events (a subscriber behind the window skips), server RSS idle and
with every subscriber, memory per subscriber.
    strata-bench fanout [--quick] [--duration <time>] [--warmup <time>] [--rounds N]
                        [--subscribers N] [--server strata,axum] [--no-pin] [--json <path>]
    strata-bench serve fanout <strata|axum> [--workers N]
    --duration <time>       one measured round of one server (default 3s, quick 1s)
    --warmup <time>         after every subscriber got its first event (default 1s, quick 500ms)
    --rounds <N>            measured rounds per server (default 5, quick 3)
    --subscribers <N>       subscribers connected at once (default 1000; fewer, with a message,
                            when the open-file limit is too low)
";

/// `fanout`'s options (after `fanout`).
pub(crate) fn parse(args: &[String]) -> Result<FanoutOptions, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut options = FanoutOptions::defaults(quick);
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
            "--subscribers" => options.subscribers = positive(name, &value()?)?,
            "--server" | "--servers" => {
                let mut kinds = Vec::new();
                for name in value()?.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let kind: ServerKind = name.parse()?;
                    if !matches!(kind, ServerKind::Strata | ServerKind::Axum) {
                        return Err(format!("{kind} has no fan-out server (strata, axum)"));
                    }
                    if !kinds.contains(&kind) {
                        kinds.push(kind);
                    }
                }
                if kinds.is_empty() {
                    return Err("--server names no server".to_owned());
                }
                options.servers = kinds;
            }
            "--json" => options.json = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown fanout argument {other:?}\n\n{USAGE}")),
        }
    }
    Ok(options)
}

/// The soft open-file limit (`Max open files` of a `/proc/<pid>/limits` text).
pub(crate) fn open_file_limit(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))?;
    let soft = line["Max open files".len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(u64::MAX);
    }
    soft.parse().ok()
}

/// Decodes an HTTP/1.1 chunked body as it arrives, in pieces cut anywhere.
#[derive(Debug, Default)]
pub(crate) struct Chunked {
    state: ChunkState,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Reading a size line: the size so far, and whether an extension (`;…`) began.
    #[default]
    SizeStart,
    Size(u64, bool),
    /// The size line's `\n`.
    SizeEnd(u64),
    Data(u64),
    /// The `\r\n` after a chunk's data.
    DataCr,
    DataLf,
    /// The last chunk (size 0) was read.
    Done,
}

impl Chunked {
    /// Feeds `input`; the data of the chunks goes to `out`. An error on a malformed body.
    pub(crate) fn feed(
        &mut self,
        mut input: &[u8],
        out: &mut impl FnMut(&[u8]),
    ) -> Result<(), String> {
        while !input.is_empty() {
            match self.state {
                ChunkState::Done => return Ok(()),
                ChunkState::SizeStart | ChunkState::Size(..) => {
                    let (mut size, mut extension) = match self.state {
                        ChunkState::Size(size, extension) => (size, extension),
                        _ => (0, false),
                    };
                    let byte = input[0];
                    input = &input[1..];
                    match byte {
                        b'\r' => {
                            self.state = ChunkState::SizeEnd(size);
                            continue;
                        }
                        b'\n' => {
                            self.state = ChunkState::SizeEnd(size);
                            self.end_of_size(size);
                            continue;
                        }
                        _ if extension => {}
                        b';' => extension = true,
                        _ => {
                            let digit = char::from(byte)
                                .to_digit(16)
                                .ok_or_else(|| format!("bad chunk size byte {byte:#04x}"))?;
                            size = size
                                .checked_mul(16)
                                .map(|s| s + u64::from(digit))
                                .ok_or("chunk size overflow")?;
                        }
                    }
                    self.state = ChunkState::Size(size, extension);
                }
                ChunkState::SizeEnd(size) => {
                    if input[0] != b'\n' {
                        return Err("no LF after a chunk size".to_owned());
                    }
                    input = &input[1..];
                    self.end_of_size(size);
                }
                ChunkState::Data(left) => {
                    let take = usize::try_from(left).unwrap_or(usize::MAX).min(input.len());
                    out(&input[..take]);
                    input = &input[take..];
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        ChunkState::DataCr
                    } else {
                        ChunkState::Data(left)
                    };
                }
                ChunkState::DataCr => {
                    if input[0] != b'\r' {
                        return Err("no CRLF after a chunk".to_owned());
                    }
                    input = &input[1..];
                    self.state = ChunkState::DataLf;
                }
                ChunkState::DataLf => {
                    if input[0] != b'\n' {
                        return Err("no CRLF after a chunk".to_owned());
                    }
                    input = &input[1..];
                    self.state = ChunkState::SizeStart;
                }
            }
        }
        Ok(())
    }

    fn end_of_size(&mut self, size: u64) {
        self.state = if size == 0 {
            ChunkState::Done
        } else {
            ChunkState::Data(size)
        };
    }

    /// Whether the last chunk was read.
    pub(crate) fn done(&self) -> bool {
        self.state == ChunkState::Done
    }
}

/// An event as the pre-flight records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) name: Option<String>,
    pub(crate) id: Option<String>,
    pub(crate) data: Option<String>,
}

/// Counts the events of an event stream fed in pieces cut anywhere: an event counts when a
/// blank line ends it and it had a `data:` line. Its `id:`'s number (after the last `-`) tells
/// the events skipped since the previous one.
#[derive(Debug, Default)]
pub(crate) struct SseCounter {
    /// The current line so far, when a piece ended inside it.
    partial: Vec<u8>,
    event: SseEvent,
    has_data: bool,
    id_number: Option<u64>,
    last_number: Option<u64>,
    /// Events with data.
    pub(crate) events: u64,
    /// Events skipped between two received ones (by their ids).
    pub(crate) missed: u64,
    /// Keep the first this many events whole (the pre-flight).
    pub(crate) record: usize,
    pub(crate) recorded: Vec<SseEvent>,
}

impl SseCounter {
    /// Feeds a piece of the stream.
    pub(crate) fn feed(&mut self, mut input: &[u8]) {
        while let Some(end) = input.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() {
                self.line(&input[..end]);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&input[..end]);
                self.line(&line);
                line.clear();
                self.partial = line;
            }
            input = &input[end + 1..];
        }
        self.partial.extend_from_slice(input);
    }

    fn line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            self.dispatch();
            return;
        }
        let recording = self.recorded.len() < self.record;
        let value = |name: &[u8]| {
            line.strip_prefix(name).map(|rest| {
                let rest = &rest[1..];
                rest.strip_prefix(b" ").unwrap_or(rest)
            })
        };
        if line.starts_with(b"data:") {
            self.has_data = true;
            if recording && let Some(data) = value(b"data") {
                self.event.data = Some(String::from_utf8_lossy(data).into_owned());
            }
        } else if line.starts_with(b"id:") {
            let id = value(b"id").unwrap_or_default();
            let number = id.rsplit(|&b| b == b'-').next().unwrap_or_default();
            self.id_number = std::str::from_utf8(number)
                .ok()
                .and_then(|n| n.parse().ok());
            if recording {
                self.event.id = Some(String::from_utf8_lossy(id).into_owned());
            }
        } else if line.starts_with(b"event:") && recording {
            self.event.name = value(b"event").map(|n| String::from_utf8_lossy(n).into_owned());
        }
    }

    fn dispatch(&mut self) {
        if self.has_data {
            self.events += 1;
            if let Some(number) = self.id_number {
                if let Some(last) = self.last_number
                    && number > last
                {
                    self.missed += number - last - 1;
                }
                self.last_number = Some(number);
            }
            if self.recorded.len() < self.record {
                self.recorded.push(std::mem::take(&mut self.event));
            }
        }
        self.event = SseEvent::default();
        self.has_data = false;
        self.id_number = None;
    }
}

/// What the subscribers have received, together.
#[derive(Debug, Default)]
struct Totals {
    events: Cell<u64>,
    missed: Cell<u64>,
    /// Subscribers that received their first event.
    ready: Cell<usize>,
    /// Subscribers that failed, and the first failure.
    failed: Cell<usize>,
    failure: std::cell::RefCell<Option<String>>,
}

/// Reads a response head from `stream`; the rest of what was read, and whether the body is
/// chunked. An error unless the answer is a 200 `text/event-stream`.
async fn read_head(
    stream: &mut tokio::net::TcpStream,
    buffer: &mut Vec<u8>,
) -> Result<(Vec<u8>, bool), String> {
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed before the head".to_owned());
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
    let rest = buffer[end + 4..].to_vec();
    if !head.starts_with("http/1.1 200") {
        return Err(format!("answered {:?}", head.lines().next().unwrap_or("")));
    }
    if !head.contains("\r\ncontent-type: text/event-stream") {
        return Err(format!("not text/event-stream: {head:?}"));
    }
    Ok((rest, head.contains("\r\ntransfer-encoding: chunked")))
}

/// One subscriber: connects, reads the stream until it ends or the task is aborted, adding
/// what it counts to `totals` as it goes (and its first `record` events to the returned
/// counter, when the stream ends first).
async fn subscriber(
    addr: SocketAddr,
    totals: Rc<Totals>,
    record: usize,
) -> Result<SseCounter, String> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream
        .write_all(
            format!("GET {PATH} HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\n\r\n")
                .as_bytes(),
        )
        .await
        .map_err(|e| format!("send: {e}"))?;
    let mut buffer = Vec::new();
    let (rest, chunked) = read_head(&mut stream, &mut buffer).await?;
    let mut decoder = chunked.then(Chunked::default);
    let mut counter = SseCounter {
        record,
        ..SseCounter::default()
    };
    let mut ready = false;
    let mut piece = rest;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let (events, missed) = (counter.events, counter.missed);
        match &mut decoder {
            Some(decoder) => decoder.feed(&piece, &mut |data| counter.feed(data))?,
            None => counter.feed(&piece),
        }
        totals
            .events
            .set(totals.events.get() + counter.events - events);
        totals
            .missed
            .set(totals.missed.get() + counter.missed - missed);
        if !ready && counter.events > 0 {
            ready = true;
            totals.ready.set(totals.ready.get() + 1);
        }
        if counter.recorded.len() >= record && record > 0 {
            return Ok(counter);
        }
        if decoder.as_ref().is_some_and(Chunked::done) {
            return Ok(counter);
        }
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Ok(counter);
        }
        piece.clear();
        piece.extend_from_slice(&chunk[..n]);
    }
}

/// The first `count` events one subscriber of `addr` receives.
async fn first_events(addr: SocketAddr, count: usize) -> Result<Vec<SseEvent>, String> {
    let totals = Rc::new(Totals::default());
    let counter = tokio::time::timeout(Duration::from_secs(10), subscriber(addr, totals, count))
        .await
        .map_err(|_| format!("no {count} events within 10 s"))??;
    if counter.recorded.len() < count {
        return Err(format!(
            "the stream ended after {} events",
            counter.recorded.len()
        ));
    }
    Ok(counter.recorded)
}

/// Checks one server's first events: each `quote`, its id `<8 hex>-<n>` and its data's `seq`
/// equal to n, n consecutive. Returns the data with `seq` removed, to compare across servers.
pub(crate) fn check_events(events: &[SseEvent]) -> Result<Vec<serde_json::Value>, String> {
    let mut previous = None;
    let mut normalized = Vec::new();
    for event in events {
        if event.name.as_deref() != Some("quote") {
            return Err(format!("an event other than quote: {event:?}"));
        }
        let id = event.id.as_deref().ok_or("an event without an id")?;
        let mut parts = id.splitn(3, '-');
        let (Some(instance), Some("1"), Some(number)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("id {id:?}: not <8 hex digits>-1-<n>"));
        };
        let number: u64 = number.parse().map_err(|_| format!("id {id:?}"))?;
        if instance.len() != 8 || !instance.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("id {id:?}: not <8 hex digits>-1-<n>"));
        }
        let data = event.data.as_deref().ok_or("an event without data")?;
        let mut json: serde_json::Value =
            serde_json::from_str(data).map_err(|e| format!("data {data:?}: {e}"))?;
        let seq = json
            .as_object_mut()
            .and_then(|fields| fields.remove("seq"))
            .and_then(|seq| seq.as_u64());
        if seq != Some(number) {
            return Err(format!("data {data:?}: seq is not the id's {number}"));
        }
        if previous.is_some_and(|previous| number != previous + 1) {
            return Err(format!("id {id:?} does not follow {previous:?}"));
        }
        previous = Some(number);
        // The very bytes both servers are to send.
        let expected = crate::servers::fanout_app::Quote::data(number);
        if data != expected {
            return Err(format!("data {data:?}, expected {expected:?}"));
        }
        normalized.push(json);
    }
    Ok(normalized)
}

/// One round of one server.
#[derive(Debug, Clone, Serialize)]
struct RoundResult {
    subscribers: usize,
    seconds: f64,
    events: u64,
    events_per_second: f64,
    /// Events skipped by subscribers that fell behind, over those received and skipped.
    missed_share: f64,
    cpu_utilization: f64,
    client_cpu_utilization: f64,
    idle_rss_kib: u64,
    rss_kib: u64,
    kib_per_subscriber: f64,
    peak_rss_kib: u64,
}

#[derive(Debug, Clone, Serialize)]
struct ServerResult {
    server: String,
    events_per_second: Spread,
    over_axum: Option<Spread>,
    missed_share: Spread,
    cpu_utilization: Spread,
    client_cpu_utilization: Spread,
    idle_rss_kib: Spread,
    rss_kib: Spread,
    kib_per_subscriber: Spread,
    peak_rss_kib: Spread,
    rounds: Vec<RoundResult>,
}

#[derive(Debug, Clone, Serialize)]
struct FanoutReport {
    command: String,
    machine: Machine,
    subscribers: usize,
    round_seconds: f64,
    warmup_seconds: f64,
    rounds: usize,
    pinned: bool,
    first_events: Vec<String>,
    load_average_before: String,
    load_average_after: String,
    servers: Vec<ServerResult>,
}

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

/// How many subscribers the open-file limit allows (64 descriptors kept for the rest).
fn allowed_subscribers(wanted: usize) -> usize {
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| open_file_limit(&text))
        .unwrap_or(1024);
    let room = usize::try_from(limit.saturating_sub(64)).unwrap_or(usize::MAX);
    if room < wanted {
        eprintln!(
            "fanout: the open-file limit ({limit}) allows {room} subscribers, not {wanted}: \
             {room} are used (raise it with `ulimit -n {}`)",
            wanted + 64
        );
    }
    wanted.min(room).max(1)
}

/// `strata-bench fanout`.
pub(crate) fn run(options: &FanoutOptions) -> Result<(), String> {
    let machine = Machine::probe();
    let load_before = load_average();
    let pinned = options.pin && child::can_pin();
    let subscribers = allowed_subscribers(options.subscribers);
    if pinned {
        child::pin_self(child::CLIENT_CORE)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let local = tokio::task::LocalSet::new();
    let (first, rounds) = local.block_on(&runtime, async {
        let first = preflight(&options.servers, pinned).await?;
        let mut rounds = vec![Vec::new(); options.servers.len()];
        for round in 0..options.rounds {
            let mut line = format!("fanout: round {}/{}:", round + 1, options.rounds);
            for step in 0..options.servers.len() {
                let index = (round + step) % options.servers.len();
                let kind = options.servers[index];
                let result = once(kind, subscribers, options, pinned).await?;
                let _ = write!(
                    line,
                    " {kind} {:.0} events/s ({:.1} % missed, {:.0}% CPU, {:.1} KiB/subscriber)",
                    result.events_per_second,
                    100.0 * result.missed_share,
                    100.0 * result.cpu_utilization,
                    result.kib_per_subscriber
                );
                rounds[index].push(result);
            }
            eprintln!("{line}");
        }
        Ok::<_, String>((first, rounds))
    })?;
    let axum_rounds = options
        .servers
        .iter()
        .position(|k| *k == ServerKind::Axum)
        .map(|i| rounds[i].clone());
    let servers = options
        .servers
        .iter()
        .zip(rounds)
        .map(|(kind, rounds)| {
            let each =
                |f: fn(&RoundResult) -> f64| Spread::of(&rounds.iter().map(f).collect::<Vec<_>>());
            #[allow(clippy::cast_precision_loss)]
            ServerResult {
                server: kind.name().to_owned(),
                events_per_second: each(|r| r.events_per_second),
                over_axum: axum_rounds.as_ref().map(|axum| {
                    Spread::of(
                        &rounds
                            .iter()
                            .zip(axum)
                            .map(|(own, axum)| own.events_per_second / axum.events_per_second)
                            .collect::<Vec<_>>(),
                    )
                }),
                missed_share: each(|r| r.missed_share),
                cpu_utilization: each(|r| r.cpu_utilization),
                client_cpu_utilization: each(|r| r.client_cpu_utilization),
                idle_rss_kib: each(|r| r.idle_rss_kib as f64),
                rss_kib: each(|r| r.rss_kib as f64),
                kib_per_subscriber: each(|r| r.kib_per_subscriber),
                peak_rss_kib: each(|r| r.peak_rss_kib as f64),
                rounds,
            }
        })
        .collect();
    let report = FanoutReport {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        subscribers,
        round_seconds: options.duration.as_secs_f64(),
        warmup_seconds: options.warmup.as_secs_f64(),
        rounds: options.rounds,
        pinned,
        first_events: first,
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

/// One subscriber of each server (a server process of its own) receives three events; they
/// must agree. Returns the first server's, as text.
async fn preflight(kinds: &[ServerKind], pinned: bool) -> Result<Vec<String>, String> {
    let mut agreed: Option<(ServerKind, Vec<serde_json::Value>)> = None;
    let mut shown = Vec::new();
    for &kind in kinds {
        let child = ChildServer::spawn_fanout(kind, pinned)?;
        let events = first_events(child.addr, 3).await;
        child.stop();
        let events = events.map_err(|e| format!("{kind} pre-flight: {e}"))?;
        let normalized = check_events(&events).map_err(|e| format!("{kind} pre-flight: {e}"))?;
        let described: Vec<String> = events
            .iter()
            .map(|e| {
                format!(
                    "event: {} | id: {} | data: {}",
                    e.name.as_deref().unwrap_or("-"),
                    e.id.as_deref().unwrap_or("-"),
                    e.data.as_deref().unwrap_or("-")
                )
            })
            .collect();
        eprintln!("fanout: {kind} pre-flight ok: {}", described.join(" ; "));
        match &agreed {
            None => {
                agreed = Some((kind, normalized));
                shown = described;
            }
            Some((first, theirs)) if *theirs != normalized => {
                return Err(format!(
                    "pre-flight: {kind}'s events differ from {first}'s (but for seq): \
                     {normalized:?} against {theirs:?}"
                ));
            }
            Some(_) => {}
        }
    }
    Ok(shown)
}

/// One round of `kind`: a new server, `subscribers` connected, a warm-up, the measure.
async fn once(
    kind: ServerKind,
    subscribers: usize,
    options: &FanoutOptions,
    pinned: bool,
) -> Result<RoundResult, String> {
    let child = ChildServer::spawn_fanout(kind, pinned)?;
    let measured = measure(&child, subscribers, options).await;
    child.stop();
    measured.map_err(|e| format!("{kind}: {e}"))
}

async fn measure(
    child: &ChildServer,
    subscribers: usize,
    options: &FanoutOptions,
) -> Result<RoundResult, String> {
    let idle_rss_kib = child.rss_kib().ok_or("the server's RSS is unknown")?;
    let totals = Rc::new(Totals::default());
    let tasks: Vec<_> = (0..subscribers)
        .map(|_| {
            let totals = Rc::clone(&totals);
            let addr = child.addr;
            tokio::task::spawn_local(async move {
                if let Err(e) = subscriber(addr, Rc::clone(&totals), 0).await {
                    totals.failed.set(totals.failed.get() + 1);
                    totals.failure.borrow_mut().get_or_insert(e);
                }
            })
        })
        .collect();
    let abort_all = |tasks: &[tokio::task::JoinHandle<()>]| {
        tasks.iter().for_each(tokio::task::JoinHandle::abort);
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while totals.ready.get() < subscribers {
        if totals.failed.get() > 0 || Instant::now() > deadline {
            abort_all(&tasks);
            return Err(format!(
                "{} of {subscribers} subscribers got an event; {} failed{}",
                totals.ready.get(),
                totals.failed.get(),
                totals
                    .failure
                    .borrow()
                    .as_ref()
                    .map(|e| format!(" (first: {e})"))
                    .unwrap_or_default()
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(options.warmup).await;
    let (events, missed) = (totals.events.get(), totals.missed.get());
    let server_cpu = child.cpu_time();
    let client_cpu = child::process_cpu_time("/proc/self");
    let start = Instant::now();
    tokio::time::sleep(options.duration).await;
    let seconds = start.elapsed().as_secs_f64();
    let events = totals.events.get() - events;
    let missed = totals.missed.get() - missed;
    let cpu = |before: Option<Duration>, after: Option<Duration>| {
        Some(after?.saturating_sub(before?).as_secs_f64() / seconds)
    };
    let cpu_utilization =
        cpu(server_cpu, child.cpu_time()).ok_or("the server's CPU time is unknown")?;
    let client_cpu_utilization =
        cpu(client_cpu, child::process_cpu_time("/proc/self")).unwrap_or(f64::NAN);
    let rss_kib = child.rss_kib().ok_or("the server's RSS is unknown")?;
    let peak_rss_kib = child.peak_rss_kib().ok_or("the server's RSS is unknown")?;
    let failed = totals.failed.get();
    abort_all(&tasks);
    // The aborted tasks close their sockets before the server is stopped.
    for task in tasks {
        let _ = task.await;
    }
    if failed > 0 {
        return Err(format!(
            "{failed} subscribers failed: {}",
            totals.failure.borrow().clone().unwrap_or_default()
        ));
    }
    Ok(round_result(
        subscribers,
        seconds,
        events,
        missed,
        (cpu_utilization, client_cpu_utilization),
        (idle_rss_kib, rss_kib, peak_rss_kib),
    ))
}

#[allow(clippy::cast_precision_loss)]
fn round_result(
    subscribers: usize,
    seconds: f64,
    events: u64,
    missed: u64,
    (cpu_utilization, client_cpu_utilization): (f64, f64),
    (idle_rss_kib, rss_kib, peak_rss_kib): (u64, u64, u64),
) -> RoundResult {
    RoundResult {
        subscribers,
        seconds,
        events,
        events_per_second: events as f64 / seconds.max(1e-9),
        missed_share: if events + missed == 0 {
            0.0
        } else {
            missed as f64 / (events + missed) as f64
        },
        cpu_utilization,
        client_cpu_utilization,
        idle_rss_kib,
        rss_kib,
        kib_per_subscriber: (rss_kib as f64 - idle_rss_kib as f64) / subscribers.max(1) as f64,
        peak_rss_kib,
    }
}

fn markdown(report: &FanoutReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# strata-bench fanout: server-sent events to {} subscribers\n\n\
         {} cores ({}), {}; {} rounds of {} s after every subscriber's first event and {} s of \
         warm-up, a new server per round, rotating; server 1 worker{}; load average {} before, \
         {} after\n\nFirst events (pre-flight): {}",
        report.subscribers,
        report.machine.cores,
        report.machine.cpu,
        report.machine.rustc,
        report.rounds,
        report.round_seconds,
        report.warmup_seconds,
        if report.pinned {
            ", pinned to core 0 (the subscribers to core 1)"
        } else {
            ", not pinned"
        },
        report.load_average_before,
        report.load_average_after,
        report.first_events.join(" ; "),
    );
    let _ = writeln!(
        out,
        "\n| server | events/s delivered, median (min–max) | ÷ axum, per round | missed | server \
         CPU | client CPU | RSS idle | RSS with subscribers | KiB per subscriber | peak RSS \
         |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for server in &report.servers {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} % | {:.0} % | {:.0} % | {:.1} MiB | {:.1} MiB | {} | {:.1} MiB |",
            server.server,
            server.events_per_second.show(0),
            server
                .over_axum
                .as_ref()
                .map(|s| s.show(2))
                .unwrap_or_default(),
            100.0 * server.missed_share.median,
            100.0 * server.cpu_utilization.median,
            100.0 * server.client_cpu_utilization.median,
            server.idle_rss_kib.median / 1024.0,
            server.rss_kib.median / 1024.0,
            server.kib_per_subscriber.show(1),
            server.peak_rss_kib.median / 1024.0,
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
        assert_eq!((defaults.subscribers, defaults.rounds), (1000, 5));
        assert_eq!(defaults.servers, [ServerKind::Strata, ServerKind::Axum]);
        let options = parse(&args(&[
            "--quick",
            "--subscribers=50",
            "--server",
            "axum",
            "--no-pin",
            "--json",
            "/tmp/f.json",
        ]))
        .unwrap();
        assert_eq!((options.subscribers, options.rounds), (50, 3));
        assert_eq!(options.servers, [ServerKind::Axum]);
        assert!(!options.pin);
        assert_eq!(options.json, Some(PathBuf::from("/tmp/f.json")));
        for bad in [
            &["--subscribers", "0"][..],
            &["--server", "hyper"],
            &["--server", ""],
            &["--connections", "4"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_open_file_limit_is_read() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max processes             127431               127431               processes\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(open_file_limit(limits), Some(1024));
        assert_eq!(
            open_file_limit(
                "Max open files            unlimited            unlimited            files\n"
            ),
            Some(u64::MAX)
        );
        assert_eq!(open_file_limit("Max processes 1 1 processes\n"), None);
    }

    /// Two events in chunked encoding, fed one byte at a time and in every two pieces.
    #[test]
    fn events_are_counted_across_chunk_and_read_boundaries() {
        let first = "event: quote\nid: 0a1b2c3d-7\ndata: {\"seq\":7}\n\n";
        let second = "event: quote\r\nid: 0a1b2c3d-10\r\ndata: {\"seq\":10}\r\n\r\n";
        // The first event split over two chunks, the second in one with an extension.
        let (a, b) = first.split_at(9);
        let wire = format!(
            "{:x}\r\n{a}\r\n{:X}\r\n{b}\r\n{:x};ext=1\r\n{second}\r\n0\r\n\r\n",
            a.len(),
            b.len(),
            second.len()
        );
        let count = |pieces: &[&[u8]]| {
            let mut decoder = Chunked::default();
            let mut counter = SseCounter {
                record: 5,
                ..SseCounter::default()
            };
            for piece in pieces {
                decoder.feed(piece, &mut |data| counter.feed(data)).unwrap();
            }
            assert!(decoder.done());
            counter
        };
        let bytes: Vec<&[u8]> = wire.as_bytes().chunks(1).collect();
        let counter = count(&bytes);
        assert_eq!((counter.events, counter.missed), (2, 2));
        assert_eq!(
            counter.recorded[1],
            SseEvent {
                name: Some("quote".to_owned()),
                id: Some("0a1b2c3d-10".to_owned()),
                data: Some("{\"seq\":10}".to_owned()),
            }
        );
        for cut in 0..wire.len() {
            let (x, y) = wire.as_bytes().split_at(cut);
            let counter = count(&[x, y]);
            assert_eq!((counter.events, counter.missed), (2, 2), "cut at {cut}");
        }
        // A comment and an event without data are not counted.
        let mut counter = SseCounter::default();
        counter.feed(b": keep-alive\n\nevent: x\n\ndata: 1\n");
        assert_eq!(counter.events, 0);
        counter.feed(b"\n");
        assert_eq!(counter.events, 1);
        let mut decoder = Chunked::default();
        assert!(decoder.feed(b"zz\r\n", &mut |_| {}).is_err());
        let mut decoder = Chunked::default();
        assert!(decoder.feed(b"2\r\nabX", &mut |_| {}).is_err());
    }

    #[test]
    fn first_events_are_checked() {
        let event = |n: u64| SseEvent {
            name: Some("quote".to_owned()),
            id: Some(format!("00ff00ff-1-{n}")),
            data: Some(serde_json::to_string(&crate::servers::fanout_app::Quote::nth(n)).unwrap()),
        };
        let normalized = check_events(&[event(4), event(5)]).unwrap();
        assert_eq!(
            normalized[0],
            serde_json::json!({"symbol": "STRA", "cents": 10_004})
        );
        assert!(check_events(&[event(4), event(6)]).is_err(), "a gap");
        let mut wrong = event(3);
        wrong.id = Some("00ff00ff-1-4".to_owned());
        assert!(check_events(&[wrong]).is_err(), "seq is not the id's");
        let mut wrong = event(3);
        wrong.name = Some("tick".to_owned());
        assert!(check_events(&[wrong]).is_err());
        let mut wrong = event(3);
        wrong.id = Some("x-1-3".to_owned());
        assert!(check_events(&[wrong]).is_err());
        let mut wrong = event(3);
        wrong.id = Some("00ff00ff-3".to_owned());
        assert!(check_events(&[wrong]).is_err(), "no topic");
    }

    #[test]
    fn memory_per_subscriber_is_the_difference_over_the_subscribers() {
        let round = round_result(
            1000,
            2.0,
            500_000,
            500_000,
            (1.0, 0.5),
            (8_000, 28_000, 30_000),
        );
        assert!((round.events_per_second - 250_000.0).abs() < 1e-9);
        assert!((round.missed_share - 0.5).abs() < 1e-9);
        assert!((round.kib_per_subscriber - 20.0).abs() < 1e-9);
    }

    /// A handful of subscribers of each server, in this process: each gets the same events.
    #[test]
    fn a_handful_of_subscribers_receive_the_same_events() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            let mut seen = Vec::new();
            for kind in [ServerKind::Strata, ServerKind::Axum] {
                let running = crate::servers::start_fanout(kind).await.unwrap();
                let totals = Rc::new(Totals::default());
                let tasks: Vec<_> = (0..5)
                    .map(|_| {
                        tokio::task::spawn_local(subscriber(running.addr, Rc::clone(&totals), 4))
                    })
                    .collect();
                let mut firsts = Vec::new();
                for task in tasks {
                    let counter = task.await.unwrap().unwrap();
                    firsts.push(check_events(&counter.recorded).unwrap());
                }
                assert_eq!(totals.ready.get(), 5, "{kind}");
                assert!(totals.events.get() >= 20, "{kind}");
                seen.push(firsts[0].clone());
                running.stop().await;
            }
            assert_eq!(seen[0], seen[1]);
        });
    }
}
