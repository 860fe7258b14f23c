//! An haproxy of the test's own, round robin over some replicas, on a free port of 127.0.0.1,
//! its configuration in a temporary folder, stopped by PID when dropped. Where it is not
//! installed: in CI (`CI` set) the test fails; elsewhere it says `SKIPPED` and passes.

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running haproxy.
pub struct Haproxy {
    child: Child,
    /// Its front's port.
    pub port: u16,
    dir: PathBuf,
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false")
}

/// Whether haproxy is installed; when it is not, fails in CI and says `SKIPPED` elsewhere.
pub fn installed(test: &str) -> bool {
    let installed = Command::new("haproxy")
        .arg("-v")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !installed {
        assert!(
            !in_ci(),
            "haproxy is not installed: CI installs it (bash tests/tools/install.sh debian)"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: haproxy is not installed (bash tests/tools/install.sh debian)"
        );
    }
    installed
}

impl Haproxy {
    /// haproxy in front of `replicas`: round robin, `X-Forwarded-For`, a health check of
    /// `GET /api/tags` every 200 ms, a refused connection sent to another replica.
    ///
    /// # Panics
    /// When it does not start.
    pub fn start(replicas: &[SocketAddr]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let dir = std::env::temp_dir().join(format!(
            "strata-realworld-haproxy-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let mut config = format!(
            "defaults\n    mode http\n    timeout connect 1s\n    timeout client 30s\n    \
             timeout server 30s\n    option forwardfor\n    retries 2\n    option redispatch 1\n\
             frontend conduit\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\
             backend replicas\n    balance roundrobin\n    option httpchk GET /api/tags\n    \
             default-server check inter 200ms fall 1 rise 1\n"
        );
        for (n, replica) in replicas.iter().enumerate() {
            writeln!(config, "    server r{n} {replica}").expect("a string");
        }
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config).expect("the configuration written");
        let mut child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy runs");
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("haproxy exited ({status}): the port was taken?");
            }
            assert!(
                Instant::now() < deadline,
                "haproxy did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Self { child, port, dir }
    }
}
