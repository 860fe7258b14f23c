//! The load generator: N keep-alive HTTP/1.1 connections, each sending one request after
//! another, over a minimal client that writes prebuilt bytes and reads status, headers and a
//! `Content-Length` body (cheaper than a full client, so the servers, not the client, set the
//! pace as far as possible).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

/// What one load run measured.
#[derive(Debug, Clone)]
pub(crate) struct LoadResult {
    /// Requests completed.
    pub(crate) requests: u64,
    /// From the start signal to the last response.
    pub(crate) elapsed: Duration,
    /// Every request's latency in nanoseconds, ascending (the internal generator; empty
    /// with wrk, which reports percentiles only).
    pub(crate) latencies: Vec<u64>,
    /// The 50th and 99th percentile latencies in nanoseconds, when only those are known (wrk).
    pub(crate) percentiles: Option<(u64, u64)>,
    /// CPU time the server process used during the run, when known.
    pub(crate) server_cpu: Option<Duration>,
}

impl LoadResult {
    /// Requests per second.
    pub(crate) fn throughput(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let requests = self.requests as f64;
        requests / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Reads one response from `stream`, leaving any extra bytes in `buf`; returns its status.
pub(crate) async fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<u16> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let (status, length) = parse_head(&buf[..end])?;
            let total = end + 4 + length;
            while buf.len() < total {
                read_more(stream, buf).await?;
            }
            buf.drain(..total);
            return Ok(status);
        }
        read_more(stream, buf).await?;
    }
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.reserve(8192);
    if stream.read_buf(buf).await? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        ));
    }
    Ok(())
}

/// The status and body length of a response head (without the blank line). A 1xx, 204 or 304
/// has no body, whatever its headers say (RFC 9112 §6.3).
pub(crate) fn parse_head(head: &[u8]) -> io::Result<(u16, usize)> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
    let text = std::str::from_utf8(head).map_err(|_| bad("non-UTF-8 response head"))?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| bad(&format!("bad status line {status_line:?}")))?;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(bad(
                "chunked responses are not supported by the load generator",
            ));
        }
    }
    if matches!(status, 100..=199 | 204 | 304) {
        return Ok((status, 0));
    }
    Ok((status, length.ok_or_else(|| bad("no content-length"))?))
}

/// Opens a keep-alive connection to `addr` (no Nagle) and sends `request` once, untimed, so
/// that the server has accepted and set up the connection before the clock starts and rounds
/// measure keep-alive requests only; returns it with its read buffer. Fails on a status other
/// than `expected`.
pub(crate) async fn connect(
    addr: SocketAddr,
    request: &[u8],
    expected: u16,
) -> io::Result<(TcpStream, Vec<u8>)> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(16 * 1024);
    stream.write_all(request).await?;
    let status = read_response(&mut stream, &mut buf).await?;
    if status != expected {
        return Err(io::Error::other(format!(
            "answered {status}, expected {expected}"
        )));
    }
    Ok((stream, buf))
}

/// Runs `connections` connections to `addr`, each sending `request` back to back for
/// `duration`; fails on any I/O error or a status other than `expected`.
pub(crate) async fn run(
    addr: SocketAddr,
    request: Arc<[u8]>,
    expected: u16,
    connections: usize,
    duration: Duration,
) -> io::Result<LoadResult> {
    let barrier = Arc::new(Barrier::new(connections + 1));
    let mut tasks = Vec::with_capacity(connections);
    for _ in 0..connections {
        let (mut stream, mut buf) = connect(addr, &request, expected).await?;
        let request = Arc::clone(&request);
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(64 * 1024);
            let start = {
                barrier.wait().await;
                Instant::now()
            };
            let deadline = start + duration;
            loop {
                let sent = Instant::now();
                if sent >= deadline {
                    break;
                }
                stream.write_all(&request).await?;
                let status = read_response(&mut stream, &mut buf).await?;
                let elapsed = sent.elapsed();
                if status != expected {
                    return Err(io::Error::other(format!(
                        "answered {status}, expected {expected}"
                    )));
                }
                latencies.push(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
            }
            Ok::<_, io::Error>((latencies, Instant::now()))
        }));
    }
    barrier.wait().await;
    let start = Instant::now();
    let mut all = Vec::new();
    let mut end = start;
    for task in tasks {
        let (latencies, finished) = task.await.map_err(io::Error::other)??;
        all.extend(latencies);
        end = end.max(finished);
    }
    all.sort_unstable();
    Ok(LoadResult {
        requests: all.len() as u64,
        elapsed: end - start,
        latencies: all,
        percentiles: None,
        server_cpu: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_status_and_length() {
        let head =
            b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\nContent-Length: 42";
        assert_eq!(parse_head(head).ok(), Some((404, 42)));
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK").is_err());
        assert!(parse_head(b"garbage").is_err());
        // No body, whatever the headers say.
        assert_eq!(
            parse_head(b"HTTP/1.1 304 Not Modified\r\netag: \"a\"").ok(),
            Some((304, 0))
        );
        assert_eq!(
            parse_head(b"HTTP/1.1 304 Not Modified\r\ncontent-length: 57").ok(),
            Some((304, 0))
        );
    }
}
