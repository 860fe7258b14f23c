//! A `redis-server` of the test's own: on a free port of 127.0.0.1, without persistence, its
//! folder a temporary one, stopped by PID when dropped. Where it is not installed: in CI (`CI`
//! set) the test fails; elsewhere it says `SKIPPED` and passes (as `postgres.rs`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running redis-server.
pub struct Redis {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false")
}

/// Whether `port` answers `PING` with `PONG`.
fn pong(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut answer = [0; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut answer).is_ok()
        && &answer == b"+PONG\r\n"
}

impl Redis {
    /// A new server, or `None` when redis-server is not installed outside CI.
    ///
    /// # Panics
    /// When it is not installed in CI, or does not start.
    pub fn start(test: &str) -> Option<Self> {
        let installed = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !installed {
            assert!(
                !in_ci(),
                "redis-server is not installed: CI installs it (bash tests/tools/install.sh debian)"
            );
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: redis-server is not installed (bash tests/tools/install.sh debian)"
            );
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let dir = std::env::temp_dir().join(format!(
            "strata-realworld-redis-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !pong(port) {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("redis-server on port {port} exited ({status}): the port was taken?");
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on port {port} did not answer"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(Self { child, port, dir })
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}
