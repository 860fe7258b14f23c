//! Health probes: a liveness route, and a readiness route that runs the application's checks
//! and answers 503 from the moment a graceful shutdown starts.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use strata_core::Body;
use tokio::sync::watch;
use tower_service::Service;

/// The default liveness path.
pub const DEFAULT_LIVE_PATH: &str = "/health/live";
/// The default readiness path.
pub const DEFAULT_READY_PATH: &str = "/health/ready";
/// How long a check may take by default before readiness counts it failed.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// A boxed check: a future that says why the dependency is not usable, if it is not.
type CheckFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;
type CheckFn = dyn Fn() -> CheckFuture + Send + Sync;

/// Liveness and readiness probes for load balancers and orchestrators.
///
/// - **Liveness** (`GET /health/live` by default) answers `200 {"status":"ok"}` while the
///   process serves requests.
/// - **Readiness** (`GET /health/ready`) answers `200 {"status":"ok"}` when every check passes
///   within its timeout, and `503` otherwise, naming each check:
///   `{"status":"unavailable","checks":{"db":"timed out after 1 s"}}`. From the moment a
///   graceful shutdown starts it answers `503 {"status":"unavailable","reason":"shutting
///   down"}` without running the checks, so that a load balancer takes the replica out while
///   it still serves.
///
/// Give it to the configuration (`create_config().health(..)`): the server answers both paths
/// ahead of the router (no validation, no middleware, no rate limit, not in the API document)
/// and turns readiness off when its shutdown starts (a signal, [`Server::shutdown`], the
/// [`ShutdownHandle`]). Set [`drain_delay`](Self::drain_delay) to the time the load balancer
/// needs to see the 503 (its check interval times the failures it waits for): the server then
/// keeps accepting and serving for that long before it stops listening.
///
/// Clones share their state: keep one to turn readiness off yourself
/// ([`start_draining`](Self::start_draining)) when the routing runs in an application of your
/// own ([`attach_routing`](crate::attach_routing)), or to mount it as a tower service
/// ([`Health`] answers its two paths, `404` elsewhere).
///
/// [`Server::shutdown`]: crate::Server::shutdown
/// [`ShutdownHandle`]: crate::ShutdownHandle
///
/// ```
/// use std::time::Duration;
/// use http_body_util::BodyExt;
/// use strata_server::Health;
/// use tower::ServiceExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let health = Health::new()
///     .check("db", || async { Ok::<_, std::io::Error>(()) }) // a `SELECT 1`, say
///     .check("cache", || async { Err::<(), _>("connection refused") })
///     .timeout(Duration::from_millis(500));
///
/// let ready = http::Request::get("/health/ready").body(String::new()).unwrap();
/// let response = health.clone().oneshot(ready).await.unwrap();
/// assert_eq!(response.status(), 503);
/// let body = response.into_body().collect().await.unwrap().to_bytes();
/// assert_eq!(
///     body,
///     r#"{"checks":{"cache":"connection refused","db":"ok"},"status":"unavailable"}"#
/// );
///
/// let live = http::Request::get("/health/live").body(String::new()).unwrap();
/// assert_eq!(health.oneshot(live).await.unwrap().status(), 200);
/// # }
/// ```
#[derive(Clone)]
pub struct Health {
    live: Arc<str>,
    ready: Arc<str>,
    timeout: Duration,
    drain_delay: Duration,
    checks: Vec<(Arc<str>, Arc<CheckFn>)>,
    draining: Arc<AtomicBool>,
}

impl fmt::Debug for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Health")
            .field("live", &self.live)
            .field("ready", &self.ready)
            .field("timeout", &self.timeout)
            .field("drain_delay", &self.drain_delay)
            .field(
                "checks",
                &self.checks.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .field("draining", &self.is_draining())
            .finish()
    }
}

impl Default for Health {
    fn default() -> Self {
        Self::new()
    }
}

impl Health {
    /// Probes at `/health/live` and `/health/ready`, no checks, a 1 s timeout per check, no
    /// drain delay.
    pub fn new() -> Self {
        Self {
            live: DEFAULT_LIVE_PATH.into(),
            ready: DEFAULT_READY_PATH.into(),
            timeout: DEFAULT_CHECK_TIMEOUT,
            drain_delay: Duration::ZERO,
            checks: Vec::new(),
            draining: Arc::default(),
        }
    }

    /// Answers liveness at `path` (default `/health/live`; a missing leading `/` is added).
    #[must_use]
    pub fn live_path(mut self, path: impl AsRef<str>) -> Self {
        self.live = rooted(path.as_ref());
        self
    }

    /// Answers readiness at `path` (default `/health/ready`; a missing leading `/` is added).
    #[must_use]
    pub fn ready_path(mut self, path: impl AsRef<str>) -> Self {
        self.ready = rooted(path.as_ref());
        self
    }

    /// Adds a readiness check named `name`: an async function whose error (its `Display`)
    /// makes readiness answer 503 with that text under the name. Each probe runs every check
    /// at once, each in a task of its own, within the [`timeout`](Self::timeout); a check that
    /// panics counts as failed. A second check of the same name replaces the first.
    ///
    /// ```
    /// # use strata_server::Health;
    /// # async fn ping() -> Result<u32, std::io::Error> { Ok(1) }
    /// let health = Health::new().check("db", || async { ping().await });
    /// ```
    #[must_use]
    pub fn check<F, Fut, T, E>(mut self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let name: Arc<str> = name.into().into();
        let check: Arc<CheckFn> = Arc::new(move || {
            let checked = check();
            Box::pin(async move { checked.await.map(|_| ()).map_err(|e| e.to_string()) })
        });
        self.checks.retain(|(existing, _)| *existing != name);
        self.checks.push((name, check));
        self
    }

    /// How long each check may take (default 1 s): a check still running then is abandoned
    /// (its task aborted) and reported as `timed out after ..`, so a hung dependency cannot
    /// hang the probe.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long a server keeps accepting and serving once its shutdown has started, readiness
    /// answering 503 all along (default: none, the listeners close at once). Set it to the
    /// time the load balancer takes to see a replica fail (its check interval times the
    /// failures it waits for, with a margin): it then sends no new connection to a replica
    /// that is about to close its listeners. The shutdown timeout counts from the end of the
    /// delay.
    #[must_use]
    pub fn drain_delay(mut self, delay: Duration) -> Self {
        self.drain_delay = delay;
        self
    }

    /// The drain delay ([`drain_delay`](Self::drain_delay)).
    pub(crate) fn drain_time(&self) -> Duration {
        self.drain_delay
    }

    /// Turns readiness off for good (every clone shares it): from now on readiness answers
    /// 503. A server calls it when its shutdown starts; an application that mounts the routing
    /// in its own server calls it when its own shutdown starts.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether readiness has been turned off ([`start_draining`](Self::start_draining)).
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// The answer to a request for one of the two paths (GET or HEAD), or `None` for anything
    /// else. It reads the method and the path only.
    pub(crate) fn answer(&self, method: &Method, path: &str) -> Option<HealthFuture> {
        let head = method == Method::HEAD;
        if method != Method::GET && !head {
            return None;
        }
        if path == &*self.live {
            return Some(Box::pin(std::future::ready(Ok(json(
                StatusCode::OK,
                &serde_json::json!({ "status": "ok" }),
                head,
            )))));
        }
        if path != &*self.ready {
            return None;
        }
        let health = self.clone();
        Some(Box::pin(async move {
            let (status, body) = health.readiness().await;
            Ok(json(status, &body, head))
        }))
    }

    /// Readiness: shutting down, or the checks' results.
    async fn readiness(&self) -> (StatusCode, serde_json::Value) {
        if self.is_draining() {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({ "status": "unavailable", "reason": "shutting down" }),
            );
        }
        if self.checks.is_empty() {
            return (StatusCode::OK, serde_json::json!({ "status": "ok" }));
        }
        // Each check in its own task: one that panics or never yields is cut off alone.
        let running: Vec<_> = self
            .checks
            .iter()
            .map(|(name, check)| (Arc::clone(name), tokio::spawn(check())))
            .collect();
        let timeout = self.timeout;
        let results = running.into_iter().map(|(name, mut task)| async move {
            let result = match tokio::time::timeout(timeout, &mut task).await {
                Ok(Ok(Ok(()))) => None,
                Ok(Ok(Err(reason))) => Some(reason),
                Ok(Err(_)) => Some("panicked".to_owned()),
                Err(_) => {
                    task.abort();
                    Some(format!("timed out after {}", Seconds(timeout)))
                }
            };
            (name, result)
        });
        let mut checks = BTreeMap::new();
        let mut failed = false;
        for (name, result) in join_all(results).await {
            failed |= result.is_some();
            checks.insert(name.to_string(), result.unwrap_or_else(|| "ok".to_owned()));
        }
        let (status, word) = if failed {
            (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
        } else {
            (StatusCode::OK, "ok")
        };
        (
            status,
            serde_json::json!({ "status": word, "checks": checks }),
        )
    }
}

/// Waits for every future, polled together (a handful of checks: no need for a crate's
/// `join_all`).
async fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut pending: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (future, output) in pending.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => done = false,
                }
            }
        }
        if done { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

/// A duration as an operator reads it: `1 s`, `1.5 s`, `250 ms`.
struct Seconds(Duration);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 < Duration::from_secs(1) {
            write!(f, "{} ms", self.0.as_millis())
        } else {
            write!(f, "{} s", self.0.as_secs_f64())
        }
    }
}

fn rooted(path: &str) -> Arc<str> {
    if path.starts_with('/') {
        path.into()
    } else {
        format!("/{path}").into()
    }
}

/// A plain JSON answer that no cache keeps (an empty body for HEAD).
fn json(status: StatusCode, body: &serde_json::Value, head: bool) -> Response<Body> {
    let body = if head {
        Body::empty()
    } else {
        Body::from(body.to_string())
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The answer of a health route.
pub type HealthFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// Answers its two paths (GET and HEAD) and `404` with an empty body elsewhere, to mount in
/// a tower or axum application of your own:
/// `axum::Router::new().route_service("/health/live", health.clone()).route_service("/health/ready", health)`.
impl<B> Service<Request<B>> for Health {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = HealthFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> HealthFuture {
        self.answer(request.method(), request.uri().path())
            .unwrap_or_else(|| {
                let mut response = Response::new(Body::empty());
                *response.status_mut() = StatusCode::NOT_FOUND;
                Box::pin(std::future::ready(Ok(response)))
            })
    }
}

/// The stop signal the listeners see: `stop` itself, or, with a drain delay, `stop` delayed
/// by it (a dropped sender stops at once, as without it).
pub(crate) fn after_drain(
    stop: watch::Receiver<bool>,
    health: Option<&Health>,
) -> watch::Receiver<bool> {
    let delay = health.map_or(Duration::ZERO, Health::drain_time);
    if delay.is_zero() {
        return stop;
    }
    let (delayed, receiver) = watch::channel(false);
    let mut stop = stop;
    tokio::spawn(async move {
        if stop.wait_for(|stop| *stop).await.is_ok() {
            // The handle may send `true` again (`run` does): only a dropped server, whose
            // sender is gone, ends the drain early.
            let dropped = async { while stop.changed().await.is_ok() {} };
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = dropped => {}
            }
            delayed.send_replace(true);
        }
    });
    receiver
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests fail loudly by design

    use super::*;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn get(health: &Health, path: &str) -> (StatusCode, String) {
        let request = Request::get(path).body(String::new()).unwrap();
        let response = health.clone().oneshot(request).await.unwrap();
        if response.status() == StatusCode::NOT_FOUND {
            return (response.status(), String::new());
        }
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn liveness_and_readiness_answer_ok_by_default() {
        let health = Health::new();
        let ok = (StatusCode::OK, r#"{"status":"ok"}"#.to_owned());
        assert_eq!(get(&health, "/health/live").await, ok);
        assert_eq!(get(&health, "/health/ready").await, ok);
        assert_eq!(get(&health, "/health").await.0, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn draining_turns_readiness_off_for_every_clone_and_liveness_stays() {
        let health = Health::new().check("never run", || async {
            panic!("checks are not run while draining");
            #[allow(unreachable_code)]
            Ok::<(), &str>(())
        });
        let kept = health.clone();
        kept.start_draining();
        assert!(health.is_draining());
        assert_eq!(
            get(&health, "/health/ready").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                r#"{"reason":"shutting down","status":"unavailable"}"#.to_owned()
            )
        );
        assert_eq!(get(&health, "/health/live").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn a_failing_check_is_named_and_the_others_reported() {
        let health = Health::new()
            .check("db", || async { Ok::<_, String>(42) })
            .check("redis", || async {
                Err::<(), _>(std::io::Error::other("connection refused"))
            });
        assert_eq!(
            get(&health, "/health/ready").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                r#"{"checks":{"db":"ok","redis":"connection refused"},"status":"unavailable"}"#
                    .to_owned()
            )
        );
        let passing = Health::new().check("db", || async { Ok::<_, String>(()) });
        assert_eq!(
            get(&passing, "/health/ready").await,
            (
                StatusCode::OK,
                r#"{"checks":{"db":"ok"},"status":"ok"}"#.to_owned()
            )
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_check_times_out_and_is_aborted() {
        struct Dropped(Arc<AtomicBool>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&dropped);
        let health = Health::new()
            .check("db", move || {
                let guard = Dropped(Arc::clone(&seen));
                async move {
                    let _guard = guard;
                    std::future::pending::<Result<(), String>>().await
                }
            })
            .check("fast", || async { Ok::<_, String>(()) })
            .timeout(Duration::from_millis(1500));
        assert_eq!(
            get(&health, "/health/ready").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                r#"{"checks":{"db":"timed out after 1.5 s","fast":"ok"},"status":"unavailable"}"#
                    .to_owned()
            )
        );
        // The aborted task drops its future at its next turn.
        while !dropped.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_panicking_check_fails_readiness_without_taking_the_probe_down() {
        let health = Health::new().check("db", || async {
            panic!("driver bug");
            #[allow(unreachable_code)]
            Ok::<(), &str>(())
        });
        assert_eq!(
            get(&health, "/health/ready").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                r#"{"checks":{"db":"panicked"},"status":"unavailable"}"#.to_owned()
            )
        );
    }

    #[tokio::test]
    async fn paths_are_chosen_and_other_methods_are_not_answered() {
        let health = Health::new()
            .live_path("livez")
            .ready_path("/readyz")
            .check("db", || async { Ok::<_, String>(()) })
            .check("db", || async { Err::<(), _>("replaced") });
        assert_eq!(get(&health, "/livez").await.0, StatusCode::OK);
        assert_eq!(get(&health, "/health/live").await.0, StatusCode::NOT_FOUND);
        assert_eq!(
            get(&health, "/readyz").await.1,
            r#"{"checks":{"db":"replaced"},"status":"unavailable"}"#
        );
        assert!(health.answer(&Method::POST, "/livez").is_none());
        let head = health
            .answer(&Method::HEAD, "/livez")
            .unwrap()
            .await
            .unwrap();
        assert_eq!(head.status(), StatusCode::OK);
        assert!(
            head.into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes()
                .is_empty()
        );
    }

    #[test]
    fn durations_read_as_operators_write_them() {
        assert_eq!(Seconds(Duration::from_secs(1)).to_string(), "1 s");
        assert_eq!(Seconds(Duration::from_millis(2500)).to_string(), "2.5 s");
        assert_eq!(Seconds(Duration::from_millis(250)).to_string(), "250 ms");
    }
}
