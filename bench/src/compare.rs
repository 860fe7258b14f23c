//! `strata-bench compare`: builds of the Strata server side by side, to price a change to the
//! library (issue 48: each mechanism built for per-request cost is measured with and without
//! it). Each build is a `strata-bench-strata` binary (`solo.rs`: `<binary> <scenario>`), the
//! first the baseline; every scenario is pre-flighted on each, then rounds load each build in
//! turn (wrk, pinned as in a full run), and a build's ratio to the baseline is taken per round,
//! so that drift of the machine hits both sides of each ratio alike.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::args::{parse_duration, positive};
use crate::child::{self, ChildServer};
use crate::scenario::Scenario;
use crate::stats::{Spread, median};

/// The usage text.
pub(crate) const USAGE: &str = "\
COMPARE: builds of the Strata server side by side (a change priced with and without it):
    strata-bench compare <name>=<binary> <name>=<binary>... [--scenario <names>]
                         [--duration <time>] [--warmup <time>] [--rounds N]
                         [--connections N] [--workers N] [--no-pin] [--json <path>]
Each binary is a strata-bench-strata of some build (copy target/release/strata-bench-strata
aside before building the next); the first is the baseline. Per scenario: every build's
answer is pre-flighted against the baseline's, then rounds load each build in turn with wrk.
Prints each build's median req/s and server CPU per request, and its ratios to the baseline
(median of the per-round ratios, with their spread).
    --scenario <names>      default hello,validated-post,auth-param,invalid,not-found,
                            wrong-method,large-input,large-output
    --duration <time>       one round of one build (default 3s; wrk takes whole seconds)
    --warmup <time>         warm-up of each build per scenario (default 2s)
    --rounds <N>            rounds per build (default 5)
    --connections <N>       keep-alive connections (default 64)
    --workers <N>           server runtime worker threads (default 1)
    --json <path>           also write every round as JSON
";

/// One build under comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Build {
    pub(crate) name: String,
    pub(crate) binary: PathBuf,
}

/// `compare`'s options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompareOptions {
    pub(crate) builds: Vec<Build>,
    pub(crate) scenarios: Vec<Scenario>,
    pub(crate) duration: Duration,
    pub(crate) warmup: Duration,
    pub(crate) rounds: usize,
    pub(crate) connections: usize,
    pub(crate) workers: usize,
    pub(crate) pin: bool,
    pub(crate) json: Option<PathBuf>,
}

/// Parses the arguments after `compare`.
pub(crate) fn parse(args: &[String]) -> Result<CompareOptions, String> {
    let mut options = CompareOptions {
        builds: Vec::new(),
        scenarios: vec![
            Scenario::Hello,
            Scenario::ValidatedPost,
            Scenario::AuthParam,
            Scenario::Invalid,
            Scenario::NotFound,
            Scenario::WrongMethod,
            Scenario::LargeInput,
            Scenario::LargeOutput,
        ],
        duration: Duration::from_secs(3),
        warmup: Duration::from_secs(2),
        rounds: 5,
        connections: 64,
        workers: 1,
        pin: true,
        json: None,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| iter.next().cloned())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name {
            "--no-pin" => options.pin = false,
            "--scenario" | "--scenarios" => {
                options.scenarios = value()?
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| s.trim().parse())
                    .collect::<Result<_, _>>()?;
            }
            "--duration" => options.duration = parse_duration(&value()?)?,
            "--warmup" => options.warmup = parse_duration(&value()?)?,
            "--rounds" => options.rounds = positive(name, &value()?)?,
            "--connections" => options.connections = positive(name, &value()?)?,
            "--workers" => options.workers = positive(name, &value()?)?,
            "--json" => options.json = Some(PathBuf::from(value()?)),
            flag if flag.starts_with('-') => {
                return Err(format!("unknown compare argument {flag:?}\n\n{USAGE}"));
            }
            build => {
                let Some((name, binary)) = build.split_once('=') else {
                    return Err(format!("{build:?} is not <name>=<binary>\n\n{USAGE}"));
                };
                if options.builds.iter().any(|b| b.name == name) {
                    return Err(format!("two builds named {name:?}"));
                }
                options.builds.push(Build {
                    name: name.to_owned(),
                    binary: PathBuf::from(binary),
                });
            }
        }
    }
    if options.builds.len() < 2 {
        return Err(format!("compare needs two builds at least\n\n{USAGE}"));
    }
    if options.scenarios.is_empty() {
        return Err("--scenario names nothing".to_owned());
    }
    Ok(options)
}

/// One round of one build.
#[derive(Debug, Clone, serde::Serialize)]
struct Round {
    build: String,
    scenario: &'static str,
    number: usize,
    requests_per_second: f64,
    /// Server CPU time per request, in microseconds.
    cpu_per_request_us: Option<f64>,
}

/// Runs the comparison and prints its table.
pub(crate) fn run(options: &CompareOptions) -> Result<(), String> {
    let wrk = crate::wrk::version().ok_or(
        "compare needs wrk on PATH (bench/scripts/install-tools.sh installs it)".to_owned(),
    )?;
    let pinned = options.pin && child::can_pin();
    if pinned {
        child::pin_self(child::CLIENT_CORE)?;
    }
    let duration = Duration::from_secs(crate::wrk::whole_seconds(options.duration));
    let warmup = Duration::from_secs(crate::wrk::whole_seconds(options.warmup));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut rounds = Vec::new();
    let mut table = format!(
        "{wrk}, {} connections, {} rounds of {} s, pinned: {pinned}\n\n\
         | scenario | build | req/s | CPU µs/request | ÷ {base}, req/s | ÷ {base}, CPU per request |\n\
         |---|---|---:|---:|---:|---:|\n",
        options.connections,
        options.rounds,
        duration.as_secs(),
        base = options.builds[0].name,
    );
    for &scenario in &options.scenarios {
        let mut children = Vec::new();
        for build in &options.builds {
            match ChildServer::spawn_from(&build.binary, scenario, options.workers, pinned) {
                Ok(server) => children.push(server),
                Err(error) => {
                    children.into_iter().for_each(ChildServer::stop);
                    return Err(format!("{scenario}: {}: {error}", build.name));
                }
            }
        }
        let measured = runtime.block_on(measure(scenario, options, &children, duration, warmup));
        children.into_iter().for_each(ChildServer::stop);
        let measured = measured?;
        table.push_str(&summarize(scenario, options, &measured));
        rounds.extend(measured);
    }
    print!("{table}");
    if let Some(path) = &options.json {
        let json = serde_json::to_string_pretty(&rounds).map_err(|e| e.to_string())?;
        std::fs::write(path, json).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// The pre-flight, the warm-ups and the rounds of one scenario.
async fn measure(
    scenario: Scenario,
    options: &CompareOptions,
    children: &[ChildServer],
    duration: Duration,
    warmup: Duration,
) -> Result<Vec<Round>, String> {
    let mut answers = Vec::new();
    for child in children {
        answers.push((
            child.kind,
            crate::preflight::observe(child.addr, scenario).await?,
        ));
    }
    crate::preflight::compare(scenario, &answers)?;
    let spec = scenario.request();
    let script = crate::wrk::Script::write(&spec, scenario.name())?;
    let core = child::can_pin().then_some(child::CLIENT_CORE);
    let load = |child: &ChildServer, time: Duration| {
        let before = child.cpu_time();
        let result = crate::wrk::run(
            child.addr,
            &spec.path_and_query,
            &script,
            scenario.expected_status(),
            options.connections,
            time,
            core.filter(|_| options.pin),
        )?;
        let cpu = before.and_then(|before| Some(child.cpu_time()?.saturating_sub(before)));
        Ok::<_, String>((result, cpu))
    };
    for child in children {
        load(child, warmup)?;
    }
    let mut rounds = Vec::new();
    for round in 1..=options.rounds {
        let mut line = format!("{scenario}: round {round}/{}:", options.rounds);
        // Each round starts one build later than the one before, so that no build is always
        // measured first (or right after the same one).
        let count = children.len();
        let order = (0..count).map(|i| (i + round - 1) % count);
        for (child, build) in order.map(|i| (&children[i], &options.builds[i])) {
            // A round during which other processes took CPU (a build beside the run) is run
            // again: it would price the disturbance, not the build.
            let mut attempts = 0;
            let (result, cpu, other) = loop {
                let before = Machine::read();
                let measured = load(child, duration)?;
                let other = before
                    .and_then(|before| Some(Machine::read()?.other_than(&before, measured.1?)));
                attempts += 1;
                match other {
                    Some(other) if other > duration.mul_f64(OTHERS_LIMIT) && attempts < 60 => {
                        eprintln!(
                            "{scenario}: {}: other processes took {:.0} ms of CPU in the round: \
                             run again in 10 s",
                            build.name,
                            other.as_secs_f64() * 1e3
                        );
                        std::thread::sleep(Duration::from_secs(10));
                    }
                    _ => break (measured.0, measured.1, other),
                }
            };
            #[allow(clippy::cast_precision_loss)]
            let cpu_per_request = cpu.map(|cpu| cpu.as_secs_f64() * 1e6 / result.requests as f64);
            let _ = write!(
                line,
                " {} {:.0} (others {:.0} ms)",
                build.name,
                result.throughput(),
                other.unwrap_or_default().as_secs_f64() * 1e3
            );
            rounds.push(Round {
                build: build.name.clone(),
                scenario: scenario.name(),
                number: round,
                requests_per_second: result.throughput(),
                cpu_per_request_us: cpu_per_request,
            });
        }
        eprintln!("{line}");
    }
    Ok(rounds)
}

/// The most CPU time other processes may take during a round, as a share of the round.
const OTHERS_LIMIT: f64 = 0.03;

/// CPU time the whole machine and this process's children spent, from `/proc`.
#[derive(Debug, Clone, Copy)]
struct Machine {
    /// User, nice and system time of every core (interrupts left out: loopback's soft
    /// interrupts are the servers' own work, not always charged to them).
    busy: Duration,
    /// This process's own and its waited-for children's (wrk's) user and system time.
    mine: Duration,
}

impl Machine {
    fn read() -> Option<Self> {
        let tick = |ticks: u64| Duration::from_millis(ticks * 10);
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .map(|n| n.parse().unwrap_or(0))
            .collect();
        let busy = tick(cpu.first()? + cpu.get(1)? + cpu.get(2)?);
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command's closing parenthesis: state is field 3; utime, stime,
        // cutime and cstime are fields 14 to 17.
        let fields: Vec<u64> = own
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .skip(11)
            .take(4)
            .map(|n| n.parse().unwrap_or(0))
            .collect();
        Some(Self {
            busy,
            mine: tick(fields.iter().sum()),
        })
    }

    /// CPU time neither this process, its children nor the server (`server`) took since
    /// `before`.
    fn other_than(&self, before: &Self, server: Duration) -> Duration {
        let busy = self.busy.saturating_sub(before.busy);
        let mine = self.mine.saturating_sub(before.mine);
        busy.saturating_sub(mine).saturating_sub(server)
    }
}

/// The table rows of one scenario: each build's medians and its per-round ratios to the
/// baseline (for CPU, the baseline's over the build's: above 1, the build uses less).
fn summarize(scenario: Scenario, options: &CompareOptions, rounds: &[Round]) -> String {
    let of = |name: &str| -> Vec<&Round> { rounds.iter().filter(|r| r.build == name).collect() };
    let base = of(&options.builds[0].name);
    let mut rows = String::new();
    for build in &options.builds {
        let mine = of(&build.name);
        let rps: Vec<f64> = mine.iter().map(|r| r.requests_per_second).collect();
        let cpu: Vec<f64> = mine.iter().filter_map(|r| r.cpu_per_request_us).collect();
        let rps_ratio: Vec<f64> = mine
            .iter()
            .zip(&base)
            .map(|(m, b)| m.requests_per_second / b.requests_per_second)
            .collect();
        let cpu_ratio: Vec<f64> = mine
            .iter()
            .zip(&base)
            .filter_map(|(m, b)| Some(b.cpu_per_request_us? / m.cpu_per_request_us?))
            .collect();
        let _ = writeln!(
            rows,
            "| {scenario} | {} | {:.0} | {:.2} | {} | {} |",
            build.name,
            median(&rps).unwrap_or(f64::NAN),
            median(&cpu).unwrap_or(f64::NAN),
            Spread::of(&rps_ratio).show(3),
            Spread::of(&cpu_ratio).show(3),
        );
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn builds_and_options_are_read() {
        let options = parse(&args(&[
            "base=/tmp/a",
            "--rounds",
            "3",
            "lean=/tmp/b",
            "--scenario=hello,not-found",
        ]))
        .unwrap();
        assert_eq!(options.builds.len(), 2);
        assert_eq!(options.builds[1].name, "lean");
        assert_eq!(options.builds[1].binary, PathBuf::from("/tmp/b"));
        assert_eq!(options.rounds, 3);
        assert_eq!(options.scenarios, [Scenario::Hello, Scenario::NotFound]);
    }

    #[test]
    fn one_build_or_a_name_twice_is_refused() {
        assert!(parse(&args(&["base=/tmp/a"])).is_err());
        assert!(parse(&args(&["a=/x", "a=/y"])).is_err());
        assert!(parse(&args(&["a=/x", "/y"])).is_err());
        assert!(parse(&args(&["a=/x", "b=/y", "--bogus"])).is_err());
    }
}
