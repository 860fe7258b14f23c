//! `strata-bench middleware`: what each of issue 28's middleware costs `hello`.
//!
//! One Strata server per variant, each in a child process (`strata-bench serve middleware
//! <server>`, pinned to core 0), each serving the bench app's `hello` alone at `/v1/hello`
//! (`servers/middleware_app.rs`): without middleware (`plain`), behind a middleware that does
//! nothing (`noop`: the middleware stage's own cost), behind one that only adds a fixed
//! response header (`one-header`: what the others pay to add theirs), behind the cookie middleware
//! (`cookies`: the request carries three cookies, the handler reads one), behind the cache
//! middleware (`cache`: a policy, the handler sets an `ETag`, the request is unconditional and
//! gets the 200; `cache-304`: the same server, the request's `If-None-Match` matches and gets
//! the 304), behind the rate limiter (`rate-limit`: keyed by the client's address, a quota
//! no run reaches, its `RateLimit` headers on a 429 only, the default; `rate-limit-headers`:
//! the same with `.headers(HeadersOn::EveryResponse)`, both headers on every response), and
//! plain hello with the server's metrics on (`metrics`, issue 52), and with its traces on too
//! (`tracing-0`, `tracing-1`: sampled at ratio 0 and 1, exported over OTLP/HTTP to a receiver
//! this process runs, `otlp_sink.rs`, which counts what arrives). The load generator (wrk or the internal one,
//! pinned to core 1) loads one variant at a time; every round loads each variant once, in an
//! order that rotates every round, so that drift of the machine hits all alike. Per round:
//! each variant's requests per second and server CPU per request (`schedstat`), and both
//! over `plain`'s in the same round. Reported: the median of the rounds and their spread.

use std::fmt;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::{Method, StatusCode};
use serde::Serialize;

use crate::args::{GeneratorChoice, MiddlewareOptions};
use crate::child::{self, ChildServer};
use crate::load::{self, LoadResult};
use crate::otlp_sink::{Exported, Sink};
use crate::report::Machine;
use crate::scenario::RequestSpec;
use crate::servers::middleware_app::{HELLO_TAG, QUOTA_PER_SECOND};
use crate::stats::Spread;
use crate::wrk;

/// The target of issue 28: each middleware's CPU per request at most 5 % over plain hello's.
pub(crate) const TARGET: f64 = 1.05;

/// A server of `strata-bench middleware`: hello with no middleware or behind one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Server {
    Plain,
    /// A middleware that does nothing (`Middleware::new`, an empty context entry): what the
    /// middleware stage costs with one middleware, whatever it does.
    Noop,
    /// A middleware that adds one fixed header to the response, through `Amends` as the
    /// others do: what adding response headers costs.
    OneHeader,
    Cookies,
    Cache,
    RateLimit,
    /// The rate limiter with its headers on every response (`headers(HeadersOn::EveryResponse)`).
    RateLimitHeaders,
    /// Plain hello with the server's metrics on (`create_config().metrics(..)`, issue 52): not
    /// a middleware, but measured as one.
    Metrics,
    /// Metrics on, and traces (`create_config().tracing(..)`, the `otel` feature) sampled at
    /// ratio 0: every request gets its (unrecorded) span, none is exported.
    Tracing0,
    /// Metrics on, and traces sampled at ratio 1: every request's server span and handler span
    /// exported over OTLP/HTTP to this process's receiver.
    Tracing1,
}

impl Server {
    pub(crate) const ALL: [Server; 10] = [
        Server::Plain,
        Server::Noop,
        Server::OneHeader,
        Server::Cookies,
        Server::Cache,
        Server::RateLimit,
        Server::RateLimitHeaders,
        Server::Metrics,
        Server::Tracing0,
        Server::Tracing1,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Server::Plain => "plain",
            Server::Noop => "noop",
            Server::OneHeader => "one-header",
            Server::Cookies => "cookies",
            Server::Cache => "cache",
            Server::RateLimit => "rate-limit",
            Server::RateLimitHeaders => "rate-limit-headers",
            Server::Metrics => "metrics",
            Server::Tracing0 => "tracing-0",
            Server::Tracing1 => "tracing-1",
        }
    }

    /// The share of the traces it samples, if it traces.
    pub(crate) fn sample_ratio(self) -> Option<f64> {
        match self {
            Server::Tracing0 => Some(0.0),
            Server::Tracing1 => Some(1.0),
            _ => None,
        }
    }
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Server {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Server::ALL
            .into_iter()
            .find(|server| server.name() == s)
            .ok_or_else(|| {
                format!("unknown middleware server {s:?} (plain, noop, one-header, cookies, cache, rate-limit, rate-limit-headers, metrics, tracing-0, tracing-1)")
            })
    }
}

/// What is measured: a server and the request sent to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Variant {
    /// `GET /v1/hello?name=World`, no middleware.
    Plain,
    /// The same behind a middleware that does nothing: the stage's own cost.
    Noop,
    /// The same behind a middleware that adds one fixed response header.
    OneHeader,
    /// The same behind the cookie middleware, with a `Cookie` header of three cookies; the
    /// handler reads one.
    Cookies,
    /// The same behind the cache middleware: a policy, the handler's `ETag`; unconditional,
    /// so the 200.
    Cache,
    /// The cache server with an `If-None-Match` that matches: the 304.
    CacheNotModified,
    /// The same behind the rate limiter (client address, quota never reached, its headers on a
    /// 429 only: the default).
    RateLimit,
    /// The same limiter with its headers on every response (`headers(HeadersOn::EveryResponse)`).
    RateLimitHeaders,
    /// Plain hello with the server's metrics on: what counting a request costs.
    Metrics,
    /// Metrics on and traces sampled at 0: what tracing costs when it records nothing.
    Tracing0,
    /// Metrics on and traces sampled at 1: what recording and exporting every span costs.
    Tracing1,
    /// Plain hello's server sent the cookie variant's request: the baseline of `cookies`,
    /// since hyper's parsing of the longer head is the request's cost, not the middleware's.
    PlainWithCookies,
    /// Plain hello's server sent `cache-304`'s request (its `If-None-Match`): the baseline of
    /// `cache-304`.
    PlainWithIfNoneMatch,
}

/// The `Cookie` header of the cookie variant: a session id, a theme (which the handler reads)
/// and a language, as a browser sends them.
pub(crate) const COOKIE_HEADER: &str =
    "session=4f2a9c1e7b3d5a8f0e6c2b9d1a7f3e5c; theme=dark; lang=en-GB";

impl Variant {
    pub(crate) const ALL: [Variant; 13] = [
        Variant::Plain,
        Variant::Noop,
        Variant::OneHeader,
        Variant::Cookies,
        Variant::Cache,
        Variant::CacheNotModified,
        Variant::RateLimit,
        Variant::RateLimitHeaders,
        Variant::Metrics,
        Variant::Tracing0,
        Variant::Tracing1,
        Variant::PlainWithCookies,
        Variant::PlainWithIfNoneMatch,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Variant::Plain => "plain",
            Variant::Noop => "noop",
            Variant::OneHeader => "one-header",
            Variant::Cookies => "cookies",
            Variant::Cache => "cache",
            Variant::CacheNotModified => "cache-304",
            Variant::RateLimit => "rate-limit",
            Variant::RateLimitHeaders => "rate-limit-headers",
            Variant::Metrics => "metrics",
            Variant::Tracing0 => "tracing-0",
            Variant::Tracing1 => "tracing-1",
            Variant::PlainWithCookies => "plain+cookie-header",
            Variant::PlainWithIfNoneMatch => "plain+if-none-match",
        }
    }

    /// What the variant is measured against: plain hello's server answering the same request
    /// (so that what the variant's request costs hyper is not counted as the middleware's).
    pub(crate) fn baseline(self) -> Variant {
        match self {
            Variant::Cookies => Variant::PlainWithCookies,
            Variant::CacheNotModified => Variant::PlainWithIfNoneMatch,
            _ => Variant::Plain,
        }
    }

    /// The server that answers it.
    pub(crate) fn server(self) -> Server {
        match self {
            Variant::Plain | Variant::PlainWithCookies | Variant::PlainWithIfNoneMatch => {
                Server::Plain
            }
            Variant::Noop => Server::Noop,
            Variant::OneHeader => Server::OneHeader,
            Variant::Cookies => Server::Cookies,
            Variant::Cache | Variant::CacheNotModified => Server::Cache,
            Variant::RateLimit => Server::RateLimit,
            Variant::RateLimitHeaders => Server::RateLimitHeaders,
            Variant::Metrics => Server::Metrics,
            Variant::Tracing0 => Server::Tracing0,
            Variant::Tracing1 => Server::Tracing1,
        }
    }

    pub(crate) fn expected_status(self) -> StatusCode {
        match self {
            Variant::CacheNotModified => StatusCode::NOT_MODIFIED,
            _ => StatusCode::OK,
        }
    }

    /// The request: hello's, with the variant's headers.
    pub(crate) fn request(self) -> RequestSpec {
        let headers = match self {
            Variant::Plain
            | Variant::Noop
            | Variant::OneHeader
            | Variant::Cache
            | Variant::RateLimit
            | Variant::RateLimitHeaders
            | Variant::Metrics
            | Variant::Tracing0
            | Variant::Tracing1 => vec![],
            Variant::Cookies | Variant::PlainWithCookies => {
                vec![("cookie", COOKIE_HEADER.to_owned())]
            }
            Variant::CacheNotModified | Variant::PlainWithIfNoneMatch => {
                vec![("if-none-match", format!("\"{HELLO_TAG}\""))]
            }
        };
        RequestSpec {
            method: Method::GET,
            path_and_query: "/v1/hello?name=World".to_owned(),
            headers,
            body: Vec::new(),
        }
    }

    /// Checks `plain`'s answer against the variant's, and what the variant adds: `Ok` with a
    /// one-line description of what was checked.
    fn check(self, answer: &http::Response<bytes::Bytes>, plain_body: &[u8]) -> Result<(), String> {
        let header = |name: &str| {
            answer
                .headers()
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let body = String::from_utf8_lossy(answer.body());
        let fail = |what: String| Err(format!("{self}: {what}; body: {body}"));
        if answer.status() != self.expected_status() {
            return fail(format!(
                "answered {}, expected {}",
                answer.status(),
                self.expected_status()
            ));
        }
        if header("access-control-allow-origin").as_deref() != Some("*") {
            return fail("no `access-control-allow-origin: *`".to_owned());
        }
        if self.expected_status() == StatusCode::OK && answer.body() != plain_body {
            return fail(format!(
                "a body other than plain hello's ({})",
                String::from_utf8_lossy(plain_body)
            ));
        }
        let tag = format!("\"{HELLO_TAG}\"");
        let expected: Vec<(&str, Option<String>)> = match self {
            Variant::OneHeader => vec![("x-bench", Some("1".to_owned())), ("set-cookie", None)],
            Variant::Plain
            | Variant::Noop
            | Variant::Cookies
            | Variant::RateLimit
            | Variant::Metrics
            | Variant::Tracing0
            | Variant::Tracing1
            | Variant::PlainWithCookies
            | Variant::PlainWithIfNoneMatch => vec![
                ("set-cookie", None),
                ("cache-control", None),
                ("etag", None),
                ("ratelimit", None),
                ("ratelimit-policy", None),
            ],
            Variant::Cache => vec![
                ("cache-control", Some("max-age=60, public".to_owned())),
                ("etag", Some(tag)),
            ],
            Variant::CacheNotModified => {
                if !answer.body().is_empty() {
                    return fail("a 304 with a body".to_owned());
                }
                vec![
                    ("cache-control", Some("max-age=60, public".to_owned())),
                    ("etag", Some(tag)),
                ]
            }
            Variant::RateLimitHeaders => vec![(
                "ratelimit-policy",
                Some(format!("\"default\";q={QUOTA_PER_SECOND};w=1")),
            )],
        };
        for (name, value) in expected {
            if header(name) != value {
                return fail(format!("{name}: {:?}, expected {value:?}", header(name)));
            }
        }
        if self == Variant::RateLimitHeaders
            && !header("ratelimit").is_some_and(|v| v.starts_with("\"default\";r="))
        {
            return fail(format!("ratelimit: {:?}", header("ratelimit")));
        }
        Ok(())
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Variant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Variant::ALL
            .into_iter()
            .find(|variant| variant.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Variant::ALL.iter().map(|v| v.name()).collect();
                format!(
                    "unknown middleware variant {s:?} (one of {})",
                    names.join(", ")
                )
            })
    }
}

/// One measured line: a variant, served by this binary or by another (`--plain-from`).
struct Entry {
    label: String,
    variant: Variant,
    child: ChildServer,
    load: Load,
    /// Requests answered, the pre-flight's and warm-up's included (what a traced server's
    /// exports are held against).
    answered: AtomicU64,
}

enum Load {
    Internal(Arc<[u8]>),
    Wrk(wrk::Script),
}

/// One round of one entry.
#[derive(Debug, Clone, Serialize)]
struct RoundResult {
    requests: u64,
    seconds: f64,
    requests_per_second: f64,
    /// The server's CPU time over the round per request, µs.
    cpu_us_per_request: f64,
    /// The server's CPU time over the round's length.
    cpu_utilization: f64,
}

impl RoundResult {
    fn of(result: &LoadResult) -> Self {
        #[allow(clippy::cast_precision_loss)]
        let requests = result.requests.max(1) as f64;
        let cpu = result.server_cpu.unwrap_or_default().as_secs_f64();
        Self {
            requests: result.requests,
            seconds: result.elapsed.as_secs_f64(),
            requests_per_second: result.throughput(),
            cpu_us_per_request: cpu * 1e6 / requests,
            cpu_utilization: cpu / result.elapsed.as_secs_f64().max(1e-9),
        }
    }
}

/// One entry's rounds and summaries.
#[derive(Debug, Clone, Serialize)]
struct EntryResult {
    label: String,
    variant: Variant,
    status: u16,
    request_headers: Vec<(String, String)>,
    requests_per_second: Spread,
    cpu_us_per_request: Spread,
    /// Per round, CPU per request over plain's in the same round.
    cpu_over_plain: Spread,
    /// What the variant is measured against: plain hello's server sent the same request.
    baseline: Variant,
    /// Per round, CPU per request over the baseline's in the same round: the target's ratio.
    cpu_over_baseline: Spread,
    /// Per round, requests per second over plain's in the same round.
    throughput_over_plain: Spread,
    cpu_utilization: Spread,
    peak_rss_kib: Option<u64>,
    rounds: Vec<RoundResult>,
}

#[derive(Debug, Clone, Serialize)]
struct MiddlewareReport {
    command: String,
    machine: Machine,
    generator: String,
    connections: usize,
    round_seconds: f64,
    warmup_seconds: f64,
    rounds: usize,
    server_workers: usize,
    pinned: bool,
    load_average_before: String,
    load_average_after: String,
    target: f64,
    entries: Vec<EntryResult>,
    /// What each traced server exported to this process's OTLP receiver, once stopped.
    traces: Vec<TraceExport>,
}

/// A traced server's exports over the whole run.
#[derive(Debug, Clone, Serialize)]
struct TraceExport {
    label: String,
    sample_ratio: f64,
    /// Requests it answered (pre-flight, warm-up and rounds).
    requests: u64,
    exported: Exported,
}

/// `/proc/loadavg`'s first three fields.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// `strata-bench middleware`.
pub(crate) fn run(options: &MiddlewareOptions) -> Result<(), String> {
    let machine = Machine::probe();
    let load_before = load_average();
    let pinned = options.pin && child::can_pin();
    let wrk_version = match options.generator {
        GeneratorChoice::Internal => None,
        GeneratorChoice::Auto => wrk::auto(),
        GeneratorChoice::Wrk => Some(wrk::version().ok_or("--generator wrk: wrk is not on PATH")?),
    };
    let (mut duration, mut warmup) = (options.duration, options.warmup);
    if wrk_version.is_some() {
        duration = Duration::from_secs(wrk::whole_seconds(duration));
        warmup = Duration::from_secs(wrk::whole_seconds(warmup));
    }
    let generator = wrk_version.clone().map_or_else(
        || "internal, 1 thread".to_owned(),
        |v| format!("wrk ({v}), 1 thread"),
    );
    eprintln!("strata-bench middleware: load generator {generator}, load average {load_before}");
    // The traced servers' OTLP receiver, in this process.
    let sink = if options
        .variants
        .iter()
        .any(|v| v.server().sample_ratio().is_some())
    {
        Some(Sink::start()?)
    } else {
        None
    };
    let entries = spawn_entries(options, wrk_version.is_some(), pinned, sink.as_ref())?;
    let measured = measure(&entries, options, duration, warmup, pinned, sink.as_ref());
    let rss: Vec<_> = entries.iter().map(|e| e.child.peak_rss_kib()).collect();
    let load_after = load_average();
    let described: Vec<_> = entries
        .iter()
        .map(|e| (e.label.clone(), e.variant))
        .collect();
    let mut traced = Vec::new();
    for entry in entries {
        let answered = entry.answered.load(Ordering::Relaxed);
        // Stopping a traced server flushes its exporter: its exports are all in after.
        entry.child.stop();
        if let (Some(sink), Some(sample_ratio)) = (&sink, entry.variant.server().sample_ratio()) {
            traced.push(TraceExport {
                exported: sink.exported(entry.variant.name()),
                label: entry.label,
                sample_ratio,
                requests: answered,
            });
        }
    }
    let rounds = measured?;
    if let Some(refused) = sink
        .as_ref()
        .and_then(|sink| sink.refused().into_iter().next())
    {
        return Err(format!("the OTLP receiver refused a post: {refused}"));
    }
    let results = summarize(described, rounds, rss);
    let report = MiddlewareReport {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        generator,
        connections: options.connections,
        round_seconds: duration.as_secs_f64(),
        warmup_seconds: warmup.as_secs_f64(),
        rounds: options.rounds,
        server_workers: options.workers,
        pinned,
        load_average_before: load_before,
        load_average_after: load_after,
        target: TARGET,
        entries: results,
        traces: traced,
    };
    print!("{}", markdown(&report));
    if let Some(path) = &options.json {
        crate::report::write_json(path, &report)?;
    }
    Ok(())
}

/// Starts the server of each variant asked for (and of plain, always first; and plain from
/// `--plain-from`'s binary, last), with its request ready for the generator.
fn spawn_entries(
    options: &MiddlewareOptions,
    wrk: bool,
    pinned: bool,
    sink: Option<&Sink>,
) -> Result<Vec<Entry>, String> {
    let mut wanted: Vec<(String, Variant, Option<PathBuf>)> = options
        .variants
        .iter()
        .map(|&variant| (variant.name().to_owned(), variant, None))
        .collect();
    if !options.variants.contains(&Variant::Plain) {
        wanted.insert(0, ("plain".to_owned(), Variant::Plain, None));
    }
    // Each variant's baseline is measured in the same rounds.
    for &variant in &options.variants {
        let baseline = variant.baseline();
        if !wanted.iter().any(|(_, v, _)| *v == baseline) {
            wanted.push((baseline.name().to_owned(), baseline, None));
        }
    }
    if let Some(other) = &options.plain_from {
        wanted.push((
            "plain-other".to_owned(),
            Variant::Plain,
            Some(other.clone()),
        ));
    }
    let mut entries = Vec::new();
    let stop = |entries: Vec<Entry>| {
        for entry in entries {
            entry.child.stop();
        }
    };
    for (label, variant, binary) in wanted {
        let otlp = sink
            .filter(|_| variant.server().sample_ratio().is_some())
            .map(|sink| sink.endpoint(variant.name()));
        let child = match ChildServer::spawn_middleware(
            variant.server(),
            binary.as_deref(),
            options.workers,
            pinned,
            otlp.as_deref(),
        ) {
            Ok(child) => child,
            Err(e) => {
                stop(entries);
                return Err(format!("{label}: {e}"));
            }
        };
        let spec = variant.request();
        let load = if wrk {
            match wrk::Script::write(&spec, &format!("middleware-{label}")) {
                Ok(script) => Load::Wrk(script),
                Err(e) => {
                    child.stop();
                    stop(entries);
                    return Err(e);
                }
            }
        } else {
            Load::Internal(spec.to_http1().into())
        };
        entries.push(Entry {
            label,
            variant,
            child,
            load,
            answered: AtomicU64::new(0),
        });
    }
    Ok(entries)
}

/// Each entry's summary: its rounds, their spread, and per round over plain's (the first).
fn summarize(
    described: Vec<(String, Variant)>,
    rounds: Vec<Vec<RoundResult>>,
    rss: Vec<Option<u64>>,
) -> Vec<EntryResult> {
    let plain: Vec<RoundResult> = rounds.first().cloned().unwrap_or_default();
    // The baseline's rounds: the first entry of plain's own binary with that variant.
    let rounds_of = |variant: Variant| {
        described
            .iter()
            .zip(&rounds)
            .find(|((label, v), _)| *v == variant && label != "plain-other")
            .map_or_else(|| plain.clone(), |(_, rounds)| rounds.clone())
    };
    let baselines: Vec<Vec<RoundResult>> = described
        .iter()
        .map(|(_, variant)| rounds_of(variant.baseline()))
        .collect();
    described
        .into_iter()
        .zip(rounds)
        .zip(rss)
        .zip(baselines)
        .map(|((((label, variant), rounds), peak_rss_kib), baseline)| {
            let each = |f: fn(&RoundResult) -> f64| rounds.iter().map(f).collect::<Vec<_>>();
            let over = |base: &[RoundResult], f: fn(&RoundResult) -> f64| {
                rounds
                    .iter()
                    .zip(base)
                    .map(|(own, base)| f(own) / f(base))
                    .collect::<Vec<_>>()
            };
            EntryResult {
                label,
                variant,
                status: variant.expected_status().as_u16(),
                request_headers: variant
                    .request()
                    .headers
                    .into_iter()
                    .map(|(n, v)| (n.to_owned(), v))
                    .collect(),
                requests_per_second: Spread::of(&each(|r| r.requests_per_second)),
                cpu_us_per_request: Spread::of(&each(|r| r.cpu_us_per_request)),
                cpu_over_plain: Spread::of(&over(&plain, |r| r.cpu_us_per_request)),
                baseline: variant.baseline(),
                cpu_over_baseline: Spread::of(&over(&baseline, |r| r.cpu_us_per_request)),
                throughput_over_plain: Spread::of(&over(&plain, |r| r.requests_per_second)),
                cpu_utilization: Spread::of(&each(|r| r.cpu_utilization)),
                peak_rss_kib,
                rounds,
            }
        })
        .collect()
}

/// Pre-flight, warm-ups and the rounds; each entry's rounds, in `entries`' order.
fn measure(
    entries: &[Entry],
    options: &MiddlewareOptions,
    duration: Duration,
    warmup: Duration,
    pinned: bool,
    sink: Option<&Sink>,
) -> Result<Vec<Vec<RoundResult>>, String> {
    if pinned {
        child::pin_self(child::CLIENT_CORE)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let plain = crate::preflight::send(entries[0].child.addr, &Variant::Plain.request())
            .await
            .map_err(|e| format!("plain: {e}"))?;
        for entry in entries {
            let answer = crate::preflight::send(entry.child.addr, &entry.variant.request())
                .await
                .map_err(|e| format!("{}: {e}", entry.label))?;
            entry.variant.check(&answer, plain.body())?;
            entry.answered.fetch_add(1, Ordering::Relaxed);
            if matches!(
                entry.variant,
                Variant::Metrics | Variant::Tracing0 | Variant::Tracing1
            ) {
                // The metrics are on, and counted that request.
                let exposition = RequestSpec {
                    path_and_query: "/metrics".to_owned(),
                    ..Variant::Plain.request()
                };
                let metrics = crate::preflight::send(entry.child.addr, &exposition)
                    .await
                    .map_err(|e| format!("{}: /metrics: {e}", entry.label))?;
                let text = String::from_utf8_lossy(metrics.body());
                if !text.contains("strata_http_requests_total{route=\"/v1/hello\"") {
                    return Err(format!("{}: /metrics counts no hello: {text}", entry.label));
                }
            }
            if entry.variant == Variant::Tracing1
                && let Some(sink) = sink
            {
                // The traces are on, and that request's spans (the server's and the
                // handler's) reached the receiver: within the exporter's schedule (5 s).
                let name = entry.variant.name();
                let exported = tokio::task::block_in_place(|| {
                    sink.wait_for_spans(name, 2, Duration::from_secs(15))
                })
                .map_err(|e| format!("{}: {e}", entry.label))?;
                eprintln!(
                    "{}: pre-flight's spans exported ({} in {} post(s), {} bytes)",
                    entry.label, exported.spans, exported.posts, exported.bytes
                );
            }
            let mut headers: Vec<String> = answer
                .headers()
                .iter()
                .filter(|(name, _)| !matches!(name.as_str(), "date" | "x-request-id"))
                .map(|(name, value)| {
                    format!("{name}: {}", String::from_utf8_lossy(value.as_bytes()))
                })
                .collect();
            headers.sort();
            eprintln!(
                "{}: pre-flight ok, pid {} on {}: {} | {} | {}",
                entry.label,
                entry.child.pid(),
                entry.child.addr,
                answer.status().as_u16(),
                headers.join(" | "),
                String::from_utf8_lossy(answer.body())
            );
        }
        for entry in entries {
            once(entry, options.connections, warmup, pinned).await?;
        }
        let mut rounds = vec![Vec::new(); entries.len()];
        for round in 0..options.rounds {
            let mut line = format!("round {}/{}:", round + 1, options.rounds);
            for step in 0..entries.len() {
                let index = (round + step) % entries.len();
                let entry = &entries[index];
                let result =
                    RoundResult::of(&once(entry, options.connections, duration, pinned).await?);
                let _ = write!(
                    line,
                    " {} {:.0} req/s {:.2} µs",
                    entry.label, result.requests_per_second, result.cpu_us_per_request
                );
                rounds[index].push(result);
            }
            eprintln!("{line}");
        }
        Ok(rounds)
    })
}

/// One load run against `entry`'s server, with the server's CPU time over it.
async fn once(
    entry: &Entry,
    connections: usize,
    duration: Duration,
    pinned: bool,
) -> Result<LoadResult, String> {
    let addr = entry.child.addr;
    let expected = entry.variant.expected_status();
    let before = entry.child.cpu_time();
    let mut result = match &entry.load {
        Load::Internal(request) => load::run(
            addr,
            Arc::clone(request),
            expected.as_u16(),
            connections,
            duration,
        )
        .await
        .map_err(|e| format!("{}: {e}", entry.label))?,
        Load::Wrk(script) => {
            let path = entry.variant.request().path_and_query;
            tokio::task::block_in_place(|| {
                wrk::run(
                    addr,
                    &path,
                    script,
                    expected,
                    connections,
                    duration,
                    pinned.then_some(child::CLIENT_CORE),
                )
            })
            .map_err(|e| format!("{}: {e}", entry.label))?
        }
    };
    result.server_cpu =
        before.and_then(|before| Some(entry.child.cpu_time()?.saturating_sub(before)));
    entry.answered.fetch_add(result.requests, Ordering::Relaxed);
    if result.server_cpu.is_none() {
        return Err(format!("{}: the server's CPU time is unknown", entry.label));
    }
    Ok(result)
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

fn markdown(report: &MiddlewareReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# strata-bench middleware: hello behind each middleware\n\n\
         {} cores ({}), {}; load generator {}, {} connections; {} rounds of {} s after {} s of \
         warm-up per variant, rotating; server {} worker(s){}; load average {} before, {} after",
        report.machine.cores,
        report.machine.cpu,
        report.machine.rustc,
        report.generator,
        report.connections,
        report.rounds,
        report.round_seconds,
        report.warmup_seconds,
        report.server_workers,
        if report.pinned {
            ", pinned to core 0 (the generator to core 1)"
        } else {
            ", not pinned"
        },
        report.load_average_before,
        report.load_average_after,
    );
    let _ = writeln!(
        out,
        "\n| variant | status | req/s, median (min–max) | server CPU µs per request | CPU per \
         request ÷ plain's, per round | req/s ÷ plain's, per round | server CPU use | peak RSS \
         |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for entry in &report.entries {
        let plain = entry.label == "plain";
        let rps = &entry.requests_per_second;
        let _ = writeln!(
            out,
            "| {} | {} | {} ({}–{}) | {} | {} | {} | {:.0} % | {} |",
            entry.label,
            entry.status,
            grouped(rps.median),
            grouped(rps.min),
            grouped(rps.max),
            entry.cpu_us_per_request.show(2),
            if plain {
                String::new()
            } else {
                entry.cpu_over_plain.show(3)
            },
            if plain {
                String::new()
            } else {
                entry.throughput_over_plain.show(3)
            },
            100.0 * entry.cpu_utilization.median,
            entry
                .peak_rss_kib
                .map(|kib| format!(
                    "{:.1} MiB",
                    f64::from(u32::try_from(kib).unwrap_or(u32::MAX)) / 1024.0
                ))
                .unwrap_or_default(),
        );
    }
    let _ = writeln!(
        out,
        "\nTarget (issue 28): each middleware's CPU per request ≤ {:.2} × plain hello's answering \
         the same request (median of the rounds):",
        report.target
    );
    for entry in report.entries.iter().filter(|e| {
        e.variant.server() != Server::Plain && e.variant.server().sample_ratio().is_none()
    }) {
        let ratio = entry.cpu_over_baseline.median;
        let _ = writeln!(
            out,
            "- {} ÷ {}: {} {}",
            entry.label,
            entry.baseline,
            entry.cpu_over_baseline.show(3),
            if ratio <= report.target {
                "holds"
            } else {
                "does NOT hold"
            }
        );
    }
    traces_markdown(report, &mut out);
    out
}

/// The traced servers' lines: their CPU per request over plain's and metrics', and what they
/// exported.
fn traces_markdown(report: &MiddlewareReport, out: &mut String) {
    let traced: Vec<_> = report
        .entries
        .iter()
        .filter(|e| e.variant.server().sample_ratio().is_some())
        .collect();
    if !traced.is_empty() {
        let _ = writeln!(
            out,
            "\nTraces (issue 52; metrics on too, as in `metrics`), CPU per request ÷ plain's \
             (median of the rounds):"
        );
        for entry in traced {
            let _ = writeln!(
                out,
                "- {} ÷ plain: {}; ÷ metrics, medians: {}",
                entry.label,
                entry.cpu_over_plain.show(3),
                report
                    .entries
                    .iter()
                    .find(|e| e.variant == Variant::Metrics)
                    .map_or_else(
                        || "(metrics not measured)".to_owned(),
                        |metrics| format!(
                            "{:.3}",
                            entry.cpu_us_per_request.median / metrics.cpu_us_per_request.median
                        )
                    ),
            );
        }
        for export in &report.traces {
            #[allow(clippy::cast_precision_loss)]
            let per_request = export.exported.spans as f64 / export.requests.max(1) as f64;
            let _ = writeln!(
                out,
                "- {} (sampled at {}) exported {} spans for {} requests ({per_request:.2} per \
                 request; 2 when every one is kept: the server's and the handler's) in {} posts, \
                 {} bytes",
                export.label,
                export.sample_ratio,
                grouped_u64(export.exported.spans),
                grouped_u64(export.requests),
                grouped_u64(export.exported.posts),
                grouped_u64(export.exported.bytes),
            );
        }
    }
}

/// [`grouped`] for a count.
fn grouped_u64(value: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    grouped(value as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for variant in Variant::ALL {
            assert_eq!(variant.name().parse::<Variant>(), Ok(variant));
        }
        for server in Server::ALL {
            assert_eq!(server.name().parse::<Server>(), Ok(server));
        }
        assert!("cookie".parse::<Variant>().is_err());
        assert!("cache-304".parse::<Server>().is_err());
    }

    #[test]
    fn requests_differ_only_by_the_variant_s_headers() {
        let plain = Variant::Plain.request().to_http1();
        for variant in Variant::ALL {
            let spec = variant.request();
            assert_eq!(spec.path_and_query, "/v1/hello?name=World");
            let bytes = String::from_utf8(spec.to_http1()).unwrap_or_default();
            match variant {
                Variant::Cookies | Variant::PlainWithCookies => {
                    assert!(bytes.contains(&format!("cookie: {COOKIE_HEADER}\r\n")));
                }
                Variant::CacheNotModified | Variant::PlainWithIfNoneMatch => {
                    assert!(bytes.contains("if-none-match: \"hello-1\"\r\n"));
                }
                _ => assert_eq!(bytes.as_bytes(), plain.as_slice()),
            }
            // The baseline is plain's server sent the very same request.
            let baseline = variant.baseline();
            assert_eq!(baseline.server(), Server::Plain, "{variant}");
            if variant.server() != Server::Plain {
                assert_eq!(baseline.request().to_http1(), spec.to_http1(), "{variant}");
            }
        }
        assert_eq!(Variant::CacheNotModified.server(), Server::Cache);
        assert_eq!(Variant::CacheNotModified.expected_status(), 304);
    }

    #[test]
    fn each_variant_is_divided_by_its_own_baseline_in_the_same_round() {
        let round = |cpu_us_per_request: f64| RoundResult {
            requests: 1,
            seconds: 1.0,
            requests_per_second: 1.0,
            cpu_us_per_request,
            cpu_utilization: 1.0,
        };
        let described = vec![
            ("plain".to_owned(), Variant::Plain),
            ("cookies".to_owned(), Variant::Cookies),
            ("rate-limit".to_owned(), Variant::RateLimit),
            ("plain+cookie-header".to_owned(), Variant::PlainWithCookies),
        ];
        let rounds = vec![
            vec![round(10.0), round(20.0)],
            vec![round(12.0), round(24.0)],
            vec![round(11.0), round(22.0)],
            vec![round(11.0), round(20.0)],
        ];
        let results = summarize(described, rounds, vec![None; 4]);
        let cookies = &results[1];
        assert_eq!(cookies.baseline, Variant::PlainWithCookies);
        // Per round 12/11 and 24/20: the median of two is their mean.
        let expected = f64::midpoint(12.0 / 11.0, 24.0 / 20.0);
        assert!((cookies.cpu_over_baseline.median - expected).abs() < 1e-9);
        assert!((cookies.cpu_over_plain.median - 1.2).abs() < 1e-9);
        let rate_limit = &results[2];
        assert_eq!(rate_limit.baseline, Variant::Plain);
        assert!((rate_limit.cpu_over_baseline.median - 1.1).abs() < 1e-9);
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(grouped(84_211.4), "84,211");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(1_000_000.0), "1,000,000");
    }

    /// Every variant's server answers its request as `check` expects, in memory of the
    /// process (the child's own server, on loopback).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_variant_passes_its_pre_flight() {
        let sink = Sink::start().unwrap();
        let plain = crate::servers::start_middleware(Server::Plain, None)
            .await
            .unwrap();
        let plain_answer = crate::preflight::send(plain.addr, &Variant::Plain.request())
            .await
            .unwrap();
        for variant in Variant::ALL {
            let otlp = sink.endpoint(variant.name());
            let running = crate::servers::start_middleware(variant.server(), Some(&otlp))
                .await
                .unwrap();
            let answer = crate::preflight::send(running.addr, &variant.request())
                .await
                .unwrap();
            variant.check(&answer, plain_answer.body()).unwrap();
            // Without the variant's headers, the cookie server refuses (its handler read the
            // cookie) and the cache server answers the 200.
            let bare = crate::preflight::send(running.addr, &Variant::Plain.request())
                .await
                .unwrap();
            let expected = if variant == Variant::Cookies {
                400
            } else {
                200
            };
            assert_eq!(bare.status(), expected, "{variant}");
            // The load generator reads each answer, 304 included.
            let result = load::run(
                running.addr,
                variant.request().to_http1().into(),
                variant.expected_status().as_u16(),
                2,
                Duration::from_millis(100),
            )
            .await
            .unwrap();
            assert!(result.requests > 0, "{variant}");
            running.stop().await;
        }
        plain.stop().await;
    }
}
