//! Request ids: taken from `x-request-id` when present and sane, generated otherwise; given to
//! the request's logger and echoed in the response.

use std::cell::RefCell;
use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};

use bytes::BytesMut;
use http::header::HeaderName;
use http::{HeaderValue, Request, Response};
use pin_project_lite::pin_project;
use strata_core::Logger;
use tower_layer::Layer;
use tower_service::Service;

/// The request id header.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest id accepted from a client.
const MAX_ID_LEN: usize = 128;

fn is_sane(id: &[u8]) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(b))
}

/// The longest generated id: 8 hex digits, a dash, 16 hex digits.
const GENERATED_MAX: usize = 25;

/// A new id: a random per-process prefix and a counter. Unique within a process, unguessable
/// enough to not collide across restarts, and far cheaper than a random UUID per request.
/// Written into a stack buffer: the header and the logger each copy it once.
fn generate(buffer: &mut [u8; GENERATED_MAX]) -> &str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    static PREFIX: OnceLock<u32> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded from the OS: a cheap source of a random prefix.
    #[allow(clippy::cast_possible_truncation)] // 32 bits of a random hash are enough
    let prefix = *PREFIX.get_or_init(|| RandomState::new().hash_one(std::process::id()) as u32);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    for (i, slot) in buffer[..8].iter_mut().enumerate() {
        *slot = HEX[(prefix >> (28 - 4 * i) & 0xf) as usize];
    }
    buffer[8] = b'-';
    // The counter in hex without leading zeros (at least one digit).
    let digits = (64 - count.leading_zeros()).div_ceil(4).max(1) as usize;
    for i in 0..digits {
        buffer[9 + i] = HEX[(count >> (4 * (digits - 1 - i)) & 0xf) as usize];
    }
    std::str::from_utf8(&buffer[..9 + digits]).unwrap_or("invalid")
}

/// Applies [`RequestId`].
#[derive(Debug, Clone)]
pub struct RequestIdLayer {
    logger: Logger,
    echo: bool,
}

impl Default for RequestIdLayer {
    fn default() -> Self {
        Self::new(Logger::default())
    }
}

impl RequestIdLayer {
    /// Request loggers derive from `logger`; ids are echoed.
    pub fn new(logger: Logger) -> Self {
        Self { logger, echo: true }
    }

    /// Whether responses carry the id in `x-request-id` (default: yes); the logger gets it
    /// either way.
    pub fn echo(mut self, enabled: bool) -> Self {
        self.echo = enabled;
        self
    }
}

impl<S> Layer<S> for RequestIdLayer {
    type Service = RequestId<S>;

    fn layer(&self, inner: S) -> RequestId<S> {
        RequestId {
            inner,
            logger: self.logger.clone(),
            echo: self.echo,
        }
    }
}

/// Gives each request an id and a child logger carrying it, and echoes the id.
#[derive(Debug, Clone)]
pub struct RequestId<S> {
    inner: S,
    logger: Logger,
    echo: bool,
}

impl<S> RequestId<S> {
    strata_core::inner_service_accessors!();
}

impl<S, B, RB> Service<Request<B>> for RequestId<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let given = request
            .headers()
            .get(&X_REQUEST_ID)
            .filter(|v| is_sane(v.as_bytes()));
        // A sane id is ASCII: the conversion cannot fail, but never trust it blindly.
        let (header, logger) =
            if let Some((value, Ok(text))) = given.map(|value| (value, value.to_str())) {
                (value.clone(), self.logger.with_request_id(text))
            } else {
                let mut buffer = [0; GENERATED_MAX];
                let id = generate(&mut buffer);
                (header_value(id), self.logger.with_request_id(id))
            };
        request.extensions_mut().insert(logger);
        ResponseFuture {
            inner: self.inner.call(request),
            header: self.echo.then_some(header),
        }
    }
}

/// How much room a thread's id arena takes at a time: about 160 generated ids.
const ARENA_SIZE: usize = 4096;

thread_local! {
    /// Where generated ids are written for their headers: each header holds a slice of a shared
    /// block (a reference count), not an allocation of its own.
    static ID_ARENA: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// `id` (a generated id: ASCII) as a header value, written into this thread's arena.
fn header_value(id: &str) -> HeaderValue {
    ID_ARENA.with_borrow_mut(|arena| {
        if arena.capacity() < id.len() {
            // The old block lives on until the last header cut from it is dropped.
            *arena = BytesMut::with_capacity(ARENA_SIZE);
        }
        arena.extend_from_slice(id.as_bytes());
        let bytes = arena.split_to(id.len()).freeze();
        HeaderValue::from_maybe_shared(bytes)
            .unwrap_or_else(|_| HeaderValue::from_static("invalid"))
    })
}

pin_project! {
    /// Response future of [`RequestId`].
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        header: Option<HeaderValue>,
    }
}

impl<F, RB, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<RB>, E>>,
{
    type Output = Result<Response<RB>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = ready!(this.inner.poll(cx))?;
        if let Some(header) = this.header.take() {
            response.headers_mut().insert(X_REQUEST_ID, header);
        }
        Poll::Ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanity() {
        assert!(is_sane(b"abc-123_x.y:z"));
        assert!(!is_sane(b""));
        assert!(!is_sane(b"a b"));
        assert!(!is_sane(&[b'a'; 129]));
        assert!(is_sane(&[b'a'; 128]));
    }

    #[test]
    fn header_values_of_generated_ids() {
        let mut ids = Vec::new();
        // Across several arena blocks: every value keeps its own bytes.
        for _ in 0..3 * ARENA_SIZE / GENERATED_MAX {
            let mut buffer = [0; GENERATED_MAX];
            let id = generate(&mut buffer).to_owned();
            ids.push((header_value(&id), id));
        }
        for (value, id) in &ids {
            assert_eq!(value.to_str().unwrap(), id);
        }
    }

    #[test]
    fn generated_ids_differ_and_are_sane() {
        let (mut x, mut y) = ([0; GENERATED_MAX], [0; GENERATED_MAX]);
        let (a, b) = (generate(&mut x), generate(&mut y));
        assert_ne!(a, b);
        assert!(is_sane(a.as_bytes()));
        let (prefix, count) = a.split_once('-').unwrap();
        assert_eq!(prefix.len(), 8);
        let next = u64::from_str_radix(b.split_once('-').unwrap().1, 16).unwrap();
        assert!(next > u64::from_str_radix(count, 16).unwrap());
    }
}
