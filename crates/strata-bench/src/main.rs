//! `strata-bench`: Strata against plain hyper and axum, on the same machine, in the same run,
//! over loopback. See `BENCHMARKS.md` at the repository root and `strata-bench --help`.
//!
//! Each server runs in a child process (`strata-bench serve <server> <scenario>`), pinned to
//! core 0 when `taskset` is there; the load generator runs here, pinned to core 1. Before a
//! scenario is measured, every server must answer its request with the same status and JSON
//! body. Then each server gets a warm-up, and measured rounds alternate between the servers
//! (hyper, axum, Strata, hyper, ...) so that drift of the machine hits all three alike.
//!
//! `strata-bench soak` is a different run: mixed traffic (successes, 400s, 404s, 413s, uploads)
//! against one Strata server (`strata-bench serve soak`) for ten minutes, its RSS sampled every
//! ten seconds, every status checked (see `soak.rs`).

mod args;
mod child;
mod load;
mod model;
mod preflight;
mod report;
mod scenario;
mod servers;
mod soak;
mod stats;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use args::{Command, RunOptions, USAGE};
use child::ChildServer;
use report::{Machine, Report, ScenarioResult, ServerResult};
use scenario::{Scenario, ServerKind};

fn main() -> ExitCode {
    let outcome = match args::parse(std::env::args().skip(1)) {
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
        Ok(Command::Help) => {
            print!("{USAGE}");
            Ok(())
        }
        Ok(Command::Serve {
            server,
            scenario,
            workers,
        }) => child::serve(server, scenario, workers),
        Ok(Command::ServeSoak { workers }) => child::serve_soak(workers),
        Ok(Command::ServeFixed { workers }) => child::serve_fixed(workers),
        Ok(Command::Soak(options)) => soak::run(&options),
        Ok(Command::Load {
            addr,
            scenario,
            connections,
            duration,
        }) => load_only(addr, scenario, connections, duration),
        Ok(Command::Run(options)) => run(&options),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("strata-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: &RunOptions) -> Result<(), String> {
    let machine = Machine::probe();
    let pinned = options.pin && child::can_pin();
    if pinned {
        child::pin_self(child::CLIENT_CORE)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.client_threads)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut results = Vec::new();
    for &scenario in &options.scenarios {
        let mut children = Vec::new();
        for kind in ServerKind::ALL {
            match ChildServer::spawn(kind, scenario, options.workers, pinned) {
                Ok(child) => children.push(child),
                Err(e) => {
                    children.into_iter().for_each(ChildServer::stop);
                    return Err(e);
                }
            }
        }
        let measured = runtime.block_on(measure(scenario, &children, options));
        let rss: Vec<_> = children.iter().map(ChildServer::peak_rss_kib).collect();
        children.into_iter().for_each(ChildServer::stop);
        let (response, rounds) = measured?;
        let servers = ServerKind::ALL
            .iter()
            .zip(rounds.iter().zip(rss))
            .map(|(kind, (rounds, rss))| ServerResult::new(*kind, rounds, rss))
            .collect();
        results.push(ScenarioResult::new(scenario, response, servers));
    }
    let report = Report {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        connections: options.connections,
        round_seconds: options.duration.as_secs_f64(),
        warmup_seconds: options.warmup.as_secs_f64(),
        rounds: options.rounds,
        server_workers: options.workers,
        client_threads: options.client_threads,
        pinned,
        targets: report::targets(&results),
        scenarios: results,
    };
    print!("{}", report.markdown());
    if let Some(parent) = options.json.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let json = serde_json::to_vec_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(&options.json, json).map_err(|e| format!("{}: {e}", options.json.display()))?;
    eprintln!("results written to {}", options.json.display());
    Ok(())
}

/// The pre-flight check, the warm-ups and the interleaved rounds of one scenario; returns the
/// agreed response and each server's rounds, in `children`'s order.
async fn measure(
    scenario: Scenario,
    children: &[ChildServer],
    options: &RunOptions,
) -> Result<(serde_json::Value, Vec<Vec<load::LoadResult>>), String> {
    let mut answers = Vec::new();
    for child in children {
        answers.push((child.kind, preflight::observe(child.addr, scenario).await?));
    }
    let response = preflight::compare(scenario, &answers)?;
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
    let request: Arc<[u8]> = scenario.request().to_http1().into();
    for child in children {
        load_once(
            scenario,
            child,
            &request,
            options.connections,
            options.warmup,
        )
        .await?;
    }
    let mut rounds = vec![Vec::new(); children.len()];
    for round in 1..=options.rounds {
        let mut line = format!("{scenario}: round {round}/{}:", options.rounds);
        for (child, results) in children.iter().zip(&mut rounds) {
            let result = load_once(
                scenario,
                child,
                &request,
                options.connections,
                options.duration,
            )
            .await?;
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

/// One load run against `child`, with the server's CPU time over it.
async fn load_once(
    scenario: Scenario,
    child: &ChildServer,
    request: &Arc<[u8]>,
    connections: usize,
    duration: std::time::Duration,
) -> Result<load::LoadResult, String> {
    let before = child.cpu_time();
    let expected = scenario.expected_status().as_u16();
    let mut result = load::run(
        child.addr,
        Arc::clone(request),
        expected,
        connections,
        duration,
    )
    .await
    .map_err(|e| format!("{scenario}: {}: {e}", child.kind))?;
    result.server_cpu = before.and_then(|before| Some(child.cpu_time()?.saturating_sub(before)));
    Ok(result)
}

/// `strata-bench load`: drives a server started elsewhere (e.g. `serve` under `perf record`).
fn load_only(
    addr: std::net::SocketAddr,
    scenario: Scenario,
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
