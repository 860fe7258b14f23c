//! Request metrics in the `OpenMetrics` text format that Prometheus scrapes.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::Buf;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::{Body as HttpBody, Frame, SizeHint};
use pin_project_lite::pin_project;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use strata_core::observe::{Observe, Observer, RateLimitOutcome};
use strata_core::{Body, ErrorKind, IncomingBody};
use strata_routing::Router;
use tower_service::Service;

/// The default path of the exposition.
pub const DEFAULT_METRICS_PATH: &str = "/metrics";

/// The `route` label of requests whose path no route has: every unknown path is one series.
pub const UNMATCHED_ROUTE: &str = "(unmatched)";

/// The duration histogram's upper bounds, in seconds: the Prometheus clients' defaults.
const DURATION_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// `Content-Type` of the exposition in `OpenMetrics`, asked for by Prometheus.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `Content-Type` of the exposition in Prometheus's text format, for everyone else.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Request metrics, exposed at `/metrics` by default in the `OpenMetrics` text format to a
/// scraper that asks for it (Prometheus does, in its `Accept`), in Prometheus's text format
/// (0.0.4) to anyone else (`curl`, `promtool check metrics`).
///
/// Give it to the configuration (`create_config().metrics(Metrics::new())`): the server then
/// counts every request the router sees and answers the exposition path ahead of the router
/// (no middleware, no rate limit, not in the API document). The series, every label bounded
/// whatever clients send:
///
/// | metric | labels |
/// |---|---|
/// | `strata_http_requests_total` (counter) | `route`, `method`, `status` |
/// | `strata_http_request_duration_seconds` (histogram, until the response head) | `route`, `method` |
/// | `strata_http_requests_in_flight` (gauge) | |
/// | `strata_http_request_body_bytes_total` (counter, bytes read by the application) | `route`, `method` |
/// | `strata_http_response_body_bytes_total` (counter, bytes of the bodies answered) | `route`, `method` |
/// | `strata_http_refusals_total` (counter) | `reason` |
/// | `strata_http_connections_open` (gauge) | |
/// | `strata_http_connections_accepted_total` (counter) | |
/// | `strata_http_connections_closed_total` (counter) | `reason` |
/// | `strata_http_rate_limit_decisions_total` (counter) | `outcome`, `store` |
/// | `strata_http_event_streams_open` (gauge) | `route` |
/// | `strata_http_events_sent_total` (counter) | `route` |
/// | `strata_http_upload_bytes_total` (counter, bytes of `multipart/form-data` bodies read) | `route`, `method` |
///
/// - `route` is the routing's template (`/v1/books/:id`), never the raw path; every path that
///   no route has is [`UNMATCHED_ROUTE`].
/// - `method` is one of the eight methods of RFC 9110 or PATCH, in upper case; anything else
///   `other`.
/// - `reason` of a refusal: `not_found` and `method_not_allowed` (the router's 404 and 405),
///   `validation` (an input that breaks its schema, 400), `parse` (a body or parameter that
///   cannot be read, 400), `payload_too_large`, `unsupported_media_type`, `overload` (503),
///   and by status for the others: `unauthorized`, `forbidden`, `timeout` (408),
///   `too_many_requests`, `unavailable` (503), `gateway_timeout` (504). The refusals the
///   server answers before the router are counted here too (and not in
///   `strata_http_requests_total`, which counts what the router saw): `bad_request` (a head
///   hyper cannot parse, an HTTP/1.1 request without one `Host`), `header_too_large` (431,
///   or 414 for a long URI), `overload` (a request the application's layers did not take
///   within the admission timeout), `unavailable` (unanswered at the shutdown timeout), and
///   the errors of the application's own layers (`gateway_timeout` for tower's timeout,
///   `overload` for its load shedding, ...).
/// - the connections are those of [`create_server`](crate::create_server)'s listeners
///   (nothing with `attach_routing`); `reason` of a close, one of a fixed set: `ended` (the
///   client closed, or hyper ended it after a `Connection: close`), `error` (reset, broken
///   protocol), `header_timeout`, `header_too_large`, `bad_request`, `body_timeout` (a 408
///   for a body too slow, then closed), `payload_too_large` (a 413 before the body's end,
///   then closed), `idle`, `stalled` (the write timeout), `shed` (closed to make room at the
///   connection cap), `client_share` (its address held its share of the cap: closed once
///   accepted), `tls_handshake`, `shutdown`, `shutdown_timeout`.
///
/// - `outcome` of a rate-limit decision: `allowed`, `limited` (a 429), `store_failed_open` (the
///   store could not answer, the request let through), `store_failed_closed` (a 503); `store`
///   the store's kind (`memory`, `redis`, or what a store of yours says,
///   `RateLimitStore::kind`): a Redis outage shows as `store_failed_*` with `store="redis"`.
///   The rate limiter tells them through an [`Observer`] the server puts in each request's
///   extensions.
/// - an event stream is a response of `text/event-stream`: open until its body is dropped (the
///   client gone, the stream over), each frame that is an event counted (not the keep-alive
///   comments nor `retry:`).
///
/// The liveness and readiness probes and the exposition itself are not counted.
///
/// Clones share their series. To mount it yourself when the routing runs in an application of
/// your own ([`attach_routing`](crate::attach_routing)), give the same `Metrics` to that
/// configuration (it counts) and mount a clone as a tower service (it answers its path, `404`
/// elsewhere): `axum::Router::new().route_service("/metrics", metrics)`.
///
/// ```
/// use http_body_util::BodyExt;
/// use strata_server::Metrics;
/// use tower::ServiceExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let metrics = Metrics::new().path("/internal/metrics");
/// let scrape = http::Request::get("/internal/metrics").body(String::new()).unwrap();
/// let response = metrics.oneshot(scrape).await.unwrap();
/// assert_eq!(response.status(), 200);
/// let body = response.into_body().collect().await.unwrap().to_bytes();
/// let text = std::str::from_utf8(&body).unwrap();
/// // No request yet: a family appears with its first series.
/// assert!(text.contains("\nstrata_http_requests_in_flight 0\n"));
/// assert!(text.starts_with("# HELP strata_http_requests_in_flight"));
/// # }
/// ```
#[derive(Clone)]
pub struct Metrics {
    path: Arc<str>,
    series: Arc<Series>,
}

/// Every family, and the registry that encodes them.
struct Series {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    duration: Family<RouteLabels, Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    request_bytes: Family<RouteLabels, Counter>,
    response_bytes: Family<RouteLabels, Counter>,
    refusals: Family<RefusalLabels, Counter>,
    connections_open: Gauge,
    connections_accepted: Counter,
    connections_closed: Family<RefusalLabels, Counter>,
    rate_limit: Family<RateLimitLabels, Counter>,
    event_streams_open: Family<StreamLabels, Gauge>,
    events_sent: Family<StreamLabels, Counter>,
    upload_bytes: Family<RouteLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RateLimitLabels {
    outcome: &'static str,
    store: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StreamLabels {
    route: Arc<str>,
}

/// The rate limiter tells its decisions (through the request's [`Observer`]).
impl Observe for Series {
    fn rate_limit(&self, outcome: RateLimitOutcome, store: &'static str) {
        self.rate_limit
            .get_or_create(&RateLimitLabels {
                outcome: outcome.label(),
                store,
            })
            .inc();
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: Arc<str>,
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: Arc<str>,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    reason: &'static str,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

impl Metrics {
    /// No series yet, exposed at `/metrics`.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("strata_http");
        let requests = Family::default();
        let duration = Family::new_with_constructor(duration_histogram as fn() -> Histogram);
        let in_flight = Gauge::default();
        let request_bytes = Family::default();
        let response_bytes = Family::default();
        let refusals = Family::default();
        let connections_open = Gauge::default();
        let connections_accepted = Counter::default();
        let connections_closed = Family::default();
        let rate_limit = Family::default();
        let event_streams_open = Family::default();
        let events_sent = Family::default();
        let upload_bytes = Family::default();
        registry.register(
            "requests",
            "Requests answered, by route template, method and status",
            requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from a request to its response head, by route template and method",
            duration.clone(),
        );
        registry.register(
            "requests_in_flight",
            "Requests received and not yet answered",
            in_flight.clone(),
        );
        registry.register(
            "request_body_bytes",
            "Bytes of request bodies the application read, by route template and method",
            request_bytes.clone(),
        );
        registry.register(
            "response_body_bytes",
            "Bytes of response bodies sent, by route template and method",
            response_bytes.clone(),
        );
        registry.register(
            "refusals",
            "Requests refused, by reason (not_found, method_not_allowed, validation, ...)",
            refusals.clone(),
        );
        registry.register(
            "connections_open",
            "Connections open on the server's listeners",
            connections_open.clone(),
        );
        registry.register(
            "connections_accepted",
            "Connections accepted on the server's listeners",
            connections_accepted.clone(),
        );
        registry.register(
            "connections_closed",
            "Connections closed, by reason (ended, idle, header_timeout, shed, ...)",
            connections_closed.clone(),
        );
        registry.register(
            "rate_limit_decisions",
            "Rate-limit decisions, by outcome (allowed, limited, store_failed_open, \
             store_failed_closed) and store (memory, redis, ...)",
            rate_limit.clone(),
        );
        registry.register(
            "event_streams_open",
            "Event streams (text/event-stream) being sent, by route template",
            event_streams_open.clone(),
        );
        registry.register(
            "events_sent",
            "Events sent on event streams, by route template",
            events_sent.clone(),
        );
        registry.register(
            "upload_bytes",
            "Bytes of multipart/form-data bodies the application read, by route template and \
             method",
            upload_bytes.clone(),
        );
        Self {
            path: DEFAULT_METRICS_PATH.into(),
            series: Arc::new(Series {
                registry,
                requests,
                duration,
                in_flight,
                request_bytes,
                response_bytes,
                refusals,
                connections_open,
                connections_accepted,
                connections_closed,
                rate_limit,
                event_streams_open,
                events_sent,
                upload_bytes,
            }),
        }
    }

    /// Answers the exposition at `path` (default `/metrics`; a missing leading `/` is added).
    #[must_use]
    pub fn path(mut self, path: impl AsRef<str>) -> Self {
        let path = path.as_ref();
        self.path = if path.starts_with('/') {
            path.into()
        } else {
            format!("/{path}").into()
        };
        self
    }

    /// The exposition path.
    pub fn exposition_path(&self) -> &str {
        &self.path
    }

    /// The exposition in Prometheus's text format (0.0.4): what [`encode`](Self::encode)
    /// gives, with each counter's `HELP` and `TYPE` named as its samples are (`_total`) and
    /// no `# EOF`.
    pub fn encode_prometheus(&self) -> String {
        let openmetrics = self.encode();
        let mut text = String::with_capacity(openmetrics.len());
        // `HELP` comes before `TYPE`, which says whether the family is a counter.
        let mut help: Option<&str> = None;
        for line in openmetrics.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                help = Some(rest);
                continue;
            }
            if line == "# EOF" || line.starts_with("# UNIT ") {
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                // A counter's family is named as its samples are: `.._total`.
                let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
                let suffix = if kind == "counter" { "_total" } else { "" };
                if let Some(help) = help.take() {
                    let words = help.strip_prefix(name).unwrap_or(help);
                    for piece in ["# HELP ", name, suffix, words, "\n"] {
                        text.push_str(piece);
                    }
                }
                for piece in ["# TYPE ", name, suffix, " ", kind, "\n"] {
                    text.push_str(piece);
                }
                continue;
            }
            text.push_str(line);
            text.push('\n');
        }
        text
    }

    /// The exposition: every series in the `OpenMetrics` text format, ending with `# EOF`.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String fails only if a label's encoder does, and ours never do.
        if prometheus_client::encoding::text::encode(&mut text, &self.series.registry).is_err() {
            text.clear();
            text.push_str("# EOF\n");
        }
        text
    }

    /// The exposition's answer to a request for its path (GET or HEAD), `None` for anything
    /// else. It reads the method and the path, and the `Accept` of a request for the path.
    pub(crate) fn answer<B>(&self, request: &Request<B>) -> Option<MetricsFuture> {
        let method = request.method();
        let head = *method == Method::HEAD;
        if (*method != Method::GET && !head) || request.uri().path() != &*self.path {
            return None;
        }
        // Prometheus names `OpenMetrics` first in its `Accept`; anything else gets the older
        // format, which every tool reads.
        let openmetrics = request
            .headers()
            .get_all(header::ACCEPT)
            .iter()
            .any(|accept| {
                accept
                    .to_str()
                    .is_ok_and(|accept| accept.contains("application/openmetrics-text"))
            });
        let (text, content_type) = if openmetrics {
            (self.encode(), OPENMETRICS)
        } else {
            (self.encode_prometheus(), PROMETHEUS_TEXT)
        };
        let body = if head {
            Body::empty()
        } else {
            Body::from(text)
        };
        let mut response = Response::new(body);
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        Some(Box::pin(std::future::ready(Ok(response))))
    }
}

/// Why a connection closed: the `reason` of `strata_http_connections_closed_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// The client closed it, or hyper did after a `Connection: close`.
    Ended,
    /// An I/O or protocol error: a reset, a broken HTTP/2 frame.
    Error,
    /// No request head (or HTTP/2 preface) within the header-read timeout.
    HeaderTimeout,
    /// A request head too large: hyper's 431 (414 for the URI).
    HeaderTooLarge,
    /// A request head hyper cannot parse: its 400.
    BadRequest,
    /// A body too slow (its idle or read timeout, the minimum data rate): a 408, then closed.
    BodyTimeout,
    /// A body too large, refused before its end: a 413, then closed.
    PayloadTooLarge,
    /// No request for the idle timeout.
    Idle,
    /// Responses waiting and nothing written for the write timeout.
    Stalled,
    /// Closed to make room for a newcomer at the connection cap.
    Shed,
    /// Its address held its share of the cap: closed once accepted.
    ClientShare,
    /// The TLS handshake failed, or did not finish within the header-read timeout.
    #[cfg_attr(not(feature = "tls"), allow(dead_code))] // no TLS, no handshake
    TlsHandshake,
    /// The server shut down gracefully.
    Shutdown,
    /// Still open at the shutdown timeout.
    ShutdownTimeout,
}

impl Closed {
    fn label(self) -> &'static str {
        match self {
            Self::Ended => "ended",
            Self::Error => "error",
            Self::HeaderTimeout => "header_timeout",
            Self::HeaderTooLarge => "header_too_large",
            Self::BadRequest => "bad_request",
            Self::BodyTimeout => "body_timeout",
            Self::PayloadTooLarge => "payload_too_large",
            Self::Idle => "idle",
            Self::Stalled => "stalled",
            Self::Shed => "shed",
            Self::ClientShare => "client_share",
            Self::TlsHandshake => "tls_handshake",
            Self::Shutdown => "shutdown",
            Self::ShutdownTimeout => "shutdown_timeout",
        }
    }
}

impl Metrics {
    /// A connection accepted: open until the returned guard is dropped, closed for the reason
    /// it holds then.
    pub(crate) fn connection_opened(&self) -> OpenConnection {
        self.series.connections_accepted.inc();
        self.series.connections_open.inc();
        OpenConnection {
            series: Arc::clone(&self.series),
            reason: Closed::Ended,
        }
    }

    /// A connection accepted and closed at once, for `reason`.
    pub(crate) fn connection_refused(&self, reason: Closed) {
        self.series.connections_accepted.inc();
        self.count_closed(reason);
    }

    fn count_closed(&self, reason: Closed) {
        self.series
            .connections_closed
            .get_or_create(&RefusalLabels {
                reason: reason.label(),
            })
            .inc();
    }

    /// A refusal answered outside the router (by the connection, hyper, or the application's
    /// layers): `status`, of `kind` when known.
    pub(crate) fn refused(&self, status: StatusCode, kind: Option<&ErrorKind>) {
        let reason = match (kind, status.as_u16()) {
            (_, 431 | 414) => Some("header_too_large"),
            (None | Some(ErrorKind::Http), 400) => Some("bad_request"),
            _ => refusal(status, kind),
        };
        if let Some(reason) = reason {
            self.series
                .refusals
                .get_or_create(&RefusalLabels { reason })
                .inc();
        }
    }
}

/// A connection open: counted out, for its reason, when dropped (its task ended, or was
/// aborted at the shutdown timeout).
pub(crate) struct OpenConnection {
    series: Arc<Series>,
    reason: Closed,
}

impl OpenConnection {
    /// The reason the connection closes, unless another is given later.
    pub(crate) fn closing(&mut self, reason: Closed) {
        self.reason = reason;
    }

    /// The reason given so far.
    pub(crate) fn reason(&self) -> Closed {
        self.reason
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.series.connections_open.dec();
        self.series
            .connections_closed
            .get_or_create(&RefusalLabels {
                reason: self.reason.label(),
            })
            .inc();
    }
}

/// The methods that have a `method` label of their own; any other is `other`.
const METHODS: [Method; 9] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::PATCH,
    Method::OPTIONS,
    Method::CONNECT,
    Method::TRACE,
];

/// The series of one route and method, resolved on their first request: the requests after
/// it add to them without hashing a label.
struct RouteSeries {
    labels: RouteLabels,
    duration: Histogram,
    request_bytes: Counter,
    response_bytes: Counter,
    /// The statuses seen, each with its `requests` counter: a handful per route.
    statuses: RwLock<Vec<(u16, Counter)>>,
}

impl RouteSeries {
    fn new(series: &Series, labels: RouteLabels) -> Self {
        Self {
            duration: series.duration.get_or_create_owned(&labels),
            request_bytes: series.request_bytes.get_or_create_owned(&labels),
            response_bytes: series.response_bytes.get_or_create_owned(&labels),
            statuses: RwLock::default(),
            labels,
        }
    }

    fn count(&self, series: &Series, status: u16) {
        let seen = self.statuses.read().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, counter)) = seen.iter().find(|(seen, _)| *seen == status) {
            counter.inc();
            return;
        }
        drop(seen);
        let counter = series.requests.get_or_create_owned(&RequestLabels {
            route: Arc::clone(&self.labels.route),
            method: self.labels.method,
            status,
        });
        counter.inc();
        let mut seen = self
            .statuses
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if !seen.iter().any(|(seen, _)| *seen == status) {
            seen.push((status, counter));
        }
    }
}

/// A route's series by method (the known ones, then `other`), made on first use.
type BySlot = [OnceLock<Arc<RouteSeries>>; METHODS.len() + 1];

/// [`Metrics`] for one router: its routes' series resolved once each.
#[derive(Clone)]
pub(crate) struct Metered {
    metrics: Metrics,
    router: Router,
    /// The address of each route template the router gives, sorted, with its slots.
    routes: Arc<[(usize, OnceLock<Box<BySlot>>)]>,
    unmatched: Arc<BySlot>,
}

impl fmt::Debug for Metered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metered")
            .field("metrics", &self.metrics)
            .field("routes", &self.routes.len())
            .finish_non_exhaustive()
    }
}

impl Metered {
    pub(crate) fn new(metrics: Metrics, router: Router) -> Self {
        let mut addresses: Vec<usize> = router
            .route_templates()
            .map(|template| template.as_ptr() as usize)
            .collect();
        addresses.sort_unstable();
        addresses.dedup();
        Self {
            metrics,
            router,
            routes: addresses
                .into_iter()
                .map(|at| (at, OnceLock::new()))
                .collect(),
            unmatched: Arc::default(),
        }
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The series of a request for `method` and `path`.
    fn route_series(&self, method: &Method, path: &str) -> Arc<RouteSeries> {
        let slot = METHODS
            .iter()
            .position(|known| known == method)
            .unwrap_or(METHODS.len());
        let series = &self.metrics.series;
        let make = |route: &Arc<str>| {
            let method = METHODS.get(slot).map_or("other", method_label);
            let labels = RouteLabels {
                route: Arc::clone(route),
                method,
            };
            Arc::new(RouteSeries::new(series, labels))
        };
        let Some(template) = self.router.route_template(method, path) else {
            return Arc::clone(self.unmatched[slot].get_or_init(|| make(&unmatched())));
        };
        let at = template.as_ptr() as usize;
        match self.routes.binary_search_by_key(&at, |(at, _)| *at) {
            Ok(found) => {
                let slots = self.routes[found].1.get_or_init(Box::default);
                Arc::clone(slots[slot].get_or_init(|| make(template)))
            }
            // Not one of the router's (it gave all of them): resolved each time.
            Err(_) => make(template),
        }
    }

    /// Counts the request `call` answers.
    pub(crate) fn measure<B, F>(&self, request: Request<B>, call: F) -> MetricsFuture
    where
        B: IncomingBody,
        F: FnOnce(Request<Body>) -> MetricsFuture,
    {
        let start = Instant::now();
        let route = self.route_series(request.method(), request.uri().path());
        let series = Arc::clone(&self.metrics.series);
        series.in_flight.inc();
        let in_flight = InFlight(Arc::clone(&series));
        let mut request = request;
        // The rate limiter tells its decisions through it.
        let observer: Arc<dyn Observe> = Arc::clone(&series) as Arc<dyn Observe>;
        request.extensions_mut().insert(Observer::new(observer));
        // A body known to be empty (most GETs) is not wrapped: no box, nothing to count.
        let request = if request.body().size_hint().exact() == Some(0) {
            request.map(Body::new)
        } else if is_multipart(request.headers()) {
            let counter = route.request_bytes.clone();
            let uploads = series.upload_bytes.get_or_create_owned(&route.labels);
            request.map(|inner| {
                Body::new(Counted {
                    uploads: Some(uploads),
                    ..Counted::new(inner, counter)
                })
            })
        } else {
            let counter = route.request_bytes.clone();
            request.map(|inner| Body::new(Counted::new(inner, counter)))
        };
        let answer = call(request);
        Box::pin(async move {
            let Ok(response) = answer.await;
            drop(in_flight);
            route.duration.observe(start.elapsed().as_secs_f64());
            let status = response.status();
            if let Some(reason) = refusal(status, response.extensions().get::<ErrorKind>()) {
                series
                    .refusals
                    .get_or_create(&RefusalLabels { reason })
                    .inc();
            }
            // A body in memory is counted now; a stream as it is sent (one more box).
            let response = if let Some(length) = response.body().size_hint().exact() {
                route.response_bytes.inc_by(length);
                response
            } else {
                let counter = route.response_bytes.clone();
                let events = is_event_stream(response.headers()).then(|| {
                    let labels = StreamLabels {
                        route: Arc::clone(&route.labels.route),
                    };
                    EventStreamSeries::new(&series, &labels)
                });
                response.map(|inner| {
                    Body::new(Counted {
                        events,
                        ..Counted::new(inner, counter)
                    })
                })
            };
            route.count(&series, status.as_u16());
            Ok(response)
        })
    }
}

/// Whether a request's body is `multipart/form-data` (an upload).
fn is_multipart(headers: &http::HeaderMap) -> bool {
    media_type_is(headers, "multipart/form-data")
}

/// Whether a response is an event stream (`text/event-stream`).
fn is_event_stream(headers: &http::HeaderMap) -> bool {
    media_type_is(headers, "text/event-stream")
}

fn media_type_is(headers: &http::HeaderMap, essence: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|value| value.trim().eq_ignore_ascii_case(essence))
}

/// An event stream's series: open while its body is, and its events.
struct EventStreamSeries {
    open: Gauge,
    sent: Counter,
}

impl EventStreamSeries {
    fn new(series: &Series, labels: &StreamLabels) -> Self {
        let open = series.event_streams_open.get_or_create_owned(labels);
        open.inc();
        Self {
            open,
            sent: series.events_sent.get_or_create_owned(labels),
        }
    }
}

impl Drop for EventStreamSeries {
    fn drop(&mut self) {
        self.open.dec();
    }
}

/// The one `route` value of unknown paths, shared.
fn unmatched() -> Arc<str> {
    static UNMATCHED: OnceLock<Arc<str>> = OnceLock::new();
    Arc::clone(UNMATCHED.get_or_init(|| UNMATCHED_ROUTE.into()))
}

/// The `method` label: the methods of RFC 9110 and PATCH, `other` for the rest (a client
/// may send any token as a method).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// Why a request was refused, if it was: the error's kind when the response says it, else
/// its status.
fn refusal(status: StatusCode, kind: Option<&ErrorKind>) -> Option<&'static str> {
    match (kind, status.as_u16()) {
        (Some(ErrorKind::Routing), 404) => Some("not_found"),
        (Some(ErrorKind::Routing), 405) => Some("method_not_allowed"),
        (Some(ErrorKind::InputValidation), _) => Some("validation"),
        // A body too slow is a read that failed (kind `Parse`), but its 408 says why.
        (_, 408) => Some("timeout"),
        (Some(ErrorKind::Parse), _) => Some("parse"),
        (Some(ErrorKind::PayloadTooLarge), _) | (None, 413) => Some("payload_too_large"),
        (Some(ErrorKind::UnsupportedMediaType), _) | (None, 415) => Some("unsupported_media_type"),
        (Some(ErrorKind::Overload), _) => Some("overload"),
        // A handler's 404 ("no such book") is an answer, not a refusal.
        (_, 401) => Some("unauthorized"),
        (_, 403) => Some("forbidden"),
        (_, 429) => Some("too_many_requests"),
        (_, 503) => Some("unavailable"),
        (_, 504) => Some("gateway_timeout"),
        _ => None,
    }
}

/// Decrements the in-flight gauge when the request is answered or dropped (a client that
/// went away), whichever comes first.
struct InFlight(Arc<Series>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.dec();
    }
}

pin_project! {
    /// A body that adds the length of each of its data frames to a counter (and to the upload
    /// bytes of an upload); an event stream's also counts each frame that is an event (not a
    /// `:` comment, the keep-alive, nor a `retry:`) and is open until dropped.
    struct Counted<B> {
        #[pin]
        inner: B,
        counter: Counter,
        uploads: Option<Counter>,
        events: Option<EventStreamSeries>,
    }
}

impl<B> Counted<B> {
    fn new(inner: B, counter: Counter) -> Self {
        Self {
            inner,
            counter,
            uploads: None,
            events: None,
        }
    }
}

impl<B: HttpBody> HttpBody for Counted<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        if let Some(Ok(frame)) = &frame
            && let Some(data) = frame.data_ref()
        {
            let bytes = data.remaining() as u64;
            this.counter.inc_by(bytes);
            if let Some(uploads) = this.uploads {
                uploads.inc_by(bytes);
            }
            if let Some(events) = this.events {
                let first = data.chunk();
                if !first.is_empty() && !first.starts_with(b":") && !first.starts_with(b"retry:") {
                    events.sent.inc();
                }
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The answer of the exposition, and of a request counted.
pub type MetricsFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// Answers its path (GET and HEAD) and `404` with an empty body elsewhere, to mount in a
/// tower or axum application of your own:
/// `axum::Router::new().route_service("/metrics", metrics)`.
impl<B> Service<Request<B>> for Metrics {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = MetricsFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> MetricsFuture {
        self.answer(&request).unwrap_or_else(|| {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::NOT_FOUND;
            Box::pin(std::future::ready(Ok(response)))
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests fail loudly by design

    use super::*;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn get(metrics: &Metrics, method: Method, path: &str) -> (StatusCode, String, String) {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(
                header::ACCEPT,
                "application/openmetrics-text;version=1.0.0,*/*;q=0.1",
            )
            .body(String::new())
            .unwrap();
        let response = metrics.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let kind = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, kind, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn the_exposition_is_answered_at_its_path_to_get_and_head_only() {
        let metrics = Metrics::new().path("stats");
        assert_eq!(metrics.exposition_path(), "/stats");
        let (status, kind, body) = get(&metrics, Method::GET, "/stats").await;
        assert_eq!((status, kind.as_str()), (StatusCode::OK, OPENMETRICS));
        assert_eq!(body, metrics.encode());
        let (status, _, body) = get(&metrics, Method::HEAD, "/stats").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, ""));
        assert_eq!(get(&metrics, Method::POST, "/stats").await.0, 404);
        assert_eq!(get(&metrics, Method::GET, "/metrics").await.0, 404);
        // Without `OpenMetrics` in its `Accept`: Prometheus's text format.
        let request = Request::get("/stats").body(String::new()).unwrap();
        let response = metrics.clone().oneshot(request).await.unwrap();
        assert_eq!(response.headers()[header::CONTENT_TYPE], PROMETHEUS_TEXT);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, metrics.encode_prometheus());
    }

    #[test]
    fn prometheus_text_names_counters_as_their_samples_and_has_no_eof() {
        let metrics = Metrics::new();
        metrics
            .series
            .refusals
            .get_or_create(&RefusalLabels { reason: "parse" })
            .inc();
        metrics
            .series
            .duration
            .get_or_create(&RouteLabels {
                route: "/a".into(),
                method: "GET",
            })
            .observe(0.001);
        let text = metrics.encode_prometheus();
        let comments: Vec<&str> = text.lines().filter(|line| line.starts_with('#')).collect();
        assert_eq!(
            comments,
            [
                "# HELP strata_http_request_duration_seconds Time from a request to its response \
                 head, by route template and method.",
                "# TYPE strata_http_request_duration_seconds histogram",
                "# HELP strata_http_requests_in_flight Requests received and not yet answered.",
                "# TYPE strata_http_requests_in_flight gauge",
                "# HELP strata_http_refusals_total Requests refused, by reason (not_found, \
                 method_not_allowed, validation, ...).",
                "# TYPE strata_http_refusals_total counter",
                "# HELP strata_http_connections_open Connections open on the server's listeners.",
                "# TYPE strata_http_connections_open gauge",
                "# HELP strata_http_connections_accepted_total Connections accepted on the \
                 server's listeners.",
                "# TYPE strata_http_connections_accepted_total counter",
            ]
        );
        assert!(
            text.contains("\nstrata_http_refusals_total{reason=\"parse\"} 1\n"),
            "{text}"
        );
        // Everything else as `OpenMetrics` has it.
        let samples = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|line| !line.starts_with('#'))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(samples(&text), samples(&metrics.encode()));
    }

    #[test]
    fn methods_outside_the_known_ones_are_other() {
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        assert_eq!(method_label(&Method::TRACE), "TRACE");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
        assert_eq!(method_label(&Method::from_bytes(b"get").unwrap()), "other");
    }

    #[test]
    fn refusals_are_named_by_kind_then_by_status() {
        use ErrorKind::{Http, InputValidation, Parse, Routing};
        let reason = |status: u16, kind: Option<ErrorKind>| {
            refusal(StatusCode::from_u16(status).unwrap(), kind.as_ref())
        };
        assert_eq!(reason(404, Some(Routing)), Some("not_found"));
        assert_eq!(reason(405, Some(Routing)), Some("method_not_allowed"));
        assert_eq!(reason(400, Some(InputValidation)), Some("validation"));
        assert_eq!(reason(400, Some(Parse)), Some("parse"));
        // A body too slow: its read failed, and the 408 says why.
        assert_eq!(reason(408, Some(Parse)), Some("timeout"));
        assert_eq!(reason(401, Some(Http)), Some("unauthorized"));
        assert_eq!(reason(429, None), Some("too_many_requests"));
        assert_eq!(reason(413, None), Some("payload_too_large"));
        // A handler's answers, not refusals.
        assert_eq!(reason(404, Some(Http)), None);
        assert_eq!(reason(404, None), None);
        assert_eq!(reason(200, None), None);
        assert_eq!(reason(500, Some(ErrorKind::Internal)), None);
    }

    #[test]
    fn in_flight_goes_down_when_a_request_is_dropped_unanswered() {
        let metrics = Metrics::new();
        metrics.series.in_flight.inc();
        let guard = InFlight(Arc::clone(&metrics.series));
        assert_eq!(metrics.series.in_flight.get(), 1);
        drop(guard);
        assert_eq!(metrics.series.in_flight.get(), 0);
    }

    /// Data frames one by one, their total length unknown (as a stream's).
    struct Chunks(std::collections::VecDeque<&'static [u8]>);

    impl HttpBody for Chunks {
        type Data = bytes::Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<bytes::Bytes>, Infallible>>> {
            Poll::Ready(
                self.0
                    .pop_front()
                    .map(|chunk| Ok(Frame::data(bytes::Bytes::from_static(chunk)))),
            )
        }
    }

    #[tokio::test]
    async fn a_counted_body_adds_each_data_frame() {
        let counter = Counter::default();
        let body = Counted::new(Chunks([&b"abc"[..], b"", b"de"].into()), counter.clone());
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!((&bytes[..], counter.get()), (&b"abcde"[..], 5));
    }
}
