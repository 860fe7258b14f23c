//! Accepting connections: binding or adopting listeners, the accept loop, the caps on
//! connections (in all and per client address), and the drain at shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use strata_core::{ApiError, ClientAddr, ErrorKind, Logger};
use strata_log::LogRateLimit;
use strata_parse::{ClientKey, PerClient};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError, watch};
use tokio::task::JoinSet;

use crate::config::Listen;
use crate::connection::watcher::{IdleConnections, SHED_AFTER, Shutdown};
use crate::connection::{Acceptor, CUT_GRACE, ServedApp, Serving};
use crate::error::ServerError;
use crate::metrics::Closed;
use crate::server::{Listener, LocalAddr, Protocol};

pub(crate) fn describe(listen: &Listen) -> String {
    match listen {
        Listen::Port(port) => format!("port {port}"),
        Listen::Addr(addr) => addr.to_string(),
        Listen::Unix(path) => format!("unix:{}", path.display()),
    }
}

pub(crate) enum Bound {
    Tcp(TcpListener),
    Unix(UnixListener, UnixSocketFile),
}

/// The socket file a UNIX listener created, identified so that shutdown removes it only if it
/// is still ours (not a file someone put there since).
pub(crate) struct UnixSocketFile {
    path: PathBuf,
    identity: Option<(u64, u64)>,
}

#[cfg(unix)]
pub(crate) fn file_identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

impl UnixSocketFile {
    fn remove_if_ours(&self) {
        if self.identity.is_some() && file_identity(&self.path) == self.identity {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Binds a UNIX socket; a socket file left by a process that died (nobody accepts on it) is
/// replaced, anything else is an error.
pub(crate) async fn bind_unix(path: &std::path::Path) -> std::io::Result<UnixListener> {
    match UnixListener::bind(path) {
        Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
            use std::os::unix::fs::FileTypeExt;
            let is_socket =
                std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
            let refused = matches!(
                tokio::net::UnixStream::connect(path).await,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
            );
            if is_socket && refused {
                std::fs::remove_file(path)?;
                UnixListener::bind(path)
            } else {
                Err(error)
            }
        }
        other => other,
    }
}

/// The kernel's queue of connections not accepted yet (the system's `somaxconn` may lower it):
/// tokio's `TcpListener::bind` asks for 128, and while one host opens connections as fast as
/// the server closes them (past its share), a full queue drops other clients' SYNs, which they
/// send again only a second later.
pub(crate) const LISTEN_BACKLOG: u32 = 1024;

/// A TCP listener on `addr`, with address reuse as `TcpListener::bind` has it and a queue of
/// [`LISTEN_BACKLOG`].
pub(crate) fn listen_tcp(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

pub(crate) async fn bind(listen: &Listen) -> Result<(Bound, LocalAddr), ServerError> {
    let failed = |source| ServerError::Bind {
        listen: describe(listen),
        source,
    };
    match listen {
        Listen::Unix(path) => {
            let listener = bind_unix(path).await.map_err(failed)?;
            let socket = UnixSocketFile {
                path: path.clone(),
                identity: file_identity(path),
            };
            Ok((Bound::Unix(listener, socket), LocalAddr::Unix(path.clone())))
        }
        tcp => {
            let addr = tcp
                .socket_addr()
                .ok_or_else(|| ServerError::Config("no address".into()))?;
            let listener = listen_tcp(addr).map_err(failed)?;
            let local = listener.local_addr().map_err(failed)?;
            Ok((Bound::Tcp(listener), LocalAddr::Tcp(local)))
        }
    }
}

/// A listener the application bound: its address, and its TLS acceptor if it has one. A UNIX
/// socket's file is the application's (left where it is at shutdown).
pub(crate) fn adopt(
    listener: Listener,
) -> Result<(Protocol, Bound, LocalAddr, Option<Acceptor>), ServerError> {
    let failed = |source| ServerError::Bind {
        listen: "a listener of the application's".to_owned(),
        source,
    };
    Ok(match listener {
        Listener::Tcp(listener) => {
            let local = listener.local_addr().map_err(failed)?;
            (
                Protocol::Http,
                Bound::Tcp(listener),
                LocalAddr::Tcp(local),
                None,
            )
        }
        Listener::Unix(listener) => {
            let local = listener.local_addr().map_err(failed)?;
            let path = local.as_pathname().map(PathBuf::from).unwrap_or_default();
            let socket = UnixSocketFile {
                path: path.clone(),
                identity: None,
            };
            (
                Protocol::Http,
                Bound::Unix(listener, socket),
                LocalAddr::Unix(path),
                None,
            )
        }
        #[cfg(feature = "tls")]
        Listener::Tls(listener, acceptor) => {
            let local = listener.local_addr().map_err(failed)?;
            (
                Protocol::Https,
                Bound::Tcp(listener),
                LocalAddr::Tcp(local),
                Some(acceptor),
            )
        }
    })
}

/// The default connection cap: the open-file limit (read from `/proc/self/limits`, 1024 when
/// it cannot be read) less 64 for listeners, files and logs, at least 16.
pub(crate) fn default_max_connections() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
            line["Max open files".len()..]
                .split_whitespace()
                .next()?
                .parse::<usize>()
                .ok()
        })
        .unwrap_or(1024);
    soft.saturating_sub(64).max(16)
}

/// A connection's place: under the cap, and among its address's connections.
pub(crate) struct Place {
    /// Under the cap, until the connection ends or makes room.
    permit: Option<OwnedSemaphorePermit>,
    /// Among the connections closing beyond the cap, once it made room.
    closing: Option<OwnedSemaphorePermit>,
    /// Among its address's connections, until it ends or makes room.
    client: Option<ClientConnection>,
}

impl Place {
    pub(crate) fn new(permit: OwnedSemaphorePermit, client: Option<ClientConnection>) -> Self {
        Self {
            permit: Some(permit),
            closing: None,
            client,
        }
    }

    /// The connection closes to make room: its place under the cap and among its address's
    /// connections go to the next one now (it closes within 10 ms), if a place
    /// among those closing is free.
    pub(crate) fn make_room(&mut self, idle: &IdleConnections) {
        if self.closing.is_none()
            && let Some(closing) = idle.closing_place()
        {
            self.closing = Some(closing);
            self.permit = None;
            self.client = None;
        }
    }
}

/// Connections per client address, within a share of the cap (`max_connections_per_client`).
pub(crate) struct ClientConnections {
    counts: PerClient,
    /// `None` when the share is the whole cap or more: nothing to count (behind a proxy, where
    /// every client has the proxy's address, the cap alone applies, idle connections making
    /// room for new ones).
    share: Option<usize>,
    /// Refusals are logged at most once per period.
    refusals: LogRateLimit,
}

/// A connection counted for its address until it ends.
pub(crate) struct ClientConnection {
    clients: Arc<ClientConnections>,
    /// Its address, when counted.
    client: Option<ClientKey>,
}

impl ClientConnections {
    /// `share` connections per address under a cap of `cap`.
    pub(crate) fn new(share: usize, cap: usize) -> Self {
        Self {
            counts: PerClient::new(),
            share: (share < cap).then_some(share),
            refusals: LogRateLimit::new(Duration::from_secs(5)),
        }
    }

    /// Counts a connection of `client`, unless its address holds its share.
    fn take(self: &Arc<Self>, client: ClientAddr) -> Option<ClientConnection> {
        let Some(share) = self.share else {
            return Some(ClientConnection {
                clients: Arc::clone(self),
                client: None,
            });
        };
        let client = ClientKey::from(client);
        self.counts
            .try_add(client, 1, |_, wanted| wanted <= share)
            .then(|| ClientConnection {
                clients: Arc::clone(self),
                client: Some(client),
            })
    }

    fn refused(&self, client: ClientAddr, logger: &Logger) {
        let error = ApiError::new(
            http::StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{} connections from one address at most",
                self.share.unwrap_or(usize::MAX)
            ),
        )
        .with_kind(ErrorKind::Overload);
        let line = format_args!(
            "connection from {} refused: its address holds its share",
            client.0
        );
        strata_log::warn_rate_limited(logger, &self.refusals, line, &error);
    }
}

impl Drop for ClientConnection {
    fn drop(&mut self) {
        if let Some(client) = self.client {
            self.clients.counts.subtract(client, 1);
        }
    }
}

/// What one HTTP/2 stream can hold in the server at worst, a response its client gives no
/// window: about 10 KiB (50,000 such streams from one address took 543 MB).
pub(crate) const STREAM_COST: u64 = 10 * 1024;

/// One address's streams may hold at most this fraction of memory (`1 / 128`: 192 MiB of 24 GiB).
pub(crate) const ADDRESS_MEMORY_FRACTION: u64 = 128;

/// The default share of the connection cap one address may hold: a quarter, and no more
/// connections than `streams` streams each (HTTP/2's most per connection) can fill with a
/// [`ADDRESS_MEMORY_FRACTION`]th of `memory` ([`STREAM_COST`] each); at least 16, at most the
/// cap. On 24 GiB with 100 streams a connection: 196 connections, 19,600 streams, about 192 MiB
/// (where the quarter of a cap of 19,936 was 4,984 connections, 4.9 GB).
pub(crate) fn default_client_share(cap: usize, streams: u32, memory: Option<u64>) -> usize {
    let by_memory = memory.map_or(usize::MAX, |bytes| {
        let per_connection = u64::from(streams.max(1)) * STREAM_COST;
        usize::try_from(bytes / ADDRESS_MEMORY_FRACTION / per_connection).unwrap_or(usize::MAX)
    });
    (cap / 4).min(by_memory).max(16).min(cap)
}

/// At the connection cap with no connection idle long enough to close, the accept loop looks
/// again this often (or takes the first place given back).
pub(crate) const SHED_PERIOD: Duration = Duration::from_millis(100);

/// At the connection cap, how long the accept loop waits for the place of the connection it
/// asked to close (given back at once unless it turned out busy) before it asks the next.
pub(crate) const ASKED_WAIT: Duration = Duration::from_millis(10);

/// Accept errors are logged at most once per this period, with the count of the others.
pub(crate) const ACCEPT_LOG_PERIOD: Duration = Duration::from_secs(5);

/// Logs accept failures without flooding the log: the first, then one line per period.
pub(crate) struct AcceptErrors {
    last_logged: Option<tokio::time::Instant>,
    suppressed: u64,
}

impl AcceptErrors {
    fn record(&mut self, error: &std::io::Error, logger: &Logger) {
        let now = tokio::time::Instant::now();
        if self
            .last_logged
            .is_some_and(|last| now.duration_since(last) < ACCEPT_LOG_PERIOD)
        {
            self.suppressed += 1;
            return;
        }
        logger.warn(format_args!(
            "accept failed: {error} ({} more since the last report); backing off",
            self.suppressed
        ));
        self.last_logged = Some(now);
        self.suppressed = 0;
    }
}

/// Whether an accept error is about the server's resources (back off) rather than one
/// connection that went away before it was accepted (go on at once).
pub(crate) fn is_resource_error(error: &std::io::Error) -> bool {
    !matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::Interrupted
            | std::io::ErrorKind::WouldBlock
    )
}

/// A place under the connection cap for the connection just accepted; `None` when the server
/// stops first. At the cap, the connection idle longest is asked to close and gives its place
/// at once; when none is idle, the place of the next connection to end (the clients after
/// this one wait in the kernel's backlog, costing no memory or descriptor here).
async fn place_under_cap(
    slots: &Arc<Semaphore>,
    idle: &IdleConnections,
    stop: &mut watch::Receiver<bool>,
) -> Option<OwnedSemaphorePermit> {
    match Arc::clone(slots).try_acquire_owned() {
        Ok(slot) => return Some(slot),
        Err(TryAcquireError::Closed) => return None,
        Err(TryAcquireError::NoPermits) => {}
    }
    loop {
        let wait = if idle.ask_oldest(SHED_AFTER) {
            ASKED_WAIT
        } else {
            SHED_PERIOD
        };
        tokio::select! {
            _ = stop.wait_for(|stop| *stop) => return None,
            slot = Arc::clone(slots).acquire_owned() => return slot.ok(),
            // The one asked was busy after all, or connections busy then may be idle now.
            () = tokio::time::sleep(wait) => {}
        }
    }
}

pub(crate) async fn accept_loop<S: ServedApp>(
    bound: Bound,
    serving: Serving<S>,
    mut stop: watch::Receiver<bool>,
    shutdown_timeout: Duration,
    slots: Arc<Semaphore>,
    clients: Arc<ClientConnections>,
) {
    let mut connections = JoinSet::new();
    let (cut, cut_heard) = watch::channel(false);
    let shutdown = Shutdown {
        stop: stop.clone(),
        cut: cut_heard,
    };
    let mut errors = AcceptErrors {
        last_logged: None,
        suppressed: 0,
    };
    loop {
        // Accepted before it has a place under the cap: a client past its address's share is
        // refused at once, without a place (at the cap, the attackers' reconnections then
        // cost no other connection its place, and the listen queue keeps moving).
        let accepted = tokio::select! {
            // A dropped `Server` (closed channel) stops too.
            _ = stop.wait_for(|stop| *stop) => break,
            accepted = accept(&bound) => accepted,
        };
        // Reap finished connections so the set stays as small as the live ones.
        while connections.try_join_next().is_some() {}
        match accepted {
            Ok(Accepted::Tcp(stream, peer)) => {
                let client = ClientAddr(peer.ip());
                let Some(counted) = clients.take(client) else {
                    // One address holds its share of the cap: the others keep theirs.
                    clients.refused(client, &serving.logger);
                    if let Some(metrics) = &serving.metrics {
                        metrics.connection_refused(Closed::ClientShare);
                    }
                    continue;
                };
                let Some(slot) = place_under_cap(&slots, &serving.idle, &mut stop).await else {
                    break;
                };
                let _ = stream.set_nodelay(true);
                let place = Place::new(slot, Some(counted));
                serving.spawn(
                    stream,
                    Some(client),
                    shutdown.clone(),
                    place,
                    &mut connections,
                );
            }
            Ok(Accepted::Unix(stream)) => {
                let Some(slot) = place_under_cap(&slots, &serving.idle, &mut stop).await else {
                    break;
                };
                let place = Place::new(slot, None);
                serving.spawn(stream, None, shutdown.clone(), place, &mut connections);
            }
            Err(error) => {
                errors.record(&error, &serving.logger);
                if is_resource_error(&error) {
                    // Out of file descriptors and the like: back off instead of spinning, as
                    // the well-known servers do.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
    if let Bound::Unix(_, socket) = &bound {
        socket.remove_if_ours();
    }
    drop(bound);
    // Each connection saw the stop signal and is closing gracefully; wait for them.
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(shutdown_timeout, drained)
        .await
        .is_err()
    {
        serving.logger.warn(format_args!(
            "Shutdown timeout: closing {} connection(s) still open",
            connections.len()
        ));
        // Requests without an answer get a 503 and their connections close, briefly.
        cut.send_replace(true);
        let closed = async { while connections.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(CUT_GRACE, closed).await;
        connections.abort_all();
    }
    while connections.join_next().await.is_some() {}
}

pub(crate) enum Accepted {
    Tcp(tokio::net::TcpStream, SocketAddr),
    Unix(tokio::net::UnixStream),
}

pub(crate) async fn accept(bound: &Bound) -> std::io::Result<Accepted> {
    match bound {
        Bound::Tcp(listener) => listener
            .accept()
            .await
            .map(|(stream, peer)| Accepted::Tcp(stream, peer)),
        Bound::Unix(listener, _) => listener
            .accept()
            .await
            .map(|(stream, _)| Accepted::Unix(stream)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1024 * 1024 * 1024;

    #[test]
    fn an_addresss_default_share_follows_memory_as_well_as_the_cap() {
        // A 24 GiB machine with a high open-file limit: an address held 4,984 connections of
        // 100 streams, about 4.9 GB of streams.
        let share = default_client_share(19_936, 100, Some(24 * GIB));
        assert_eq!(share, 196);
        let worst = share as u64 * 100 * STREAM_COST;
        assert!(worst <= 24 * GIB / 128, "{worst} bytes");
        // Fewer streams per connection, more connections.
        assert_eq!(default_client_share(19_936, 10, Some(24 * GIB)), 1_966);
        // A small container: at least 16.
        assert_eq!(default_client_share(1_000, 100, Some(GIB / 2)), 16);
        // The quarter of the cap when it is less, and never more than the cap.
        assert_eq!(default_client_share(448, 100, Some(24 * GIB)), 112);
        assert_eq!(default_client_share(8, 100, None), 8);
        assert_eq!(default_client_share(19_936, 100, None), 4_984);
    }

    /// With the 1,024 hashed counters of before, about a hundred of these addresses shared a
    /// count, and a share of 4 refused most of them.
    #[test]
    fn a_hundred_thousand_addresses_under_their_share_are_never_refused() {
        let clients = Arc::new(ClientConnections::new(4, 1_000_000));
        let address = |n: u32| ClientAddr(std::net::Ipv4Addr::from(0x0a00_0000 + n).into());
        let mut held = Vec::new();
        for n in 0..100_000 {
            for _ in 0..3 {
                let connection = clients.take(address(n));
                assert!(connection.is_some(), "address {n} refused under its share");
                held.extend(connection);
            }
        }
        for n in 0..100_000 {
            held.extend(clients.take(address(n)));
            assert!(clients.take(address(n)).is_none(), "past its share");
        }
        assert_eq!(clients.counts.addresses(), 100_000);
        drop(held);
        assert_eq!(
            clients.counts.addresses(),
            0,
            "memory follows the connections open"
        );
    }
}
