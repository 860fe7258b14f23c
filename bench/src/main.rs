//! `strata-bench`: Strata against plain hyper, axum and the real express-zod-api, on the same
//! machine, in the same run, over loopback. See `BENCHMARKS.md` at the repository root and
//! `strata-bench --help`.
//!
//! Each server runs in a child process (`strata-bench serve <server> <scenario>` for the Rust
//! ones, Node for express-zod-api, the quick start example's own binary with `--quick-start`),
//! pinned to core 0 when `taskset` is there; the load generator (wrk, or the internal one) runs
//! pinned to core 1. Before a scenario is measured, every server must answer its request with
//! the same status and JSON body (`strata-bench preflight` runs only that check). Then each
//! server gets a warm-up, and measured rounds alternate between the servers (hyper, axum,
//! Strata, express-zod-api, hyper, ...) so that drift of the machine hits all of them alike.
//!
//! The scenarios (`scenario.rs`): hello, validated-post, auth-param, invalid, not-found,
//! wrong-method and routes-10k, and issue 32's large bodies: large-input (a ~100 KiB validated
//! POST) and large-output (a ~1 MiB list), which express-zod-api does not serve yet.
//!
//! `strata-bench client` measures a client instead: the typed Rust client against a
//! hand-written one, calling the same Strata server (see `client.rs`).
//!
//! `strata-bench middleware` measures hello behind each of issue 28's middleware (cookies,
//! caching, rate limits) against hello alone, one Strata server per variant (see
//! `middleware.rs`).
//!
//! `strata-bench protocols` measures hyper, axum and Strata over HTTP/2 with prior knowledge,
//! HTTP/2 over TLS and HTTP/1.1 over TLS with h2load (see `protocols.rs`).
//! `strata-bench latency` measures latency at fixed request rates below saturation, open loop
//! (p50, p99, p99.9; see `latency.rs` and `open_loop.rs`).
//!
//! `strata-bench soak` is a different run: mixed traffic (successes, 400s, 404s, 413s, uploads)
//! against one Strata server (`strata-bench serve soak`) for ten minutes, its RSS sampled every
//! ten seconds, every status checked (see `soak.rs`).
//!
//! `strata-bench uploads` uploads 32 MiB files (and, asked, 1 GiB ones) as multipart, spooled
//! to disk (Strata, axum, express-zod-api) and streamed (Strata, axum, hyper with multer), MiB/s
//! and peak RSS (see `uploads.rs`; issue 51); `strata-bench fanout` fans server-sent events
//! out to 1,000 subscribers of Strata and axum, events/s and memory per subscriber (see
//! `fanout.rs`). Issue 32, scenarios 3 and 4.

mod alone;
mod args;
mod child;
mod client;
mod compare;
mod fanout;
mod h2load;
mod histogram;
mod latency;
mod load;
mod middleware;
mod model;
mod open_loop;
mod otlp_sink;
mod preflight;
mod protocols;
mod report;
mod scenario;
mod servers;
mod soak;
mod stats;
mod uploads;
mod wrk;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use args::{Command, GeneratorChoice, RunOptions, USAGE};
use child::ChildServer;
use report::{GeneratorInfo, Machine, Report, ScenarioResult, ServerResult, Skipped};
use scenario::{Scenario, ServerKind};

fn main() -> ExitCode {
    let command = args::parse(std::env::args().skip(1));
    // Only measuring runs: a server, `load` and the pre-flight time nothing.
    if let Ok(
        Command::Run(_)
        | Command::Client(_)
        | Command::Middleware(_)
        | Command::Soak(_)
        | Command::Uploads(_)
        | Command::Fanout(_)
        | Command::Protocols(_)
        | Command::Latency(_)
        | Command::Compare(_),
    ) = &command
        && let Err(message) = alone::check()
    {
        eprintln!("strata-bench: {message}");
        return ExitCode::FAILURE;
    }
    let outcome = match command {
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
        Ok(Command::Help) => {
            print!(
                "{USAGE}\n{}\n{}\n{}",
                uploads::USAGE,
                fanout::USAGE,
                compare::USAGE
            );
            Ok(())
        }
        Ok(Command::Uploads(options)) => uploads::run(&options),
        Ok(Command::Compare(options)) => compare::run(&options),
        Ok(Command::Fanout(options)) => fanout::run(&options),
        Ok(Command::ServeFanout { server, workers }) => child::serve_fanout(server, workers),
        Ok(Command::ServeUpload {
            server,
            mode,
            workers,
        }) => child::serve_upload(server, mode, workers),
        Ok(Command::Serve {
            server,
            scenario,
            workers,
        }) => child::serve(server, scenario, workers),
        Ok(Command::ServeSoak { workers }) => child::serve_soak(workers),
        Ok(Command::ServeFixed { workers }) => child::serve_fixed(workers),
        Ok(Command::ServeClient { workers }) => child::serve_client(workers),
        Ok(Command::Client(options)) => client::run(&options),
        Ok(Command::Middleware(options)) => middleware::run(&options),
        Ok(Command::ServeMiddleware {
            server,
            workers,
            otlp,
        }) => child::serve_middleware(server, workers, otlp.as_deref()),
        Ok(Command::Soak(options)) => soak::run(&options),
        Ok(Command::Protocols(options)) => protocols::run(&options),
        Ok(Command::ServeProtocols(options)) => protocols::serve(&options),
        Ok(Command::Latency(options)) => latency::run(&options),
        Ok(Command::Load {
            addr,
            target,
            connections,
            duration,
        }) => load_only(addr, target, connections, duration),
        Ok(Command::Run(options)) => run(&options),
        Ok(Command::Preflight { scenarios }) => preflight_only(&scenarios),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("strata-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The load generator of a measuring run.
enum Generator {
    /// The internal one, in this process (on the tokio runtime `run` builds).
    Internal,
    /// wrk, one process per round, pinned to the load generator's core when `pin`.
    Wrk { pin: bool },
}

/// Resolves `--generator`: wrk when asked for (an error when it is missing) or, for `auto`,
/// when it is on `PATH`.
fn generator(options: &RunOptions, pinned: bool) -> Result<(Generator, GeneratorInfo), String> {
    let wrk = match options.generator {
        GeneratorChoice::Internal => None,
        GeneratorChoice::Auto => wrk::auto(),
        GeneratorChoice::Wrk => Some(wrk::version().ok_or(
            "--generator wrk: wrk is not on PATH (bench/scripts/install-tools.sh \
             installs it)",
        )?),
    };
    Ok(match wrk {
        Some(version) => (
            Generator::Wrk { pin: pinned },
            GeneratorInfo {
                name: "wrk",
                version: Some(version),
                threads: 1,
            },
        ),
        None => (
            Generator::Internal,
            GeneratorInfo {
                name: "internal",
                version: None,
                threads: options.client_threads,
            },
        ),
    })
}

/// The servers of a run, in round order, and those left out with the reason.
fn servers(options: &RunOptions) -> (Vec<ServerKind>, Vec<Skipped>, Option<String>) {
    let mut servers = ServerKind::IN_PROCESS.to_vec();
    let mut skipped = Vec::new();
    let mut ezapi = None;
    if options.others.ezapi {
        match child::Ezapi::locate() {
            Ok(found) => {
                ezapi = Some(found.describe());
                servers.push(ServerKind::ExpressZodApi);
            }
            Err(reason) => skipped.push(Skipped {
                server: ServerKind::ExpressZodApi,
                reason,
            }),
        }
    }
    if options.others.quick_start {
        match child::quick_start_binary() {
            Ok(_) => servers.push(ServerKind::QuickStart),
            Err(reason) => skipped.push(Skipped {
                server: ServerKind::QuickStart,
                reason,
            }),
        }
    }
    (servers, skipped, ezapi)
}

/// Starts `kinds` for `scenario` (those that serve it); stops the started ones on an error.
fn spawn_all(
    kinds: &[ServerKind],
    scenario: Scenario,
    workers: usize,
    pin: bool,
) -> Result<Vec<ChildServer>, String> {
    let mut children = Vec::new();
    for &kind in kinds.iter().filter(|kind| kind.serves(scenario)) {
        match ChildServer::spawn(kind, scenario, workers, pin) {
            Ok(child) => children.push(child),
            Err(e) => {
                children.into_iter().for_each(ChildServer::stop);
                return Err(format!("{scenario}: {e}"));
            }
        }
    }
    Ok(children)
}

fn run(options: &RunOptions) -> Result<(), String> {
    let machine = Machine::probe();
    let pinned = options.pin && child::can_pin();
    let (generator, generator_info) = generator(options, pinned)?;
    let (kinds, skipped, express_zod_api) = servers(options);
    for skipped in &skipped {
        eprintln!(
            "strata-bench: {} is not run: {}",
            skipped.server, skipped.reason
        );
    }
    let (mut duration, mut warmup) = (options.duration, options.warmup);
    if let Generator::Wrk { .. } = generator {
        // wrk takes whole seconds.
        duration = std::time::Duration::from_secs(wrk::whole_seconds(duration));
        warmup = std::time::Duration::from_secs(wrk::whole_seconds(warmup));
        if (duration, warmup) != (options.duration, options.warmup) {
            eprintln!(
                "strata-bench: wrk runs whole seconds: rounds of {} s, warm-up of {} s",
                duration.as_secs(),
                warmup.as_secs()
            );
        }
    }
    eprintln!("strata-bench: load generator: {}", generator_info.name);
    let own_binaries = [ServerKind::Hyper, ServerKind::Axum, ServerKind::Strata]
        .into_iter()
        .all(|kind| child::solo_binary(kind).is_some());
    if !own_binaries {
        eprintln!(
            "strata-bench: the servers run from this binary: their own binaries (strata-bench-hyper, \
             -axum, -strata) are missing or older than their sources; `cd bench && cargo build \
             --release` builds them"
        );
    }
    if pinned {
        child::pin_self(child::CLIENT_CORE)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.client_threads)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let plan = Plan {
        generator,
        connections: options.connections,
        duration,
        warmup,
        rounds: options.rounds,
    };
    let mut results = Vec::new();
    for &scenario in &options.scenarios {
        let children = spawn_all(&kinds, scenario, options.workers, pinned)?;
        let measured = runtime.block_on(measure(scenario, &children, &plan));
        let rss: Vec<_> = children.iter().map(ChildServer::peak_rss_kib).collect();
        let served: Vec<_> = children.iter().map(|c| c.kind).collect();
        children.into_iter().for_each(ChildServer::stop);
        let (response, rounds) = measured?;
        let servers = served
            .iter()
            .zip(rounds.iter().zip(rss))
            .map(|(kind, (rounds, rss))| ServerResult::new(*kind, rounds, rss))
            .collect();
        results.push(ScenarioResult::new(scenario, response, servers));
    }
    let report = Report {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        generator: generator_info,
        connections: options.connections,
        round_seconds: duration.as_secs_f64(),
        warmup_seconds: warmup.as_secs_f64(),
        rounds: options.rounds,
        server_workers: options.workers,
        client_threads: options.client_threads,
        pinned,
        own_binaries,
        express_zod_api,
        skipped,
        targets: report::targets(&results),
        scenarios: results,
    };
    print!("{}", report.markdown());
    report::write_json(&options.json, &report)
}

/// `strata-bench preflight`: every server (express-zod-api required, the quick start when it
/// is built) answers every scenario's request once; prints the answers; fails when they
/// disagree. Nothing is measured, nothing is pinned.
fn preflight_only(scenarios: &[Scenario]) -> Result<(), String> {
    let ezapi = child::Ezapi::locate().map_err(|e| format!("express-zod-api: {e}"))?;
    println!("{}", ezapi.describe());
    let mut kinds = ServerKind::IN_PROCESS.to_vec();
    kinds.push(ServerKind::ExpressZodApi);
    match child::quick_start_binary() {
        Ok(_) => kinds.push(ServerKind::QuickStart),
        Err(reason) => println!("quick-start: not checked: {reason}"),
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    for &scenario in scenarios {
        let children = spawn_all(&kinds, scenario, 1, false)?;
        let checked = runtime.block_on(async {
            let mut answers = Vec::new();
            for child in &children {
                let observed = preflight::observe(child.addr, scenario)
                    .await
                    .map_err(|e| format!("{scenario}: {}: {e}", child.kind))?;
                answers.push((child.kind, observed));
            }
            Ok::<_, String>(answers)
        });
        children.into_iter().for_each(ChildServer::stop);
        let answers = checked?;
        let request = scenario.request();
        println!(
            "\n{scenario}: {} {}",
            request.method, request.path_and_query
        );
        for (kind, observed) in &answers {
            println!("  {:<16} {}", kind.name(), observed.describe());
        }
        let agreed = preflight::compare(scenario, &answers)?;
        println!("  agreed: {}", preflight::abridged(&agreed));
    }
    println!("\npre-flight ok: {} scenario(s)", scenarios.len());
    Ok(())
}

/// How each server is loaded.
struct Plan {
    generator: Generator,
    connections: usize,
    duration: std::time::Duration,
    warmup: std::time::Duration,
    rounds: usize,
}

/// The pre-flight check, the warm-ups and the interleaved rounds of one scenario; returns the
/// agreed response ([`preflight::abridged`]: large-output's is ~1 MiB) and each server's
/// rounds, in `children`'s order.
async fn measure(
    scenario: Scenario,
    children: &[ChildServer],
    plan: &Plan,
) -> Result<(serde_json::Value, Vec<Vec<load::LoadResult>>), String> {
    let mut answers = Vec::new();
    for child in children {
        let observed = preflight::observe(child.addr, scenario)
            .await
            .map_err(|e| format!("{scenario}: {}: {e}", child.kind))?;
        answers.push((child.kind, observed));
    }
    let response = preflight::abridged(&preflight::compare(scenario, &answers)?);
    eprintln!(
        "{scenario}: pre-flight ok ({} {}), servers: {}",
        scenario.expected_status().as_u16(),
        response,
        children
            .iter()
            .map(|c| format!("{} pid {} on {}", c.kind, c.pid(), c.addr))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let load = Load::new(scenario, &plan.generator)?;
    for child in children {
        load.once(child, plan.connections, plan.warmup).await?;
    }
    let mut rounds = vec![Vec::new(); children.len()];
    for round in 1..=plan.rounds {
        let mut line = format!("{scenario}: round {round}/{}:", plan.rounds);
        for (child, results) in children.iter().zip(&mut rounds) {
            let result = load.once(child, plan.connections, plan.duration).await?;
            let _ = write!(line, " {} {:.0} req/s", child.kind, result.throughput());
            if let Some(cpu) = result.server_cpu {
                let _ = write!(
                    line,
                    " ({:.0}% CPU)",
                    100.0 * cpu.as_secs_f64() / result.elapsed.as_secs_f64()
                );
            }
            results.push(result);
        }
        eprintln!("{line}");
    }
    Ok((response, rounds))
}

/// One scenario's request, ready for the generator.
enum Load {
    Internal {
        scenario: Scenario,
        request: Arc<[u8]>,
    },
    Wrk {
        scenario: Scenario,
        script: Arc<wrk::Script>,
        pin: bool,
    },
}

impl Load {
    fn new(scenario: Scenario, generator: &Generator) -> Result<Self, String> {
        let spec = scenario.request();
        Ok(match generator {
            Generator::Internal => Load::Internal {
                scenario,
                request: spec.to_http1().into(),
            },
            Generator::Wrk { pin } => Load::Wrk {
                scenario,
                script: Arc::new(wrk::Script::write(&spec, scenario.name())?),
                pin: *pin,
            },
        })
    }

    /// One load run against `child`, with the server's CPU time over it.
    async fn once(
        &self,
        child: &ChildServer,
        connections: usize,
        duration: std::time::Duration,
    ) -> Result<load::LoadResult, String> {
        let before = child.cpu_time();
        let mut result = match self {
            Load::Internal { scenario, request } => load::run(
                child.addr,
                Arc::clone(request),
                scenario.expected_status().as_u16(),
                connections,
                duration,
            )
            .await
            .map_err(|e| format!("{scenario}: {}: {e}", child.kind))?,
            Load::Wrk {
                scenario,
                script,
                pin,
            } => {
                let (scenario, script, pin, addr) =
                    (*scenario, Arc::clone(script), *pin, child.addr);
                tokio::task::spawn_blocking(move || {
                    wrk::run(
                        addr,
                        &scenario.request().path_and_query,
                        &script,
                        scenario.expected_status(),
                        connections,
                        duration,
                        pin.then_some(child::CLIENT_CORE),
                    )
                })
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("{scenario}: {}: {e}", child.kind))?
            }
        };
        result.server_cpu =
            before.and_then(|before| Some(child.cpu_time()?.saturating_sub(before)));
        Ok(result)
    }
}

/// `strata-bench load`: drives a server started elsewhere (e.g. `serve` under `perf record`).
fn load_only(
    addr: std::net::SocketAddr,
    scenario: args::LoadTarget,
    connections: usize,
    duration: std::time::Duration,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let request: Arc<[u8]> = scenario.request().to_http1().into();
    let expected = scenario.expected_status().as_u16();
    let result = runtime
        .block_on(load::run(addr, request, expected, connections, duration))
        .map_err(|e| format!("{scenario}: {e}"))?;
    println!(
        "{scenario}: {} requests in {:.2} s, {:.0} req/s, p50 {:.0} µs, p99 {:.0} µs",
        result.requests,
        result.elapsed.as_secs_f64(),
        result.throughput(),
        stats::percentile(&result.latencies, 0.5).unwrap_or(0) / 1000,
        stats::percentile(&result.latencies, 0.99).unwrap_or(0) / 1000,
    );
    Ok(())
}
