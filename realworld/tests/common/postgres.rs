//! A throwaway PostgreSQL cluster, one per test binary, and a fresh schema in it per test.
//!
//! The cluster is made with `initdb` in a temporary folder and served by `postgres` on a Unix
//! socket in that folder only (no TCP port: nothing to race for, nothing reachable from
//! outside). It starts with the first test that asks for it and stops when the test binary
//! exits: `postgres` runs under a small shell that holds the test binary's end of a pipe, and
//! when that pipe closes (the binary ended, however it ended) the shell stops `postgres` by its
//! PID and removes the folder. A static is never dropped, so a `Drop` would not do.
//!
//! The programs: `$PG_BIN/{initdb,postgres}` when `PG_BIN` is set, else `initdb` and `postgres`
//! on the `PATH`, else Debian's `/usr/lib/postgresql/15/bin` (where the `postgresql-15`
//! package puts them, off the `PATH`). Neither refuses to run as root; as root, both run as the
//! `postgres` user the package creates (`runuser -u postgres`).
//!
//! Where PostgreSQL is not installed: in CI (`CI` set, as `.ci/run` has it) the test fails,
//! since CI installs it (`tests/tools/install.sh debian`); elsewhere the test says `SKIPPED` on
//! the terminal and passes.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sqlx::Connection;

/// The port: with no TCP listener, it only names the socket file (`.s.PGSQL.5432`).
const PORT: u16 = 5432;

/// The running cluster.
pub struct Cluster {
    /// The folder of the socket (and of the data, in `data/`).
    dir: PathBuf,
    /// The shell that runs `postgres`; kept so that its PID stays ours.
    _shell: Child,
    /// The pipe whose closing (at the binary's exit) stops the cluster.
    _stdin: ChildStdin,
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false")
}

/// The folder of `initdb` and `postgres`, if they are installed.
fn programs() -> Option<PathBuf> {
    let runs = |program: &Path| {
        Command::new(program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if let Some(dir) = std::env::var_os("PG_BIN") {
        let dir = PathBuf::from(dir);
        return (runs(&dir.join("initdb")) && runs(&dir.join("postgres"))).then_some(dir);
    }
    if runs(Path::new("initdb")) && runs(Path::new("postgres")) {
        return Some(PathBuf::new());
    }
    let debian = PathBuf::from("/usr/lib/postgresql/15/bin");
    (runs(&debian.join("initdb")) && runs(&debian.join("postgres"))).then_some(debian)
}

/// Whether this process runs as root (the owner of `/proc/self` is the effective user).
fn root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}

/// `program args..`, as the `postgres` user when this process is root.
fn command(program: &Path) -> Command {
    if root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// The cluster of this test binary, started on first use; `None` when PostgreSQL is not
/// installed outside CI (said on the terminal for `test`: libtest does not capture a direct
/// write to stderr).
///
/// # Panics
/// When PostgreSQL is not installed in CI, or does not start.
pub fn cluster(test: &str) -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Option<Cluster>> = OnceLock::new();
    let cluster = CLUSTER
        .get_or_init(|| programs().as_deref().map(start))
        .as_ref();
    if cluster.is_none() {
        assert!(
            !in_ci(),
            "PostgreSQL (initdb, postgres) is not installed: CI installs it \
             (bash tests/tools/install.sh debian)"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test} on PostgreSQL: initdb and postgres are not installed (apt-get \
             install postgresql-15, or bash tests/tools/install.sh debian; PG_BIN=/their/folder)"
        );
    }
    cluster
}

/// The shell around `postgres`: it starts it, stops it (fast shutdown: SIGINT, by PID) when
/// its standard input closes, and removes the folder once it has exited, whichever came first.
/// (A command put in the background reads `/dev/null`, not the shell's input: hence the copy
/// of that input on descriptor 3, which `postgres` does not get.)
const SHELL: &str = r#"
exec 3<&0
"$1" -D "$2/data" -k "$2" -p "$3" -c listen_addresses= -c fsync=off \
    -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 \
    </dev/null >"$2/postgres.log" 2>&1 3<&- &
pid=$!
(cat <&3 >/dev/null; kill -INT "$pid" 2>/dev/null) &
exec 3<&-
wait "$pid"
status=$?
rm -rf "$2"
exit "$status"
"#;

fn start(bin: &Path) -> Cluster {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "strata-realworld-pg-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    if root() {
        let chowned = Command::new("chown")
            .arg("postgres:")
            .arg(&dir)
            .status()
            .is_ok_and(|status| status.success());
        assert!(chowned, "chown postgres: {}", dir.display());
    }
    let initdb = command(&bin.join("initdb"))
        .arg("-D")
        .arg(dir.join("data"))
        .args([
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "--no-instructions",
        ])
        .args(["--locale=C", "-E", "UTF8"])
        .output()
        .expect("initdb runs");
    assert!(
        initdb.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&initdb.stderr)
    );
    let mut shell = command(Path::new("sh"))
        .args(["-c", SHELL, "sh"])
        .arg(bin.join("postgres"))
        .arg(&dir)
        .arg(PORT.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sh runs");
    let stdin = shell.stdin.take().expect("a pipe");
    // Ready when the postmaster says so in its PID file (what `pg_ctl -w` reads): its eighth
    // line is `ready` once it accepts connections.
    let pid_file = dir.join("data/postmaster.pid");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(status)) = shell.try_wait() {
            let log = std::fs::read_to_string(dir.join("postgres.log")).unwrap_or_default();
            panic!("postgres exited ({status}):\n{log}");
        }
        let ready = std::fs::read_to_string(&pid_file).is_ok_and(|text| {
            text.lines()
                .nth(7)
                .is_some_and(|line| line.trim() == "ready")
        });
        if ready {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "postgres did not get ready in 60 s: {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    Cluster {
        dir,
        _shell: shell,
        _stdin: stdin,
    }
}

impl Cluster {
    /// The URL of `database` on this cluster, working in `schema` if given.
    pub fn url(&self, database: &str, schema: Option<&str>) -> String {
        let search_path = schema.map_or_else(String::new, |schema| {
            format!("&options[search_path]={schema}")
        });
        format!(
            "postgres://postgres@localhost/{database}?host={}&port={PORT}{search_path}",
            self.dir.display()
        )
    }

    /// A new, empty database of its own for a test: a schema (`CREATE SCHEMA`) in the
    /// cluster's one database, that the connections of its URL work in (`search_path`), where
    /// the application's start-up applies its migrations. A database per test
    /// (`CREATE DATABASE`, even from a migrated template) took 150 to 500 ms each here, a
    /// schema a few; the tests see no difference (the application names no schema). Its URL.
    pub async fn database(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("test_{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let mut admin = sqlx::PgConnection::connect(&self.url("postgres", None))
            .await
            .expect("a connection to the cluster");
        sqlx::query(&format!("CREATE SCHEMA {name}"))
            .execute(&mut admin)
            .await
            .expect("CREATE SCHEMA");
        admin.close().await.expect("closed");
        self.url("postgres", Some(&name))
    }
}
