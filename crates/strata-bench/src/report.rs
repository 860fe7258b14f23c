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
    /// Over every request of every round, in microseconds.
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
        let mut latencies: Vec<u64> = rounds
            .iter()
            .flat_map(|r| r.latencies.iter().copied())
            .collect();
        latencies.sort_unstable();
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
        #[allow(clippy::cast_precision_loss)]
        let micros = |q| percentile(&latencies, q).map_or(f64::NAN, |ns| ns as f64 / 1000.0);
        Self {
            server,
            rps_median: median(&throughputs).unwrap_or(f64::NAN),
            rps_min: throughputs.iter().copied().fold(f64::INFINITY, f64::min),
            rps_max: throughputs.iter().copied().fold(0.0, f64::max),
            p50_us: micros(0.50),
            p99_us: micros(0.99),
            requests,
            cpu_us_per_request,
            cpu_utilization: cpu.filter(|_| wall > 0.0).map(|c| c / wall),
            rounds: throughputs,
            peak_rss_kib,
        }
    }
}

/// One scenario's numbers.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ScenarioResult {
    pub(crate) scenario: Scenario,
    /// The body every server answered (checked before measuring).
    pub(crate) response: serde_json::Value,
    pub(crate) servers: Vec<ServerResult>,
    pub(crate) strata_vs_hyper: Option<f64>,
    pub(crate) strata_vs_axum: Option<f64>,
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
            servers,
        }
    }

    fn rps(&self, kind: ServerKind) -> Option<f64> {
        self.servers
            .iter()
            .find(|s| s.server == kind)
            .map(|s| s.rps_median)
    }
}

/// A performance target and whether this run met it, by throughput (the target as written)
/// and by server CPU time per request (steadier on a shared or client-bound machine).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Target {
    pub(crate) name: String,
    /// The ratio of requests per second.
    pub(crate) value: Option<f64>,
    /// `None` when the scenarios it needs were not run.
    pub(crate) met: Option<bool>,
    /// The same ratio computed from server CPU time per request (inverted: higher is better).
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
        .servers
        .iter()
        .find(|s| s.server == kind)?;
    match by {
        Speed::Throughput => Some(server.rps_median),
        Speed::Cpu => server.cpu_us_per_request.map(|us| 1e6 / us),
    }
}

/// The targets of issue 7, checked against `results`.
pub(crate) fn targets(results: &[ScenarioResult]) -> Vec<Target> {
    let ratio = |a: (Scenario, ServerKind), b: (Scenario, ServerKind), by| {
        Some(speed(results, a.0, a.1, by)? / speed(results, b.0, b.1, by)?)
    };
    let target = |name: String, a, b, bound: f64| {
        let value = ratio(a, b, Speed::Throughput);
        let cpu_value = ratio(a, b, Speed::Cpu);
        Target {
            name,
            met: value.map(|v| v >= bound),
            value,
            cpu_met: cpu_value.map(|v| v >= bound),
            cpu_value,
        }
    };
    let strata = |scenario| (scenario, ServerKind::Strata);
    let mut targets = vec![
        target(
            "Strata/axum >= 1.0 on hello".into(),
            strata(Scenario::Hello),
            (Scenario::Hello, ServerKind::Axum),
            1.0,
        ),
        target(
            "Strata/axum >= 1.0 on validated-post".into(),
            strata(Scenario::ValidatedPost),
            (Scenario::ValidatedPost, ServerKind::Axum),
            1.0,
        ),
        target(
            "Strata/hyper >= 0.85 on hello".into(),
            strata(Scenario::Hello),
            (Scenario::Hello, ServerKind::Hyper),
            0.85,
        ),
    ];
    for by in [Speed::Throughput, Speed::Cpu] {
        let worst = results
            .iter()
            .filter_map(|r| {
                let vs = (r.scenario, ServerKind::Axum);
                Some((r.scenario, ratio(strata(r.scenario), vs, by)?))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let (label, value) = match by {
            Speed::Throughput => ("throughput", worst.map(|w| w.1)),
            Speed::Cpu => ("CPU per request", worst.map(|w| w.1)),
        };
        let mut row = Target {
            name: format!(
                "no scenario below 0.9 of axum, by {label} (worst: {})",
                worst.map_or("-", |(s, _)| s.name())
            ),
            value: None,
            met: None,
            cpu_value: None,
            cpu_met: None,
        };
        match by {
            Speed::Throughput => (row.value, row.met) = (value, value.map(|v| v >= 0.9)),
            Speed::Cpu => (row.cpu_value, row.cpu_met) = (value, value.map(|v| v >= 0.9)),
        }
        targets.push(row);
    }
    targets.push(target(
        "Strata routes-10k within 5% of hello (ratio >= 0.95)".into(),
        strata(Scenario::Routes10k),
        strata(Scenario::Hello),
        0.95,
    ));
    targets
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

/// Everything a run produced (the JSON file).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) connections: usize,
    pub(crate) round_seconds: f64,
    pub(crate) warmup_seconds: f64,
    pub(crate) rounds: usize,
    pub(crate) server_workers: usize,
    pub(crate) client_threads: usize,
    pub(crate) pinned: bool,
    pub(crate) scenarios: Vec<ScenarioResult>,
    pub(crate) targets: Vec<Target>,
}

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"))
}

impl Report {
    /// The Markdown tables: one row per scenario and server, then the targets.
    pub(crate) fn markdown(&self) -> String {
        let mut out = String::new();
        let m = &self.machine;
        let _ = writeln!(
            out,
            "{} cores, {}, {}, Linux {}, {}; {} connections, {} rounds of {:.1} s after {:.1} s of \
             warm-up; server runtime {} worker(s){}, load generator {} thread(s).\n",
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
                " on core 0 (taskset), load generator on core 1"
            } else {
                ", not pinned"
            },
            self.client_threads,
        );
        out.push_str(
            "| scenario | server | req/s (median) | min | max | p50 µs | p99 µs | server CPU µs/req | server CPU | peak RSS MiB | ÷ hyper | ÷ axum |\n\
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
        out.push_str(
            "\n| target | by req/s | met | by server CPU per request | met |\n|---|---:|---|---:|---|\n",
        );
        let met = |met| match met {
            Some(true) => "met",
            Some(false) => "**not met**",
            None => "-",
        };
        for target in &self.targets {
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
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn server(kind: ServerKind, rps: f64) -> ServerResult {
        ServerResult {
            server: kind,
            rounds: vec![rps],
            rps_median: rps,
            rps_min: rps,
            rps_max: rps,
            p50_us: 1.0,
            p99_us: 2.0,
            requests: 1,
            cpu_us_per_request: Some(10.0),
            cpu_utilization: None,
            peak_rss_kib: Some(2048),
        }
    }

    fn scenario(scenario: Scenario, hyper: f64, axum: f64, strata: f64) -> ScenarioResult {
        ScenarioResult::new(
            scenario,
            serde_json::Value::Null,
            vec![
                server(ServerKind::Hyper, hyper),
                server(ServerKind::Axum, axum),
                server(ServerKind::Strata, strata),
            ],
        )
    }

    #[test]
    fn ratios_and_targets() {
        let results = vec![
            scenario(Scenario::Hello, 100.0, 80.0, 84.0),
            scenario(Scenario::ValidatedPost, 50.0, 40.0, 30.0),
            scenario(Scenario::Routes10k, 100.0, 80.0, 82.0),
        ];
        assert_eq!(results[0].strata_vs_hyper, Some(0.84));
        assert_eq!(results[0].strata_vs_axum, Some(1.05));
        let targets = targets(&results);
        let met: Vec<_> = targets.iter().map(|t| t.met).collect();
        assert_eq!(
            met,
            vec![
                Some(true),
                Some(false),
                Some(false),
                Some(false),
                None,
                Some(true)
            ]
        );
        assert!(targets[3].name.contains("validated-post"));
        // Every server used as much CPU per request: Strata is on par by CPU.
        assert_eq!(targets[0].cpu_value, Some(1.0));
        assert_eq!(targets[4].cpu_met, Some(true));
        assert_eq!(super::targets(&results[..1])[5].met, None);
    }

    #[test]
    fn summarizes_rounds() {
        let round = |requests: u64| LoadResult {
            requests,
            elapsed: Duration::from_secs(1),
            latencies: (1..=requests).map(|i| i * 1000).collect(),
            server_cpu: Some(Duration::from_millis(50)),
        };
        let result = ServerResult::new(
            ServerKind::Strata,
            &[round(100), round(300), round(200)],
            None,
        );
        assert!((result.rps_median - 200.0).abs() < 1e-9);
        assert_eq!((result.rps_min, result.rps_max), (100.0, 300.0));
        assert_eq!(result.requests, 600);
        assert!(result.p50_us > 0.0 && result.p99_us >= result.p50_us);
        // 150 ms of CPU for 600 requests in 3 s.
        assert!((result.cpu_us_per_request.unwrap_or(0.0) - 250.0).abs() < 1e-6);
        assert!((result.cpu_utilization.unwrap_or(0.0) - 0.05).abs() < 1e-9);
    }
}
