//! `strata-bench client`: what the typed Rust client (`strata::client::Client`, issue 27) costs
//! next to a client written by hand, calling the same operations of the same server.
//!
//! One Strata server runs in a child process (`strata-bench serve client`, pinned to core 0,
//! one worker): the two operations of `servers/client_app.rs`, declared once and implemented
//! with `implement`. This process (pinned to core 1) is the client, on a current-thread tokio
//! runtime, so every call, connection task and timer of it runs on one thread. The clients:
//!
//! - **hand**: hyper-util's pooled client (`legacy::Client`, HTTP/1.1, keep-alive), the request
//!   built by hand (the URI by `format!`, the body by `serde_json::to_vec` of the input, its
//!   `content-type`), the body collected and read by `serde_json::from_slice` into the same
//!   output type inside the default envelope (`{"status":"success","data":..}`), the status
//!   checked;
//! - **typed**: `Client::new(pool).base_url(..)` on the same pool with the client's defaults (a
//!   30 s timeout per call), `client.call(&OP, input).await`;
//! - **typed-untimed**: the same with `.no_timeout()`, which tells the timer's part.
//!
//! Both clients serialize the same input by reference (`client.call(&OP, &input)`).
//!
//! Before measuring, each operation's typed request, as the pool receives it (a service in
//! front of it records it), is checked against the hand-built one: method, URI, version,
//! headers and body (the pool adds `host` and the body's `content-length` to both alike); and
//! each client's output against the expected one. A difference stops the run; a JSON body equal
//! but for the order of its object keys is said.
//!
//! Then each client gets a warm-up, and rounds follow, each client once per round in an order
//! that rotates from round to round (so drift hits all alike): `--concurrency` tasks call back to
//! back for `--duration` (or `--calls` calls in all, for `scripts/profile-client.sh`). Per round: calls, elapsed time, and this process's CPU time over it
//! (`/proc/self/task/*/schedstat`; the server is another process, so that is the client's).
//! Reported: calls per second, CPU µs per call, and, per round, each typed client's CPU per call
//! over the hand client's in the same round: median, min and max over the rounds.
//!
//! In memory: the same clients over the `Router` itself, no socket (`Client::new(router)`, and
//! the router called by `oneshot` with the hand-built request), one task: the client's own cost
//! with the server's in-process pipeline, and the calls per second over the router.

use std::fmt;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Uri, Version};
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use strata::Operation;
use strata::client::Body;
use strata::client::{Client, Transport as ClientTransport};
use tower::{Service, ServiceExt};

use crate::args::ClientOptions;
use crate::child::{self, ChildServer};
use crate::model::{HelloOutput, Order, OrderSummary, sample_order, summarize};
use crate::report::Machine;
use crate::servers::client_app::{HELLO, HelloName, ORDER};
use crate::stats::Spread;

/// The target of issue 27: the typed client's CPU per call over the hand client's, over the
/// socket, at most this.
pub(crate) const TARGET: f64 = 1.10;

/// hyper-util's pooled client, as both network clients use it (the typed client's body type,
/// which the hand-written requests carry too: bytes held in memory, as `Full` holds them).
type Pool =
    hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, Body>;

/// A client measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Way {
    /// By hand on the same transport.
    Hand,
    /// `strata::client::Client` with its defaults.
    Typed,
    /// `strata::client::Client` without a timeout.
    TypedUntimed,
}

impl Way {
    /// Every client, in report order.
    pub(crate) const ALL: [Way; 3] = [Way::Hand, Way::Typed, Way::TypedUntimed];

    fn name(self) -> &'static str {
        match self {
            Way::Hand => "hand",
            Way::Typed => "typed",
            Way::TypedUntimed => "typed-untimed",
        }
    }
}

/// An operation measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum OperationName {
    /// `GET /v1/hello/:name`.
    Hello,
    /// `POST /v1/orders`, ~1 KiB of JSON.
    Order,
}

impl OperationName {
    /// Every operation, in report order.
    pub(crate) const ALL: [OperationName; 2] = [OperationName::Hello, OperationName::Order];

    fn name(self) -> &'static str {
        match self {
            OperationName::Hello => "hello",
            OperationName::Order => "order",
        }
    }
}

/// Where the calls go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Transport {
    /// hyper-util's pool, over loopback, to the server in its child process.
    Network,
    /// The `Router` in this process, no socket.
    Memory,
}

impl Transport {
    /// Every transport, in report order.
    pub(crate) const ALL: [Transport; 2] = [Transport::Network, Transport::Memory];

    fn name(self) -> &'static str {
        match self {
            Transport::Network => "network",
            Transport::Memory => "memory",
        }
    }
}

macro_rules! named {
    ($($type:ident),*) => {$(
        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $type {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                Self::ALL.into_iter().find(|x| x.name() == s).ok_or_else(|| {
                    let names: Vec<_> = Self::ALL.iter().map(|x| x.name()).collect();
                    format!("unknown name {s:?} (one of {})", names.join(", "))
                })
            }
        }
    )*};
}

named!(Way, OperationName, Transport);

/// An operation as both clients call it.
trait Case: Send + Sync + 'static {
    type Input: Serialize + Clone + Send + Sync + 'static;
    type Output: DeserializeOwned + PartialEq + fmt::Debug + Send + 'static;
    /// The declaration the server implements.
    const OPERATION: Operation<Self::Input, Self::Output>;
    /// The input every call sends.
    fn input() -> Self::Input;
    /// The output every call must read.
    fn expected() -> Self::Output;
    /// The request a hand-written client builds for `input`, the API at `base`.
    fn by_hand(base: &str, input: &Self::Input) -> Result<Request<Body>, String>;
}

/// `GET /v1/hello/World`.
struct Hello;

impl Case for Hello {
    type Input = HelloName;
    type Output = HelloOutput;
    const OPERATION: Operation<HelloName, HelloOutput> = HELLO;

    fn input() -> HelloName {
        HelloName {
            name: "World".to_owned(),
        }
    }

    fn expected() -> HelloOutput {
        HelloOutput {
            greetings: "Hello, World".to_owned(),
        }
    }

    fn by_hand(base: &str, input: &HelloName) -> Result<Request<Body>, String> {
        // The name needs no escaping, so a hand-written client writes it as it is.
        Request::get(format!("{base}/v1/hello/{}", input.name))
            .body(Body::empty())
            .map_err(|e| e.to_string())
    }
}

/// `POST /v1/orders` with the sample order.
struct Orders;

impl Case for Orders {
    type Input = Order;
    type Output = OrderSummary;
    const OPERATION: Operation<Order, OrderSummary> = ORDER;

    fn input() -> Order {
        sample_order()
    }

    fn expected() -> OrderSummary {
        summarize(sample_order())
    }

    fn by_hand(base: &str, input: &Order) -> Result<Request<Body>, String> {
        let body = serde_json::to_vec(input).map_err(|e| e.to_string())?;
        Request::post(format!("{base}/v1/orders"))
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(Body::from(body))
            .map_err(|e| e.to_string())
    }
}

/// How the hand-written client sends a request and takes its answer: hyper-util's `request`, or
/// the router's `oneshot`; the status and the whole body.
trait ByHand: Clone + Send + Sync + 'static {
    fn exchange(
        &self,
        request: Request<Body>,
    ) -> impl Future<Output = Result<(StatusCode, Bytes), String>> + Send;
}

impl ByHand for Pool {
    async fn exchange(&self, request: Request<Body>) -> Result<(StatusCode, Bytes), String> {
        let response = self.request(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response.into_body().collect().await;
        Ok((status, body.map_err(|e| e.to_string())?.to_bytes()))
    }
}

impl ByHand for strata::Router {
    async fn exchange(&self, request: Request<Body>) -> Result<(StatusCode, Bytes), String> {
        let Ok(response) = self.clone().oneshot(request).await;
        let status = response.status();
        let body = response.into_body().collect().await;
        Ok((status, body.map_err(|e| e.to_string())?.to_bytes()))
    }
}

/// The default envelope's success, as a hand-written client reads it.
#[derive(Deserialize)]
struct Success<T> {
    data: T,
}

/// The output of a response, read by hand.
fn read_by_hand<O: DeserializeOwned>(status: StatusCode, body: &[u8]) -> Result<O, String> {
    if !status.is_success() {
        return Err(format!("{status}: {}", String::from_utf8_lossy(body)));
    }
    serde_json::from_slice::<Success<O>>(body)
        .map(|success| success.data)
        .map_err(|e| e.to_string())
}

/// One client of one case over the service `S`: what each task calls back to back.
struct Caller<C: Case, S> {
    way: Way,
    typed: Client<S>,
    untimed: Client<S>,
    hand: S,
    base: String,
    input: C::Input,
}

impl<C: Case, S: Clone> Clone for Caller<C, S> {
    fn clone(&self) -> Self {
        Self {
            way: self.way,
            typed: self.typed.clone(),
            untimed: self.untimed.clone(),
            hand: self.hand.clone(),
            base: self.base.clone(),
            input: self.input.clone(),
        }
    }
}

impl<C: Case, S: ClientTransport + ByHand> Caller<C, S> {
    /// The clients of `service`, the API at `base` (empty in memory).
    fn new(way: Way, service: &S, base: &str) -> Self {
        Self {
            way,
            typed: Client::new(service.clone()).base_url(base),
            untimed: Client::new(service.clone()).base_url(base).no_timeout(),
            hand: service.clone(),
            base: base.to_owned(),
            input: C::input(),
        }
    }

    /// One call.
    async fn once(&self) -> Result<C::Output, String> {
        match self.way {
            Way::Hand => {
                let request = C::by_hand(&self.base, &self.input)?;
                let (status, body) = self.hand.exchange(request).await?;
                read_by_hand(status, &body)
            }
            Way::Typed => self
                .typed
                .call(&C::OPERATION, &self.input)
                .await
                .map_err(|e| e.to_string()),
            Way::TypedUntimed => self
                .untimed
                .call(&C::OPERATION, &self.input)
                .await
                .map_err(|e| e.to_string()),
        }
    }

    /// `concurrency` tasks calling back to back for `length`: calls, elapsed time, and this
    /// process's CPU time over it.
    async fn round(&self, concurrency: usize, length: Length) -> Result<RoundResult, String> {
        let cpu = || {
            child::process_cpu_time("/proc/self").ok_or("cannot read /proc/self/task/*/schedstat")
        };
        let cpu_before = cpu()?;
        let start = Instant::now();
        let (deadline, left) = match length {
            Length::For(duration) => (start + duration, None),
            Length::Calls(calls) => (start, Some(Arc::new(AtomicU64::new(calls)))),
        };
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..concurrency {
            let (caller, left) = (self.clone(), left.clone());
            tasks.spawn(async move {
                let mut calls = 0_u64;
                let another = || match &left {
                    None => Instant::now() < deadline,
                    Some(left) => left
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                        .is_ok(),
                };
                while another() {
                    std::hint::black_box(caller.once().await?);
                    calls += 1;
                }
                Ok::<_, String>(calls)
            });
        }
        let mut calls = 0;
        while let Some(done) = tasks.join_next().await {
            calls += done.map_err(|e| e.to_string())??;
        }
        let elapsed = start.elapsed();
        let cpu = cpu()?.saturating_sub(cpu_before);
        Ok(RoundResult {
            calls,
            seconds: elapsed.as_secs_f64(),
            cpu_seconds: cpu.as_secs_f64(),
        })
    }
}

/// How long a round (or a warm-up) lasts.
#[derive(Debug, Clone, Copy)]
enum Length {
    /// This long.
    For(Duration),
    /// This many calls, whatever they take (to count instructions per call under valgrind).
    Calls(u64),
}

/// A request as a service receives it.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    method: Method,
    uri: Uri,
    version: Version,
    headers: HeaderMap,
    body: Bytes,
}

impl Seen {
    async fn of(request: Request<Body>) -> (Self, Request<Body>) {
        let (parts, body) = request.into_parts();
        // The bodies compared are held in memory: reading them cannot fail.
        let body = body
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes)
            .unwrap_or_default();
        let seen = Seen {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            version: parts.version,
            headers: parts.headers.clone(),
            body: body.clone(),
        };
        (seen, Request::from_parts(parts, Body::from(body)))
    }
}

/// A service in front of `S` keeping the last request it passed on.
#[derive(Clone)]
struct Recorder<S> {
    inner: S,
    seen: Arc<Mutex<Option<Seen>>>,
}

impl<S> Service<Request<Body>> for Recorder<S>
where
    S: Service<Request<Body>> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send,
    S::Error: Send,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // The inner service is driven to readiness by `oneshot`, per request.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (inner, seen) = (self.inner.clone(), Arc::clone(&self.seen));
        Box::pin(async move {
            let (recorded, request) = Seen::of(request).await;
            *seen.lock().unwrap_or_else(PoisonError::into_inner) = Some(recorded);
            inner.oneshot(request).await
        })
    }
}

/// Checks that the typed client sends what the hand-written one does, over `service` with the
/// API at `base`, and that each client reads the expected output; says how the requests agree.
async fn preflight<C, S>(service: &S, base: &str) -> Result<String, String>
where
    C: Case,
    S: ClientTransport + ByHand,
    S::Error: Send,
{
    let recorder = Recorder {
        inner: service.clone(),
        seen: Arc::new(Mutex::new(None)),
    };
    let typed = Client::new(recorder.clone())
        .base_url(base)
        .call(&C::OPERATION, C::input())
        .await
        .map_err(|e| format!("typed: {e}"))?;
    let typed_request = recorder
        .seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .ok_or("the typed client sent nothing")?;
    let (hand_request, _) = Seen::of(C::by_hand(base, &C::input())?).await;
    for way in Way::ALL {
        let output = Caller::<C, S>::new(way, service, base).once().await;
        let output = output.map_err(|e| format!("{way}: {e}"))?;
        if output != C::expected() {
            return Err(format!(
                "{way} read {output:?}, expected {:?}",
                C::expected()
            ));
        }
    }
    if typed != C::expected() {
        return Err(format!("typed read {typed:?}"));
    }
    agreement(&typed_request, &hand_request)
}

/// How two requests agree: the same bytes, or the same but for the order of the JSON body's
/// object keys; an error otherwise.
fn agreement(typed: &Seen, hand: &Seen) -> Result<String, String> {
    let what = format!(
        "{} {}, {} header(s), {} B body",
        hand.method,
        hand.uri,
        hand.headers.len(),
        hand.body.len()
    );
    if typed == hand {
        return Ok(format!("{what}: the same request, byte for byte"));
    }
    let json = |body: &Bytes| serde_json::from_slice::<serde_json::Value>(body).ok();
    let same_but_body = Seen {
        body: hand.body.clone(),
        ..typed.clone()
    } == *hand;
    if same_but_body
        && typed.body.len() == hand.body.len()
        && json(&typed.body).is_some()
        && json(&typed.body) == json(&hand.body)
    {
        return Ok(format!(
            "{what}: the same method, URI, version and headers; the body the same JSON of the \
             same length, its object keys in another order (typed: sorted)"
        ));
    }
    Err(format!(
        "the requests differ:\n  typed: {typed:?}\n  hand:  {hand:?}"
    ))
}

/// One round of one client.
#[derive(Debug, Clone, Serialize)]
struct RoundResult {
    calls: u64,
    seconds: f64,
    cpu_seconds: f64,
}

impl RoundResult {
    fn calls_per_second(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let calls = self.calls as f64;
        calls / self.seconds.max(1e-9)
    }

    fn cpu_us_per_call(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let calls = self.calls.max(1) as f64;
        self.cpu_seconds * 1e6 / calls
    }
}

/// One client's rounds.
#[derive(Debug, Clone, Serialize)]
struct WayResult {
    way: Way,
    rounds: Vec<RoundResult>,
    calls_per_second: Spread,
    cpu_us_per_call: Spread,
    /// Per round, its CPU per call over the hand client's in the same round (not for hand).
    cpu_per_call_over_hand: Option<Spread>,
    cpu_per_call_over_hand_rounds: Vec<f64>,
}

/// One operation over one transport.
#[derive(Debug, Clone, Serialize)]
struct CaseResult {
    operation: OperationName,
    transport: Transport,
    concurrency: usize,
    /// How the typed and the hand-built requests agree.
    request: String,
    clients: Vec<WayResult>,
}

impl CaseResult {
    fn typed_over_hand(&self) -> Option<Spread> {
        self.clients
            .iter()
            .find(|c| c.way == Way::Typed)
            .and_then(|c| c.cpu_per_call_over_hand)
    }
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
struct ClientReport {
    command: String,
    machine: Machine,
    rounds: usize,
    round_seconds: f64,
    warmup_seconds: f64,
    /// When set, every warm-up and round was this many calls (the times do not apply).
    calls_per_round: Option<u64>,
    server_workers: usize,
    pinned: bool,
    target: f64,
    cases: Vec<CaseResult>,
}

/// Warm-up, then `rounds` rounds of every way in a rotating order.
async fn measure<C, S>(
    operation: OperationName,
    transport: Transport,
    service: &S,
    base: &str,
    concurrency: usize,
    options: &ClientOptions,
) -> Result<CaseResult, String>
where
    C: Case,
    S: ClientTransport + ByHand,
    S::Error: Send,
{
    let label = format!("{operation} over {transport}");
    let request = preflight::<C, S>(service, base)
        .await
        .map_err(|e| format!("{label}: pre-flight: {e}"))?;
    eprintln!("{label}: pre-flight ok: {request}");
    let ways = &options.ways;
    let callers: Vec<_> = ways
        .iter()
        .map(|&way| Caller::<C, S>::new(way, service, base))
        .collect();
    for caller in &callers {
        let warmup = options
            .calls
            .map_or(Length::For(options.warmup), Length::Calls);
        caller.round(concurrency, warmup).await?;
    }
    let length = options
        .calls
        .map_or(Length::For(options.duration), Length::Calls);
    let mut rounds: Vec<Vec<RoundResult>> = vec![Vec::new(); ways.len()];
    for round in 0..options.rounds {
        let mut line = format!("{label}: round {}/{}:", round + 1, options.rounds);
        for i in (0..ways.len()).map(|i| (i + round) % ways.len()) {
            let result = callers[i]
                .round(concurrency, length)
                .await
                .map_err(|e| format!("{label}: {}: {e}", ways[i]))?;
            let _ = write!(
                line,
                " {} {:.0} calls/s {:.2} µs CPU/call;",
                ways[i],
                result.calls_per_second(),
                result.cpu_us_per_call()
            );
            rounds[i].push(result);
        }
        eprintln!("{}", line.trim_end_matches(';'));
    }
    let hand = ways.iter().position(|&w| w == Way::Hand);
    let clients = ways
        .iter()
        .zip(&rounds)
        .map(|(&way, own)| {
            let over_hand: Vec<f64> = match hand {
                Some(hand) if way != Way::Hand => own
                    .iter()
                    .zip(&rounds[hand])
                    .map(|(r, h)| r.cpu_us_per_call() / h.cpu_us_per_call())
                    .collect(),
                _ => Vec::new(),
            };
            let each = |f: fn(&RoundResult) -> f64| own.iter().map(f).collect::<Vec<_>>();
            WayResult {
                way,
                calls_per_second: Spread::of(&each(RoundResult::calls_per_second)),
                cpu_us_per_call: Spread::of(&each(RoundResult::cpu_us_per_call)),
                cpu_per_call_over_hand: (!over_hand.is_empty()).then(|| Spread::of(&over_hand)),
                cpu_per_call_over_hand_rounds: over_hand,
                rounds: own.clone(),
            }
        })
        .collect();
    Ok(CaseResult {
        operation,
        transport,
        concurrency,
        request,
        clients,
    })
}

/// `strata-bench client`: the server in its child process (for the network), the measures,
/// the report on stdout (and as JSON with `--json`).
pub(crate) fn run(options: &ClientOptions) -> Result<(), String> {
    let machine = Machine::probe();
    let pinned = options.pin && child::can_pin();
    let server = if options.transports.contains(&Transport::Network) {
        Some(ChildServer::spawn_client_app(options.workers, pinned)?)
    } else {
        None
    };
    let measured = measure_all(options, server.as_ref(), pinned);
    if let Some(server) = server {
        server.stop();
    }
    let report = ClientReport {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        rounds: options.rounds,
        round_seconds: options.duration.as_secs_f64(),
        warmup_seconds: options.warmup.as_secs_f64(),
        calls_per_round: options.calls,
        server_workers: options.workers,
        pinned,
        target: TARGET,
        cases: measured?,
    };
    print!("{}", markdown(&report, options.concurrency));
    if let Some(path) = &options.json {
        crate::report::write_json(path, &report)?;
    }
    Ok(())
}

/// Every operation over every transport asked for, on a current-thread runtime of this thread.
fn measure_all(
    options: &ClientOptions,
    server: Option<&ChildServer>,
    pinned: bool,
) -> Result<Vec<CaseResult>, String> {
    if pinned {
        child::pin_self(child::CLIENT_CORE)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let pool: Pool =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http();
    let router = strata::Router::new(
        &crate::servers::client_app::routing(),
        &crate::servers::strata_app::config(crate::servers::loopback()),
    )
    .map_err(|e| e.to_string())?;
    let mut cases = Vec::new();
    runtime.block_on(async {
        for &transport in &options.transports {
            for &operation in &options.operations {
                let case = match (transport, server) {
                    (Transport::Network, Some(server)) => {
                        let base = format!("http://{}", server.addr);
                        let concurrency = options.concurrency;
                        match operation {
                            OperationName::Hello => {
                                measure::<Hello, _>(
                                    operation,
                                    transport,
                                    &pool,
                                    &base,
                                    concurrency,
                                    options,
                                )
                                .await
                            }
                            OperationName::Order => {
                                measure::<Orders, _>(
                                    operation,
                                    transport,
                                    &pool,
                                    &base,
                                    concurrency,
                                    options,
                                )
                                .await
                            }
                        }
                    }
                    (Transport::Network, None) => Err("no server".to_owned()),
                    (Transport::Memory, _) => match operation {
                        OperationName::Hello => {
                            measure::<Hello, _>(operation, transport, &router, "", 1, options).await
                        }
                        OperationName::Order => {
                            measure::<Orders, _>(operation, transport, &router, "", 1, options)
                                .await
                        }
                    },
                };
                cases.push(case?);
            }
        }
        Ok::<_, String>(())
    })?;
    Ok(cases)
}

/// Thousands separated by commas.
fn grouped(value: f64) -> String {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let digits = (value.max(0.0).round() as u64).to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The report as Markdown.
fn markdown(report: &ClientReport, concurrency: usize) -> String {
    let m = &report.machine;
    let mut out = String::new();
    let length = match report.calls_per_round {
        Some(calls) => format!("{calls} calls per client and round, and per warm-up"),
        None => format!(
            "{:.1} s per client and round after {:.1} s of warm-up",
            report.round_seconds, report.warmup_seconds
        ),
    };
    let _ = writeln!(
        out,
        "## strata-bench client\n\n{} cores, {}, {}, Linux {}, {}. Server: Strata \
         (`serve client`), {} worker(s){}; client: this process, one thread{}. {} rounds, \
         {length}; {concurrency} calls in flight over the socket, 1 in memory. CPU: this \
         process's, per call.\n",
        m.cores,
        m.cpu,
        m.memory,
        m.kernel,
        m.rustc,
        report.server_workers,
        if report.pinned { ", core 0" } else { "" },
        if report.pinned { ", core 1" } else { "" },
        report.rounds,
    );
    for operation in OperationName::ALL {
        let cases: Vec<_> = report
            .cases
            .iter()
            .filter(|c| c.operation == operation)
            .collect();
        if cases.is_empty() {
            continue;
        }
        let _ = writeln!(out, "### {operation}\n");
        for case in &cases {
            let _ = writeln!(out, "- {}: {}", case.transport, case.request);
        }
        out.push_str(
            "\n| transport | client | calls/s, median (min–max) | CPU µs per call | \
             CPU per call ÷ hand's, per round |\n|---|---|---:|---:|---:|\n",
        );
        for case in &cases {
            for client in &case.clients {
                let spread = &client.calls_per_second;
                let _ = writeln!(
                    out,
                    "| {} | {} | {} ({}–{}) | {} | {} |",
                    case.transport,
                    client.way,
                    grouped(spread.median),
                    grouped(spread.min),
                    grouped(spread.max),
                    client.cpu_us_per_call.show(2),
                    client
                        .cpu_per_call_over_hand
                        .map(|ratio| ratio.show(3))
                        .unwrap_or_default(),
                );
            }
        }
        out.push('\n');
    }
    let network: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.transport == Transport::Network)
        .filter_map(|c| Some((c.operation, c.typed_over_hand()?)))
        .collect();
    if !network.is_empty() {
        let _ = writeln!(
            out,
            "Target (issue 27): the typed client's CPU per call at most {:.2} × the hand \
             client's, over the socket (median of the rounds):",
            report.target
        );
        for (operation, ratio) in network {
            let _ = writeln!(
                out,
                "- {operation}: {} — {}",
                ratio.show(3),
                if ratio.median <= report.target {
                    "met"
                } else {
                    "missed"
                }
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> strata::Router {
        strata::Router::new(
            &crate::servers::client_app::routing(),
            &crate::servers::strata_app::config(crate::servers::loopback()),
        )
        .unwrap()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn in_memory_both_clients_send_the_same_requests_and_read_the_same_outputs() {
        let router = router();
        let hello = preflight::<Hello, _>(&router, "").await.unwrap();
        assert_eq!(
            hello,
            "GET /v1/hello/World, 0 header(s), 0 B body: the same request, byte for byte"
        );
        let order = preflight::<Orders, _>(&router, "").await.unwrap();
        assert!(
            order.starts_with("POST /v1/orders, 1 header(s), "),
            "{order}"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn over_the_socket_too() {
        let running = crate::servers::start_client_app().await.unwrap();
        let pool: Pool =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        let base = format!("http://{}", running.addr);
        let hello = preflight::<Hello, _>(&pool, &base).await.unwrap();
        assert!(hello.ends_with("byte for byte"), "{hello}");
        preflight::<Orders, _>(&pool, &base).await.unwrap();
        running.stop().await;
    }

    #[test]
    fn requests_that_differ_are_refused() {
        let seen = |body: &'static str| Seen {
            method: Method::POST,
            uri: Uri::from_static("/v1/orders"),
            version: Version::HTTP_11,
            headers: HeaderMap::new(),
            body: Bytes::from_static(body.as_bytes()),
        };
        assert!(
            agreement(&seen(r#"{"a":1,"b":2}"#), &seen(r#"{"a":1,"b":2}"#))
                .unwrap()
                .ends_with("byte for byte")
        );
        assert!(
            agreement(&seen(r#"{"a":1,"b":2}"#), &seen(r#"{"b":2,"a":1}"#))
                .unwrap()
                .contains("another order")
        );
        assert!(agreement(&seen(r#"{"a":1,"b":3}"#), &seen(r#"{"b":2,"a":1}"#)).is_err());
        let mut other = seen("{}");
        other.method = Method::PUT;
        assert!(agreement(&other, &seen("{}")).is_err());
    }

    #[test]
    fn spreads_and_numbers() {
        let spread = Spread::of(&[1.0, 3.0, 2.0]);
        assert_eq!((spread.median, spread.min, spread.max), (2.0, 1.0, 3.0));
        assert_eq!(spread.show(1), "2.0 (1.0–3.0)");
        assert_eq!(grouped(1_234_567.4), "1,234,567");
        assert_eq!(grouped(999.0), "999");
    }
}
