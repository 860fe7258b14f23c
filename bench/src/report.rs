//! Results: the Markdown table, the targets and the JSON file.

use std::fmt::Write as _;
use std::process::Command;

use serde::Serialize;

use crate::load::LoadResult;
use crate::scenario::{Scenario, ServerKind};
use crate::stats::{median, percentile};

/// One server's numbers in one scenario.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ServerResult {
    pub(crate) server: ServerKind,
    /// Requests per second of each measured round.
    pub(crate) rounds: Vec<f64>,
    pub(crate) rps_median: f64,
    pub(crate) rps_min: f64,
    pub(crate) rps_max: f64,
    /// In microseconds: over every request of every round (internal generator), or the median
    /// of the rounds' percentiles (wrk, which reports percentiles only).
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) requests: u64,
    /// Server CPU time per request over every round, in microseconds.
    pub(crate) cpu_us_per_request: Option<f64>,
    /// Server CPU time over wall time of the rounds (1.0 = one core busy).
    pub(crate) cpu_utilization: Option<f64>,
    pub(crate) peak_rss_kib: Option<u64>,
}

impl ServerResult {
    /// Summarizes the rounds of one server.
    pub(crate) fn new(
        server: ServerKind,
        rounds: &[LoadResult],
        peak_rss_kib: Option<u64>,
    ) -> Self {
        let throughputs: Vec<f64> = rounds.iter().map(LoadResult::throughput).collect();
        let requests: u64 = rounds.iter().map(|r| r.requests).sum();
        let cpu: Option<f64> = rounds
            .iter()
            .map(|r| r.server_cpu.map(|c| c.as_secs_f64()))
            .sum();
        let wall: f64 = rounds.iter().map(|r| r.elapsed.as_secs_f64()).sum();
        #[allow(clippy::cast_precision_loss)]
        let cpu_us_per_request = cpu
            .filter(|_| requests > 0)
            .map(|c| c * 1e6 / requests as f64);
        let (p50_us, p99_us) = latency_percentiles(rounds);
        Self {
            server,
            rps_median: median(&throughputs).unwrap_or(f64::NAN),
            rps_min: throughputs.iter().copied().fold(f64::INFINITY, f64::min),
            rps_max: throughputs.iter().copied().fold(0.0, f64::max),
            p50_us,
            p99_us,
            requests,
            cpu_us_per_request,
            cpu_utilization: cpu.filter(|_| wall > 0.0).map(|c| c / wall),
            rounds: throughputs,
            peak_rss_kib,
        }
    }
}

/// p50 and p99 in microseconds: over every request when the rounds carry every latency, else
/// the median of the rounds' own percentiles (wrk's distributions cannot be merged).
#[allow(clippy::cast_precision_loss)]
fn latency_percentiles(rounds: &[LoadResult]) -> (f64, f64) {
    let micros = |ns: Option<u64>| ns.map_or(f64::NAN, |ns| ns as f64 / 1000.0);
    if rounds.iter().any(|r| r.percentiles.is_some()) {
        let of_rounds = |pick: fn((u64, u64)) -> u64| {
            let values: Vec<f64> = rounds
                .iter()
                .filter_map(|r| r.percentiles.map(pick))
                .map(|ns| ns as f64)
                .collect();
            median(&values).map_or(f64::NAN, |ns| ns / 1000.0)
        };
        return (of_rounds(|p| p.0), of_rounds(|p| p.1));
    }
    let mut latencies: Vec<u64> = rounds
        .iter()
        .flat_map(|r| r.latencies.iter().copied())
        .collect();
    latencies.sort_unstable();
    (
        micros(percentile(&latencies, 0.50)),
        micros(percentile(&latencies, 0.99)),
    )
}

/// One scenario's numbers.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ScenarioResult {
    pub(crate) scenario: Scenario,
    /// The body every server answered (checked before measuring), long lists abridged
    /// (`preflight::abridged`).
    pub(crate) response: serde_json::Value,
    pub(crate) servers: Vec<ServerResult>,
    pub(crate) strata_vs_hyper: Option<f64>,
    pub(crate) strata_vs_axum: Option<f64>,
    pub(crate) strata_vs_express_zod_api: Option<f64>,
    pub(crate) strata_vs_quick_start: Option<f64>,
}

impl ScenarioResult {
    /// With the ratios of the medians.
    pub(crate) fn new(
        scenario: Scenario,
        response: serde_json::Value,
        servers: Vec<ServerResult>,
    ) -> Self {
        let rps = |kind| {
            servers
                .iter()
                .find(|s| s.server == kind)
                .map(|s| s.rps_median)
        };
        let ratio = |other| Some(rps(ServerKind::Strata)? / rps(other)?);
        Self {
            scenario,
            response,
            strata_vs_hyper: ratio(ServerKind::Hyper),
            strata_vs_axum: ratio(ServerKind::Axum),
            strata_vs_express_zod_api: ratio(ServerKind::ExpressZodApi),
            strata_vs_quick_start: ratio(ServerKind::QuickStart),
            servers,
        }
    }

    fn server(&self, kind: ServerKind) -> Option<&ServerResult> {
        self.servers.iter().find(|s| s.server == kind)
    }

    fn rps(&self, kind: ServerKind) -> Option<f64> {
        self.server(kind).map(|s| s.rps_median)
    }
}

/// What a target compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Measure {
    /// Strata's speed over another's (higher is better), by requests per second (`value`) and
    /// by server CPU time per request (`cpu_value`).
    Speed,
    /// Peak RSS (`value` only; its unit is in the target's name).
    Memory,
}

/// A performance target and whether this run met it. Speed targets are judged by throughput
/// (the target as written) and by server CPU time per request (steadier on a shared or
/// client-bound machine).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Target {
    pub(crate) name: String,
    pub(crate) measure: Measure,
    /// A speed target's ratio of requests per second; a memory target's worst value.
    pub(crate) value: Option<f64>,
    /// `None` when the scenarios or servers it needs were not run.
    pub(crate) met: Option<bool>,
    /// The speed ratio computed from server CPU time per request (inverted: higher is better).
    pub(crate) cpu_value: Option<f64>,
    pub(crate) cpu_met: Option<bool>,
}

/// How fast a server was in a scenario: requests per second, or requests per CPU second.
#[derive(Clone, Copy)]
enum Speed {
    Throughput,
    Cpu,
}

fn speed(
    results: &[ScenarioResult],
    scenario: Scenario,
    kind: ServerKind,
    by: Speed,
) -> Option<f64> {
    let server = results
        .iter()
        .find(|r| r.scenario == scenario)?
        .server(kind)?;
    match by {
        Speed::Throughput => Some(server.rps_median),
        Speed::Cpu => server.cpu_us_per_request.map(|us| 1e6 / us),
    }
}

/// Strata's lowest speed ratio to `other` over the scenarios both ran, and where.
fn worst_speed(
    results: &[ScenarioResult],
    other: ServerKind,
    by: Speed,
) -> Option<(Scenario, f64)> {
    results
        .iter()
        .filter_map(|r| {
            let strata = speed(results, r.scenario, ServerKind::Strata, by)?;
            Some((r.scenario, strata / speed(results, r.scenario, other, by)?))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// The largest `f(Strata's peak RSS, other's)` over the scenarios both ran, and where.
fn worst_memory(
    results: &[ScenarioResult],
    other: ServerKind,
    f: impl Fn(f64, f64) -> f64,
) -> Option<(Scenario, f64)> {
    #[allow(clippy::cast_precision_loss)]
    let rss = |r: &ScenarioResult, kind| Some(r.server(kind)?.peak_rss_kib? as f64);
    results
        .iter()
        .filter_map(|r| Some((r.scenario, f(rss(r, ServerKind::Strata)?, rss(r, other)?))))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// "Strata >= `bound` x `other` on every scenario": the worst scenario by each measure.
fn every_scenario(results: &[ScenarioResult], name: &str, other: ServerKind, bound: f64) -> Target {
    let by_rps = worst_speed(results, other, Speed::Throughput);
    let by_cpu = worst_speed(results, other, Speed::Cpu);
    let worst = match (by_rps, by_cpu) {
        (Some((a, _)), Some((b, _))) if a == b => format!(" (worst: {a})"),
        (Some((a, _)), Some((b, _))) => format!(" (worst: {a} by req/s, {b} by CPU)"),
        (Some((a, _)), None) => format!(" (worst: {a})"),
        (None, _) => String::new(),
    };
    Target {
        name: format!("{name}{worst}"),
        measure: Measure::Speed,
        value: by_rps.map(|w| w.1),
        met: by_rps.map(|w| w.1 >= bound),
        cpu_value: by_cpu.map(|w| w.1),
        cpu_met: by_cpu.map(|w| w.1 >= bound),
    }
}

/// The targets of issue 17, checked against `results` ("every scenario" is every scenario
/// run).
pub(crate) fn targets(results: &[ScenarioResult]) -> Vec<Target> {
    let ratio = |a: (Scenario, ServerKind), b: (Scenario, ServerKind), by| {
        Some(speed(results, a.0, a.1, by)? / speed(results, b.0, b.1, by)?)
    };
    let target = |name: &str, a, b, bound: f64| {
        let value = ratio(a, b, Speed::Throughput);
        let cpu_value = ratio(a, b, Speed::Cpu);
        Target {
            name: name.to_owned(),
            measure: Measure::Speed,
            met: value.map(|v| v >= bound),
            value,
            cpu_met: cpu_value.map(|v| v >= bound),
            cpu_value,
        }
    };
    // `value` is `what` (its unit) in the worst scenario.
    let memory =
        |name: &str, what: &str, worst: Option<(Scenario, f64)>, met: fn(f64) -> bool| Target {
            name: match worst {
                Some((scenario, _)) => format!("{name} (worst: {scenario}; {what})"),
                None => format!("{name} ({what})"),
            },
            measure: Measure::Memory,
            value: worst.map(|w| w.1),
            met: worst.map(|w| met(w.1)),
            cpu_value: None,
            cpu_met: None,
        };
    let strata = |scenario| (scenario, ServerKind::Strata);
    vec![
        every_scenario(
            results,
            "Strata >= 1.05 x axum on every scenario",
            ServerKind::Axum,
            1.05,
        ),
        target(
            "Strata >= 0.85 x hyper on hello",
            strata(Scenario::Hello),
            (Scenario::Hello, ServerKind::Hyper),
            0.85,
        ),
        target(
            "Strata routes-10k within 3 % of hello (ratio >= 0.97)",
            strata(Scenario::Routes10k),
            strata(Scenario::Hello),
            0.97,
        ),
        every_scenario(
            results,
            "Strata >= 12 x express-zod-api's throughput on every scenario",
            ServerKind::ExpressZodApi,
            12.0,
        ),
        memory(
            "Strata's peak RSS <= axum's + 1 MiB on every scenario",
            "Strata's - axum's, MiB",
            worst_memory(results, ServerKind::Axum, |strata, axum| {
                (strata - axum) / 1024.0
            }),
            |mib| mib <= 1.0,
        ),
        memory(
            "Strata's peak RSS <= 1/10 of express-zod-api's on every scenario",
            "Strata's ÷ express-zod-api's",
            worst_memory(results, ServerKind::ExpressZodApi, |strata, ezapi| {
                strata / ezapi
            }),
            |ratio| ratio <= 0.1,
        ),
    ]
}

/// Where the numbers were taken.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Machine {
    pub(crate) cores: usize,
    pub(crate) cpu: String,
    pub(crate) memory: String,
    pub(crate) kernel: String,
    pub(crate) rustc: String,
}

impl Machine {
    /// Reads `/proc` and asks `rustc`.
    pub(crate) fn probe() -> Self {
        let read = |path| std::fs::read_to_string(path).unwrap_or_default();
        let field = |text: &str, name: &str| {
            text.lines()
                .find(|line| line.starts_with(name))
                .and_then(|line| line.split_once(':'))
                .map(|(_, value)| value.trim().to_owned())
                .unwrap_or_default()
        };
        let rustc = Command::new("rustc")
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        Self {
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            cpu: field(&read("/proc/cpuinfo"), "model name"),
            memory: field(&read("/proc/meminfo"), "MemTotal"),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
            rustc,
        }
    }
}

/// The load generator a run used.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GeneratorInfo {
    /// `wrk` or `internal`.
    pub(crate) name: &'static str,
    /// wrk's version line (`wrk debian/4.1.0-3+b2 [epoll]`).
    pub(crate) version: Option<String>,
    /// Its threads (wrk: `-t1`; internal: the runtime's workers).
    pub(crate) threads: usize,
}

impl GeneratorInfo {
    fn describe(&self) -> String {
        let threads = if self.threads == 1 {
            "1 thread".to_owned()
        } else {
            format!("{} threads", self.threads)
        };
        match &self.version {
            Some(version) => format!("{} ({version}), {threads}", self.name),
            None => format!("{}, {threads}", self.name),
        }
    }
}

/// A server that was not measured, and why.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Skipped {
    pub(crate) server: ServerKind,
    pub(crate) reason: String,
}

/// Everything a run produced (the JSON file).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) generator: GeneratorInfo,
    pub(crate) connections: usize,
    pub(crate) round_seconds: f64,
    pub(crate) warmup_seconds: f64,
    pub(crate) rounds: usize,
    pub(crate) server_workers: usize,
    pub(crate) client_threads: usize,
    pub(crate) pinned: bool,
    /// hyper, axum and Strata each ran from a binary of its own (`strata-bench-<server>`),
    /// not from this one.
    pub(crate) own_binaries: bool,
    /// `express-zod-api 29.8.1 on Node v24.21.0`, when it took part.
    pub(crate) express_zod_api: Option<String>,
    /// Servers that were not measured, and why.
    pub(crate) skipped: Vec<Skipped>,
    pub(crate) scenarios: Vec<ScenarioResult>,
    pub(crate) targets: Vec<Target>,
}

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"))
}

fn met(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "**not met**",
        None => "-",
    }
}

impl Report {
    /// The Markdown tables: one row per scenario and server, Strata against the comparison
    /// servers, then the targets.
    pub(crate) fn markdown(&self) -> String {
        let mut out = String::new();
        let m = &self.machine;
        let _ = writeln!(
            out,
            "{} cores, {}, {}, Linux {}, {}; {} connections, {} rounds of {:.1} s after {:.1} s of \
             warm-up; server runtime {} worker(s){}, load generator: {}{}.",
            m.cores,
            m.cpu,
            m.memory,
            m.kernel,
            m.rustc,
            self.connections,
            self.rounds,
            self.round_seconds,
            self.warmup_seconds,
            self.server_workers,
            if self.pinned {
                " on core 0 (taskset)"
            } else {
                ""
            },
            self.generator.describe(),
            if self.pinned {
                " on core 1"
            } else {
                ", not pinned"
            },
        );
        out.push_str(if self.own_binaries {
            "Servers: hyper, axum and Strata each in a binary of its own.\n"
        } else {
            "Servers: hyper, axum and Strata in one binary (their own were not built).\n"
        });
        if let Some(ezapi) = &self.express_zod_api {
            let _ = writeln!(out, "Comparison: {ezapi} (NODE_ENV=production).");
        }
        for skipped in &self.skipped {
            let _ = writeln!(out, "**Not run: {}**: {}", skipped.server, skipped.reason);
        }
        out.push_str(
            "\n| scenario | server | req/s (median) | min | max | p50 µs | p99 µs | server CPU µs/req | server CPU | peak RSS MiB | ÷ hyper | ÷ axum |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for scenario in &self.scenarios {
            for server in &scenario.servers {
                let vs = |kind| scenario.rps(kind).map(|other| server.rps_median / other);
                #[allow(clippy::cast_precision_loss)]
                let rss = server
                    .peak_rss_kib
                    .map_or_else(|| "-".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0));
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} | {} | {} | {} |",
                    scenario.scenario,
                    server.server,
                    server.rps_median,
                    server.rps_min,
                    server.rps_max,
                    server.p50_us,
                    server.p99_us,
                    server
                        .cpu_us_per_request
                        .map_or_else(|| "-".to_owned(), |c| format!("{c:.1}")),
                    server
                        .cpu_utilization
                        .map_or_else(|| "-".to_owned(), |c| format!("{:.0}%", c * 100.0)),
                    rss,
                    ratio(vs(ServerKind::Hyper)),
                    ratio(vs(ServerKind::Axum)),
                );
            }
        }
        self.comparison_table(&mut out);
        out.push_str(
            "\n| target | by req/s | met | by server CPU per request | met |\n|---|---:|---|---:|---|\n",
        );
        for target in self.targets.iter().filter(|t| t.measure == Measure::Speed) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                target.name,
                ratio(target.value),
                met(target.met),
                ratio(target.cpu_value),
                met(target.cpu_met),
            );
        }
        out.push_str("\n| memory target | worst | met |\n|---|---:|---|\n");
        for target in self.targets.iter().filter(|t| t.measure == Measure::Memory) {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                target.name,
                ratio(target.value),
                met(target.met),
            );
        }
        out
    }

    /// Strata ÷ express-zod-api and Strata ÷ the quick start, per scenario, where they ran.
    fn comparison_table(&self, out: &mut String) {
        let others = [ServerKind::ExpressZodApi, ServerKind::QuickStart];
        let rows: Vec<_> = others
            .iter()
            .flat_map(|kind| self.scenarios.iter().map(move |s| (*kind, s)))
            .filter_map(|(kind, s)| Some((kind, s, s.server(kind)?, s.server(ServerKind::Strata)?)))
            .collect();
        if rows.is_empty() {
            return;
        }
        out.push_str(
            "\n| scenario | Strata ÷ that server | by req/s | by server CPU per request | its peak RSS ÷ Strata's |\n\
             |---|---|---:|---:|---:|\n",
        );
        for (kind, scenario, other, strata) in rows {
            let cpu = strata
                .cpu_us_per_request
                .zip(other.cpu_us_per_request)
                .map(|(strata, other)| other / strata);
            #[allow(clippy::cast_precision_loss)]
            let rss = strata
                .peak_rss_kib
                .zip(other.peak_rss_kib)
                .map(|(strata, other)| other as f64 / strata as f64);
            let _ = writeln!(
                out,
                "| {} | {kind} | {} | {} | {} |",
                scenario.scenario,
                ratio(Some(strata.rps_median / other.rps_median)),
                ratio(cpu),
                ratio(rss),
            );
        }
    }
}

/// Writes `report` to `path` as pretty JSON, its directory made first, and says where.
pub(crate) fn write_json(
    path: &std::path::Path,
    report: &impl serde::Serialize,
) -> Result<(), String> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let json = serde_json::to_vec_pretty(report).map_err(|e| e.to_string())?;
    std::fs::write(path, json).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("results written to {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A server that used as much CPU per request as its throughput allows on one core, and
    /// `rss_mib` of memory.
    fn server(kind: ServerKind, rps: f64, rss_mib: u64) -> ServerResult {
        ServerResult {
            server: kind,
            rounds: vec![rps],
            rps_median: rps,
            rps_min: rps,
            rps_max: rps,
            p50_us: 1.0,
            p99_us: 2.0,
            requests: 1,
            cpu_us_per_request: Some(1e6 / rps),
            cpu_utilization: None,
            peak_rss_kib: Some(rss_mib * 1024),
        }
    }

    fn scenario(scenario: Scenario, servers: &[(ServerKind, f64, u64)]) -> ScenarioResult {
        ScenarioResult::new(
            scenario,
            serde_json::Value::Null,
            servers
                .iter()
                .map(|&(kind, rps, rss)| server(kind, rps, rss))
                .collect(),
        )
    }

    use ServerKind::{Axum, ExpressZodApi as Ezapi, Hyper, QuickStart, Strata};

    /// Hello meets everything; validated-post is 1.025 of axum and 10.25 of express-zod-api;
    /// routes-10k is within 3 % of hello but takes 2 MiB more than axum and 0.15 of
    /// express-zod-api's memory.
    fn results() -> Vec<ScenarioResult> {
        vec![
            scenario(
                Scenario::Hello,
                &[
                    (Hyper, 100.0, 8),
                    (Axum, 80.0, 9),
                    (Strata, 86.0, 9),
                    (Ezapi, 7.0, 100),
                    (QuickStart, 43.0, 10),
                ],
            ),
            scenario(
                Scenario::ValidatedPost,
                &[
                    (Hyper, 50.0, 8),
                    (Axum, 40.0, 9),
                    (Strata, 41.0, 9),
                    (Ezapi, 4.0, 100),
                ],
            ),
            scenario(
                Scenario::Routes10k,
                &[
                    (Hyper, 100.0, 10),
                    (Axum, 80.0, 28),
                    (Strata, 85.0, 30),
                    (Ezapi, 6.0, 200),
                ],
            ),
        ]
    }

    #[test]
    fn ratios() {
        let results = results();
        assert_eq!(results[0].strata_vs_hyper, Some(0.86));
        assert_eq!(results[0].strata_vs_axum, Some(1.075));
        assert_eq!(results[0].strata_vs_quick_start, Some(2.0));
        assert_eq!(results[1].strata_vs_quick_start, None);
        assert!((results[1].strata_vs_express_zod_api.unwrap_or(0.0) - 10.25).abs() < 1e-9);
    }

    #[test]
    fn targets_by_throughput_and_cpu() {
        let mut results = results();
        let targets = targets(&results);
        let names: Vec<_> = targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Strata >= 1.05 x axum on every scenario (worst: validated-post)",
                "Strata >= 0.85 x hyper on hello",
                "Strata routes-10k within 3 % of hello (ratio >= 0.97)",
                "Strata >= 12 x express-zod-api's throughput on every scenario (worst: \
                 validated-post)",
                "Strata's peak RSS <= axum's + 1 MiB on every scenario (worst: routes-10k; \
                 Strata's - axum's, MiB)",
                "Strata's peak RSS <= 1/10 of express-zod-api's on every scenario (worst: \
                 routes-10k; Strata's ÷ express-zod-api's)",
            ]
        );
        let met: Vec<_> = targets.iter().map(|t| t.met).collect();
        assert_eq!(
            met,
            [
                Some(false),
                Some(true),
                Some(true),
                Some(false),
                Some(false),
                Some(false)
            ]
        );
        assert!((targets[0].value.unwrap_or(0.0) - 1.025).abs() < 1e-9);
        assert!((targets[3].value.unwrap_or(0.0) - 10.25).abs() < 1e-9);
        assert_eq!(targets[4].value, Some(2.0));
        assert_eq!(targets[5].value, Some(0.15));
        // CPU per request follows throughput in these numbers, so the CPU verdicts agree;
        // memory targets have none.
        let cpu_met: Vec<_> = targets.iter().map(|t| t.cpu_met).collect();
        assert_eq!(cpu_met[..4], met[..4]);
        assert_eq!(cpu_met[4..], [None, None]);

        // Strata busier per request than axum on hello only: the CPU verdict names it.
        for server in &mut results[0].servers {
            if server.server == Strata {
                server.cpu_us_per_request = Some(1e6 / 70.0);
            }
        }
        let targets = super::targets(&results);
        assert_eq!(
            targets[0].name,
            "Strata >= 1.05 x axum on every scenario (worst: validated-post by req/s, hello by \
             CPU)"
        );
        assert!((targets[0].cpu_value.unwrap_or(0.0) - 0.875).abs() < 1e-9);
    }

    #[test]
    fn targets_met_and_not_measured() {
        // Within every bound.
        let good = [
            scenario(
                Scenario::Hello,
                &[
                    (Hyper, 100.0, 8),
                    (Axum, 80.0, 9),
                    (Strata, 90.0, 10),
                    (Ezapi, 7.0, 101),
                ],
            ),
            scenario(
                Scenario::Routes10k,
                &[
                    (Hyper, 100.0, 10),
                    (Axum, 80.0, 28),
                    (Strata, 88.0, 29),
                    (Ezapi, 7.0, 300),
                ],
            ),
        ];
        let targets = targets(&good);
        assert!(targets.iter().all(|t| t.met == Some(true)), "{targets:?}");
        // Without express-zod-api or routes-10k, their targets are not judged.
        let without = [scenario(
            Scenario::Hello,
            &[(Hyper, 100.0, 8), (Axum, 80.0, 9), (Strata, 90.0, 10)],
        )];
        let met: Vec<_> = super::targets(&without).iter().map(|t| t.met).collect();
        assert_eq!(met, [Some(true), Some(true), None, None, Some(true), None]);
    }

    #[test]
    fn markdown_names_the_generator_and_what_was_not_run() {
        let results = results();
        let report = Report {
            command: "strata-bench --quick".to_owned(),
            machine: Machine {
                cores: 2,
                cpu: "cpu".to_owned(),
                memory: "1 kB".to_owned(),
                kernel: "6".to_owned(),
                rustc: "rustc".to_owned(),
            },
            generator: GeneratorInfo {
                name: "wrk",
                version: Some("wrk debian/4.1.0-3+b2 [epoll]".to_owned()),
                threads: 1,
            },
            connections: 64,
            round_seconds: 1.0,
            warmup_seconds: 1.0,
            rounds: 3,
            server_workers: 1,
            client_threads: 1,
            pinned: true,
            own_binaries: true,
            express_zod_api: None,
            skipped: vec![Skipped {
                server: QuickStart,
                reason: "not built".to_owned(),
            }],
            targets: targets(&results),
            scenarios: results,
        };
        let markdown = report.markdown();
        assert!(
            markdown.contains(
                "load generator: wrk (wrk debian/4.1.0-3+b2 [epoll]), 1 thread on core 1."
            ),
            "{markdown}"
        );
        assert!(markdown.contains("**Not run: quick-start**: not built"));
        assert!(
            markdown.contains("| hello | express-zod-api | 7 |"),
            "{markdown}"
        );
        // Strata ÷ express-zod-api, by req/s, by CPU, and its memory over Strata's.
        assert!(
            markdown.contains("| hello | express-zod-api | 12.29 | 12.29 | 11.11 |"),
            "{markdown}"
        );
        assert!(markdown.contains("| hello | quick-start | 2.00 | 2.00 | 1.11 |"));
        assert!(markdown.contains("| memory target | worst | met |"));
        let json = serde_json::to_value(&report).unwrap_or_default();
        assert_eq!(json["generator"]["name"], "wrk");
        assert_eq!(json["targets"][4]["measure"], "memory");
    }

    #[test]
    fn summarizes_rounds() {
        let round = |requests: u64| LoadResult {
            requests,
            elapsed: Duration::from_secs(1),
            latencies: (1..=requests).map(|i| i * 1000).collect(),
            percentiles: None,
            server_cpu: Some(Duration::from_millis(50)),
        };
        let result = ServerResult::new(Strata, &[round(100), round(300), round(200)], None);
        assert!((result.rps_median - 200.0).abs() < 1e-9);
        assert_eq!((result.rps_min, result.rps_max), (100.0, 300.0));
        assert_eq!(result.requests, 600);
        assert!(result.p50_us > 0.0 && result.p99_us >= result.p50_us);
        // 150 ms of CPU for 600 requests in 3 s.
        assert!((result.cpu_us_per_request.unwrap_or(0.0) - 250.0).abs() < 1e-6);
        assert!((result.cpu_utilization.unwrap_or(0.0) - 0.05).abs() < 1e-9);
    }

    #[test]
    fn wrk_rounds_give_the_median_of_their_percentiles() {
        let round = |p50_us: u64, p99_us: u64| LoadResult {
            requests: 1000,
            elapsed: Duration::from_secs(1),
            latencies: Vec::new(),
            percentiles: Some((p50_us * 1000, p99_us * 1000)),
            server_cpu: None,
        };
        let result = ServerResult::new(
            Strata,
            &[round(500, 900), round(700, 2000), round(600, 800)],
            None,
        );
        assert_eq!((result.p50_us, result.p99_us), (600.0, 900.0));
        assert_eq!(result.cpu_us_per_request, None);
    }
}
