//! wrk as the load generator (`--generator wrk`): an external program in C, cheaper per request
//! than the internal generator, so differences near the top are less compressed.
//!
//! One wrk run per round and per warm-up: `taskset -c 1 wrk -t1 -c<connections> -d<secs>s
//! --latency -s <script.lua> http://<addr><path>`, the scenario's method, headers and body set
//! by the Lua script. wrk prints a human report; [`parse`] reads what the harness needs from it
//! and [`WrkOutput::check`] fails the run on socket errors or a wrong status count (wrk itself
//! only counts responses of status 400 and above, and never stops on them).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use http::StatusCode;

use crate::load::LoadResult;
use crate::scenario::RequestSpec;

/// The first line `wrk --version` prints (`wrk debian/4.1.0-3+b2 [epoll] ...`), when wrk is on
/// `PATH` and runs.
pub(crate) fn version() -> Option<String> {
    // wrk prints its version and usage and exits with 1: the output says whether it ran.
    let output = Command::new("wrk")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().next()?.trim();
    first.starts_with("wrk ").then(|| {
        // `wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer`: keep the version.
        first
            .split(" Copyright")
            .next()
            .unwrap_or(first)
            .trim()
            .to_owned()
    })
}

/// `--generator auto`: wrk's version when it is on `PATH` and answers; otherwise `None`, said
/// on stderr.
/// The internal generator's figures are not comparable with wrk's (it is slower, so it
/// compresses the differences near the top), and a machine without wrk once gave a run that
/// looked like any other.
pub(crate) fn auto() -> Option<String> {
    let found = version();
    if found.is_none() {
        eprintln!("{MISSING_FOR_AUTO}");
    }
    found
}

/// What `--generator auto` says when wrk is missing.
const MISSING_FOR_AUTO: &str = "strata-bench: wrk is not on PATH (or `wrk --version` did \
    not answer as wrk does): this run uses the internal load generator, whose figures do not compare with wrk's (install wrk with \
    bench/scripts/install-tools.sh, or pass --generator internal to choose it)";

/// wrk takes whole seconds (`-d1s`): `duration` rounded up, at least one second.
pub(crate) fn whole_seconds(duration: Duration) -> u64 {
    let secs = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    secs.max(1)
}

/// The Lua script that makes wrk send `spec`: method, headers and body (wrk adds `Host` and,
/// with a body, `Content-Length` itself). Strings are written as Lua double-quoted literals,
/// every byte outside printable ASCII and every quote or backslash escaped, so any body is
/// sent byte for byte.
pub(crate) fn lua_script(spec: &RequestSpec) -> String {
    let mut script = String::from("-- strata-bench: the scenario's request\n");
    let _ = writeln!(
        script,
        "wrk.method = {}",
        lua_string(spec.method.as_str().as_bytes())
    );
    for (name, value) in &spec.headers {
        let _ = writeln!(
            script,
            "wrk.headers[{}] = {}",
            lua_string(name.as_bytes()),
            lua_string(value.as_bytes())
        );
    }
    if !spec.body.is_empty() {
        let _ = writeln!(script, "wrk.body = {}", lua_string(&spec.body));
    }
    script
}

/// `bytes` as a Lua string literal. Decimal escapes (`\ddd`, always three digits so a digit
/// after them is not read as part of them) work in Lua 5.1 and `LuaJIT`, which wrk embeds.
fn lua_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &byte in bytes {
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b' '..=b'~' => out.push(char::from(byte)),
            _ => {
                let _ = write!(out, "\\{byte:03}");
            }
        }
    }
    out.push('"');
    out
}

/// wrk's socket error counts (`Socket errors: connect 0, read 16, write 3, timeout 0`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SocketErrors {
    pub(crate) connect: u64,
    pub(crate) read: u64,
    pub(crate) write: u64,
    pub(crate) timeout: u64,
}

/// What the harness reads from wrk's report.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WrkOutput {
    /// Responses received (`N requests in 2.00s`), of any status.
    pub(crate) requests: u64,
    /// The run's length as printed (two decimals).
    pub(crate) duration: Duration,
    /// `Requests/sec:`, from wrk's exact clock.
    pub(crate) requests_per_sec: f64,
    /// The latency distribution's 50 % and 99 %.
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    /// `Non-2xx or 3xx responses:` (wrk counts statuses >= 400), 0 when not printed.
    pub(crate) non_2xx_3xx: u64,
    /// `Socket errors:`, all 0 when not printed.
    pub(crate) socket_errors: SocketErrors,
}

/// `449.00us`, `1.16ms`, `2.10s`, `1.00m`: wrk's time units.
fn parse_time(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad wrk time {text:?}");
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "us" => value * 1e-6,
        "ms" => value * 1e-3,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(bad()),
    };
    Ok(Duration::from_secs_f64(seconds))
}

fn parse_count(text: &str, what: &str) -> Result<u64, String> {
    text.trim()
        .trim_end_matches(',')
        .parse()
        .map_err(|_| format!("bad {what} {text:?} in wrk's report"))
}

/// Reads wrk's report (stdout of `wrk --latency`). Fails when a line the harness needs is
/// missing, with the report in the message.
pub(crate) fn parse(report: &str) -> Result<WrkOutput, String> {
    let (mut requests, mut duration, mut rate, mut p50, mut p99) = (None, None, None, None, None);
    let mut non_2xx_3xx = 0;
    let mut socket_errors = SocketErrors::default();
    let mut in_distribution = false;
    for line in report.lines() {
        let line = line.trim();
        if line == "Latency Distribution" {
            in_distribution = true;
        } else if in_distribution && let Some((quantile, value)) = line.split_once('%') {
            match quantile {
                "50" => p50 = Some(parse_time(value.trim())?),
                "99" => p99 = Some(parse_time(value.trim())?),
                _ => {}
            }
        } else if let Some((count, rest)) = line.split_once(" requests in ") {
            in_distribution = false;
            requests = Some(parse_count(count, "request count")?);
            let time = rest.split(',').next().unwrap_or(rest).trim();
            duration = Some(parse_time(time)?);
        } else if let Some(value) = line.strip_prefix("Requests/sec:") {
            rate = Some(
                value
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| format!("bad Requests/sec {value:?} in wrk's report"))?,
            );
        } else if let Some(value) = line.strip_prefix("Non-2xx or 3xx responses:") {
            non_2xx_3xx = parse_count(value, "non-2xx count")?;
        } else if let Some(value) = line.strip_prefix("Socket errors:") {
            for part in value.split(',') {
                let mut words = part.split_whitespace();
                let (Some(kind), Some(count)) = (words.next(), words.next()) else {
                    return Err(format!("bad socket errors {value:?} in wrk's report"));
                };
                let count = parse_count(count, "socket error count")?;
                match kind {
                    "connect" => socket_errors.connect = count,
                    "read" => socket_errors.read = count,
                    "write" => socket_errors.write = count,
                    "timeout" => socket_errors.timeout = count,
                    _ => return Err(format!("unknown socket error {kind:?} in wrk's report")),
                }
            }
        }
    }
    let missing = |what: &str| format!("no {what} in wrk's report:\n{report}");
    Ok(WrkOutput {
        requests: requests.ok_or_else(|| missing("request count"))?,
        duration: duration.ok_or_else(|| missing("duration"))?,
        requests_per_sec: rate.ok_or_else(|| missing("Requests/sec"))?,
        p50: p50.ok_or_else(|| missing("50% latency"))?,
        p99: p99.ok_or_else(|| missing("99% latency"))?,
        non_2xx_3xx,
        socket_errors,
    })
}

impl WrkOutput {
    /// Fails on any socket error (naming which) and on a status count that does not fit
    /// `expected`: no responses of 400 or above for a success, every response for an error.
    pub(crate) fn check(&self, expected: StatusCode) -> Result<(), String> {
        let e = self.socket_errors;
        let errors: Vec<String> = [
            ("connect", e.connect),
            ("read", e.read),
            ("write", e.write),
            ("timeout", e.timeout),
        ]
        .iter()
        .filter(|(_, count)| *count > 0)
        .map(|(kind, count)| format!("{kind} {count}"))
        .collect();
        if !errors.is_empty() {
            return Err(format!("wrk saw socket errors: {}", errors.join(", ")));
        }
        if self.requests == 0 {
            return Err("wrk completed no request".to_owned());
        }
        if expected.as_u16() < 400 && self.non_2xx_3xx != 0 {
            return Err(format!(
                "{} of {} responses had a status of 400 or above, expected {expected}",
                self.non_2xx_3xx, self.requests
            ));
        }
        if expected.as_u16() >= 400 && self.non_2xx_3xx != self.requests {
            return Err(format!(
                "only {} of {} responses had a status of 400 or above, expected {expected} for \
                 every one",
                self.non_2xx_3xx, self.requests
            ));
        }
        Ok(())
    }

    /// As the internal generator's result: the request count, the run's length from wrk's own
    /// rate (more digits than the printed duration), and the two percentiles instead of every
    /// latency.
    pub(crate) fn into_load_result(self) -> LoadResult {
        #[allow(clippy::cast_precision_loss)]
        let elapsed = if self.requests_per_sec > 0.0 {
            Duration::from_secs_f64(self.requests as f64 / self.requests_per_sec)
        } else {
            self.duration
        };
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        LoadResult {
            requests: self.requests,
            elapsed,
            latencies: Vec::new(),
            percentiles: Some((nanos(self.p50), nanos(self.p99))),
            server_cpu: None,
        }
    }
}

/// A temporary file that is removed when dropped.
pub(crate) struct Script {
    path: PathBuf,
}

impl Script {
    /// Writes `spec`'s Lua script to a new file in the temporary directory.
    pub(crate) fn write(spec: &RequestSpec, label: &str) -> Result<Self, String> {
        let path =
            std::env::temp_dir().join(format!("strata-bench-{}-{label}.lua", std::process::id()));
        std::fs::write(&path, lua_script(spec)).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self { path })
    }

    /// Where the script is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One wrk run against `addr`: `connections` connections for `duration` (whole seconds), the
/// request of `script`, pinned to `core` when given. Blocks until wrk exits.
pub(crate) fn run(
    addr: SocketAddr,
    path_and_query: &str,
    script: &Script,
    expected: StatusCode,
    connections: usize,
    duration: Duration,
    core: Option<&str>,
) -> Result<LoadResult, String> {
    let mut command = match core {
        Some(core) => {
            let mut command = Command::new("taskset");
            command.args(["-c", core, "wrk"]);
            command
        }
        None => Command::new("wrk"),
    };
    command
        .arg("-t1")
        .arg(format!("-c{connections}"))
        .arg(format!("-d{}s", whole_seconds(duration)))
        .arg("--latency")
        .arg("-s")
        .arg(script.path())
        .arg(format!("http://{addr}{path_and_query}"))
        .stdin(Stdio::null());
    let output = command.output().map_err(|e| format!("starting wrk: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "wrk failed ({}): {}{}",
            output.status,
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let report = parse(&stdout)?;
    report.check(expected)?;
    Ok(report.into_load_result())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    // Real reports of wrk 4.1.0 (Debian's 4.1.0-3+b2), captured by hand against the servers of
    // this harness.
    const HELLO_US: &str = include_str!("testdata/wrk-hello-us.txt");
    const HELLO_MS: &str = include_str!("testdata/wrk-hello-ms.txt");
    const NOT_FOUND: &str = include_str!("testdata/wrk-not-found-non2xx.txt");
    const SOCKET_ERRORS: &str = include_str!("testdata/wrk-socket-errors.txt");
    const UNABLE_TO_CONNECT: &str = include_str!("testdata/wrk-unable-to-connect.txt");

    fn us(micros: u64) -> Duration {
        Duration::from_micros(micros)
    }

    #[test]
    fn reads_a_report_in_microseconds() {
        let report = parse(HELLO_US).unwrap();
        assert_eq!(report.requests, 14379);
        assert_eq!(report.duration, Duration::from_millis(1100));
        assert!((report.requests_per_sec - 13069.79).abs() < 1e-9);
        assert_eq!((report.p50, report.p99), (us(631), us(1150)));
        assert_eq!(report.non_2xx_3xx, 0);
        assert_eq!(report.socket_errors, SocketErrors::default());
        assert_eq!(report.check(StatusCode::OK), Ok(()));
        // Every response was a 200: a scenario expecting an error is not met.
        assert!(report.check(StatusCode::NOT_FOUND).is_err());
        let result = report.into_load_result();
        assert!((result.throughput() - 13069.79).abs() < 0.01);
        assert_eq!(result.percentiles, Some((631_000, 1_150_000)));
    }

    #[test]
    fn reads_a_report_in_milliseconds() {
        let report = parse(HELLO_MS).unwrap();
        assert_eq!(report.requests, 15431);
        assert_eq!(report.duration, Duration::from_secs(1));
        assert_eq!((report.p50, report.p99), (us(4160), us(8340)));
        assert_eq!(report.check(StatusCode::OK), Ok(()));
    }

    #[test]
    fn counts_error_statuses() {
        let report = parse(NOT_FOUND).unwrap();
        assert_eq!((report.requests, report.non_2xx_3xx), (19956, 19956));
        assert_eq!(report.check(StatusCode::NOT_FOUND), Ok(()));
        let message = report.check(StatusCode::OK).unwrap_err();
        assert!(message.contains("19956 of 19956"), "{message}");
        // Some errors, some successes: wrong whatever was expected.
        let mixed = WrkOutput {
            non_2xx_3xx: 5,
            ..report
        };
        assert!(mixed.check(StatusCode::NOT_FOUND).is_err());
        assert!(mixed.check(StatusCode::OK).is_err());
    }

    #[test]
    fn socket_errors_fail_the_run_and_are_named() {
        let report = parse(SOCKET_ERRORS).unwrap();
        assert_eq!(
            report.socket_errors,
            SocketErrors {
                connect: 0,
                read: 16,
                write: 76929,
                timeout: 0
            }
        );
        assert_eq!(report.p99, us(29590));
        let message = report.check(StatusCode::OK).unwrap_err();
        assert_eq!(message, "wrk saw socket errors: read 16, write 76929");
    }

    #[test]
    fn a_run_that_never_connected_is_no_report() {
        let message = parse(UNABLE_TO_CONNECT).unwrap_err();
        assert!(message.contains("unable to connect"), "{message}");
    }

    #[test]
    fn times_in_every_unit() {
        assert_eq!(parse_time("449.00us"), Ok(us(449)));
        assert_eq!(parse_time("1.16ms"), Ok(us(1160)));
        assert_eq!(parse_time("2.10s"), Ok(Duration::from_millis(2100)));
        assert_eq!(parse_time("1.50m"), Ok(Duration::from_secs(90)));
        assert!(parse_time("12").is_err());
        assert!(parse_time("1.0ns").is_err());
        assert_eq!(whole_seconds(Duration::from_millis(400)), 1);
        assert_eq!(whole_seconds(Duration::from_secs(2)), 2);
        assert_eq!(whole_seconds(Duration::from_millis(2500)), 3);
    }

    #[test]
    fn scripts_carry_method_headers_and_the_exact_body() {
        let hello = lua_script(&Scenario::Hello.request());
        assert_eq!(
            hello,
            "-- strata-bench: the scenario's request\nwrk.method = \"GET\"\n"
        );
        let auth = lua_script(&Scenario::AuthParam.request());
        assert!(
            auth.contains("wrk.headers[\"token\"] = \"secret-token\"\n"),
            "{auth}"
        );
        let wrong = lua_script(&Scenario::WrongMethod.request());
        assert!(wrong.contains("wrk.method = \"DELETE\"\n"), "{wrong}");

        let spec = Scenario::ValidatedPost.request();
        let post = lua_script(&spec);
        assert!(post.contains("wrk.method = \"POST\"\n"), "{post}");
        assert!(
            post.contains("wrk.headers[\"content-type\"] = \"application/json\"\n"),
            "{post}"
        );
        let body = post
            .lines()
            .find_map(|line| line.strip_prefix("wrk.body = "))
            .unwrap();
        assert!(
            body.starts_with(r#""{\"customer\":\"Ada Lovelace\","#),
            "{body}"
        );
        assert_eq!(unescape(body), spec.body);
        // The sample order has an apostrophe ("St James's"): no escape needed in "...".
        assert!(body.contains("James's"));
    }

    #[test]
    fn odd_bytes_are_escaped() {
        let literal = lua_string(b"a\"b\\c\nd\x00\xc3\xa9 1");
        assert_eq!(literal, r#""a\"b\\c\010d\000\195\169 1""#);
        assert_eq!(unescape(&literal), b"a\"b\\c\nd\x00\xc3\xa9 1");
    }

    /// Reads a literal written by `lua_string` back, as Lua would.
    fn unescape(literal: &str) -> Vec<u8> {
        let inner = literal
            .strip_prefix('"')
            .and_then(|l| l.strip_suffix('"'))
            .unwrap();
        let bytes = inner.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\\' {
                let next = bytes[i + 1];
                if next.is_ascii_digit() {
                    let digits = std::str::from_utf8(&bytes[i + 1..i + 4]).unwrap();
                    out.push(digits.parse().unwrap());
                    i += 4;
                } else {
                    out.push(next);
                    i += 2;
                }
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        out
    }
}
