//! A `redis-server` of the test's own: on a free port of 127.0.0.1, without persistence (no
//! snapshot, no append-only file, its directory a temporary one), stopped on drop.
//!
//! Where `redis-server` is not installed: in CI (`CI` set, as `.ci/run` has it) the test
//! fails, since CI installs it (`tests/tools/install.sh debian`); elsewhere (a developer's
//! machine) the test says `SKIPPED` on the terminal and passes.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)] // each test file uses a part of it

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The program, `REDIS_SERVER` when set.
fn program() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false")
}

/// A running redis-server.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    /// Arguments after the usual ones (cluster mode).
    extra: Vec<String>,
}

impl RedisServer {
    /// A new server, or `None` when redis-server is not installed outside CI (said on the
    /// terminal: libtest does not capture a direct write to stderr).
    ///
    /// # Panics
    ///
    /// When redis-server is not installed in CI, or does not start.
    pub fn start(test: &str) -> Option<Self> {
        Self::start_with(test, &[])
    }

    /// [`start`](Self::start) with more arguments for redis-server.
    pub fn start_with(test: &str, extra: &[&str]) -> Option<Self> {
        let installed = Command::new(program())
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !installed {
            assert!(
                !in_ci(),
                "{} is not installed: CI installs it (bash tests/tools/install.sh debian)",
                program()
            );
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: {} is not installed (apt-get install redis-server, or \
                 bash tests/tools/install.sh debian; REDIS_SERVER=/path/to/redis-server)",
                program()
            );
            return None;
        }
        // A free port can be taken by someone else before redis-server binds it: try again.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free port")
                .port();
            let dir = std::env::temp_dir()
                .join(format!("strata-redis-test-{}-{port}", std::process::id()));
            let mut server = Self {
                child: None,
                port,
                dir,
                extra: extra.iter().map(|arg| (*arg).to_owned()).collect(),
            };
            if server.spawn() {
                return Some(server);
            }
        }
        panic!("redis-server did not start on any of 5 free ports");
    }

    /// Starts redis-server on `self.port`; whether it answers PING as ours.
    fn spawn(&mut self) -> bool {
        std::fs::create_dir_all(&self.dir).expect("a temporary directory");
        let log = self.dir.join("redis.log");
        let mut command = Command::new(program());
        if self.extra.iter().any(|arg| arg == "--cluster-enabled") {
            // The cluster bus's port, by default the port + 10,000: past 65,535 for a free
            // port above 55,535 (the ephemeral range goes to 60,999).
            let bus = TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free port")
                .port();
            command.args(["--cluster-port", &bus.to_string()]);
        }
        let child = command
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(&log)
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs");
        let pid = child.id();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(Child::try_wait) {
                // Exited: the port was taken, most likely.
                self.child = None;
                return false;
            }
            // Ours, not another server that took the port first.
            if self.info("process_id").as_deref() == Some(&pid.to_string()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        panic!("redis-server on port {} did not answer:\n{log}", self.port);
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A line of `INFO` (`process_id`, `total_commands_processed`), or `None` when the server
    /// does not answer.
    pub fn info(&self, field: &str) -> Option<String> {
        let client = redis::Client::open(self.url()).ok()?;
        let mut connection = client
            .get_connection_with_timeout(Duration::from_secs(1))
            .ok()?;
        let info: String = redis::cmd("INFO").arg("all").query(&mut connection).ok()?;
        let prefix = format!("{field}:");
        info.lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .map(str::to_owned)
    }

    /// A command on a connection of its own, for the test's own reads and writes.
    pub fn query<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> T {
        let client = redis::Client::open(self.url()).expect("the URL");
        let mut connection = client
            .get_connection_with_timeout(Duration::from_secs(1))
            .expect("a connection");
        command.query(&mut connection).expect("the command")
    }

    /// Kills the server (what a crash or a lost machine looks like to its clients) and waits
    /// for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        for _ in 0..50 {
            if self.spawn() {
                return;
            }
            // The port is not free yet.
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("redis-server did not start again on port {}", self.port);
    }

    /// Stops the process where it is (SIGSTOP): connections stay open, nothing is answered,
    /// as with a Redis stuck on a slow command.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused server go on (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("a running server").id();
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} {pid}");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // SIGKILL ends a paused server too.
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Redis Cluster of three primaries (no replicas), each a [`RedisServer`] in cluster mode,
/// joined by `redis-cli --cluster create` and ready (`cluster_state:ok` on each); stopped on
/// drop.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// A new cluster, or `None` where redis-server is not installed outside CI.
    ///
    /// # Panics
    ///
    /// When redis-server is not installed in CI, or the cluster does not form.
    pub fn start(test: &str) -> Option<Self> {
        let mut nodes = Vec::new();
        for _ in 0..3 {
            nodes.push(RedisServer::start_with(
                test,
                &[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                ],
            )?);
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for node in &nodes {
            create.arg(format!("127.0.0.1:{}", node.port));
        }
        let output = create
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli runs (Debian's redis-tools, beside redis-server)");
        assert!(
            output.status.success(),
            "redis-cli --cluster create failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let cluster = Self { nodes };
        // Ready when every node says so (the slots are assigned at once; the nodes learn of
        // each other over the cluster bus within moments).
        let deadline = Instant::now() + Duration::from_secs(20);
        while !cluster
            .nodes
            .iter()
            .all(|node| node.info_cluster("cluster_state").as_deref() == Some("ok"))
        {
            assert!(
                Instant::now() < deadline,
                "the cluster is not ok after 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(cluster)
    }

    /// The nodes' URLs.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }
}

impl RedisServer {
    /// A line of `CLUSTER INFO`, or `None` when the server does not answer.
    pub fn info_cluster(&self, field: &str) -> Option<String> {
        let client = redis::Client::open(self.url()).ok()?;
        let mut connection = client
            .get_connection_with_timeout(Duration::from_secs(1))
            .ok()?;
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query(&mut connection)
            .ok()?;
        let prefix = format!("{field}:");
        info.lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .map(|value| value.trim().to_owned())
    }

    /// How many keys it holds.
    pub fn dbsize(&self) -> usize {
        self.query(&redis::cmd("DBSIZE"))
    }
}

/// Replicas of an application in one process: endpoints of the facade's factory, each behind
/// a `RateLimit` middleware with a store of its own (its own connection to Redis), answering
/// the client's budget.
pub mod app {
    use std::sync::{Arc, Mutex};

    use garde::Validate;
    use http::{Request, Response, StatusCode};
    use schemars::JsonSchema;
    use serde::Serialize;
    use strata::core::{Body, ClientAddr, Level, LogSink};
    use strata::endpoint::{AnyBody, EndpointService};
    use strata::prelude::*;
    use strata_ratelimit::{FailPolicy, HeadersOn, Key, Quota, RateLimit, RateLimitState};
    use strata_redis::RedisRateLimitStore;
    use tower::ServiceExt;

    #[derive(Serialize, Validate, JsonSchema)]
    #[garde(allow_unvalidated)]
    struct Budget {
        remaining: u32,
        checked: bool,
    }

    /// One replica's endpoint.
    pub type Replica = AnyBody<EndpointService>;

    /// A replica limiting each client address to `quota` in `store`.
    pub fn replica(store: RedisRateLimitStore, quota: Quota, fail: FailPolicy) -> Replica {
        default_endpoints_factory()
            .add_middleware(
                RateLimit::new(quota, Key::client_addr())
                    .store(store)
                    .on_store_error(fail)
                    // `checked` below reads the `RateLimit` header of successes.
                    .headers(HeadersOn::EveryResponse)
                    .middleware(),
            )
            .get()
            .handler_without_input(async |state: RateLimitState| {
                Ok(Budget {
                    remaining: state.remaining,
                    checked: state.checked,
                })
            })
            .service()
    }

    /// What the log lines of the requests sent with [`Logs::logger`] said.
    #[derive(Default)]
    pub struct Logs(Mutex<Vec<String>>);

    impl LogSink for Logs {
        fn log(&self, _level: Level, message: std::fmt::Arguments<'_>) {
            self.0.lock().unwrap().push(message.to_string());
        }
    }

    impl Logs {
        pub fn lines(&self) -> Vec<String> {
            self.0.lock().unwrap().clone()
        }
    }

    /// The answer to one request: its status, and whether the store decided (the `RateLimit`
    /// header is there).
    pub struct Answer {
        pub status: StatusCode,
        pub checked: bool,
        pub retry_after: Option<String>,
    }

    /// A GET from `client` to `replica`, its log lines to `logs`.
    pub async fn get(replica: &Replica, client: [u8; 4], logs: &Arc<Logs>) -> Answer {
        let mut request = Request::get("/budget").body(String::new()).unwrap();
        request.extensions_mut().insert(ClientAddr(client.into()));
        request
            .extensions_mut()
            .insert(Logger::with_sink(Arc::<Logs>::clone(logs)));
        let response: Response<Body> = replica.clone().oneshot(request).await.unwrap();
        Answer {
            status: response.status(),
            checked: response.headers().contains_key("ratelimit"),
            retry_after: response
                .headers()
                .get("retry-after")
                .map(|value| value.to_str().unwrap().to_owned()),
        }
    }
}
