//! A real Prometheus scraping a replica of `examples/replicas.rs`: Debian's `prometheus`
//! (pinned in tests/tools/debian-packages.txt) on a free port, its configuration and storage
//! in a temporary directory, scraping the replica's `/metrics` every 100 ms; a real
//! redis-server behind the replica's rate limit and event bus. After a known mix of requests
//! (several routes; 200, 400, 404, 405, 429), the test asks Prometheus's HTTP API, waits
//! (probing it, no sleep) for a scrape that started after the mix's last answer, and finds the
//! requests by route template, method and status, and the refusals by reason, exact. Both
//! processes are stopped by PID (their `Child`) when the test ends, passed or failed.
//!
//! Where prometheus or redis-server is not installed: in CI (`CI` set) the test fails, since CI
//! installs them (`tests/tools/install.sh debian`); elsewhere it says `SKIPPED` and passes.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

#[allow(dead_code)]
#[path = "../examples/replicas.rs"]
mod replicas;

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use strata::server::LocalAddr;

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false")
}

/// Whether `program --version` runs; outside CI a missing one skips the test (said on the
/// terminal).
fn installed(program: &str, test: &str) -> bool {
    let found = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        assert!(
            !in_ci(),
            "{program} is not installed: CI installs it (bash tests/tools/install.sh debian)"
        );
        eprintln!(
            "SKIPPED {test}: {program} is not installed (bash tests/tools/install.sh debian)"
        );
    }
    found
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process, killed by its PID and waited for on drop; its output goes to `log`.
struct Process {
    child: Child,
    name: &'static str,
    log: PathBuf,
}

impl Process {
    fn spawn(name: &'static str, command: &mut Command, log: PathBuf) -> Self {
        let out = std::fs::File::create(&log).unwrap();
        let child = command
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|error| panic!("{name} does not start: {error}"));
        Self { child, name, log }
    }

    /// Panics, with its log, if the process has exited (another one had its port, say).
    fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            panic!("{} exited ({status}):\n{log}", self.name);
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Probes every 20 ms until `ready` gives a value (at most `within`), checking that `process`
/// still runs.
async fn probe<T, F, R>(within: Duration, what: &str, process: &mut Process, mut ready: R) -> T
where
    R: FnMut() -> F,
    F: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        process.assert_running();
        if let Some(value) = ready().await {
            return value;
        }
        assert!(start.elapsed() < within, "{what} within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A redis-server on a free port, without persistence, in `dir`; its URL.
async fn redis_server(dir: &Path) -> (Process, String) {
    let port = free_port();
    let mut redis = Process::spawn(
        "redis-server",
        Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(dir),
        dir.join("redis.log"),
    );
    probe(
        Duration::from_secs(10),
        "redis-server answers",
        &mut redis,
        || async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()?;
            stream.write_all(b"PING\r\n").await.ok()?;
            let mut answer = [0; 7];
            stream.read_exact(&mut answer).await.ok()?;
            (&answer == b"+PONG\r\n").then_some(())
        },
    )
    .await;
    (redis, format!("redis://127.0.0.1:{port}/"))
}

/// How often Prometheus scrapes the replica.
const SCRAPE_INTERVAL: &str = "100ms";

/// Prometheus on a free port, scraping `target`'s `/metrics` as job `replica`, its
/// configuration and storage in `dir`; its address once it says it is ready.
async fn prometheus(target: SocketAddr, dir: &Path) -> (Process, String) {
    let port = free_port();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: {SCRAPE_INTERVAL}\n  scrape_timeout: {SCRAPE_INTERVAL}\n\
             scrape_configs:\n  - job_name: replica\n    static_configs:\n      \
             - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let mut prometheus = Process::spawn(
        "prometheus",
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn"),
        dir.join("prometheus.log"),
    );
    let api = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    probe(
        Duration::from_secs(30),
        "prometheus is ready",
        &mut prometheus,
        || {
            let ready = client.get(format!("{api}/-/ready")).send();
            async move { ready.await.ok()?.status().is_success().then_some(()) }
        },
    )
    .await;
    (prometheus, api)
}

/// `text` as a URL's query value: every byte but the unreserved ones percent-encoded.
fn percent_encoded(text: &str) -> String {
    use std::fmt::Write as _;
    text.bytes().fold(String::new(), |mut encoded, byte| {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            write!(encoded, "%{byte:02X}").unwrap();
        }
        encoded
    })
}

/// The result of an instant query of Prometheus's HTTP API: each series' labels and value.
async fn query(api: &str, promql: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    let answer: Value = reqwest::Client::new()
        .get(format!(
            "{api}/api/v1/query?query={}",
            percent_encoded(promql)
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["status"], "success", "{promql}: {answer}");
    answer["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|series| {
            let labels = series["metric"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(name, value)| (name.clone(), value.as_str().unwrap().to_owned()))
                .collect();
            let value = series["value"][1].as_str().unwrap().parse().unwrap();
            (labels, value)
        })
        .collect()
}

/// Sends `method path` (with a JSON `body`) and checks its status.
async fn send(base: &str, method: &str, path: &str, body: Option<&str>, status: u16) {
    let client = reqwest::Client::new();
    let mut request = client.request(method.parse().unwrap(), format!("{base}{path}"));
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_owned());
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status().as_u16(), status, "{method} {path}");
}

/// The rate limit of the replica under test: the fourth `/v1/hello` of an hour gets a 429.
const PER_HOUR: u32 = 3;

/// The mix: each request with the status it gets.
async fn send_the_mix(base: &str) {
    for _ in 0..PER_HOUR {
        send(base, "GET", "/v1/hello", None, 200).await;
    }
    for _ in 0..2 {
        send(base, "GET", "/v1/hello", None, 429).await;
    }
    for text in ["one", "two"] {
        let body = format!(r#"{{"text":"{text}"}}"#);
        send(base, "POST", "/v1/messages", Some(&body), 200).await;
    }
    // Breaks the schema (an empty text), then cannot be read.
    send(base, "POST", "/v1/messages", Some(r#"{"text":""}"#), 400).await;
    send(base, "POST", "/v1/messages", Some("{"), 400).await;
    // Unknown paths: one series whatever the path.
    send(base, "GET", "/v1/nowhere", None, 404).await;
    send(base, "GET", "/v2/hello?x=1", None, 404).await;
    send(base, "DELETE", "/v1/hello", None, 405).await;
    send(base, "PUT", "/v1/messages", None, 405).await;
    // Neither the probes nor the exposition are counted.
    send(base, "GET", "/health/ready", None, 200).await;
    send(base, "GET", "/health/live", None, 200).await;
    send(base, "GET", "/metrics", None, 200).await;
}

/// Now, in seconds since the epoch (Prometheus's timestamps).
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The values of `metric` in the scrape at `scraped` (of job `replica`), by the values of
/// `labels`.
async fn by_labels(
    api: &str,
    metric: &str,
    labels: &[&str],
    scraped: f64,
) -> BTreeMap<Vec<String>, f64> {
    query(api, &format!(r#"{metric}{{job="replica"}} @ {scraped}"#))
        .await
        .into_iter()
        .map(|(found, value)| {
            let key = labels.iter().map(|label| found[*label].clone()).collect();
            (key, value)
        })
        .collect()
}

/// `rows` (label values, then the value) as [`by_labels`] gives them.
fn expected<const N: usize>(rows: &[([&str; N], f64)]) -> BTreeMap<Vec<String>, f64> {
    rows.iter()
        .map(|(labels, value)| (labels.iter().map(|&l| l.to_owned()).collect(), *value))
        .collect()
}

/// What Prometheus holds of the scrape at `scraped`: the mix, exactly.
async fn assert_the_mix_counted(api: &str, scraped: f64) {
    let requests = by_labels(
        api,
        "strata_http_requests_total",
        &["route", "method", "status"],
        scraped,
    )
    .await;
    let mix = expected(&[
        (["/v1/hello", "GET", "200"], 3.0),
        (["/v1/hello", "GET", "429"], 2.0),
        (["/v1/messages", "POST", "200"], 2.0),
        (["/v1/messages", "POST", "400"], 2.0),
        (["(unmatched)", "GET", "404"], 2.0),
        (["/v1/hello", "DELETE", "405"], 1.0),
        (["/v1/messages", "PUT", "405"], 1.0),
    ]);
    assert_eq!(requests, mix, "requests by route, method and status");
    let refusals = by_labels(api, "strata_http_refusals_total", &["reason"], scraped).await;
    let mix = expected(&[
        (["too_many_requests"], 2.0),
        (["validation"], 1.0),
        (["parse"], 1.0),
        (["not_found"], 2.0),
        (["method_not_allowed"], 2.0),
    ]);
    assert_eq!(refusals, mix, "refusals by reason");
    // Every request of the mix had its duration observed, and none is in flight.
    let observed = query(
        api,
        &format!(r#"sum(strata_http_request_duration_seconds_count{{job="replica"}} @ {scraped})"#),
    )
    .await;
    assert_eq!(observed.first().map(|(_, count)| *count), Some(13.0));
    let in_flight = by_labels(api, "strata_http_requests_in_flight", &[], scraped).await;
    assert_eq!(in_flight, expected(&[([], 0.0)]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scraping_a_replica_counts_the_mix_exactly() {
    let test = "prometheus_scraping_a_replica_counts_the_mix_exactly";
    if !installed("prometheus", test) || !installed("redis-server", test) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("strata-prometheus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut redis, redis_url) = redis_server(&dir).await;
    let replica = replicas::start_replica(0, &redis_url, "r1", PER_HOUR, Duration::ZERO)
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = replica.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let (mut prometheus, api) = prometheus(addr, &dir).await;
    let base = format!("http://{addr}");

    send_the_mix(&base).await;
    // Every answer was counted before it was sent: a scrape that starts now sees the whole
    // mix. (A margin over Prometheus's alignment of scrape timestamps, 2 ms at most.)
    let mixed = now() + 0.05;
    let scraped = probe(
        Duration::from_secs(30),
        "a scrape after the mix",
        &mut prometheus,
        || {
            let api = api.clone();
            async move {
                let up = query(&api, r#"timestamp(up{job="replica"} == 1)"#).await;
                let at = up.first()?.1;
                (at > mixed).then_some(at)
            }
        },
    )
    .await;
    redis.assert_running();

    assert_the_mix_counted(&api, scraped).await;

    replica.shutdown().await;
    drop(prometheus);
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}
