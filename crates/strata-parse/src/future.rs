use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Buf;
use http::request::Parts;
use http::{Request, StatusCode};
use http_body::Body;
use pin_project_lite::pin_project;
use strata_core::{ApiError, BoxError, ErrorKind, PathParams};
use strata_input::{Parsed, ParsedBody, Query, UploadedFile};
use tower_service::Service;

use crate::budget::{BodyReservation, OverBudget};
use crate::service::{BodyKind, parse_body, too_large};

/// An error of the body itself: a server's body deadline is a 408; a limit applied by an outer
/// layer (tower-http's `RequestBodyLimit`) is a 413; anything else (a reset connection, a malformed chunk) a 400
/// whose detail is shown in development only.
fn read_error(error: BoxError) -> ApiError {
    if let Some(timeout) = ApiError::from_body_timeout(&error) {
        return timeout.with_source(error);
    }
    if error
        .downcast_ref::<http_body_util::LengthLimitError>()
        .is_some()
    {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Request body exceeds the limit",
        )
        .with_kind(ErrorKind::PayloadTooLarge)
        .with_source(error);
    }
    ApiError::bad_request(
        ErrorKind::Parse,
        format!("Failed to read the request body: {error}"),
    )
    .exposed(false)
    .with_source(error)
}

/// What is kept while the body is read.
pub(crate) struct Pending<S> {
    pub(crate) parts: Parts,
    pub(crate) query: Query,
    pub(crate) params: PathParams,
    pub(crate) kind: BodyKind,
    /// Set when the content type cannot be read: the error is returned as soon as the body
    /// turns out not to be empty (its length was unknown up front).
    pub(crate) unreadable: Option<ApiError>,
    pub(crate) limit: usize,
    /// The body's `Content-Length` (or exact size hint), if any: the buffer grows to it, no more.
    pub(crate) declared: Option<usize>,
    pub(crate) max_fields: usize,
    /// See `ParseLayer::defer_json_check`.
    pub(crate) defer_json_check: bool,
    pub(crate) inner: S,
    /// The body's share of the budget, grown as it arrives and held until the request is
    /// answered (a multipart read has it meanwhile).
    pub(crate) reservation: Option<BodyReservation>,
    /// The input's streamed file, for a multipart read that stops at it.
    pub(crate) streamed: Option<crate::StreamedField>,
}

impl<S> Pending<S> {
    /// A 400 naming the first required field that had not arrived when the streamed file's
    /// part began: the file is the form's last part.
    fn check_sent_before(&self, multipart: &strata_upload::Multipart) -> Result<(), ApiError> {
        let (Some(streamed), Some(file)) = (&self.streamed, &multipart.streamed) else {
            return Ok(());
        };
        let query = self.query.to_pairs();
        let arrived = |name: &str| {
            multipart.fields.iter().any(|(field, _)| field == name)
                || multipart.files.iter().any(|(field, _)| field == name)
                || query.iter().any(|(key, _)| key == name)
                || self.params.iter().any(|(param, _)| param == name)
                || self.parts.headers.contains_key(name)
        };
        match streamed.required.iter().find(|name| !arrived(name)) {
            None => Ok(()),
            Some(missing) => Err(ApiError::bad_request(
                ErrorKind::Parse,
                format!(
                    "Field {missing:?} must be sent before the streamed file {file:?}: the file \
                     is the form's last part"
                ),
            )
            .with_connection_close()),
        }
    }
}

impl<S: Service<Request<Parsed>>> Pending<S> {
    /// Calls the inner service with the parts of a multipart body (unless a required field
    /// did not come before a streamed file).
    fn forward_multipart<B>(
        mut self,
        multipart: strata_upload::Multipart,
        reservation: Option<BodyReservation>,
    ) -> State<B, S, S::Future> {
        if let Err(error) = self.check_sent_before(&multipart) {
            return State::Error { error: Some(error) };
        }
        self.reservation = reservation;
        let body = if multipart.fields.is_empty() {
            ParsedBody::Empty
        } else {
            ParsedBody::Form(multipart.fields)
        };
        self.forward(body, multipart.files)
    }

    /// Calls the inner service with the parsed request; the body's reservation lives on until
    /// it answers.
    fn forward<B>(
        mut self,
        body: ParsedBody,
        files: Vec<(String, Vec<UploadedFile>)>,
    ) -> State<B, S, S::Future> {
        let parsed = Parsed {
            query: self.query,
            body,
            params: self.params,
            files,
        };
        State::Inner {
            future: self.inner.call(Request::from_parts(self.parts, parsed)),
            reservation: self.reservation,
        }
    }
}

/// The multipart read (`strata_upload::read_multipart`, an `async fn`), boxed to be stored; it
/// gives back the body's reservation.
pub(crate) type ReadMultipart = Pin<
    Box<
        dyn Future<
                Output = (
                    Result<strata_upload::Multipart, ApiError>,
                    Option<BodyReservation>,
                ),
            > + Send,
    >,
>;

/// Makes room for `needed` bytes in `buffer`, reserved from the budget before they are
/// allocated: what a body holds is its buffer. The buffer doubles (few copies) but never past
/// the declared length, when it is honest, or the limit: a body that arrives whole in one chunk
/// takes one buffer of its size, and a slow one no more than twice what arrived.
fn make_room(
    buffer: &mut Vec<u8>,
    needed: usize,
    pending: &mut Pending<impl Sized>,
) -> Result<(), OverBudget> {
    if needed <= buffer.capacity() {
        return Ok(());
    }
    let most = match pending.declared {
        Some(declared) if declared >= needed => declared.min(pending.limit),
        _ => pending.limit,
    };
    let target = buffer.capacity().saturating_mul(2).min(most).max(needed);
    if let Some(reservation) = &mut pending.reservation {
        reservation.try_grow(target.saturating_sub(reservation.bytes()))?;
    }
    buffer.reserve_exact(target - buffer.len());
    Ok(())
}

/// What a multipart read shares with its body, which the reader owns (and, for a streamed
/// file, the handler after it).
#[cfg(feature = "upload")]
#[derive(Clone)]
pub(crate) struct Metering(std::sync::Arc<std::sync::Mutex<MeteringState>>);

#[cfg(feature = "upload")]
struct MeteringState {
    reservation: Option<BodyReservation>,
    refused: Option<OverBudget>,
    ended: bool,
    /// The bytes of files that left memory so far (written to temporary files, or handed over
    /// by a streamed file), and how many of them were given back to the budget.
    released: std::sync::Arc<std::sync::atomic::AtomicU64>,
    given_back: u64,
}

#[cfg(feature = "upload")]
impl MeteringState {
    /// Gives back to the budget what left memory since the last time: memory holds only the
    /// rest.
    fn give_back(&mut self) {
        let released = self.released.load(std::sync::atomic::Ordering::Relaxed);
        if let Some(reservation) = &mut self.reservation {
            let bytes = usize::try_from(released - self.given_back).unwrap_or(usize::MAX);
            reservation.shrink(bytes);
        }
        self.given_back = released;
    }
}

#[cfg(feature = "upload")]
impl Metering {
    pub(crate) fn new(
        reservation: Option<BodyReservation>,
        released: std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) -> Self {
        Self(std::sync::Arc::new(std::sync::Mutex::new(MeteringState {
            reservation,
            refused: None,
            ended: false,
            released,
            given_back: 0,
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, MeteringState> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The read's result, told as the budget's 503 when the budget stopped it, closing the
    /// connection when it failed before the body's end; and the reservation, to be held until
    /// the request is answered. A read that stopped at a streamed file leaves the reservation
    /// with the body, which the file reads on.
    pub(crate) fn finish(
        self,
        read: Result<strata_upload::Multipart, ApiError>,
    ) -> (
        Result<strata_upload::Multipart, ApiError>,
        Option<BodyReservation>,
    ) {
        let mut state = self.state();
        state.give_back();
        let read = match (read, state.refused) {
            (Err(_), Some(refused)) => Err(refused.error()),
            (Err(error), None) if !state.ended => Err(error.with_connection_close()),
            (read, _) => read,
        };
        let streaming = read
            .as_ref()
            .is_ok_and(|multipart| multipart.streamed.is_some());
        let reservation = if streaming {
            None
        } else {
            state.reservation.take()
        };
        drop(state);
        (read, reservation)
    }
}

#[cfg(feature = "upload")]
pin_project! {
    /// A multipart body: its bytes are reserved from the budget as they arrive, and given back
    /// as they leave memory (files past the spool threshold written to temporary files, a
    /// streamed file's chunks handed over); what stays in memory (text fields, small files)
    /// stays reserved until the request is answered. Whether the body ended is noted.
    pub(crate) struct Metered<B> {
        #[pin]
        body: B,
        metering: Metering,
    }
}

#[cfg(feature = "upload")]
impl<B> Metered<B> {
    pub(crate) fn new(body: B, metering: Metering) -> Self {
        Self { body, metering }
    }
}

#[cfg(feature = "upload")]
impl<B> Body for Metered<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, BoxError>>> {
        let mut this = self.project();
        let frame = match ready!(this.body.as_mut().poll_frame(cx)) {
            None => {
                this.metering.state().ended = true;
                return Poll::Ready(None);
            }
            Some(Err(error)) => return Poll::Ready(Some(Err(error.into()))),
            Some(Ok(frame)) => frame,
        };
        let mut state = this.metering.state();
        state.ended = this.body.is_end_stream();
        let arrived = frame.data_ref().map_or(0, Buf::remaining);
        state.give_back();
        if let Some(reservation) = &mut state.reservation
            && let Err(refused) = reservation.try_grow(arrived)
        {
            state.refused = Some(refused);
            return Poll::Ready(Some(Err(refused.error().into())));
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

pin_project! {
    #[project = StateProj]
    enum State<B, S, F> {
        // What waits for the body is boxed: most requests have none, and every request's future
        // (moved through the stack's layers) is as large as its largest state.
        Reading { #[pin] body: B, buffer: Vec<u8>, pending: Option<Box<Pending<S>>> },
        Multipart { read: ReadMultipart, pending: Option<Box<Pending<S>>> },
        Inner { #[pin] future: F, reservation: Option<BodyReservation> },
        Error { error: Option<ApiError> },
    }
}

pin_project! {
    /// Response future of [`ParseService`](crate::ParseService).
    pub struct ResponseFuture<B, S: Service<Request<Parsed>>> {
        #[pin]
        state: State<B, S, S::Future>,
    }
}

impl<B, S: Service<Request<Parsed>>> ResponseFuture<B, S> {
    pub(crate) fn error(error: ApiError) -> Self {
        Self {
            state: State::Error { error: Some(error) },
        }
    }

    pub(crate) fn inner(future: S::Future) -> Self {
        Self {
            state: State::Inner {
                future,
                reservation: None,
            },
        }
    }

    #[cfg_attr(not(feature = "upload"), allow(dead_code))]
    pub(crate) fn multipart(read: ReadMultipart, pending: Pending<S>) -> Self {
        Self {
            state: State::Multipart {
                read,
                pending: Some(Box::new(pending)),
            },
        }
    }

    pub(crate) fn reading(body: B, pending: Pending<S>) -> Self {
        Self {
            state: State::Reading {
                body,
                // Allocated as bytes arrive, not as declared.
                buffer: Vec::new(),
                pending: Some(Box::new(pending)),
            },
        }
    }
}

impl<B, S> Future for ResponseFuture<B, S>
where
    S: Service<Request<Parsed>>,
    S::Error: Into<BoxError> + 'static,
    B: Body,
    B::Error: Into<BoxError>,
{
    type Output = Result<S::Response, ApiError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Inner { future, .. } => {
                    return future.poll(cx).map_err(ApiError::from_inner);
                }
                StateProj::Multipart { read, pending } => {
                    let (result, reservation) = ready!(read.as_mut().poll(cx));
                    let next = match (result, pending.take()) {
                        (Ok(multipart), Some(pending)) => {
                            (*pending).forward_multipart(multipart, reservation)
                        }
                        (Err(error), _) => State::Error { error: Some(error) },
                        (Ok(_), None) => State::Error { error: None },
                    };
                    this.state.set(next);
                }
                StateProj::Error { error } => {
                    let error = error
                        .take()
                        .unwrap_or_else(|| ApiError::internal("polled after completion"));
                    return Poll::Ready(Err(error));
                }
                StateProj::Reading {
                    mut body,
                    buffer,
                    pending,
                } => {
                    let frame = ready!(body.as_mut().poll_frame(cx));
                    // An error before the body's end leaves the rest unread: the connection
                    // cannot be used for another request.
                    let ended = body.is_end_stream();
                    let fail = |error: ApiError| State::Error {
                        error: Some(if ended {
                            error
                        } else {
                            error.with_connection_close()
                        }),
                    };
                    match frame {
                        Some(Ok(frame)) => {
                            let Ok(mut data) = frame.into_data() else {
                                continue;
                            };
                            let Some(pending) = pending.as_deref_mut() else {
                                this.state.set(State::Error { error: None });
                                continue;
                            };
                            if data.has_remaining()
                                && let Some(error) = pending.unreadable.take()
                            {
                                this.state.set(fail(error));
                                continue;
                            }
                            let needed = buffer.len() + data.remaining();
                            if needed > pending.limit {
                                let error = too_large(pending.limit);
                                this.state.set(fail(error));
                                continue;
                            }
                            if let Err(refused) = make_room(buffer, needed, pending) {
                                this.state.set(fail(refused.error()));
                                continue;
                            }
                            while data.has_remaining() {
                                let chunk = data.chunk();
                                buffer.extend_from_slice(chunk);
                                let n = chunk.len();
                                data.advance(n);
                            }
                        }
                        Some(Err(error)) => {
                            let error = read_error(error.into());
                            this.state.set(fail(error));
                        }
                        None => {
                            let Some(pending) = pending.take() else {
                                this.state.set(State::Error { error: None });
                                continue;
                            };
                            let next = match parse_body(
                                pending.kind,
                                std::mem::take(buffer),
                                pending.max_fields,
                                pending.defer_json_check,
                                &pending.parts.headers,
                            ) {
                                Ok(body) => (*pending).forward(body, Vec::new()),
                                Err(error) => State::Error { error: Some(error) },
                            };
                            this.state.set(next);
                        }
                    }
                }
            }
        }
    }
}
