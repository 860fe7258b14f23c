//! `strata-bench latency`: latency at a fixed request rate below saturation (p50, p99, p99.9
//! and the maximum), for hyper, axum and Strata in the same run (issue 32, scenario 2).
//!
//! Per scenario (default hello and validated-post, the main run's requests): the three servers
//! in child processes pinned to core 0 as usual, the pre-flight check (every server answers
//! alike), a closed-loop warm-up per server, then a closed-loop calibration round per server
//! (`load::run`, the same connections) that measures its saturation. The rates are then fixed
//! for every server: absolute ones from `--rates`, and shares of the *slowest* server's
//! saturation (`25%,75%` by default), so that every server is below its own saturation. At
//! each rate, rounds of the open-loop generator (`open_loop.rs`, on a current-thread runtime
//! pinned to core 1) load each server in turn, the order rotating every round. Per round and
//! server: p50, p99, p99.9 and the maximum from each request's due time (coordinated omission
//! corrected), the same from the actual sending, the achieved rate (a round more than 2 % short
//! is flagged), the generator's own lateness and the server's CPU. Reported: the median of the
//! rounds and their spread, and Strata ÷ axum (and ÷ hyper) on p99, per round.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::args::{Command, USAGE, add_scenarios, parse_duration, positive, split_flag};
use crate::child::{self, ChildServer};
use crate::histogram::{Histogram, RELATIVE_ERROR};
use crate::open_loop::{self, OpenLoopResult, SHORTFALL};
use crate::report::Machine;
use crate::scenario::{Scenario, ServerKind};
use crate::stats::Spread;
use crate::{load, preflight};

/// A rate of `--rates`: fixed, or a share of the slowest server's closed-loop saturation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum RateSpec {
    /// Requests per second.
    Fixed(u64),
    /// A share (0.25 for `25%`) of the slowest server's saturation, measured first.
    OfSaturation(f64),
}

impl FromStr for RateSpec {
    type Err = String;

    /// `20000`, `20k`, `2.5k` or `25%`.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("bad rate {s:?} (e.g. 20000, 20k or 25%)");
        let s = s.trim();
        if let Some(percent) = s.strip_suffix('%') {
            let value: f64 = percent.trim().parse().map_err(|_| bad())?;
            if !(value > 0.0 && value <= 200.0) {
                return Err(bad());
            }
            return Ok(RateSpec::OfSaturation(value / 100.0));
        }
        let (number, scale) = match s.strip_suffix(['k', 'K']) {
            Some(number) => (number, 1000.0),
            None => (s, 1.0),
        };
        let value: f64 = number.parse().map_err(|_| bad())?;
        let rate = (value * scale).round();
        if !(1.0..=1e9).contains(&rate) {
            return Err(bad());
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(RateSpec::Fixed(rate as u64))
    }
}

impl std::fmt::Display for RateSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RateSpec::Fixed(rate) => write!(f, "{rate}"),
            RateSpec::OfSaturation(share) => write!(f, "{}%", share * 100.0),
        }
    }
}

/// A share of a saturation as a round rate: to the 1,000 above 10,000 req/s, to the 100 above
/// 1,000, to the 10 below; at least 1.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub(crate) fn round_rate(rate: f64) -> u64 {
    let step = if rate >= 10_000.0 {
        1000.0
    } else if rate >= 1000.0 {
        100.0
    } else {
        10.0
    };
    ((rate / step).round() * step).max(1.0) as u64
}

/// The rates of a scenario, ascending, each once: `specs` with the slowest server's
/// saturation `slowest` (req/s), each with what was asked.
pub(crate) fn resolve(specs: &[RateSpec], slowest: f64) -> Vec<(u64, RateSpec)> {
    let mut rates: Vec<(u64, RateSpec)> = specs
        .iter()
        .map(|&spec| match spec {
            RateSpec::Fixed(rate) => (rate, spec),
            RateSpec::OfSaturation(share) => (round_rate(share * slowest), spec),
        })
        .collect();
    rates.sort_by_key(|(rate, _)| *rate);
    rates.dedup_by_key(|(rate, _)| *rate);
    rates
}

/// Options of `strata-bench latency`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatencyOptions {
    pub(crate) scenarios: Vec<Scenario>,
    pub(crate) rates: Vec<RateSpec>,
    /// Keep-alive connections the rate is spread over.
    pub(crate) connections: usize,
    /// One round of one server at one rate.
    pub(crate) duration: Duration,
    /// Closed-loop warm-up per server and scenario.
    pub(crate) warmup: Duration,
    /// Closed-loop round per server and scenario that measures its saturation.
    pub(crate) calibration: Duration,
    /// Rounds per server and rate.
    pub(crate) rounds: usize,
    /// Server runtime worker threads.
    pub(crate) workers: usize,
    /// Pin the servers and the generator to different cores (with `taskset`).
    pub(crate) pin: bool,
    pub(crate) json: Option<PathBuf>,
}

impl LatencyOptions {
    fn defaults(quick: bool) -> Self {
        let (duration, warmup, calibration, rounds) = if quick {
            (
                Duration::from_secs(1),
                Duration::from_millis(300),
                Duration::from_millis(500),
                3,
            )
        } else {
            (
                Duration::from_secs(5),
                Duration::from_secs(1),
                Duration::from_secs(2),
                5,
            )
        };
        Self {
            scenarios: vec![Scenario::Hello, Scenario::ValidatedPost],
            rates: vec![RateSpec::OfSaturation(0.25), RateSpec::OfSaturation(0.75)],
            connections: 64,
            duration,
            warmup,
            calibration,
            rounds,
            workers: 1,
            pin: true,
            json: None,
        }
    }
}

/// `latency`'s options (after `latency`): `--flag value` or `--flag=value`.
pub(crate) fn parse(args: &[String]) -> Result<Command, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut options = LatencyOptions::defaults(quick);
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
            "--scenario" | "--scenarios" => add_scenarios(&mut scenarios, &value()?)?,
            "--rates" | "--rate" => {
                let text = value()?;
                options.rates = text
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(str::parse)
                    .collect::<Result<_, _>>()?;
                if options.rates.is_empty() {
                    return Err(format!("{text:?} names no rate"));
                }
            }
            "--connections" => options.connections = positive(name, &value()?)?,
            "--duration" => options.duration = parse_duration(&value()?)?,
            "--warmup" => options.warmup = parse_duration(&value()?)?,
            "--calibration" => options.calibration = parse_duration(&value()?)?,
            "--rounds" => options.rounds = positive(name, &value()?)?,
            "--workers" => options.workers = positive(name, &value()?)?,
            "--json" => options.json = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown latency argument {other:?}\n\n{USAGE}")),
        }
    }
    if !scenarios.is_empty() {
        scenarios.sort();
        options.scenarios = scenarios;
    }
    Ok(Command::Latency(options))
}

/// Nanoseconds as microseconds.
#[allow(clippy::cast_precision_loss)]
fn micros(nanos: Option<u64>) -> f64 {
    nanos.map_or(f64::NAN, |ns| ns as f64 / 1000.0)
}

/// One round of one server at one rate. Latencies in µs.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RoundLatency {
    pub(crate) scheduled: u64,
    pub(crate) completed: u64,
    pub(crate) seconds: f64,
    pub(crate) achieved_rps: f64,
    /// More than 2 % short of the rate, or a request never sent.
    pub(crate) short: bool,
    /// From each request's due time.
    pub(crate) min_us: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) p999_us: f64,
    pub(crate) max_us: f64,
    /// From each request's actual sending (no coordinated-omission correction).
    pub(crate) sent_p50_us: f64,
    pub(crate) sent_p99_us: f64,
    pub(crate) sent_p999_us: f64,
    /// How late the generator released requests (its own error, in every server's figures).
    pub(crate) lag_p99_us: f64,
    pub(crate) lag_max_us: f64,
    /// The server's CPU time over the round's length.
    pub(crate) server_cpu_utilization: Option<f64>,
}

impl RoundLatency {
    fn of(result: &OpenLoopResult, server_cpu: Option<Duration>) -> Self {
        let quantiles =
            |histogram: &Histogram| [0.5, 0.99, 0.999].map(|q| micros(histogram.quantile(q)));
        let [median, tail, far_tail] = quantiles(&result.latency);
        let [sent_median, sent_tail, sent_far_tail] = quantiles(&result.service);
        let seconds = result.elapsed.as_secs_f64();
        Self {
            scheduled: result.scheduled,
            completed: result.completed,
            seconds,
            achieved_rps: result.achieved(),
            short: result.short(),
            min_us: micros(result.latency.min()),
            p50_us: median,
            p99_us: tail,
            p999_us: far_tail,
            max_us: micros(result.latency.max()),
            sent_p50_us: sent_median,
            sent_p99_us: sent_tail,
            sent_p999_us: sent_far_tail,
            lag_p99_us: micros(result.lag.quantile(0.99)),
            lag_max_us: micros(result.lag.max()),
            server_cpu_utilization: server_cpu.map(|cpu| cpu.as_secs_f64() / seconds.max(1e-9)),
        }
    }
}

/// One server's rounds at one rate, summarized.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ServerLatency {
    pub(crate) server: ServerKind,
    pub(crate) p50_us: Spread,
    pub(crate) p99_us: Spread,
    pub(crate) p999_us: Spread,
    pub(crate) max_us: Spread,
    pub(crate) sent_p99_us: Spread,
    pub(crate) achieved_rps: Spread,
    /// Rounds flagged short.
    pub(crate) short_rounds: usize,
    pub(crate) lag_p99_us: Spread,
    pub(crate) server_cpu_utilization: Option<Spread>,
    pub(crate) rounds: Vec<RoundLatency>,
}

impl ServerLatency {
    fn new(server: ServerKind, rounds: Vec<RoundLatency>) -> Self {
        let spread =
            |f: fn(&RoundLatency) -> f64| Spread::of(&rounds.iter().map(f).collect::<Vec<_>>());
        let cpu: Vec<f64> = rounds
            .iter()
            .filter_map(|r| r.server_cpu_utilization)
            .collect();
        Self {
            server,
            p50_us: spread(|r| r.p50_us),
            p99_us: spread(|r| r.p99_us),
            p999_us: spread(|r| r.p999_us),
            max_us: spread(|r| r.max_us),
            sent_p99_us: spread(|r| r.sent_p99_us),
            achieved_rps: spread(|r| r.achieved_rps),
            short_rounds: rounds.iter().filter(|r| r.short).count(),
            lag_p99_us: spread(|r| r.lag_p99_us),
            server_cpu_utilization: (cpu.len() == rounds.len()).then(|| Spread::of(&cpu)),
            rounds,
        }
    }
}

/// Every server at one rate.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RateResult {
    pub(crate) rate: u64,
    /// What `--rates` said: `25%` or the number itself.
    pub(crate) asked: String,
    /// The rate over the slowest server's closed-loop saturation.
    pub(crate) of_slowest_saturation: f64,
    pub(crate) servers: Vec<ServerLatency>,
    /// Per round, Strata's p99 over axum's (and hyper's) in the same round.
    pub(crate) strata_over_axum_p99: Option<Spread>,
    pub(crate) strata_over_hyper_p99: Option<Spread>,
}

impl RateResult {
    fn new(rate: u64, asked: RateSpec, slowest: f64, servers: Vec<ServerLatency>) -> Self {
        let over = |other: ServerKind| {
            let find = |kind| servers.iter().find(|s| s.server == kind);
            let (strata, other) = (find(ServerKind::Strata)?, find(other)?);
            let ratios: Vec<f64> = strata
                .rounds
                .iter()
                .zip(&other.rounds)
                .map(|(s, o)| s.p99_us / o.p99_us)
                .collect();
            (!ratios.is_empty()).then(|| Spread::of(&ratios))
        };
        #[allow(clippy::cast_precision_loss)]
        let of_slowest_saturation = rate as f64 / slowest;
        Self {
            rate,
            asked: asked.to_string(),
            of_slowest_saturation,
            strata_over_axum_p99: over(ServerKind::Axum),
            strata_over_hyper_p99: over(ServerKind::Hyper),
            servers,
        }
    }
}

/// A server's closed-loop throughput in the calibration round.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Saturation {
    pub(crate) server: ServerKind,
    pub(crate) requests_per_second: f64,
}

/// One scenario.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ScenarioLatency {
    pub(crate) scenario: Scenario,
    /// The body every server answered (checked before measuring).
    pub(crate) response: serde_json::Value,
    pub(crate) saturation: Vec<Saturation>,
    pub(crate) rates: Vec<RateResult>,
}

/// Everything a run produced (the JSON file).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LatencyReport {
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) connections: usize,
    pub(crate) round_seconds: f64,
    pub(crate) warmup_seconds: f64,
    pub(crate) calibration_seconds: f64,
    pub(crate) rounds: usize,
    pub(crate) server_workers: usize,
    pub(crate) pinned: bool,
    /// hyper, axum and Strata ran from binaries of their own (`strata-bench-<server>`).
    pub(crate) own_binaries: bool,
    pub(crate) rates_asked: Vec<String>,
    /// The histogram's bound on a reported value's relative error (above the exact value).
    pub(crate) histogram_relative_error: f64,
    /// A round below this share of its rate is flagged short.
    pub(crate) shortfall: f64,
    pub(crate) load_average_before: String,
    pub(crate) load_average_after: String,
    pub(crate) scenarios: Vec<ScenarioLatency>,
}

/// `strata-bench latency`.
pub(crate) fn run(options: &LatencyOptions) -> Result<(), String> {
    let machine = Machine::probe();
    let load_before = crate::middleware::load_average();
    let pinned = options.pin && child::can_pin();
    let own_binaries = ServerKind::IN_PROCESS
        .into_iter()
        .all(|kind| child::solo_binary(kind).is_some());
    if !own_binaries {
        eprintln!(
            "strata-bench latency: the servers run from this binary (their own binaries are \
             missing or older; `cd bench && cargo build --release` builds them)"
        );
    }
    if pinned {
        child::pin_self(child::CLIENT_CORE)?;
    }
    // One thread for the generator: its timing is not shared with other workers.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut scenarios = Vec::new();
    for &scenario in &options.scenarios {
        let children =
            crate::spawn_all(&ServerKind::IN_PROCESS, scenario, options.workers, pinned)?;
        let measured = runtime.block_on(measure(scenario, &children, options));
        children.into_iter().for_each(ChildServer::stop);
        scenarios.push(measured?);
    }
    let report = LatencyReport {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        connections: options.connections,
        round_seconds: options.duration.as_secs_f64(),
        warmup_seconds: options.warmup.as_secs_f64(),
        calibration_seconds: options.calibration.as_secs_f64(),
        rounds: options.rounds,
        server_workers: options.workers,
        pinned,
        own_binaries,
        rates_asked: options.rates.iter().map(ToString::to_string).collect(),
        histogram_relative_error: RELATIVE_ERROR,
        shortfall: SHORTFALL,
        load_average_before: load_before,
        load_average_after: crate::middleware::load_average(),
        scenarios,
    };
    print!("{}", markdown(&report));
    if let Some(path) = &options.json {
        crate::report::write_json(path, &report)?;
    }
    Ok(())
}

/// Pre-flight, warm-up, calibration and the rounds of one scenario.
#[allow(clippy::too_many_lines)]
async fn measure(
    scenario: Scenario,
    children: &[ChildServer],
    options: &LatencyOptions,
) -> Result<ScenarioLatency, String> {
    let mut answers = Vec::new();
    for child in children {
        let observed = preflight::observe(child.addr, scenario)
            .await
            .map_err(|e| format!("{scenario}: {}: {e}", child.kind))?;
        answers.push((child.kind, observed));
    }
    let response = preflight::abridged(&preflight::compare(scenario, &answers)?);
    eprintln!("{scenario}: pre-flight ok ({response})");
    let request: Arc<[u8]> = scenario.request().to_http1().into();
    let expected = scenario.expected_status().as_u16();
    let closed = |child: &ChildServer, duration| {
        let request = Arc::clone(&request);
        let (addr, kind) = (child.addr, child.kind);
        async move {
            load::run(addr, request, expected, options.connections, duration)
                .await
                .map_err(|e| format!("{scenario}: {kind}: {e}"))
        }
    };
    for child in children {
        closed(child, options.warmup).await?;
    }
    let mut saturation = Vec::new();
    for child in children {
        let result = closed(child, options.calibration).await?;
        saturation.push(Saturation {
            server: child.kind,
            requests_per_second: result.throughput(),
        });
    }
    let slowest = saturation
        .iter()
        .map(|s| s.requests_per_second)
        .fold(f64::INFINITY, f64::min);
    let rates = resolve(&options.rates, slowest);
    eprintln!(
        "{scenario}: closed-loop saturation {}; rates {}",
        saturation
            .iter()
            .map(|s| format!("{} {:.0} req/s", s.server, s.requests_per_second))
            .collect::<Vec<_>>()
            .join(", "),
        rates
            .iter()
            .map(|(rate, _)| rate.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut results = Vec::new();
    for (rate, asked) in rates {
        let mut rounds = vec![Vec::new(); children.len()];
        for round in 0..options.rounds {
            let mut line = format!(
                "{scenario} at {rate}/s, round {}/{}:",
                round + 1,
                options.rounds
            );
            for step in 0..children.len() {
                let index = (round + step) % children.len();
                let child = &children[index];
                let before = child.cpu_time();
                let result = open_loop::run(
                    child.addr,
                    Arc::clone(&request),
                    expected,
                    rate,
                    options.connections,
                    options.duration,
                )
                .await
                .map_err(|e| format!("{scenario} at {rate}/s: {}: {e}", child.kind))?;
                let cpu = before.and_then(|before| Some(child.cpu_time()?.saturating_sub(before)));
                let measured = RoundLatency::of(&result, cpu);
                let _ = write!(
                    line,
                    " {} {:.1}/{:.1}/{:.1} µs{}",
                    child.kind,
                    measured.p50_us,
                    measured.p99_us,
                    measured.p999_us,
                    if measured.short {
                        format!(" SHORT ({:.0} req/s)", measured.achieved_rps)
                    } else {
                        String::new()
                    }
                );
                rounds[index].push(measured);
            }
            eprintln!("{line}");
        }
        let servers = children
            .iter()
            .zip(rounds)
            .map(|(child, rounds)| ServerLatency::new(child.kind, rounds))
            .collect();
        results.push(RateResult::new(rate, asked, slowest, servers));
    }
    Ok(ScenarioLatency {
        scenario,
        response,
        saturation,
        rates: results,
    })
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

/// µs: one decimal below 100, none above.
fn us(value: f64) -> String {
    if value < 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

/// `41.2 (40.8–44.0)`.
fn spread_us(spread: &Spread) -> String {
    format!(
        "{} ({}–{})",
        us(spread.median),
        us(spread.min),
        us(spread.max)
    )
}

/// The Markdown report: per scenario the saturations, then a table per rate.
#[allow(clippy::too_many_lines)]
pub(crate) fn markdown(report: &LatencyReport) -> String {
    let mut out = String::new();
    let m = &report.machine;
    let _ = writeln!(
        out,
        "# strata-bench latency: p50, p99, p99.9 at a fixed request rate\n\n\
         {} cores ({}), {}; open-loop generator (internal, current-thread runtime{}), {} \
         connections; latency from each request's due time (coordinated omission corrected), \
         histogram within {:.1} %; {} rounds of {} s per server and rate, rotating, after a \
         closed-loop warm-up of {} s and calibration of {} s; server {} worker(s){}; servers \
         from {}; load average {} before, {} after.",
        m.cores,
        m.cpu,
        m.rustc,
        if report.pinned { ", core 1" } else { "" },
        report.connections,
        report.histogram_relative_error * 100.0,
        report.rounds,
        report.round_seconds,
        report.warmup_seconds,
        report.calibration_seconds,
        report.server_workers,
        if report.pinned {
            ", pinned to core 0"
        } else {
            ", not pinned"
        },
        if report.own_binaries {
            "their own binaries"
        } else {
            "this binary"
        },
        report.load_average_before,
        report.load_average_after,
    );
    for scenario in &report.scenarios {
        let _ = writeln!(
            out,
            "\n## {}\n\nClosed-loop saturation: {}.",
            scenario.scenario,
            scenario
                .saturation
                .iter()
                .map(|s| format!("{} {} req/s", s.server, grouped(s.requests_per_second)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for rate in &scenario.rates {
            let asked = if rate.asked.ends_with('%') {
                format!("{} of the slowest's saturation", rate.asked)
            } else {
                format!(
                    "{:.0} % of the slowest's saturation",
                    rate.of_slowest_saturation * 100.0
                )
            };
            let _ = writeln!(
                out,
                "\n### {} at {} req/s ({asked})\n\n\
                 | server | p50 µs | p99 µs | p99.9 µs | max µs | p99 from sending µs | \
                 achieved req/s | short rounds | server CPU |\n\
                 |---|---:|---:|---:|---:|---:|---:|---:|---:|",
                scenario.scenario,
                grouped(u64_f64(rate.rate)),
            );
            for server in &rate.servers {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {}/{} | {} |",
                    server.server,
                    spread_us(&server.p50_us),
                    spread_us(&server.p99_us),
                    spread_us(&server.p999_us),
                    spread_us(&server.max_us),
                    spread_us(&server.sent_p99_us),
                    grouped(server.achieved_rps.median),
                    server.short_rounds,
                    server.rounds.len(),
                    server
                        .server_cpu_utilization
                        .map(|cpu| format!("{:.0} %", cpu.median * 100.0))
                        .unwrap_or_default(),
                );
            }
            let ratio = |spread: &Option<Spread>| {
                spread
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), |s| s.show(2))
            };
            let lag = rate
                .servers
                .iter()
                .map(|s| s.lag_p99_us.max)
                .fold(0.0, f64::max);
            let _ = writeln!(
                out,
                "\nStrata ÷ axum, p99 (per round): {}; Strata ÷ hyper, p99: {}. The generator's \
                 own lateness, p99: at most {} µs in any round.",
                ratio(&rate.strata_over_axum_p99),
                ratio(&rate.strata_over_hyper_p99),
                us(lag),
            );
            let short: usize = rate.servers.iter().map(|s| s.short_rounds).sum();
            if short > 0 {
                let _ = writeln!(
                    out,
                    "\n**{short} round(s) fell more than {:.0} % short of the rate**: their \
                     figures are not at this rate.",
                    (1.0 - report.shortfall) * 100.0
                );
            }
        }
    }
    out
}

#[allow(clippy::cast_precision_loss)]
fn u64_f64(value: u64) -> f64 {
    value as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> LatencyOptions {
        match crate::args::parse(args.iter().copied()) {
            Ok(Command::Latency(options)) => options,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn rates_are_numbers_or_shares() {
        assert_eq!("20000".parse(), Ok(RateSpec::Fixed(20_000)));
        assert_eq!("20k".parse(), Ok(RateSpec::Fixed(20_000)));
        assert_eq!("2.5k".parse(), Ok(RateSpec::Fixed(2500)));
        assert_eq!("25%".parse(), Ok(RateSpec::OfSaturation(0.25)));
        assert_eq!(" 75 %".parse(), Ok(RateSpec::OfSaturation(0.75)));
        for bad in ["", "0", "-5", "fast", "0%", "300%", "k", "1e12", "NaN%"] {
            assert!(bad.parse::<RateSpec>().is_err(), "{bad}");
        }
        assert_eq!(RateSpec::OfSaturation(0.25).to_string(), "25%");
        assert_eq!(RateSpec::Fixed(5000).to_string(), "5000");
    }

    #[test]
    fn shares_of_the_slowest_become_round_rates() {
        assert_eq!(round_rate(17_432.0), 17_000);
        assert_eq!(round_rate(17_600.0), 18_000);
        assert_eq!(round_rate(4_321.0), 4_300);
        assert_eq!(round_rate(123.0), 120);
        assert_eq!(round_rate(0.2), 1);
        let specs = [
            RateSpec::OfSaturation(0.75),
            RateSpec::Fixed(5000),
            RateSpec::OfSaturation(0.25),
            RateSpec::Fixed(15_000),
        ];
        // 25 % and 75 % of 60,000: 15,000 (given twice) and 45,000.
        let rates: Vec<u64> = resolve(&specs, 60_000.0).iter().map(|r| r.0).collect();
        assert_eq!(rates, [5000, 15_000, 45_000]);
    }

    #[test]
    fn options() {
        let defaults = parsed(&["latency"]);
        assert_eq!(
            defaults.scenarios,
            [Scenario::Hello, Scenario::ValidatedPost]
        );
        assert_eq!(
            defaults.rates,
            [RateSpec::OfSaturation(0.25), RateSpec::OfSaturation(0.75)]
        );
        assert_eq!((defaults.connections, defaults.rounds), (64, 5));
        assert_eq!(defaults.duration, Duration::from_secs(5));
        assert!(defaults.pin && defaults.json.is_none());
        let quick = parsed(&["latency", "--quick"]);
        assert!(quick.duration < defaults.duration && quick.rounds < defaults.rounds);
        let options = parsed(&[
            "latency",
            "--rates",
            "5000,20k,50%",
            "--scenario=hello",
            "--connections",
            "16",
            "--duration",
            "2s",
            "--warmup=500ms",
            "--calibration",
            "1s",
            "--rounds",
            "7",
            "--workers",
            "2",
            "--no-pin",
            "--json",
            "/tmp/l.json",
        ]);
        assert_eq!(
            options.rates,
            [
                RateSpec::Fixed(5000),
                RateSpec::Fixed(20_000),
                RateSpec::OfSaturation(0.5)
            ]
        );
        assert_eq!(options.scenarios, [Scenario::Hello]);
        assert_eq!((options.connections, options.rounds), (16, 7));
        assert_eq!(
            (options.duration, options.warmup, options.calibration),
            (
                Duration::from_secs(2),
                Duration::from_millis(500),
                Duration::from_secs(1)
            )
        );
        assert_eq!(options.workers, 2);
        assert!(!options.pin);
        assert_eq!(options.json, Some(PathBuf::from("/tmp/l.json")));
        assert_eq!(crate::args::parse(["latency", "--help"]), Ok(Command::Help));
        for args in [
            &["latency", "--rates", ","][..],
            &["latency", "--rates", "fast"],
            &["latency", "--rates"],
            &["latency", "--connections", "0"],
            &["latency", "--scenario", "nope"],
            &["latency", "--generator", "wrk"],
        ] {
            assert!(
                crate::args::parse(args.iter().copied()).is_err(),
                "{args:?}"
            );
        }
        for option in ["strata-bench latency", "--rates", "--calibration"] {
            assert!(USAGE.contains(option), "{option}");
        }
    }

    fn round(p99_us: f64, short: bool) -> RoundLatency {
        RoundLatency {
            scheduled: 100,
            completed: 100,
            seconds: 1.0,
            achieved_rps: if short { 90.0 } else { 100.0 },
            short,
            min_us: 1.0,
            p50_us: p99_us / 2.0,
            p99_us,
            p999_us: p99_us * 2.0,
            max_us: p99_us * 3.0,
            sent_p50_us: p99_us / 2.0,
            sent_p99_us: p99_us,
            sent_p999_us: p99_us * 2.0,
            lag_p99_us: 3.0,
            lag_max_us: 9.0,
            server_cpu_utilization: Some(0.25),
        }
    }

    #[test]
    fn strata_over_axum_is_taken_round_by_round() {
        let servers = vec![
            ServerLatency::new(
                ServerKind::Hyper,
                vec![round(50.0, false), round(60.0, false)],
            ),
            ServerLatency::new(
                ServerKind::Axum,
                vec![round(100.0, false), round(200.0, false)],
            ),
            ServerLatency::new(
                ServerKind::Strata,
                vec![round(110.0, true), round(180.0, false)],
            ),
        ];
        let rate = RateResult::new(15_000, RateSpec::OfSaturation(0.25), 60_000.0, servers);
        let over_axum = rate.strata_over_axum_p99.unwrap();
        // 1.1 and 0.9: the median of two is their mean.
        assert!((over_axum.median - 1.0).abs() < 1e-9);
        assert!((over_axum.min - 0.9).abs() < 1e-9 && (over_axum.max - 1.1).abs() < 1e-9);
        assert!((rate.strata_over_hyper_p99.unwrap().max - 3.0).abs() < 1e-9);
        assert!((rate.of_slowest_saturation - 0.25).abs() < 1e-9);
        let strata = &rate.servers[2];
        assert_eq!(strata.short_rounds, 1);
        assert!((strata.p99_us.median - 145.0).abs() < 1e-9);
        assert!((strata.server_cpu_utilization.unwrap().median - 0.25).abs() < 1e-9);

        let report = LatencyReport {
            command: String::new(),
            machine: Machine {
                cores: 2,
                cpu: "cpu".to_owned(),
                memory: String::new(),
                kernel: String::new(),
                rustc: "rustc".to_owned(),
            },
            connections: 64,
            round_seconds: 1.0,
            warmup_seconds: 1.0,
            calibration_seconds: 1.0,
            rounds: 2,
            server_workers: 1,
            pinned: true,
            own_binaries: true,
            rates_asked: vec!["25%".to_owned()],
            histogram_relative_error: RELATIVE_ERROR,
            shortfall: SHORTFALL,
            load_average_before: String::new(),
            load_average_after: String::new(),
            scenarios: vec![ScenarioLatency {
                scenario: Scenario::Hello,
                response: serde_json::Value::Null,
                saturation: vec![Saturation {
                    server: ServerKind::Axum,
                    requests_per_second: 60_000.0,
                }],
                rates: vec![rate],
            }],
        };
        let text = markdown(&report);
        assert!(text.contains("### hello at 15,000 req/s (25% of the slowest's saturation)"));
        assert!(
            text.contains("| strata | 72.5 (55.0–90.0) | 145 (110–180) |"),
            "{text}"
        );
        assert!(text.contains("| 1/2 | 25 % |"), "{text}");
        assert!(text.contains("Strata ÷ axum, p99 (per round): 1.00 (0.90–1.10)"));
        assert!(
            text.contains("**1 round(s) fell more than 2 % short"),
            "{text}"
        );
        assert!(text.contains("axum 60,000 req/s"));
    }
}
