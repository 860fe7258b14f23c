//! h2load (nghttp2's load generator, Debian's `nghttp2-client`) as the load generator of
//! `strata-bench protocols`: HTTP/2 with prior knowledge on `http://` URIs, HTTP/2 over TLS
//! by ALPN on `https://`, HTTP/1.1 (over TLS on `https://`) with `--h1`.
//!
//! One h2load run per round and per warm-up: `taskset -c 1 h2load -t 1 -c <connections>
//! -m <streams> -D <seconds> [--h1] [-H <header>]... [-d <body file>] <uri>`. h2load prints a
//! human report; [`parse`] reads what the harness needs from it and [`H2loadOutput::check`]
//! fails the run on any failed, errored or timed-out request, a status count that does not
//! fit, or another protocol than asked for.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use http::StatusCode;

/// The first line `h2load --version` prints (`h2load nghttp2/1.52.0`), when h2load is on
/// `PATH` and runs.
pub(crate) fn version() -> Option<String> {
    let output = Command::new("h2load")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().next()?.trim();
    first.starts_with("h2load ").then(|| first.to_owned())
}

/// `time for request:`'s columns (min, max, mean, standard deviation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RequestTime {
    pub(crate) min: Duration,
    pub(crate) max: Duration,
    pub(crate) mean: Duration,
    pub(crate) sd: Duration,
}

/// What the harness reads from h2load's report.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct H2loadOutput {
    /// `finished in 3.00s`: the measured period (as printed, two decimals).
    pub(crate) finished_in: Duration,
    /// `N req/s` on the same line: done requests over the measured period.
    pub(crate) requests_per_sec: f64,
    /// `requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout`.
    pub(crate) total: u64,
    pub(crate) started: u64,
    pub(crate) done: u64,
    pub(crate) succeeded: u64,
    pub(crate) failed: u64,
    pub(crate) errored: u64,
    pub(crate) timeout: u64,
    /// `status codes: N 2xx, N 3xx, N 4xx, N 5xx`, in that order.
    pub(crate) status_classes: [u64; 4],
    /// `Application protocol: h2`: `h2c` on cleartext HTTP/2, `h2` or `http/1.1` over TLS.
    pub(crate) application_protocol: Option<String>,
    /// `time for request:`.
    pub(crate) request_time: RequestTime,
}

/// `105us`, `27.69ms`, `1.20s`: h2load's time units.
fn parse_time(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad h2load time {text:?}");
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let nanos_per_unit = match unit {
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => return Err(bad()),
    };
    // Rounded to the nanosecond: `151.13ms` is 151,130 µs, not 151,129.999...
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let nanos = (value * nanos_per_unit).round() as u64;
    Ok(Duration::from_nanos(nanos))
}

/// `N word, N word, ...` as the numbers in order, each checked against its word.
fn counts(text: &str, words: &[&str], line: &str) -> Result<Vec<u64>, String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() != words.len() {
        return Err(format!("bad line in h2load's report: {line:?}"));
    }
    parts
        .iter()
        .zip(words)
        .map(|(part, word)| {
            let (count, name) = part
                .split_once(' ')
                .ok_or_else(|| format!("bad line in h2load's report: {line:?}"))?;
            if name.trim() != *word {
                return Err(format!("expected {word:?} in h2load's line {line:?}"));
            }
            count
                .parse()
                .map_err(|_| format!("bad count {count:?} in h2load's line {line:?}"))
        })
        .collect()
}

/// Reads h2load's report (its standard output). Fails when a line the harness needs is
/// missing, with the report in the message.
pub(crate) fn parse(report: &str) -> Result<H2loadOutput, String> {
    let mut finished = None;
    let mut requests = None;
    let mut statuses = None;
    let mut application_protocol = None;
    let mut request_time = None;
    for line in report.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("finished in ") {
            // `finished in 3.00s, 75012.33 req/s, 8.30MB/s`
            let mut parts = rest.split(',').map(str::trim);
            let time = parse_time(parts.next().unwrap_or_default())?;
            let rate = parts
                .next()
                .and_then(|p| p.strip_suffix(" req/s"))
                .ok_or_else(|| format!("no req/s in h2load's line {trimmed:?}"))?;
            let rate: f64 = rate
                .parse()
                .map_err(|_| format!("bad req/s {rate:?} in h2load's report"))?;
            finished = Some((time, rate));
        } else if let Some(rest) = trimmed.strip_prefix("requests: ") {
            let words = [
                "total",
                "started",
                "done",
                "succeeded",
                "failed",
                "errored",
                "timeout",
            ];
            requests = Some(counts(rest, &words, trimmed)?);
        } else if let Some(rest) = trimmed.strip_prefix("status codes: ") {
            let classes = counts(rest, &["2xx", "3xx", "4xx", "5xx"], trimmed)?;
            statuses = Some([classes[0], classes[1], classes[2], classes[3]]);
        } else if let Some(rest) = trimmed.strip_prefix("Application protocol:") {
            application_protocol = Some(rest.trim().to_owned());
        } else if let Some(rest) = trimmed.strip_prefix("time for request:") {
            // min, max, mean, sd, +/- sd
            let columns: Vec<&str> = rest.split_whitespace().collect();
            if columns.len() < 4 {
                return Err(format!("bad line in h2load's report: {trimmed:?}"));
            }
            request_time = Some(RequestTime {
                min: parse_time(columns[0])?,
                max: parse_time(columns[1])?,
                mean: parse_time(columns[2])?,
                sd: parse_time(columns[3])?,
            });
        }
    }
    let missing = |what: &str| format!("no {what} in h2load's report:\n{report}");
    let (finished_in, requests_per_sec) = finished.ok_or_else(|| missing("`finished in`"))?;
    let requests = requests.ok_or_else(|| missing("`requests:` line"))?;
    Ok(H2loadOutput {
        finished_in,
        requests_per_sec,
        total: requests[0],
        started: requests[1],
        done: requests[2],
        succeeded: requests[3],
        failed: requests[4],
        errored: requests[5],
        timeout: requests[6],
        status_classes: statuses.ok_or_else(|| missing("`status codes:` line"))?,
        application_protocol,
        request_time: request_time.ok_or_else(|| missing("`time for request:` line"))?,
    })
}

impl H2loadOutput {
    /// Fails, saying what was wrong, on: no request done, any failed, errored or timed-out
    /// request, fewer succeeded than done, a status class other than `expected`'s or fewer of
    /// it than done, and another application protocol than `protocol` (`h2c`, `h2`,
    /// `http/1.1`).
    pub(crate) fn check(&self, expected: StatusCode, protocol: &str) -> Result<(), String> {
        if self.done == 0 {
            return Err("h2load completed no request".to_owned());
        }
        let bad: Vec<String> = [
            ("failed", self.failed),
            ("errored", self.errored),
            ("timed out", self.timeout),
        ]
        .iter()
        .filter(|(_, count)| *count > 0)
        .map(|(what, count)| format!("{count} {what}"))
        .collect();
        if !bad.is_empty() {
            return Err(format!(
                "h2load: {} of {} requests done",
                bad.join(", "),
                self.done
            ));
        }
        if self.succeeded != self.done {
            return Err(format!(
                "h2load: {} of {} requests done succeeded",
                self.succeeded, self.done
            ));
        }
        let class = usize::from(expected.as_u16() / 100).saturating_sub(2);
        let names = ["2xx", "3xx", "4xx", "5xx"];
        if class >= names.len() {
            return Err(format!("h2load counts no status class for {expected}"));
        }
        for (i, (&count, name)) in self.status_classes.iter().zip(names).enumerate() {
            let wanted = if i == class { self.done } else { 0 };
            if count != wanted {
                return Err(format!(
                    "h2load: {count} responses of status {name} of {} done, expected {expected} \
                     for every one",
                    self.done
                ));
            }
        }
        if self.application_protocol.as_deref() != Some(protocol) {
            return Err(format!(
                "h2load spoke {}, expected {protocol}",
                self.application_protocol
                    .as_deref()
                    .unwrap_or("no application protocol it named")
            ));
        }
        Ok(())
    }
}

/// One h2load run.
#[derive(Debug, Clone)]
pub(crate) struct Invocation<'a> {
    /// `http://127.0.0.1:<port><path>` or `https://...`.
    pub(crate) uri: String,
    pub(crate) connections: usize,
    /// Concurrent streams per connection (`-m`): HTTP/1.1 pipelining depth with `--h1`.
    pub(crate) streams: usize,
    pub(crate) duration: Duration,
    /// `--h1`: HTTP/1.1 (by ALPN `http/1.1` over TLS).
    pub(crate) http1: bool,
    pub(crate) headers: Vec<String>,
    /// The request body's file (`-d`, which makes the request a POST).
    pub(crate) body: Option<&'a Path>,
    /// The core to pin h2load to (`taskset -c`).
    pub(crate) core: Option<&'a str>,
}

/// h2load takes whole seconds here (`-D 3`): `duration` rounded up, at least one.
pub(crate) fn whole_seconds(duration: Duration) -> u64 {
    crate::wrk::whole_seconds(duration)
}

impl Invocation<'_> {
    /// The command line, program first.
    pub(crate) fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(core) = self.core {
            args.extend(["taskset".to_owned(), "-c".to_owned(), core.to_owned()]);
        }
        args.extend([
            "h2load".to_owned(),
            "-t".to_owned(),
            "1".to_owned(),
            "-c".to_owned(),
            self.connections.to_string(),
            "-m".to_owned(),
            self.streams.to_string(),
            "-D".to_owned(),
            whole_seconds(self.duration).to_string(),
        ]);
        if self.http1 {
            args.push("--h1".to_owned());
        }
        for header in &self.headers {
            args.extend(["-H".to_owned(), header.clone()]);
        }
        if let Some(body) = self.body {
            args.extend(["-d".to_owned(), body.display().to_string()]);
        }
        args.push(self.uri.clone());
        args
    }

    /// Runs h2load and reads its report (not checked). Blocks until it exits.
    pub(crate) fn run(&self) -> Result<H2loadOutput, String> {
        let args = self.args();
        let output = Command::new(&args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("starting {}: {e}", args[0]))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            return Err(format!(
                "`{}` failed ({}): {}{}",
                args.join(" "),
                output.status,
                stdout.trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        parse(&stdout).map_err(|e| format!("`{}`: {e}", args.join(" ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real reports of h2load 1.52.0 (Debian's nghttp2-client 1.52.0-1+deb12u3), captured by
    // hand against the servers of `strata-bench protocols`.
    const H2C: &str = include_str!("testdata/h2load-h2c-hello.txt");
    const H2_TLS: &str = include_str!("testdata/h2load-h2-tls-hello.txt");
    const H1_TLS: &str = include_str!("testdata/h2load-h1-tls-hello.txt");
    const NOT_FOUND: &str = include_str!("testdata/h2load-h2c-not-found.txt");
    const REFUSED: &str = include_str!("testdata/h2load-refused.txt");

    #[test]
    fn reads_an_h2c_report() {
        let report = parse(H2C).unwrap();
        assert_eq!(report.application_protocol.as_deref(), Some("h2c"));
        assert_eq!(report.finished_in, Duration::from_millis(2020));
        assert!((report.requests_per_sec - 17618.0).abs() < 1e-9);
        assert_eq!(
            (report.total, report.started, report.done, report.succeeded),
            (35236, 35876, 35236, 35236)
        );
        assert_eq!((report.failed, report.errored, report.timeout), (0, 0, 0));
        assert_eq!(report.status_classes, [35236, 0, 0, 0]);
        assert_eq!(
            report.request_time,
            RequestTime {
                min: Duration::from_micros(70),
                max: Duration::from_micros(151_130),
                mean: Duration::from_millis(35),
                sd: Duration::from_micros(21_160),
            }
        );
        assert_eq!(report.check(StatusCode::OK, "h2c"), Ok(()));
        // Over TLS, h2 was asked for: cleartext is not it.
        assert!(report.check(StatusCode::OK, "h2").is_err());
        // Every response was a 2xx: a scenario expecting a 404 is not met.
        assert!(report.check(StatusCode::NOT_FOUND, "h2c").is_err());
    }

    #[test]
    fn reads_tls_reports_and_their_protocol() {
        let h2 = parse(H2_TLS).unwrap();
        assert_eq!(h2.application_protocol.as_deref(), Some("h2"));
        assert_eq!(h2.check(StatusCode::OK, "h2"), Ok(()));
        let message = h2.check(StatusCode::OK, "http/1.1").unwrap_err();
        assert!(message.contains("spoke h2, expected http/1.1"), "{message}");
        let h1 = parse(H1_TLS).unwrap();
        assert_eq!(h1.application_protocol.as_deref(), Some("http/1.1"));
        assert_eq!(h1.done, 23227);
        assert_eq!(h1.request_time.mean, Duration::from_micros(5350));
        assert_eq!(h1.check(StatusCode::OK, "http/1.1"), Ok(()));
    }

    #[test]
    fn wrong_statuses_fail_the_run() {
        let report = parse(NOT_FOUND).unwrap();
        assert_eq!(report.status_classes[2], report.done);
        // h2load counts a 404 as a failed request.
        assert_eq!((report.failed, report.succeeded), (16639, 0));
        let message = report.check(StatusCode::OK, "h2c").unwrap_err();
        assert_eq!(message, "h2load: 16639 failed of 16639 requests done");
        // Some of one class and some of another: wrong whatever was expected.
        let mut mixed = parse(H2C).unwrap();
        mixed.status_classes[0] -= 1;
        mixed.status_classes[3] += 1;
        let message = mixed.check(StatusCode::OK, "h2c").unwrap_err();
        assert!(message.contains("responses of status 2xx"), "{message}");
    }

    #[test]
    fn failed_errored_and_timed_out_requests_fail_the_run() {
        let good = parse(H2C).unwrap();
        for (field, name) in [(0, "failed"), (1, "errored"), (2, "timed out")] {
            let mut bad = good.clone();
            match field {
                0 => bad.failed = 3,
                1 => bad.errored = 3,
                _ => bad.timeout = 3,
            }
            let message = bad.check(StatusCode::OK, "h2c").unwrap_err();
            assert!(message.contains(&format!("3 {name}")), "{message}");
        }
        let refused = parse(REFUSED).unwrap();
        assert_eq!(refused.done, 0);
        assert_eq!(refused.application_protocol, None);
        let message = refused.check(StatusCode::OK, "h2c").unwrap_err();
        assert!(message.contains("no request"), "{message}");
        assert!(parse("starting benchmark...\n").is_err());
    }

    #[test]
    fn times_in_every_unit() {
        assert_eq!(parse_time("105us"), Ok(Duration::from_micros(105)));
        assert_eq!(parse_time("27.69ms"), Ok(Duration::from_micros(27_690)));
        assert_eq!(parse_time("3.00s"), Ok(Duration::from_secs(3)));
        assert!(parse_time("12").is_err());
        assert!(parse_time("1.0ns").is_err());
    }

    #[test]
    fn the_command_line() {
        let body = Path::new("/tmp/body.json");
        let invocation = Invocation {
            uri: "https://127.0.0.1:8443/v1/orders".to_owned(),
            connections: 64,
            streams: 1,
            duration: Duration::from_millis(2500),
            http1: true,
            headers: vec!["content-type: application/json".to_owned()],
            body: Some(body),
            core: Some("1"),
        };
        assert_eq!(
            invocation.args().join(" "),
            "taskset -c 1 h2load -t 1 -c 64 -m 1 -D 3 --h1 -H content-type: application/json \
             -d /tmp/body.json https://127.0.0.1:8443/v1/orders"
        );
    }
}
