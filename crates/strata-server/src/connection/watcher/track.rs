//! Requests and responses, counted: a request in flight until its response is ready, a response
//! until hyper has sent its body and dropped it; event streams ended and unanswered requests
//! answered at shutdown.

use super::activity::{
    Activity, CLOSED_BY_BODY_TIMEOUT, CLOSED_BY_HEADER_TOO_LARGE, CLOSED_BY_PAYLOAD_TOO_LARGE,
    EVENT, body_slot,
};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll, Waker};

use http::header::{CONNECTION, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Response, StatusCode};
use http_body::{Body as HttpBody, Frame, SizeHint};
use pin_project_lite::pin_project;
use strata_core::{ApiError, Body, BoxError, StreamShutdown, error_response};

/// The wakers of a connection's event streams and of its HTTP/2 requests not answered yet, each
/// in its slot, woken at shutdown.
#[derive(Debug, Default)]
pub(super) struct EventStreams {
    pub(super) wakers: Vec<Option<Waker>>,
    pub(super) free: Vec<usize>,
}

impl Activity {
    /// The server is shutting down: every event stream ends at its next poll, and those
    /// waiting on their producer are woken for it.
    pub(crate) fn end_event_streams(&self) {
        self.closing.store(true, Ordering::Relaxed);
        self.wake_all();
    }

    /// Wakes every waker kept (each is kept again when its task waits again).
    fn wake_all(&self) {
        let woken: Vec<Waker> = {
            let mut streams = self
                .event_streams
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            streams.wakers.iter_mut().filter_map(Option::take).collect()
        };
        woken.into_iter().for_each(Waker::wake);
    }

    /// The shutdown timeout has passed: a request not answered yet is answered with a 503
    /// at its next poll (for HTTP/1 the connection's task polls it while it closes; an HTTP/2
    /// request's task is woken).
    pub(crate) fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
        self.wake_all();
    }

    /// Keeps `waker` to wake the event stream or request in `slot` (given one if it has none)
    /// at shutdown.
    fn keep_waker(&self, slot: &mut Option<usize>, waker: &Waker) {
        let mut streams = self
            .event_streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let index = *slot.get_or_insert_with(|| {
            streams.free.pop().unwrap_or_else(|| {
                streams.wakers.push(None);
                streams.wakers.len() - 1
            })
        });
        match &mut streams.wakers[index] {
            Some(kept) if kept.will_wake(waker) => {}
            entry => *entry = Some(waker.clone()),
        }
    }

    /// The event stream or request in `slot` has ended.
    fn forget_waker(&self, slot: usize) {
        let mut streams = self
            .event_streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        streams.wakers[slot] = None;
        streams.free.push(slot);
    }

    /// A request arrived: counted, and in flight until the returned guard is dropped.
    pub(crate) fn request(self: &Arc<Self>) -> InFlight {
        self.requests.fetch_add(EVENT + 1, Ordering::Relaxed);
        InFlight {
            activity: Some(Arc::clone(self)),
            waker_slot: None,
        }
    }
}

/// A request in flight; counted out when dropped unanswered, or handed on to [`Sending`] when
/// its response is ready.
pub(crate) struct InFlight {
    activity: Option<Arc<Activity>>,
    /// An HTTP/2 request's slot among the connection's wakers, while it waits.
    waker_slot: Option<usize>,
}

impl InFlight {
    /// The response is ready: an event; the request stays counted until its body is sent.
    fn answered(mut self) -> Option<Sending> {
        let activity = self.activity.take()?;
        if let Some(slot) = self.waker_slot.take() {
            activity.forget_waker(slot);
        }
        activity.requests.fetch_add(EVENT, Ordering::Relaxed);
        // Handed to hyper: waiting on it from now.
        let epoch = activity.epoch.load(Ordering::Relaxed);
        activity.waiting_bodies[body_slot(epoch)].fetch_add(1, Ordering::Relaxed);
        Some(Sending {
            activity,
            waiting_since: Some(epoch),
            waker_slot: None,
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(activity) = &self.activity {
            if let Some(slot) = self.waker_slot {
                activity.forget_waker(slot);
            }
            // One request fewer, one event more.
            activity
                .requests
                .fetch_add(EVENT.wrapping_sub(1), Ordering::Relaxed);
        }
    }
}

/// A response being sent; counted out when hyper drops its body.
pub(super) struct Sending {
    activity: Arc<Activity>,
    /// The body epoch of the last piece hyper took, while hyper holds the body and has not
    /// asked for more; `None` while its producer has nothing (a quiet event stream), or once
    /// it has ended.
    waiting_since: Option<u64>,
    /// An event stream's slot among the connection's wakers.
    waker_slot: Option<usize>,
}

impl Sending {
    /// hyper took a piece: waiting on hyper from this epoch. (Two atomic operations once per
    /// epoch, a load for the other pieces.)
    fn progressed(&mut self) {
        let epoch = self.activity.epoch.load(Ordering::Relaxed);
        if self.waiting_since != Some(epoch) {
            self.not_waiting();
            self.activity.waiting_bodies[body_slot(epoch)].fetch_add(1, Ordering::Relaxed);
            self.waiting_since = Some(epoch);
        }
    }

    /// The producer has nothing yet, or the body has ended: nothing waits on hyper.
    fn not_waiting(&mut self) {
        if let Some(epoch) = self.waiting_since.take() {
            self.activity.waiting_bodies[body_slot(epoch)].fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        self.not_waiting();
        if let Some(slot) = self.waker_slot {
            self.activity.forget_waker(slot);
        }
        self.activity
            .requests
            .fetch_add(EVENT.wrapping_sub(1), Ordering::Relaxed);
    }
}

pin_project! {
    /// The response future of a request of a tracked connection.
    pub(crate) struct TrackedFuture<F> {
        #[pin]
        inner: F,
        guard: Option<InFlight>,
    }
}

impl<F> TrackedFuture<F> {
    /// `inner`, the response future of the request `in_flight` counts.
    pub(crate) fn new(inner: F, in_flight: InFlight) -> Self {
        Self {
            inner,
            guard: Some(in_flight),
        }
    }
}

impl<F> Future for TrackedFuture<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<TrackedBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let activity = this
            .guard
            .as_ref()
            .and_then(|guard| guard.activity.as_ref());
        let cut = activity.is_some_and(|activity| activity.cut.load(Ordering::Relaxed));
        let mut response = if cut {
            shutting_down()
        } else {
            match this.inner.poll(cx) {
                Poll::Ready(Ok(response)) => response,
                Poll::Pending => {
                    // An HTTP/2 request runs in a task of its own: kept to be woken for the
                    // cut at the shutdown timeout (an HTTP/1 one is polled by its connection).
                    if let Some(guard) = this.guard.as_mut()
                        && let Some(activity) = &guard.activity
                        && activity.http2.load(Ordering::Relaxed)
                    {
                        activity.keep_waker(&mut guard.waker_slot, cx.waker());
                    }
                    return Poll::Pending;
                }
            }
        };
        if let Some(activity) = activity
            && let Some(metrics) = &activity.metrics
        {
            if cut {
                metrics.refused(response.status(), None);
            } else {
                note_closing(activity, &response);
            }
        }
        let sending = this.guard.take().and_then(InFlight::answered);
        // Only an event stream pays for the look into its extensions: other responses keep
        // their hot path free of new work and allocations (`AtShutdown` replaced a `bool` in
        // the body, on the stack; the output's extensions stay unallocated when empty).
        let event_stream = if is_event_stream(&response) {
            match response.extensions_mut().remove::<StreamShutdown>() {
                Some(hook) => AtShutdown::Tell(hook),
                None => AtShutdown::End,
            }
        } else {
            AtShutdown::Ignore
        };
        let http2 = sending
            .as_ref()
            .is_some_and(|sending| sending.activity.http2.load(Ordering::Relaxed));
        Poll::Ready(Ok(response.map(|body| TrackedBody {
            inner: body,
            sending,
            event_stream,
            http2,
            rest: None,
        })))
    }
}

/// Notes, for the metrics, why the connection would close after `response`: a 408 (a body
/// too slow), a 413 (a body too large, left unread) or a 431 (a head too large) is followed by
/// the close, as the body readers and the connection ask, or as hyper does with a body unread. Any other response clears the note.
/// (Only with metrics on: a look at the status, a store when it changes.)
fn note_closing(activity: &Activity, response: &Response<Body>) {
    let closed_by = match response.status() {
        StatusCode::REQUEST_TIMEOUT => CLOSED_BY_BODY_TIMEOUT,
        StatusCode::PAYLOAD_TOO_LARGE => CLOSED_BY_PAYLOAD_TOO_LARGE,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => CLOSED_BY_HEADER_TOO_LARGE,
        _ => 0,
    };
    if activity.closed_by.load(Ordering::Relaxed) != closed_by {
        activity.closed_by.store(closed_by, Ordering::Relaxed);
    }
}

/// The answer to a request still unanswered at the shutdown timeout.
pub(super) fn shutting_down() -> Response<Body> {
    let error = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "The server is shutting down; retry shortly",
    )
    .with_header(RETRY_AFTER, HeaderValue::from_static("1"))
    .with_header(CONNECTION, HeaderValue::from_static("close"));
    error_response(error)
}

/// Whether `response` is an event stream (of unknown length, `text/event-stream`): it has
/// no end of its own, so it ends when the server shuts down (its clients reconnect).
pub(super) fn is_event_stream(response: &Response<Body>) -> bool {
    response.body().size_hint().exact().is_none()
        && response
            .headers()
            .get(CONTENT_TYPE)
            .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"))
}

/// What a response body does when the server shuts down.
#[derive(Debug)]
pub(super) enum AtShutdown {
    /// Not an event stream: it ends by itself, within the shutdown timeout.
    Ignore,
    /// An event stream that cannot be told: it ends at once.
    End,
    /// An event stream with its hook: told once, then it ends by itself (Strata's event
    /// streams let their emitter know, send what it says in a short grace, and end).
    Tell(StreamShutdown),
    /// Told.
    Told,
}

pin_project! {
    /// A response body counted as being sent until hyper drops it.
    pub(crate) struct TrackedBody {
        #[pin]
        inner: Body,
        sending: Option<Sending>,
        // An event stream ends when the server shuts down.
        event_stream: AtShutdown,
        // HTTP/2: data is handed to hyper in pieces of `HTTP2_PIECE` at most, this the rest
        // (boxed: rare, and the body is moved about).
        http2: bool,
        rest: Option<Box<bytes::Bytes>>,
    }
}

/// The most bytes of a response handed to hyper at once on HTTP/2: hyper asks for more only
/// when the stream has window, so a client that gives none holds this much of a response in
/// the server's buffers, not all of it, and its stream is seen waiting (the write timeout).
pub(super) const HTTP2_PIECE: usize = 64 * 1024;

/// The next piece of `rest` (and none left once it is all taken).
pub(super) fn next_piece(rest: &mut Option<Box<bytes::Bytes>>) -> bytes::Bytes {
    match rest {
        Some(bytes) if bytes.len() > HTTP2_PIECE => bytes.split_to(HTTP2_PIECE),
        _ => rest.take().map(|bytes| *bytes).unwrap_or_default(),
    }
}

impl HttpBody for TrackedBody {
    type Data = bytes::Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<bytes::Bytes>, BoxError>>> {
        let this = self.project();
        if this.rest.is_some() {
            if let Some(sending) = this.sending.as_mut() {
                sending.progressed();
            }
            return Poll::Ready(Some(Ok(Frame::data(next_piece(this.rest)))));
        }
        if !matches!(this.event_stream, AtShutdown::Ignore)
            && let Some(sending) = this.sending.as_mut()
        {
            if sending.activity.closing.load(Ordering::Relaxed) {
                match std::mem::replace(this.event_stream, AtShutdown::Told) {
                    // The final chunk, at once.
                    AtShutdown::End => {
                        *this.event_stream = AtShutdown::End;
                        sending.not_waiting();
                        return Poll::Ready(None);
                    }
                    AtShutdown::Tell(hook) => hook.begin(),
                    AtShutdown::Ignore | AtShutdown::Told => {}
                }
            }
            let polled = this.inner.poll_frame(cx);
            if polled.is_pending() {
                sending
                    .activity
                    .keep_waker(&mut sending.waker_slot, cx.waker());
            }
            return track(sending, polled);
        }
        let mut polled = this.inner.poll_frame(cx);
        if *this.http2
            && let Poll::Ready(Some(Ok(frame))) = &mut polled
            && let Some(data) = frame.data_mut()
            && data.len() > HTTP2_PIECE
        {
            let rest = data.split_off(HTTP2_PIECE);
            *this.rest = Some(Box::new(rest));
        }
        match this.sending.as_mut() {
            Some(sending) => track(sending, polled),
            None => polled,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let Some(rest) = &self.rest else {
            return inner;
        };
        let rest = rest.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

/// Counts what a poll of a body tracked by `sending` gave.
pub(super) fn track<T>(
    sending: &mut Sending,
    polled: Poll<Option<Result<T, BoxError>>>,
) -> Poll<Option<Result<T, BoxError>>> {
    match &polled {
        Poll::Ready(Some(Ok(_))) => sending.progressed(),
        _ => sending.not_waiting(),
    }
    polled
}
