//! Typed event subscriptions (`Client::subscribe`): an event-stream operation declared once,
//! implemented with `implement_events`, subscribed to in memory over the router and over a real
//! socket; a connection cut mid-stream resumed with `Last-Event-ID`, without loss or
//! duplicates; errors, giving up, idle connections.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use strata::events::Emitter;
use strata::{Events, Operation, Router, Routing};

use bytes::Bytes;
use futures_core::Stream;
use garde::Validate;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::Full;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use strata::Server;
use strata::client::{Client, ClientError, HttpPool, Subscription, Transport};
use strata::core::BoxError;
use strata::prelude::*;
use strata::server::LocalAddr;

/// The declarations a server and its clients share.
mod api {
    use super::{Countdown, CountdownInput};
    use strata::{Events, Operation};

    pub(crate) const COUNTDOWN: Operation<CountdownInput, Events<Countdown>> =
        Operation::get("/v1/countdown/:label");
    /// Waits a long time before its first event.
    pub(crate) const SILENT: Operation<(), Events<Countdown>> = Operation::get("/v1/silent");
}

/// The countdown's events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Countdown {
    Tick {
        #[garde(range(max = 3600))]
        left: u32,
    },
    Liftoff,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct CountdownInput {
    /// A path parameter, to show the input placed as for calls.
    #[garde(length(min = 1))]
    label: String,
    #[garde(range(min = 1, max = 3600))]
    from: u32,
    /// Milliseconds between ticks.
    #[garde(range(max = 1000))]
    #[serde(default)]
    every_ms: u64,
}

fn countdown(from: u32, every_ms: u64) -> CountdownInput {
    CountdownInput {
        label: "launch pad".into(),
        from,
        every_ms,
    }
}

fn ticks_then_liftoff(from: u32) -> Vec<Countdown> {
    (1..=from)
        .rev()
        .map(|left| Countdown::Tick { left })
        .chain([Countdown::Liftoff])
        .collect()
}

/// What the handler saw: each run's `Last-Event-ID`.
type Resumed = Arc<Mutex<Vec<Option<String>>>>;

/// The server: the countdown, resumed after the tick a reconnecting client names, asking
/// clients to reconnect after 20 ms.
fn routing(resumed: &Resumed) -> Routing {
    let resumed = resumed.clone();
    let countdown = default_endpoints_factory().endpoint().implement_events(
        &api::COUNTDOWN,
        move |input: CountdownInput, emitter: Emitter<Countdown>| {
            let resumed = resumed.clone();
            async move {
                assert_eq!(input.label, "launch pad");
                let last = emitter.last_event_id().map(str::to_owned);
                resumed.lock().unwrap().push(last.clone());
                let from = last
                    .and_then(|id| id.parse::<u32>().ok())
                    .map_or(input.from, |left| left.saturating_sub(1));
                emitter.retry(Duration::from_millis(20)).await?;
                for left in (1..=from).rev() {
                    emitter
                        .emit_with_id(Countdown::Tick { left }, &left.to_string())
                        .await?;
                    tokio::time::sleep(Duration::from_millis(input.every_ms)).await;
                }
                emitter.emit(Countdown::Liftoff).await?;
                Ok(())
            }
        },
    );
    let silent = default_endpoints_factory().endpoint().implement_events(
        &api::SILENT,
        async |(): (), emitter: Emitter<Countdown>| {
            tokio::time::sleep(Duration::from_secs(60)).await;
            emitter.emit(Countdown::Liftoff).await?;
            Ok(())
        },
    );
    // Not an event stream.
    let plain = default_endpoints_factory()
        .get()
        .handler_without_input(async || Ok(Plain { plain: true }));
    routing! { "v1" => { "plain" => plain } }
        .operation(countdown)
        .operation(silent)
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Plain {
    plain: bool,
}

fn config() -> strata::Config {
    create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .build()
}

/// The headers of each request a service got.
#[derive(Clone, Default)]
struct Requests(Arc<Mutex<Vec<HeaderMap>>>);

impl Requests {
    /// The header `name` of each request.
    fn seen(&self, name: &str) -> Vec<Option<String>> {
        let requests = self.0.lock().unwrap();
        requests
            .iter()
            .map(|headers| {
                headers
                    .get(name)
                    .map(|value| value.to_str().unwrap().to_owned())
            })
            .collect()
    }

    /// `inner`, recording its requests here, its first response cut after `cut_after` frames.
    fn record<S>(&self, inner: S, cut_after: Option<usize>) -> CutFirst<S> {
        CutFirst {
            inner,
            cut_after,
            requests: self.clone(),
        }
    }
}

/// Records each request's headers; cuts the first response's body after `cut_after` frames:
/// an error instead of the next frame, as a connection that breaks off (over a socket, the
/// server closes the connection without ending the body).
#[derive(Clone)]
struct CutFirst<S> {
    inner: S,
    cut_after: Option<usize>,
    requests: Requests,
}

impl<S, R, B> tower::Service<Request<R>> for CutFirst<S>
where
    S: tower::Service<Request<R>, Response = Response<B>>,
    S::Future: Send + 'static,
{
    type Response = Response<Cut<B>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<R>) -> Self::Future {
        let first = {
            let mut requests = self.requests.0.lock().unwrap();
            requests.push(request.headers().clone());
            requests.len() == 1
        };
        let left = self.cut_after.filter(|_| first);
        let response = self.inner.call(request);
        Box::pin(async move {
            Ok(response.await?.map(|body| Cut {
                body: Box::pin(body),
                left,
            }))
        })
    }
}

struct Cut<B> {
    body: Pin<Box<B>>,
    /// Frames to let through before the cut (`None`: no cut).
    left: Option<usize>,
}

impl<B> Body for Cut<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let frame = match self.body.as_mut().poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error.into()))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        match &mut self.left {
            // The next frame is there: the connection breaks instead (after the frames before
            // it went out whole).
            Some(0) => Poll::Ready(Some(Err("cut mid-stream".into()))),
            Some(left) => {
                *left -= 1;
                Poll::Ready(Some(Ok(frame)))
            }
            None => Poll::Ready(Some(Ok(frame))),
        }
    }
}

/// The server over a real socket, its app wrapped by a [`CutFirst`].
async fn serve(
    resumed: &Resumed,
    requests: &Requests,
    cut_after: Option<usize>,
) -> (Server, SocketAddr) {
    let requests = requests.clone();
    let layer = tower::layer::layer_fn(move |app| requests.record(app, cut_after));
    let server = strata::create_server(&config(), &routing(resumed))
        .layers(layer)
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, addr)
}

/// hyper-util's pooled client.
fn pooled() -> HttpPool {
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http()
}

/// The next item, within 5 s.
async fn next<T: DeserializeOwned>(
    subscription: &mut Subscription<T>,
) -> Option<Result<T, ClientError>> {
    let next = std::future::poll_fn(|cx| Pin::new(&mut *subscription).poll_next(cx));
    tokio::time::timeout(Duration::from_secs(5), next)
        .await
        .expect("an item promptly")
}

/// Every item until the end, and the last event id.
async fn all<T: DeserializeOwned>(
    mut subscription: Subscription<T>,
) -> (Vec<Result<T, ClientError>>, Option<String>) {
    let mut items = Vec::new();
    while let Some(item) = next(&mut subscription).await {
        items.push(item);
    }
    let last = subscription.last_event_id().map(str::to_owned);
    (items, last)
}

const TOKEN: HeaderName = HeaderName::from_static("token");
const TRACE: HeaderName = HeaderName::from_static("trace");

/// The countdown from 5, 10 ms between ticks, with a header of the client's and one of the
/// subscription's: every event, in order, once, until the server ends the stream (within 5 s
/// an item: a reconnection waits the server's `retry:`, not the subscription's delay).
async fn count_down<T: Transport>(client: Client<T>) {
    let subscription = client
        .header(TOKEN, HeaderValue::from_static("client"))
        .subscribe(&api::COUNTDOWN, countdown(5, 10))
        .header(TRACE, HeaderValue::from_static("subscription"))
        // The server's `retry:` (20 ms) wins: a reconnection does not wait this long.
        .reconnect_delay(Duration::from_secs(30));
    let (items, last) = all(subscription).await;
    let events: Vec<Countdown> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(events, ticks_then_liftoff(5), "no loss, no duplicate");
    assert_eq!(last.as_deref(), Some("1"));
}

/// What every connection sent: the client's and the subscription's headers, and
/// `Accept: text/event-stream`.
fn assert_headers(requests: &Requests, connections: usize) {
    let each = |value: &str| vec![Some(value.to_owned()); connections];
    assert_eq!(requests.seen("token"), each("client"));
    assert_eq!(requests.seen("trace"), each("subscription"));
    assert_eq!(requests.seen("accept"), each("text/event-stream"));
}

#[tokio::test]
async fn events_arrive_typed_and_in_order_until_the_server_ends_the_stream_in_memory() {
    let resumed = Resumed::default();
    let requests = Requests::default();
    let router = Router::new(&routing(&resumed), &config()).unwrap();
    count_down(Client::new(requests.record(router, None))).await;
    assert_eq!(*resumed.lock().unwrap(), [None]);
    assert_headers(&requests, 1);
}

#[tokio::test]
async fn events_arrive_typed_and_in_order_over_a_real_socket() {
    let resumed = Resumed::default();
    let requests = Requests::default();
    let (server, addr) = serve(&resumed, &requests, None).await;
    count_down(Client::new(pooled()).base_url(format!("http://{addr}"))).await;
    assert_eq!(*resumed.lock().unwrap(), [None]);
    assert_headers(&requests, 1);
    server.shutdown().await;
}

/// Frames of the first response before the cut: the empty piece that sends the head, the
/// `retry:`, the ticks 5 and 4.
const CUT_AFTER: Option<usize> = Some(4);

/// The first connection breaks off after the `retry:` and the ticks 5 and 4: the client
/// reconnects after the server's 20 ms with `Last-Event-ID: 4` and its headers, and the server
/// goes on from 3.
fn assert_resumed(resumed: &Resumed, requests: &Requests) {
    let after_4 = [None, Some("4".to_owned())];
    assert_eq!(*resumed.lock().unwrap(), after_4);
    assert_eq!(requests.seen("last-event-id"), after_4);
    assert_headers(requests, 2);
}

#[tokio::test]
async fn a_connection_cut_mid_stream_resumes_with_last_event_id_in_memory() {
    let resumed = Resumed::default();
    let requests = Requests::default();
    let router = Router::new(&routing(&resumed), &config()).unwrap();
    count_down(Client::new(requests.record(router, CUT_AFTER))).await;
    assert_resumed(&resumed, &requests);
}

#[tokio::test]
async fn a_connection_cut_mid_stream_resumes_with_last_event_id_over_a_real_socket() {
    let resumed = Resumed::default();
    let requests = Requests::default();
    let (server, addr) = serve(&resumed, &requests, CUT_AFTER).await;
    count_down(Client::new(pooled()).base_url(format!("http://{addr}"))).await;
    assert_resumed(&resumed, &requests);
    server.shutdown().await;
}

#[tokio::test]
async fn a_subscription_resumes_where_an_earlier_one_left_off() {
    let resumed = Resumed::default();
    let router = Router::new(&routing(&resumed), &config()).unwrap();
    let subscription = Client::new(router)
        .subscribe(&api::COUNTDOWN, countdown(5, 0))
        .resume_from("3");
    assert_eq!(subscription.last_event_id(), Some("3"));
    let (items, _) = all(subscription).await;
    let events: Vec<Countdown> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(events, ticks_then_liftoff(2));
    assert_eq!(*resumed.lock().unwrap(), [Some("3".to_owned())]);
}

#[tokio::test]
async fn an_error_response_is_the_servers_error_once_and_the_end() {
    const PLAIN: Operation<(), Events<Countdown>> = Operation::get("/v1/plain");
    let resumed = Resumed::default();
    let requests = Requests::default();
    let router = Router::new(&routing(&resumed), &config()).unwrap();
    let client = Client::new(requests.record(router, None));
    let (items, _) = all(client.subscribe(&api::COUNTDOWN, countdown(0, 0))).await;
    let [Err(error)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(error.status(), Some(StatusCode::BAD_REQUEST));
    assert!(error.message().unwrap().contains("from"), "{error}");
    assert_eq!(requests.seen("accept").len(), 1, "no reconnection");

    // A success that is not an event stream.
    let (items, _) = all(client.subscribe(&PLAIN, ())).await;
    let [
        Err(ClientError::Decode {
            status, message, ..
        }),
    ] = items.as_slice()
    else {
        panic!("{items:?}")
    };
    assert_eq!(*status, StatusCode::OK);
    assert!(message.contains("not text/event-stream"), "{message}");
}

#[tokio::test]
async fn an_event_the_client_does_not_know_is_an_error_and_the_stream_goes_on() {
    /// An older client's events: no liftoff.
    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    enum Ticks {
        Tick { left: u32 },
    }
    const TICKS: Operation<CountdownInput, Events<Ticks>> = Operation::get("/v1/countdown/:label");
    let router = Router::new(&routing(&Resumed::default()), &config()).unwrap();
    let (mut items, _) = all(Client::new(router).subscribe(&TICKS, countdown(2, 0))).await;
    let Some(Err(ClientError::Decode { path, message, .. })) = items.pop() else {
        panic!("{items:?}")
    };
    assert_eq!(path, "liftoff");
    assert!(message.contains("unknown variant `liftoff`"), "{message}");
    let ticks: Vec<Ticks> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(ticks, [Ticks::Tick { left: 2 }, Ticks::Tick { left: 1 }]);
}

#[tokio::test]
async fn a_subscription_gives_up_after_its_reconnections_with_the_last_error() {
    const UNLABELLED: Operation<(), Events<Countdown>> = Operation::get("/v1/countdown/:label");
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&attempts);
    let refused = tower::service_fn(move |_: Request<strata::client::Body>| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Err::<Response<Full<Bytes>>, BoxError>("connection refused".into()) }
    });
    let subscription = Client::new(refused.clone())
        .subscribe(&api::COUNTDOWN, countdown(5, 0))
        .reconnect_delay(Duration::from_millis(1))
        .max_reconnects(3);
    let (items, _) = all(subscription).await;
    let [Err(ClientError::Transport(error))] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(error.to_string(), "connection refused");
    assert_eq!(attempts.load(Ordering::SeqCst), 4, "the first and 3 more");

    // An input that cannot be sent is not even tried.
    let (items, _) = all(Client::new(refused.clone()).subscribe(&UNLABELLED, ())).await;
    let [Err(ClientError::Input(problem))] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert!(problem.contains("`label`"), "{problem}");
    assert_eq!(attempts.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_silent_connection_is_dropped_at_the_idle_timeout() {
    let requests = Requests::default();
    let router = Router::new(&routing(&Resumed::default()), &config()).unwrap();
    let subscription = Client::new(requests.record(router, None))
        .subscribe(&api::SILENT, ())
        .idle_timeout(Duration::from_millis(50))
        .reconnect_delay(Duration::from_millis(1))
        .max_reconnects(1);
    let (items, _) = all(subscription).await;
    let [Err(ClientError::Timeout(after))] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(*after, Duration::from_millis(50));
    assert_eq!(requests.seen("accept").len(), 2);
}

#[test]
fn an_event_stream_operation_is_implemented_and_called_only_as_one() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/events_of_another_type.rs");
}
