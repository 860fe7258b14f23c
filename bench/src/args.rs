//! Command-line arguments.

use std::path::PathBuf;
use std::time::Duration;

use crate::scenario::{Scenario, ServerKind};

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    /// Measure (the default).
    Run(RunOptions),
    /// Serve one server for one scenario until standard input closes (the child process).
    Serve {
        server: ServerKind,
        scenario: Scenario,
        workers: usize,
    },
    /// Serve the soak server until standard input closes (the soak's child process).
    ServeSoak { workers: usize },
    /// The child's side of the ceiling reference (`serve fixed`).
    ServeFixed { workers: usize },
    /// The server of `strata-bench client` until standard input closes (`serve client`).
    ServeClient { workers: usize },
    /// The typed Rust client against a hand-written one, over a socket and in memory.
    Client(ClientOptions),
    /// Hello behind each of issue 28's middleware, against hello alone.
    Middleware(MiddlewareOptions),
    /// A server of `strata-bench middleware` until standard input closes (`serve middleware`).
    ServeMiddleware {
        server: crate::middleware::Server,
        workers: usize,
        /// Where a traced server exports its spans (`--otlp <url>`).
        otlp: Option<String>,
    },
    /// Mixed traffic against one Strata server for a long time, its memory sampled.
    Soak(SoakOptions),
    /// Start every server and run only the pre-flight checks, printing every answer.
    Preflight { scenarios: Vec<Scenario> },
    /// Only the load generator, against a server started elsewhere (for profiling).
    Load {
        addr: std::net::SocketAddr,
        target: LoadTarget,
        connections: usize,
        duration: Duration,
    },
    /// A file uploaded over and over to each server's upload endpoint (`uploads.rs`).
    Uploads(crate::uploads::UploadOptions),
    /// Builds of the Strata server side by side (`compare.rs`).
    Compare(crate::compare::CompareOptions),
    /// A server of `strata-bench uploads` until standard input closes (`serve upload`).
    ServeUpload {
        server: ServerKind,
        mode: crate::servers::upload_app::Mode,
        workers: usize,
    },
    /// Server-sent events fanned out to many subscribers (`fanout.rs`).
    Fanout(crate::fanout::FanoutOptions),
    /// A server of `strata-bench fanout` until standard input closes (`serve fanout`).
    ServeFanout { server: ServerKind, workers: usize },
    /// hyper, axum and Strata over h2c, h2 and HTTP/1.1 over TLS (`protocols.rs`).
    Protocols(crate::protocols::ProtocolsOptions),
    /// A server of `strata-bench protocols` until standard input closes (`serve protocols`).
    ServeProtocols(crate::protocols::ServeOptions),
    /// Latency at fixed request rates, open loop (`latency.rs`).
    Latency(crate::latency::LatencyOptions),
    /// Print the usage.
    Help,
}

/// What `strata-bench load` sends: a scenario's request, or a middleware variant's
/// (`middleware:<variant>`, to a `serve middleware` server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoadTarget {
    Scenario(Scenario),
    Middleware(crate::middleware::Variant),
}

impl LoadTarget {
    pub(crate) fn request(self) -> crate::scenario::RequestSpec {
        match self {
            LoadTarget::Scenario(scenario) => scenario.request(),
            LoadTarget::Middleware(variant) => variant.request(),
        }
    }

    pub(crate) fn expected_status(self) -> http::StatusCode {
        match self {
            LoadTarget::Scenario(scenario) => scenario.expected_status(),
            LoadTarget::Middleware(variant) => variant.expected_status(),
        }
    }
}

impl std::fmt::Display for LoadTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadTarget::Scenario(scenario) => scenario.fmt(f),
            LoadTarget::Middleware(variant) => write!(f, "middleware:{variant}"),
        }
    }
}

impl std::str::FromStr for LoadTarget {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.strip_prefix("middleware:") {
            Some(variant) => Ok(LoadTarget::Middleware(variant.parse()?)),
            None => Ok(LoadTarget::Scenario(s.parse()?)),
        }
    }
}

/// Which load generator a measuring run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GeneratorChoice {
    /// wrk when it is on `PATH`, else the internal one.
    Auto,
    /// wrk (an error when it is missing).
    Wrk,
    /// The internal generator (`load.rs`).
    Internal,
}

impl std::str::FromStr for GeneratorChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "wrk" => Ok(Self::Wrk),
            "internal" => Ok(Self::Internal),
            _ => Err(format!("unknown generator {s:?} (auto, wrk or internal)")),
        }
    }
}

/// Options of a measuring run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunOptions {
    pub(crate) quick: bool,
    pub(crate) scenarios: Vec<Scenario>,
    pub(crate) connections: usize,
    /// Length of one measured round.
    pub(crate) duration: Duration,
    /// Warm-up per server and scenario, before the rounds.
    pub(crate) warmup: Duration,
    pub(crate) rounds: usize,
    /// Server runtime worker threads.
    pub(crate) workers: usize,
    /// Load generator runtime worker threads.
    pub(crate) client_threads: usize,
    pub(crate) json: PathBuf,
    /// Pin servers and the load generator to different cores (with `taskset`).
    pub(crate) pin: bool,
    /// The load generator.
    pub(crate) generator: GeneratorChoice,
    /// The servers that are other programs: which of them to measure.
    pub(crate) others: OtherServers,
}

/// Which of the servers that are other programs a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OtherServers {
    /// express-zod-api (on by default; `--no-ezapi` skips it).
    pub(crate) ezapi: bool,
    /// The quick start example as shipped (`--quick-start`).
    pub(crate) quick_start: bool,
}

impl RunOptions {
    fn defaults(quick: bool) -> Self {
        let (duration, warmup, rounds) = if quick {
            (Duration::from_millis(400), Duration::from_millis(300), 3)
        } else {
            (Duration::from_secs(2), Duration::from_secs(2), 5)
        };
        Self {
            quick,
            scenarios: Scenario::ALL.to_vec(),
            connections: 64,
            duration,
            warmup,
            rounds,
            workers: 1,
            client_threads: 1,
            json: PathBuf::from("target/strata-bench.json"),
            pin: true,
            generator: GeneratorChoice::Auto,
            others: OtherServers {
                ezapi: true,
                quick_start: false,
            },
        }
    }
}

/// Options of `strata-bench soak`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SoakOptions {
    /// How long the load runs.
    pub(crate) duration: Duration,
    /// Keep-alive connections of the load generator.
    pub(crate) connections: usize,
    /// How often the server's RSS is sampled.
    pub(crate) sample: Duration,
    /// Server runtime worker threads.
    pub(crate) workers: usize,
    /// Load generator runtime worker threads.
    pub(crate) client_threads: usize,
    /// Where to write the summary as JSON, if anywhere.
    pub(crate) json: Option<PathBuf>,
}

impl Default for SoakOptions {
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(600),
            connections: 32,
            sample: Duration::from_secs(10),
            workers: 1,
            client_threads: 1,
            json: None,
        }
    }
}

/// Options of `strata-bench client`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClientOptions {
    /// Length of one measured round of one client.
    pub(crate) duration: Duration,
    /// Warm-up of each client, before the rounds.
    pub(crate) warmup: Duration,
    /// Measured rounds per client.
    pub(crate) rounds: usize,
    /// Calls in flight at once over the socket (tasks on the client's one thread).
    pub(crate) concurrency: usize,
    /// Rounds and warm-ups of this many calls each instead of `duration` and `warmup`.
    pub(crate) calls: Option<u64>,
    /// Server runtime worker threads.
    pub(crate) workers: usize,
    /// Pin the server and this process to different cores (with `taskset`).
    pub(crate) pin: bool,
    /// The operations measured (default both).
    pub(crate) operations: Vec<crate::client::OperationName>,
    /// The clients measured (default all).
    pub(crate) ways: Vec<crate::client::Way>,
    /// Over the socket, in memory, or both (default).
    pub(crate) transports: Vec<crate::client::Transport>,
    /// Where to write the results as JSON, if anywhere.
    pub(crate) json: Option<PathBuf>,
}

impl ClientOptions {
    fn defaults(quick: bool) -> Self {
        let (duration, warmup, rounds) = if quick {
            (Duration::from_millis(500), Duration::from_millis(300), 3)
        } else {
            (Duration::from_secs(2), Duration::from_secs(1), 5)
        };
        Self {
            duration,
            warmup,
            rounds,
            concurrency: 16,
            calls: None,
            workers: 1,
            pin: true,
            operations: crate::client::OperationName::ALL.to_vec(),
            ways: crate::client::Way::ALL.to_vec(),
            transports: crate::client::Transport::ALL.to_vec(),
            json: None,
        }
    }
}

/// Options of `strata-bench middleware`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MiddlewareOptions {
    /// Length of one measured round of one variant.
    pub(crate) duration: Duration,
    /// Warm-up of each variant, before the rounds.
    pub(crate) warmup: Duration,
    /// Measured rounds per variant.
    pub(crate) rounds: usize,
    /// Keep-alive connections of the load generator.
    pub(crate) connections: usize,
    /// The load generator.
    pub(crate) generator: GeneratorChoice,
    /// The variants measured (plain always).
    pub(crate) variants: Vec<crate::middleware::Variant>,
    /// Server runtime worker threads.
    pub(crate) workers: usize,
    /// Pin the servers and the load generator to different cores (with `taskset`).
    pub(crate) pin: bool,
    /// Also plain hello from another build of this program (`serve middleware plain`).
    pub(crate) plain_from: Option<PathBuf>,
    /// Where to write the results as JSON, if anywhere.
    pub(crate) json: Option<PathBuf>,
}

impl MiddlewareOptions {
    fn defaults(quick: bool) -> Self {
        let (duration, warmup, rounds) = if quick {
            (Duration::from_millis(500), Duration::from_millis(300), 3)
        } else {
            (Duration::from_secs(2), Duration::from_secs(2), 7)
        };
        Self {
            duration,
            warmup,
            rounds,
            connections: 64,
            generator: GeneratorChoice::Auto,
            variants: crate::middleware::Variant::ALL.to_vec(),
            workers: 1,
            pin: true,
            plain_from: None,
            json: None,
        }
    }
}

/// The usage text.
pub(crate) const USAGE: &str = "\
strata-bench: Strata against plain hyper, axum and express-zod-api over loopback

USAGE (a measuring command refuses to start while another strata-bench process runs;
STRATA_BENCH_ALLOW_OTHERS=1 measures anyway):
    strata-bench [OPTIONS]
    strata-bench preflight [--scenario <names>]
                                    start every server, run only the pre-flight checks and
                                    print every answer (express-zod-api must be installed)
    strata-bench serve <hyper|axum|strata> <scenario> [--workers N]
    strata-bench load <addr> <scenario|middleware:variant> [--connections N] [--duration <time>]
    strata-bench soak [--duration <time>] [--connections N] [--sample <time>] [--workers N]
                      [--client-threads N] [--json <path>]
    strata-bench serve soak [--workers N]
    strata-bench serve fixed [--workers N]    the load generator's ceiling: fixed bytes, no HTTP
                                              stack (measure it with `load <addr> hello`)
    strata-bench client [--quick] [--duration <time>] [--warmup <time>] [--rounds N]
                        [--concurrency N] [--calls N] [--workers N] [--no-pin] [--json <path>]
                        [--operation hello,order] [--way hand,typed,typed-untimed]
                        [--transport network,memory]
    strata-bench serve client [--workers N]
    strata-bench middleware [--quick] [--duration <time>] [--warmup <time>] [--rounds N]
                            [--connections N] [--generator <which>] [--workers N] [--no-pin]
                            [--variant plain,noop,one-header,cookies,cache,cache-304,
                            rate-limit,rate-limit-headers,metrics,tracing-0,tracing-1,
                            plain+cookie-header,plain+if-none-match]
                            [--plain-from <binary>] [--json <path>]
    strata-bench serve middleware <plain|noop|one-header|cookies|cache|
                             rate-limit|rate-limit-headers|metrics|tracing-0|tracing-1>
                             [--workers N] [--otlp <url>]
    strata-bench protocols [--quick] [--duration <time>] [--warmup <time>] [--rounds N]
                           [--connections N] [--streams N] [--scenario <names>]
                           [--protocol h2c,h2,h1-tls] [--workers N] [--no-pin] [--json <path>]
    strata-bench serve protocols <hyper|axum|strata> <scenario> --cert <pem> --key <pem>
                                 [--workers N]
    strata-bench latency [--quick] [--scenario <names>] [--rates 25%,75%|5000,20k]
                         [--connections N] [--duration <time>] [--warmup <time>]
                         [--calibration <time>] [--rounds N] [--workers N] [--no-pin]
                         [--json <path>]

OPTIONS:
    --quick                 short rounds (the whole run in ~2 minutes with wrk, ~1 without)
    --scenario <names>      scenarios to run, repeatable or comma-separated (default: all):
                            hello, validated-post, auth-param, invalid, not-found,
                            wrong-method, routes-10k, large-input (a ~100 KiB validated
                            POST), large-output (a ~1 MiB answer); express-zod-api does not
                            serve the large ones yet
    --generator <which>     auto (wrk when it is on PATH, else internal), wrk or internal
                            (default auto); wrk runs whole seconds (rounds rounded up)
    --no-ezapi              do not measure express-zod-api (bench/ezapi)
    --quick-start           also measure the quick start example as shipped
                            (target/release/examples/quick_start: hello, not-found, wrong-method)
    --connections <N>       keep-alive connections of the load generator (default 64)
    --duration <time>       one measured round, e.g. 2s or 500ms (default 2s, quick 400ms)
    --warmup <time>         warm-up per server and scenario (default 2s, quick 300ms)
    --rounds <N>            measured rounds per server (default 5, quick 3)
    --workers <N>           server runtime worker threads of the Rust servers (default 1)
    --client-threads <N>    internal load generator worker threads (default 1)
    --json <path>           where to write the results (default target/strata-bench.json)
    --no-pin                do not pin servers and load generator to different cores

SOAK: mixed traffic (200s, 400s, 404s, 413s, uploads) against one Strata server in production
mode (16 KiB body limit, 64 KiB file limit), its RSS sampled; fails on any wrong status or
transport error, or when RSS grows more than 10 % (at least 2 MiB) from the first sample under
load to the last.
    --duration <time>       how long the load runs (default 600s)
    --connections <N>       keep-alive connections (default 32)
    --sample <time>         RSS sampling interval (default 10s)
    --workers <N>           server runtime worker threads (default 1)
    --client-threads <N>    load generator worker threads (default 1)
    --json <path>           also write the summary as JSON

CLIENT: the typed Rust client (strata::client::Client over hyper-util's pooled client) against
a hand-written client on the same pool sending the same requests to the same Strata server
(`serve client`, pinned to core 0), calls per second and this process's CPU per call (pinned
to core 1, one thread); then both over the Router in memory. Rounds alternate the clients.
    --duration <time>       one measured round of one client (default 2s, quick 500ms)
    --warmup <time>         warm-up of each client (default 1s, quick 300ms)
    --rounds <N>            measured rounds per client (default 5, quick 3)
    --concurrency <N>       calls in flight over the socket (default 16; in memory: 1)
    --calls <N>             each warm-up and round makes N calls instead of lasting a time
                            (instructions per call under valgrind: scripts/profile-client.sh)
    --workers <N>           server runtime worker threads (default 1)
    --operation <names>     hello (GET /v1/hello/:name), order (POST /v1/orders, ~1 KiB)
    --way <names>           hand, typed (the client's defaults), typed-untimed (no timeout)
    --transport <names>     network, memory
    --json <path>           also write every round as JSON

MIDDLEWARE: hello (GET /v1/hello?name=World, the bench app's endpoint alone) with no middleware
and behind each of issue 28's, one Strata server per variant (`serve middleware`, pinned to
core 0): noop (a middleware that does nothing: the stage's own cost), one-header (one that
adds a fixed response header), cookies (a Cookie header of three cookies, the handler reads one), cache (a policy,
the handler's ETag; cache-304: If-None-Match matches), rate-limit (client address, a quota
never reached, its headers on a 429 only), rate-limit-headers (the same, headers on every response); metrics (plain
hello with the server's metrics on), tracing-0 and tracing-1 (metrics on, and traces sampled at
0 and at 1, exported over OTLP/HTTP to a receiver in this process that counts the spans; the
`otel` feature, on by default); plain+cookie-header and plain+if-none-match (plain's server sent
cookies' and cache-304's requests: their baselines, so that hyper's parsing of a longer head is
not counted as the middleware's). Rounds load each variant once, rotating; per round, CPU per
request and req/s over plain's and over the baseline's. The target: each at most 1.05 × its
baseline.
    --duration <time>       one measured round of one variant (default 2s, quick 500ms)
    --warmup <time>         warm-up of each variant (default 2s, quick 300ms)
    --rounds <N>            measured rounds per variant (default 7, quick 3)
    --connections <N>       keep-alive connections (default 64)
    --generator <which>     auto, wrk or internal (default auto)
    --variant <names>       plain, noop (a middleware doing nothing), one-header (one adding
                            a fixed response header), cookies, cache, cache-304, rate-limit,
                            rate-limit-headers, metrics, tracing-0, tracing-1,
                            plain+cookie-header, plain+if-none-match (default all; plain and
                            each variant's baseline always run; also --server)
    --plain-from <binary>   also plain hello from another build of strata-bench (its `serve
                            middleware plain`): a change to the server measured alongside
    --workers <N>           server runtime worker threads (default 1)
    --json <path>           also write every round as JSON

PROTOCOLS: hyper, axum and Strata over h2c (HTTP/2 with prior knowledge), h2 (HTTP/2 over TLS,
ALPN) and h1-tls (HTTP/1.1 over TLS), in the same run, with h2load (Debian's nghttp2-client,
scripts/install-tools.sh) pinned to core 1 and each server (`serve protocols`) to core 0. A
self-signed certificate for 127.0.0.1 and localhost is made at start. Per protocol: req/s, the
server's CPU time per request (utime + stime), h2load's request time, Strata ÷ axum and ÷ hyper.
    --duration <time>       one measured run, whole seconds (default 3s, quick 1s)
    --warmup <time>         warm-up of each server over each protocol (default 2s, quick 1s)
    --rounds <N>            measured rounds (default 3, quick 2)
    --connections <N>       h2load connections (default 64)
    --streams <N>           concurrent streams per HTTP/2 connection (default 10; HTTP/1.1: 1)
    --scenario <names>      scenarios answered 2xx (default hello,validated-post)
    --protocol <names>      h2c, h2, h1-tls (default all)
    --workers <N>           server runtime worker threads (default 1)
    --no-pin                do not pin servers and h2load to different cores
    --json <path>           also write every run as JSON
LATENCY: `strata-bench latency [--quick] [--scenario <names>] [--rates <list>] ...`: latency at
fixed request rates below saturation (p50, p99, p99.9, max) for hyper, axum and Strata, open
loop: requests sent on a schedule over the connections, each one's latency from the time it
was due (coordinated omission corrected, as wrk2). Per scenario: pre-flight, a closed-loop
warm-up and calibration round per server (its saturation), then at each rate rounds that load
each server in turn, rotating. A round more than 2 % short of its rate is flagged.
    --scenario <names>      default hello,validated-post
    --rates <list>          req/s (20000, 20k) or shares of the slowest server's closed-loop
                            saturation (25%), comma-separated (default 25%,75%)
    --connections <N>       keep-alive connections the rate is spread over (default 64)
    --duration <time>       one round of one server at one rate (default 5s, quick 1s)
    --warmup <time>         closed-loop warm-up per server (default 1s, quick 300ms)
    --calibration <time>    closed-loop saturation round per server (default 2s, quick 500ms)
    --rounds <N>            rounds per server and rate (default 5, quick 3)
    --workers <N>           server runtime worker threads (default 1)
    --no-pin                do not pin the servers and the generator to different cores
    --json <path>           also write every round as JSON
";

/// `2`, `2s`, `1.5s`, `500ms`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {text:?} (e.g. 2s, 500ms)");
    let (number, scale) = if let Some(ms) = text.strip_suffix("ms") {
        (ms, 1e-3)
    } else {
        (text.strip_suffix('s').unwrap_or(text), 1.0)
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    if !(value.is_finite() && value > 0.0) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(value * scale))
}

pub(crate) fn positive(name: &str, text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name} needs a positive number, got {text:?}")),
    }
}

/// Parses the arguments after the program name.
pub(crate) fn parse<I, S>(args: I) -> Result<Command, String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let args: Vec<String> = args.into_iter().map(Into::into).collect();
    if args.first().map(String::as_str) == Some("soak") {
        return parse_soak(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("client") {
        return parse_client(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("middleware") {
        return parse_middleware(&args[1..]);
    }
    if let Some(command) = parse_streams(&args) {
        return command;
    }
    if args.first().map(String::as_str) == Some("protocols") {
        return crate::protocols::parse(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("serve")
        && args.get(1).map(String::as_str) == Some("protocols")
    {
        return crate::protocols::parse_serve(&args[2..]);
    }
    if args.first().map(String::as_str) == Some("latency") {
        return crate::latency::parse(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("serve")
        && args.get(1).map(String::as_str) == Some("middleware")
    {
        return parse_serve_middleware(&args[2..]);
    }
    if args.first().map(String::as_str) == Some("serve")
        && let Some(special @ ("soak" | "fixed" | "client")) = args.get(1).map(String::as_str)
    {
        let workers = match (args.get(2).map(String::as_str), args.get(3)) {
            (None, _) => 1,
            (Some("--workers"), Some(n)) if args.len() == 4 => positive("--workers", n)?,
            _ => return Err(format!("unexpected arguments: {:?}", &args[2..])),
        };
        return Ok(match special {
            "soak" => Command::ServeSoak { workers },
            "client" => Command::ServeClient { workers },
            _ => Command::ServeFixed { workers },
        });
    }
    if args.first().map(String::as_str) == Some("preflight") {
        return parse_preflight(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("serve") {
        let server: ServerKind = args.get(1).ok_or("serve needs a server")?.parse()?;
        if !server.in_process() {
            return Err(format!(
                "serve runs hyper, axum or strata; {server} is another program"
            ));
        }
        let scenario = args.get(2).ok_or("serve needs a scenario")?.parse()?;
        let workers = match (args.get(3).map(String::as_str), args.get(4)) {
            (None, _) => 1,
            (Some("--workers"), Some(n)) if args.len() == 5 => positive("--workers", n)?,
            _ => return Err(format!("unexpected arguments: {:?}", &args[3..])),
        };
        return Ok(Command::Serve {
            server,
            scenario,
            workers,
        });
    }
    if args.first().map(String::as_str) == Some("load") {
        let addr = args.get(1).ok_or("load needs an address")?;
        let addr = addr
            .parse()
            .map_err(|e| format!("bad address {addr:?}: {e}"))?;
        let target = args.get(2).ok_or("load needs a scenario")?.parse()?;
        let (mut connections, mut duration) = (64, Duration::from_secs(10));
        let mut rest = args[3..].iter();
        while let Some(flag) = rest.next() {
            let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--connections" => connections = positive(flag, value)?,
                "--duration" => duration = parse_duration(value)?,
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        return Ok(Command::Load {
            addr,
            target,
            connections,
            duration,
        });
    }
    parse_run(&args)
}

/// `uploads`, `fanout`, `serve upload` and `serve fanout`, when `args` are one of them.
fn parse_streams(args: &[String]) -> Option<Result<Command, String>> {
    if args.first().map(String::as_str) == Some("compare") {
        if args.iter().any(|a| a == "-h" || a == "--help") {
            return Some(Ok(Command::Help));
        }
        return Some(crate::compare::parse(&args[1..]).map(Command::Compare));
    }
    if args.first().map(String::as_str) == Some("uploads") {
        if args[1..].iter().any(|a| a == "-h" || a == "--help") {
            return Some(Ok(Command::Help));
        }
        return Some(crate::uploads::parse(&args[1..]).map(Command::Uploads));
    }
    if args.first().map(String::as_str) == Some("fanout") {
        if args[1..].iter().any(|a| a == "-h" || a == "--help") {
            return Some(Ok(Command::Help));
        }
        return Some(crate::fanout::parse(&args[1..]).map(Command::Fanout));
    }
    if args.first().map(String::as_str) == Some("serve")
        && args.get(1).map(String::as_str) == Some("fanout")
    {
        return Some(
            serve_special("fanout", &args[2..])
                .map(|(server, workers)| Command::ServeFanout { server, workers }),
        );
    }
    if args.first().map(String::as_str) == Some("serve")
        && args.get(1).map(String::as_str) == Some("upload")
    {
        // `serve upload <server> <mode> [--workers N]`.
        let mode = match args.get(3).map(|mode| mode.parse()) {
            Some(Ok(mode)) => mode,
            Some(Err(e)) => return Some(Err(e)),
            None => return Some(Err("serve upload needs a server and a mode".to_owned())),
        };
        let rest: Vec<String> = args[2..3].iter().chain(&args[4..]).cloned().collect();
        return Some(serve_special("upload", &rest).map(|(server, workers)| {
            Command::ServeUpload {
                server,
                mode,
                workers,
            }
        }));
    }
    None
}

/// `serve <what> <server> [--workers N]`'s server and workers (`args` after `<what>`).
fn serve_special(what: &str, args: &[String]) -> Result<(ServerKind, usize), String> {
    let server: ServerKind = args
        .first()
        .ok_or_else(|| format!("serve {what} needs a server"))?
        .parse()?;
    let workers = match (args.get(1).map(String::as_str), args.get(2)) {
        (None, _) => 1,
        (Some("--workers"), Some(n)) if args.len() == 3 => positive("--workers", n)?,
        _ => return Err(format!("unexpected arguments: {:?}", &args[1..])),
    };
    Ok((server, workers))
}

/// A measuring run's options.
fn parse_run(args: &[String]) -> Result<Command, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut options = RunOptions::defaults(quick);
    let mut scenarios = Vec::new();
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
            "-h" | "--help" => return Ok(Command::Help),
            "--no-pin" => options.pin = false,
            "--no-ezapi" => options.others.ezapi = false,
            "--quick-start" => options.others.quick_start = true,
            "--generator" => options.generator = value()?.parse()?,
            "--scenario" | "--scenarios" => add_scenarios(&mut scenarios, &value()?)?,
            "--connections" => options.connections = positive(name, &value()?)?,
            "--duration" => options.duration = parse_duration(&value()?)?,
            "--warmup" => options.warmup = parse_duration(&value()?)?,
            "--rounds" => options.rounds = positive(name, &value()?)?,
            "--workers" => options.workers = positive(name, &value()?)?,
            "--client-threads" => options.client_threads = positive(name, &value()?)?,
            "--json" => options.json = PathBuf::from(value()?),
            other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
        }
    }
    if !scenarios.is_empty() {
        scenarios.sort();
        options.scenarios = scenarios;
    }
    Ok(Command::Run(options))
}

/// Adds the comma-separated scenario names of `list` to `scenarios`, each once.
pub(crate) fn add_scenarios(scenarios: &mut Vec<Scenario>, list: &str) -> Result<(), String> {
    for scenario in list.split(',').filter(|s| !s.is_empty()) {
        let scenario: Scenario = scenario.trim().parse()?;
        if !scenarios.contains(&scenario) {
            scenarios.push(scenario);
        }
    }
    Ok(())
}

/// `--flag=value` as `("--flag", Some("value"))`; anything else as itself with no value.
pub(crate) fn split_flag(arg: &str) -> (&str, Option<String>) {
    match arg.split_once('=') {
        Some((name, value)) if name.starts_with("--") => (name, Some(value.to_owned())),
        _ => (arg, None),
    }
}

/// `preflight`'s options (after `preflight`): `--scenario <names>`, repeatable.
fn parse_preflight(args: &[String]) -> Result<Command, String> {
    let mut scenarios = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let (name, inline) = split_flag(arg);
        match name {
            "-h" | "--help" => return Ok(Command::Help),
            "--scenario" | "--scenarios" => {
                let value = inline
                    .or_else(|| iter.next().cloned())
                    .ok_or_else(|| format!("{name} needs a value"))?;
                add_scenarios(&mut scenarios, &value)?;
            }
            other => return Err(format!("unknown preflight argument {other:?}\n\n{USAGE}")),
        }
    }
    scenarios.sort();
    if scenarios.is_empty() {
        scenarios = Scenario::ALL.to_vec();
    }
    Ok(Command::Preflight { scenarios })
}

/// `client`'s options (after `client`): `--flag value` or `--flag=value`.
fn parse_client(args: &[String]) -> Result<Command, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut options = ClientOptions::defaults(quick);
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
            "-h" | "--help" => return Ok(Command::Help),
            "--no-pin" => options.pin = false,
            "--duration" => options.duration = parse_duration(&value()?)?,
            "--warmup" => options.warmup = parse_duration(&value()?)?,
            "--rounds" => options.rounds = positive(name, &value()?)?,
            "--concurrency" => options.concurrency = positive(name, &value()?)?,
            "--calls" => options.calls = Some(positive(name, &value()?)? as u64),
            "--workers" => options.workers = positive(name, &value()?)?,
            "--operation" | "--operations" => options.operations = list(&value()?)?,
            "--way" | "--ways" => options.ways = list(&value()?)?,
            "--transport" | "--transports" => options.transports = list(&value()?)?,
            "--json" => options.json = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown client argument {other:?}\n\n{USAGE}")),
        }
    }
    Ok(Command::Client(options))
}

/// `serve middleware`'s arguments (after `middleware`): `<server> [--workers N] [--otlp <url>]`.
fn parse_serve_middleware(args: &[String]) -> Result<Command, String> {
    let server = args
        .first()
        .ok_or("serve middleware needs a server")?
        .parse()?;
    let (mut workers, mut otlp) = (1, None);
    let mut rest = args[1..].iter();
    while let Some(flag) = rest.next() {
        match (flag.as_str(), rest.next()) {
            ("--workers", Some(n)) => workers = positive("--workers", n)?,
            ("--otlp", Some(url)) => otlp = Some(url.clone()),
            _ => return Err(format!("unexpected arguments: {:?}", &args[1..])),
        }
    }
    Ok(Command::ServeMiddleware {
        server,
        workers,
        otlp,
    })
}

/// `middleware`'s options (after `middleware`): `--flag value` or `--flag=value`.
fn parse_middleware(args: &[String]) -> Result<Command, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut options = MiddlewareOptions::defaults(quick);
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
            "-h" | "--help" => return Ok(Command::Help),
            "--no-pin" => options.pin = false,
            "--duration" => options.duration = parse_duration(&value()?)?,
            "--warmup" => options.warmup = parse_duration(&value()?)?,
            "--rounds" => options.rounds = positive(name, &value()?)?,
            "--connections" => options.connections = positive(name, &value()?)?,
            "--generator" => options.generator = value()?.parse()?,
            "--workers" => options.workers = positive(name, &value()?)?,
            // `--server`: the name `--server plain,metrics,tracing-0,tracing-1` reads as.
            "--variant" | "--variants" | "--server" | "--servers" => {
                options.variants = list(&value()?)?;
            }
            "--plain-from" => options.plain_from = Some(PathBuf::from(value()?)),
            "--json" => options.json = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown middleware argument {other:?}\n\n{USAGE}")),
        }
    }
    Ok(Command::Middleware(options))
}

/// The comma-separated names of `text`, each once, in their declared order.
fn list<T>(text: &str) -> Result<Vec<T>, String>
where
    T: std::str::FromStr<Err = String> + Ord,
{
    let mut names = Vec::new();
    for name in text.split(',').filter(|s| !s.trim().is_empty()) {
        names.push(name.trim().parse::<T>()?);
    }
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Err(format!("{text:?} names nothing"));
    }
    Ok(names)
}

/// `soak`'s options (after `soak`): `--flag value` or `--flag=value`.
fn parse_soak(args: &[String]) -> Result<Command, String> {
    let mut options = SoakOptions::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let (name, inline) = split_flag(arg);
        match name {
            "-h" | "--help" => return Ok(Command::Help),
            "--duration" | "--connections" | "--sample" | "--workers" | "--client-threads"
            | "--json" => {}
            other => return Err(format!("unknown soak argument {other:?}\n\n{USAGE}")),
        }
        let value = inline
            .or_else(|| iter.next().cloned())
            .ok_or_else(|| format!("{name} needs a value"))?;
        match name {
            "--duration" => options.duration = parse_duration(&value)?,
            "--connections" => options.connections = positive(name, &value)?,
            "--sample" => options.sample = parse_duration(&value)?,
            "--workers" => options.workers = positive(name, &value)?,
            "--client-threads" => options.client_threads = positive(name, &value)?,
            _ => options.json = Some(PathBuf::from(value)),
        }
    }
    Ok(Command::Soak(options))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> RunOptions {
        match parse(args.iter().copied()) {
            Ok(Command::Run(options)) => options,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn defaults_and_quick() {
        let full = run(&[]);
        assert_eq!(full.scenarios, Scenario::ALL.to_vec());
        assert_eq!((full.connections, full.rounds, full.workers), (64, 5, 1));
        assert!(full.pin);
        assert_eq!(full.generator, GeneratorChoice::Auto);
        assert!(full.others.ezapi && !full.others.quick_start);
        let quick = run(&["--quick"]);
        assert!(quick.quick);
        assert!(quick.duration < full.duration && quick.rounds <= full.rounds);
    }

    #[test]
    fn options() {
        let options = run(&[
            "--scenario",
            "routes-10k,hello",
            "--scenario=invalid",
            "--connections",
            "8",
            "--duration",
            "250ms",
            "--json",
            "/tmp/x.json",
            "--no-pin",
            "--quick",
            "--generator=internal",
            "--no-ezapi",
            "--quick-start",
        ]);
        assert_eq!(
            options.scenarios,
            vec![Scenario::Hello, Scenario::Invalid, Scenario::Routes10k]
        );
        assert_eq!(options.connections, 8);
        assert_eq!(options.duration, Duration::from_millis(250));
        assert_eq!(options.json, PathBuf::from("/tmp/x.json"));
        assert!(!options.pin && options.quick);
        assert_eq!(options.generator, GeneratorChoice::Internal);
        assert!(!options.others.ezapi && options.others.quick_start);
        assert_eq!(run(&["--generator", "wrk"]).generator, GeneratorChoice::Wrk);
    }

    #[test]
    fn preflight() {
        assert_eq!(
            parse(["preflight"]),
            Ok(Command::Preflight {
                scenarios: Scenario::ALL.to_vec()
            })
        );
        assert_eq!(
            parse([
                "preflight",
                "--scenario",
                "invalid,hello",
                "--scenario=invalid"
            ]),
            Ok(Command::Preflight {
                scenarios: vec![Scenario::Hello, Scenario::Invalid]
            })
        );
        assert!(parse(["preflight", "--quick"]).is_err());
        assert!(parse(["preflight", "--scenario"]).is_err());
    }

    #[test]
    fn usage_names_every_option() {
        for option in [
            "--generator <which>",
            "--no-ezapi",
            "--quick-start",
            "strata-bench preflight",
            "strata-bench client",
            "--concurrency <N>",
            "--scenario <names>",
            "--no-pin",
        ] {
            assert!(USAGE.contains(option), "{option}");
        }
        for scenario in Scenario::ALL {
            assert!(USAGE.contains(scenario.name()), "{scenario}");
        }
        assert_eq!(parse(["--help"]), Ok(Command::Help));
    }

    #[test]
    fn mistakes_are_reported() {
        for args in [
            &["--scenario", "nope"][..],
            &["--connections", "0"],
            &["--connections"],
            &["--duration", "fast"],
            &["--frobnicate"],
            &["serve", "rocket", "hello"],
            &["serve", "strata"],
            &["serve", "ezapi", "hello"],
            &["serve", "quick-start", "hello"],
            &["--generator", "ab"],
            &["--generator"],
        ] {
            assert!(parse(args.iter().copied()).is_err(), "{args:?}");
        }
    }

    #[test]
    fn soak() {
        assert_eq!(
            parse(["soak"]),
            Ok(Command::Soak(SoakOptions {
                duration: Duration::from_secs(600),
                connections: 32,
                sample: Duration::from_secs(10),
                workers: 1,
                client_threads: 1,
                json: None,
            }))
        );
        assert_eq!(
            parse([
                "soak",
                "--duration",
                "30",
                "--connections=4",
                "--sample",
                "2s",
                "--workers",
                "2",
                "--json",
                "/tmp/soak.json",
            ]),
            Ok(Command::Soak(SoakOptions {
                duration: Duration::from_secs(30),
                connections: 4,
                sample: Duration::from_secs(2),
                workers: 2,
                client_threads: 1,
                json: Some(PathBuf::from("/tmp/soak.json")),
            }))
        );
        assert_eq!(parse(["soak", "--help"]), Ok(Command::Help));
        assert_eq!(
            parse(["serve", "soak", "--workers", "3"]),
            Ok(Command::ServeSoak { workers: 3 })
        );
        assert_eq!(
            parse(["serve", "fixed"]),
            Ok(Command::ServeFixed { workers: 1 })
        );
        for args in [
            &["soak", "--connections", "0"][..],
            &["soak", "--sample"],
            &["soak", "--duration", "forever"],
            &["soak", "--quick"],
            &["soak", "600"],
            &["serve", "soak", "--threads", "2"],
        ] {
            assert!(parse(args.iter().copied()).is_err(), "{args:?}");
        }
    }

    #[test]
    fn client() {
        use crate::client::{OperationName, Transport, Way};
        let Ok(Command::Client(defaults)) = parse(["client"]) else {
            panic!("client");
        };
        assert_eq!(defaults.rounds, 5);
        assert_eq!(defaults.concurrency, 16);
        assert_eq!(defaults.ways, Way::ALL.to_vec());
        assert!(defaults.pin && defaults.json.is_none());
        let Ok(Command::Client(options)) = parse([
            "client",
            "--quick",
            "--rounds=7",
            "--calls",
            "300",
            "--concurrency",
            "4",
            "--way",
            "typed,hand",
            "--operation=order",
            "--transport",
            "memory",
            "--no-pin",
            "--json",
            "/tmp/c.json",
        ]) else {
            panic!("client options");
        };
        assert_eq!((options.rounds, options.concurrency), (7, 4));
        assert_eq!((defaults.calls, options.calls), (None, Some(300)));
        assert!(options.duration < defaults.duration);
        assert_eq!(options.ways, [Way::Hand, Way::Typed]);
        assert_eq!(options.operations, [OperationName::Order]);
        assert_eq!(options.transports, [Transport::Memory]);
        assert!(!options.pin);
        assert_eq!(options.json, Some(PathBuf::from("/tmp/c.json")));
        assert_eq!(
            parse(["serve", "client", "--workers", "2"]),
            Ok(Command::ServeClient { workers: 2 })
        );
        for args in [
            &["client", "--way", "curl"][..],
            &["client", "--operation", ","],
            &["client", "--concurrency", "0"],
            &["client", "--connections", "4"],
        ] {
            assert!(parse(args.iter().copied()).is_err(), "{args:?}");
        }
    }

    #[test]
    fn middleware() {
        use crate::middleware::{Server, Variant};
        let Ok(Command::Middleware(defaults)) = parse(["middleware"]) else {
            panic!("middleware");
        };
        assert_eq!((defaults.rounds, defaults.connections), (7, 64));
        assert_eq!(defaults.variants, Variant::ALL.to_vec());
        assert!(defaults.pin && defaults.plain_from.is_none() && defaults.json.is_none());
        let Ok(Command::Middleware(options)) = parse([
            "middleware",
            "--quick",
            "--variant",
            "rate-limit,cookies",
            "--rounds=9",
            "--generator",
            "internal",
            "--plain-from",
            "/tmp/other/strata-bench",
            "--no-pin",
        ]) else {
            panic!("middleware options");
        };
        assert_eq!(options.variants, [Variant::Cookies, Variant::RateLimit]);
        assert_eq!(options.rounds, 9);
        assert!(options.duration < defaults.duration && !options.pin);
        assert_eq!(options.generator, GeneratorChoice::Internal);
        assert_eq!(
            options.plain_from,
            Some(PathBuf::from("/tmp/other/strata-bench"))
        );
        assert_eq!(
            parse(["serve", "middleware", "cache", "--workers", "2"]),
            Ok(Command::ServeMiddleware {
                server: Server::Cache,
                workers: 2,
                otlp: None,
            })
        );
        assert_eq!(
            parse([
                "serve",
                "middleware",
                "tracing-1",
                "--workers",
                "1",
                "--otlp",
                "http://127.0.0.1:4318/tracing-1",
            ]),
            Ok(Command::ServeMiddleware {
                server: Server::Tracing1,
                workers: 1,
                otlp: Some("http://127.0.0.1:4318/tracing-1".to_owned()),
            })
        );
        let Ok(Command::Middleware(options)) = parse([
            "middleware",
            "--server",
            "plain,metrics,tracing-0,tracing-1",
        ]) else {
            panic!("--server");
        };
        assert_eq!(
            options.variants,
            [
                Variant::Plain,
                Variant::Metrics,
                Variant::Tracing0,
                Variant::Tracing1
            ]
        );
        for args in [
            &["middleware", "--variant", "cookie"][..],
            &["middleware", "--scenario", "hello"],
            &["serve", "middleware", "cache-304"],
            &["serve", "middleware"],
        ] {
            assert!(parse(args.iter().copied()).is_err(), "{args:?}");
        }
    }

    #[test]
    fn uploads_and_fanout() {
        let Ok(Command::Uploads(options)) = parse(["uploads", "--connections", "2"]) else {
            panic!("uploads");
        };
        assert_eq!(options.connections, 2);
        let Ok(Command::Fanout(options)) = parse(["fanout", "--subscribers=10"]) else {
            panic!("fanout");
        };
        assert_eq!(options.subscribers, 10);
        assert_eq!(parse(["uploads", "--help"]), Ok(Command::Help));
        assert_eq!(
            parse(["serve", "upload", "hyper", "streamed", "--workers", "2"]),
            Ok(Command::ServeUpload {
                server: ServerKind::Hyper,
                mode: crate::servers::upload_app::Mode::Streamed,
                workers: 2
            })
        );
        assert_eq!(
            parse(["serve", "upload", "strata", "spooled"]),
            Ok(Command::ServeUpload {
                server: ServerKind::Strata,
                mode: crate::servers::upload_app::Mode::Spooled,
                workers: 1
            })
        );
        assert_eq!(
            parse(["serve", "fanout", "strata"]),
            Ok(Command::ServeFanout {
                server: ServerKind::Strata,
                workers: 1
            })
        );
        for args in [
            &["serve", "upload"][..],
            &["serve", "upload", "rocket", "spooled"],
            &["serve", "upload", "axum"],
            &["serve", "upload", "axum", "memory"],
            &["serve", "upload", "axum", "--workers", "2"],
            &["serve", "fanout", "axum", "--threads", "2"],
            &["uploads", "--subscribers", "3"],
            &["fanout", "--mib", "3"],
        ] {
            assert!(parse(args.iter().copied()).is_err(), "{args:?}");
        }
    }

    #[test]
    fn serve() {
        assert_eq!(
            parse(["serve", "axum", "routes-10k", "--workers", "2"]),
            Ok(Command::Serve {
                server: ServerKind::Axum,
                scenario: Scenario::Routes10k,
                workers: 2
            })
        );
        assert_eq!(
            parse(["load", "127.0.0.1:8090", "hello", "--duration", "30s"]),
            Ok(Command::Load {
                addr: std::net::SocketAddr::from(([127, 0, 0, 1], 8090)),
                target: LoadTarget::Scenario(Scenario::Hello),
                connections: 64,
                duration: Duration::from_secs(30),
            })
        );
        assert!(parse(["load", "localhost", "hello"]).is_err());
        let Ok(Command::Load { target, .. }) =
            parse(["load", "127.0.0.1:1", "middleware:cache-304"])
        else {
            panic!("load middleware:cache-304");
        };
        assert_eq!(
            target,
            LoadTarget::Middleware(crate::middleware::Variant::CacheNotModified)
        );
        assert_eq!(target.to_string(), "middleware:cache-304");
        assert!(parse(["load", "127.0.0.1:1", "middleware:hello"]).is_err());
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
    }
}
