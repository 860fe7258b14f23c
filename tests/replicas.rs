//! Three replicas of `examples/replicas.rs` behind a real haproxy (round robin, health checks
//! on the replicas' readiness probe `/health/ready`, no retries: a request haproxy cannot get
//! answered reaches the client as a 502/503), sharing one real redis-server, over real
//! sockets. The replicas run in this process (each its own server, listener, Redis
//! connections, rate-limit store and broadcaster: they share nothing but Redis), so that the
//! test stops and starts them on their ports; redis-server and haproxy are processes of their
//! own, started here on free ports and killed by PID.
//!
//! Where redis-server or haproxy is not installed: in CI (`CI` set) the tests fail, since CI
//! installs them (`tests/tools/install.sh debian`); elsewhere they say `SKIPPED` and pass.
//! `cargo test --release --features redis --test replicas -- --nocapture` prints the fan-out
//! latency (`REPLICAS_PUBLISH_EVERY_MS=10`: one event every 10 ms rather than back to back).

#![allow(clippy::unwrap_used)] // tests fail loudly by design

#[allow(dead_code)]
#[path = "../examples/replicas.rs"]
mod replicas;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use strata::Server;

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false")
}

/// Whether `program` runs; outside CI a missing one skips the test (said on the terminal).
fn installed(program: &str, test: &str) -> bool {
    let found = Command::new(program)
        .arg(if program == "haproxy" {
            "-v"
        } else {
            "--version"
        })
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        assert!(
            !in_ci(),
            "{program} is not installed: CI installs it (bash tests/tools/install.sh debian)"
        );
        let _ = writeln!(
            std::io::stderr(),
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

/// A child process killed (and waited for) on drop.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `ready` holds (every 50 ms, at most `within`).
fn wait_until(within: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < within, "{what} within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A redis-server on `port`, without persistence, its directory `dir`.
fn redis_server(port: u16, dir: &std::path::Path) -> Process {
    std::fs::create_dir_all(dir).unwrap();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let process = Process(child);
    wait_until(Duration::from_secs(10), "redis-server answers", || {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
            return false;
        };
        let mut answer = [0; 7];
        stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut answer).is_ok()
            && &answer == b"+PONG\r\n"
    });
    process
}

/// How long a replica keeps serving once its shutdown starts, readiness answering 503: longer
/// than haproxy takes to see it (a check every 100 ms, down after one failure).
const DRAIN: Duration = Duration::from_millis(500);

/// haproxy on `front`, round robin over `replicas`, checking `/health/ready` every 100 ms; no
/// retries, so that a request sent to a replica on its way out is not hidden by a retry.
fn haproxy(front: u16, replicas: &[u16], dir: &std::path::Path) -> Process {
    use std::fmt::Write as _;
    let mut config = format!(
        "global\n    maxconn 4096\n\
         defaults\n    mode http\n    timeout connect 1s\n    timeout client 30s\n    \
         timeout server 30s\n    timeout http-keep-alive 5s\n    option forwardfor\n    \
         option http-no-delay\n    retries 0\n\
         frontend web\n    bind 127.0.0.1:{front}\n    default_backend replicas\n\
         backend replicas\n    balance roundrobin\n    option httpchk GET /health/ready\n    \
         default-server inter 100ms fall 1 rise 1\n"
    );
    for (n, port) in replicas.iter().enumerate() {
        writeln!(config, "    server r{n} 127.0.0.1:{port} check").unwrap();
    }
    let file = dir.join("haproxy.cfg");
    std::fs::write(&file, config).unwrap();
    let child = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let process = Process(child);
    wait_until(Duration::from_secs(10), "haproxy listens", || {
        TcpStream::connect(("127.0.0.1", front)).is_ok()
    });
    process
}

/// Redis, haproxy and three replicas.
struct Cluster {
    dir: PathBuf,
    redis_port: u16,
    redis: Option<Process>,
    _haproxy: Process,
    front: u16,
    ports: Vec<u16>,
    replicas: Vec<Option<Server>>,
    per_hour: u32,
}

impl Cluster {
    async fn start(test: &str, per_hour: u32) -> Option<Self> {
        if !installed("redis-server", test) || !installed("haproxy", test) {
            return None;
        }
        let dir =
            std::env::temp_dir().join(format!("strata-replicas-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let redis_port = free_port();
        let redis = redis_server(redis_port, &dir.join("redis"));
        let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let mut cluster = Self {
            redis_port,
            redis: Some(redis),
            _haproxy: haproxy(free_port(), &ports, &dir),
            front: 0,
            ports,
            replicas: Vec::new(),
            per_hour,
            dir,
        };
        cluster.front = cluster.haproxy_port();
        for n in 0..3 {
            cluster.replicas.push(None);
            cluster.start_replica(n).await;
        }
        cluster.wait_all_up().await;
        Some(cluster)
    }

    fn haproxy_port(&self) -> u16 {
        let config = std::fs::read_to_string(self.dir.join("haproxy.cfg")).unwrap();
        let bind = config
            .lines()
            .find_map(|line| line.trim().strip_prefix("bind 127.0.0.1:"));
        bind.unwrap().parse().unwrap()
    }

    fn redis_url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.redis_port)
    }

    async fn start_replica(&mut self, n: usize) {
        let server = replicas::start_replica(
            self.ports[n],
            &self.redis_url(),
            &format!("r{n}"),
            self.per_hour,
            DRAIN,
        )
        .await
        .unwrap();
        self.replicas[n] = Some(server);
    }

    /// Graceful shutdown: readiness 503 at once and `DRAIN` more of serving (haproxy takes the
    /// replica out meanwhile), then no new connection; requests in flight finish; event
    /// streams end.
    async fn stop_replica(&mut self, n: usize) {
        self.replicas[n].take().unwrap().shutdown().await;
    }

    /// Until haproxy has seen every replica up: each answers through it in one round (asked
    /// every 100 ms, 10 s at most, then panics).
    async fn wait_all_up(&self) {
        let client = client();
        let mut seen = std::collections::HashSet::new();
        let all_up = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                seen.clear();
                for _ in 0..6 {
                    let (status, body) =
                        get(&client, self.front, "/v1/hello", "198.51.100.99").await;
                    if status == 200 {
                        seen.insert(body);
                    }
                }
                if seen.len() == 3 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await;
        assert!(all_up.is_ok(), "replicas up after 10 s: {seen:?}");
    }

    fn stop_redis(&mut self) {
        self.redis = None;
    }

    fn start_redis(&mut self) {
        self.redis = Some(redis_server(self.redis_port, &self.dir.join("redis")));
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// GET `path` on 127.0.0.1:`port` as the client `from` (its `X-Forwarded-For`): the status
/// and the body (an error's text as status 0).
async fn get(client: &HttpClient, port: u16, path: &str, from: &str) -> (u16, String) {
    let request = http::Request::get(format!("http://127.0.0.1:{port}{path}"))
        .header("x-forwarded-for", from)
        .body(Full::default())
        .unwrap();
    match client.request(request).await {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8_lossy(&body).into_owned())
        }
        Err(error) => (0, format!("{error:?}")),
    }
}

/// `count` requests of the client `from` through haproxy, `concurrently` at a time: the
/// number of each status, and the replicas that answered 200.
async fn burst(
    cluster: &Cluster,
    from: &str,
    count: usize,
    concurrently: usize,
) -> (
    std::collections::BTreeMap<u16, usize>,
    std::collections::BTreeSet<String>,
) {
    let client = client();
    let mut statuses = std::collections::BTreeMap::new();
    let mut answered_by = std::collections::BTreeSet::new();
    let mut sent = 0;
    while sent < count {
        let round = concurrently.min(count - sent);
        let tasks: Vec<_> = (0..round)
            .map(|_| {
                let client = client.clone();
                let (port, from) = (cluster.front, from.to_owned());
                tokio::spawn(async move { get(&client, port, "/v1/hello", &from).await })
            })
            .collect();
        for task in tasks {
            let (status, body) = task.await.unwrap();
            *statuses.entry(status).or_insert(0) += 1;
            if status == 200 {
                answered_by.insert(body);
            }
        }
        sent += round;
    }
    (statuses, answered_by)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gets_its_budget_once_across_replicas_even_when_redis_restarts() {
    let Some(mut cluster) = Cluster::start("budget", 100).await else {
        return;
    };
    // 250 requests of one client, 10 at a time, over the three replicas: exactly 100 pass.
    let (statuses, answered_by) = burst(&cluster, "192.0.2.1", 250, 10).await;
    assert_eq!(statuses, [(200, 100), (429, 150)].into(), "{statuses:?}");
    assert_eq!(answered_by.len(), 3, "{answered_by:?}");

    // Another client spends 60; Redis goes down.
    let (statuses, _) = burst(&cluster, "192.0.2.2", 60, 10).await;
    assert_eq!(statuses, [(200, 60)].into());
    cluster.stop_redis();
    // The policy is to fail open (the example keeps the default): requests go through,
    // unlimited, each within the store's timeout.
    let (statuses, answered_by) = burst(&cluster, "192.0.2.2", 20, 10).await;
    assert_eq!(statuses, [(200, 20)].into(), "{statuses:?}");
    assert_eq!(answered_by.len(), 3);
    // Redis back, empty (no persistence): every replica reconnects by itself, and the client
    // has a full budget again: exactly 100 of 150.
    cluster.start_redis();
    let client = client();
    // Until three requests in a row (one per replica, round robin) are checked by Redis: a
    // `RateLimit` header is only there when the store answered (asked every 50 ms, 10 s at
    // most).
    let reconnected = tokio::time::timeout(Duration::from_secs(10), async {
        let mut limited_in_a_row = 0;
        while limited_in_a_row < 3 {
            let request =
                http::Request::get(format!("http://127.0.0.1:{}/v1/hello", cluster.front))
                    .header("x-forwarded-for", "198.51.100.1")
                    .body(Full::default())
                    .unwrap();
            let response = client.request(request).await.unwrap();
            if response.headers().contains_key("ratelimit") {
                limited_in_a_row += 1;
            } else {
                limited_in_a_row = 0;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    })
    .await;
    assert!(
        reconnected.is_ok(),
        "the replicas have not used Redis again after 10 s"
    );
    let (statuses, answered_by) = burst(&cluster, "192.0.2.2", 150, 10).await;
    assert_eq!(statuses, [(200, 100), (429, 50)].into(), "{statuses:?}");
    assert_eq!(answered_by.len(), 3);
}

/// An event stream through haproxy as the client `n`: sends `Last-Event-ID` when it has one.
async fn subscribe(port: u16, last_event_id: Option<&str>) -> Option<Incoming> {
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .ok()?;
    tokio::spawn(connection);
    let mut request = http::Request::get("/v1/messages").header("host", "localhost");
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = sender
        .send_request(request.body(Full::<Bytes>::default()).unwrap())
        .await
        .ok()?;
    (response.status() == 200).then(|| response.into_body())
}

/// What a subscriber received: the messages' texts in order, with their ids and when.
#[derive(Default)]
struct Received {
    texts: Vec<String>,
    last_id: Option<String>,
    at: Vec<Instant>,
    reconnects: usize,
    reloads: usize,
}

/// Reads messages until `total`, reconnecting (with `Last-Event-ID`) when the stream ends;
/// tells `reached` once it has `first`.
async fn subscriber(
    port: u16,
    first_id: String,
    first: usize,
    total: usize,
    reached: Arc<AtomicUsize>,
) -> Received {
    let mut received = Received {
        last_id: Some(first_id),
        ..Received::default()
    };
    let mut pending = String::new();
    'connect: loop {
        let Some(mut body) = subscribe(port, received.last_id.as_deref()).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        pending.clear();
        loop {
            // Ended (the replica shut down) or cut: reconnect.
            let Some(Ok(frame)) = body.frame().await else {
                received.reconnects += 1;
                continue 'connect;
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            pending.push_str(std::str::from_utf8(&data).unwrap());
            while let Some(end) = pending.find("\n\n") {
                let event: String = pending.drain(..end + 2).collect();
                if event.starts_with("event: reload") {
                    received.reloads += 1;
                }
                let Some(data) = event.lines().find_map(|line| line.strip_prefix("data: ")) else {
                    continue;
                };
                let Some(text) = data
                    .strip_prefix(r#"{"text":""#)
                    .and_then(|t| t.strip_suffix(r#""}"#))
                else {
                    continue;
                };
                received.texts.push(text.to_owned());
                received.at.push(Instant::now());
                received.last_id = event
                    .lines()
                    .find_map(|line| line.strip_prefix("id: "))
                    .map(str::to_owned);
                if received.texts.len() == first {
                    reached.fetch_add(1, Ordering::SeqCst);
                }
                if received.texts.len() == total {
                    return received;
                }
            }
        }
    }
}

/// Publishes `text` on replica port `port`: its id, and when.
async fn publish(client: &HttpClient, port: u16, text: &str) -> (String, Instant) {
    let request = http::Request::post(format!("http://127.0.0.1:{port}/v1/messages"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(format!(r#"{{"text":"{text}"}}"#))))
        .unwrap();
    let at = Instant::now();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let id = body["data"]["id"].as_str().unwrap().to_owned();
    (id, at)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_subscribers_get_every_event_and_resume_on_another_replica() {
    let Some(mut cluster) = Cluster::start("fanout", 100).await else {
        return;
    };
    let client = client();
    let publisher = cluster.ports[0];
    // The subscribers resume after this one: whenever each is subscribed, it misses nothing.
    let (first_id, _) = publish(&client, publisher, "start").await;
    let reached = Arc::new(AtomicUsize::new(0));
    let subscribers: Vec<_> = (0..300)
        .map(|_| {
            let (port, id, reached) = (cluster.front, first_id.clone(), Arc::clone(&reached));
            tokio::spawn(subscriber(port, id, 1000, 1100, reached))
        })
        .collect();
    // 1,000 events on the first replica: back to back, or one every
    // `REPLICAS_PUBLISH_EVERY_MS` (the latency below a saturating rate).
    let every = std::env::var("REPLICAS_PUBLISH_EVERY_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map(Duration::from_millis);
    let mut pace = every.map(tokio::time::interval);
    let mut published_at = Vec::new();
    for n in 0..1000 {
        if let Some(pace) = &mut pace {
            pace.tick().await;
        }
        published_at.push(publish(&client, publisher, &n.to_string()).await.1);
    }
    // (Looked at every 20 ms, 60 s at most.)
    let all_reached = tokio::time::timeout(Duration::from_secs(60), async {
        while reached.load(Ordering::SeqCst) < 300 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        all_reached.is_ok(),
        "{} of 300 subscribers got 1,000 events in 60 s",
        reached.load(Ordering::SeqCst)
    );
    // The second replica goes: its subscribers' streams end, and they reconnect through
    // haproxy to the others, resuming after their last event; 100 events meanwhile and after.
    cluster.stop_replica(1).await;
    for n in 1000..1100 {
        publish(&client, publisher, &n.to_string()).await;
    }
    let expected: Vec<String> = (0..1100).map(|n| n.to_string()).collect();
    let mut latencies = Vec::new();
    let mut reconnected = 0;
    for subscriber in subscribers {
        let received = tokio::time::timeout(Duration::from_secs(60), subscriber)
            .await
            .expect("every subscriber got 1,100")
            .unwrap();
        assert_eq!(
            received.texts, expected,
            "in order, none missing, none twice"
        );
        assert_eq!(received.reloads, 0, "no gap inside the window");
        if received.reconnects > 0 {
            reconnected += 1;
        }
        for (sent, got) in published_at.iter().zip(&received.at) {
            latencies.push(got.saturating_duration_since(*sent));
        }
    }
    // Round robin put a third of them on the stopped replica.
    assert!(
        (90..=110).contains(&reconnected),
        "{reconnected} reconnected"
    );
    latencies.sort();
    println!(
        "fan-out of 1,000 events ({}) to 300 subscribers over 3 replicas (publish to \
         receipt): p50 {:?}, p99 {:?}, max {:?}",
        every.map_or("back to back".to_owned(), |every| format!(
            "one every {every:?}"
        )),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
/// With readiness and a drain delay, haproxy takes each replica out before it stops
/// accepting: no request fails, with no retry to hide one (`retries 0`). Without the probe
/// (haproxy checking liveness) or without the delay, requests sent to a stopping replica fail.
async fn a_rolling_restart_loses_no_request() {
    let Some(mut cluster) = Cluster::start("rolling", 1_000_000).await else {
        return;
    };
    let stop = Arc::new(AtomicBool::new(false));
    // Requests answered so far (whatever the answer): the test waits for the load to have
    // gone on, not for a time.
    let answered = Arc::new(AtomicUsize::new(0));
    let load: Vec<_> = (0..8)
        .map(|n| {
            let (port, stop, answered) = (cluster.front, Arc::clone(&stop), Arc::clone(&answered));
            tokio::spawn(async move {
                let client = client();
                let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
                let mut failures = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let (status, body) =
                        get(&client, port, "/v1/hello", &format!("192.0.2.{n}")).await;
                    *statuses.entry(status).or_insert(0) += 1;
                    if status != 200 && status != 429 {
                        failures.push(format!("{status}: {body}"));
                    }
                    answered.fetch_add(1, Ordering::SeqCst);
                }
                (statuses, failures)
            })
        })
        .collect();
    // Under load before, while each replica is down, and after.
    more_answers(&answered, 100).await;
    for n in 0..3 {
        cluster.stop_replica(n).await;
        more_answers(&answered, 50).await;
        cluster.start_replica(n).await;
        cluster.wait_all_up().await;
    }
    more_answers(&answered, 100).await;
    stop.store(true, Ordering::SeqCst);
    let mut total = 0;
    for task in load {
        let (statuses, failures) = task.await.unwrap();
        assert!(failures.is_empty(), "{failures:?}");
        total += statuses.values().sum::<usize>();
    }
    assert!(total >= 350, "{total} requests");
    println!("rolling restart of 3 replicas: {total} requests, every one answered 2xx/429");
}

/// Waits until `answered` has grown by `more` (looked at every 10 ms, 30 s at most).
async fn more_answers(answered: &AtomicUsize, more: usize) {
    let wanted = answered.load(Ordering::SeqCst) + more;
    let grown = tokio::time::timeout(Duration::from_secs(30), async {
        while answered.load(Ordering::SeqCst) < wanted {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        grown.is_ok(),
        "{more} more answers not in 30 s ({} in all)",
        answered.load(Ordering::SeqCst)
    );
}
