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
use http::{HeaderMap, HeaderValue, Request, Response};
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

/// Counters handed to a thread at a time: ids stay unique across threads without an atomic
/// operation per request.
const BLOCK: u64 = 1 << 20;

/// How much room a thread's id arena takes at a time: about 160 generated ids.
const ARENA_SIZE: usize = 4096;

/// The random per-process prefix of generated ids, as 8 hex digits and a dash.
fn prefix() -> [u8; 9] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    static PREFIX: OnceLock<[u8; 9]> = OnceLock::new();
    *PREFIX.get_or_init(|| {
        // RandomState is seeded from the OS: a cheap source of a random prefix.
        #[allow(clippy::cast_possible_truncation)] // 32 bits of a random hash are enough
        let random = RandomState::new().hash_one(std::process::id()) as u32;
        let mut prefix = [b'-'; 9];
        for (i, slot) in prefix[..8].iter_mut().enumerate() {
            *slot = HEX[(random >> (28 - 4 * i) & 0xf) as usize];
        }
        prefix
    })
}

/// Where a thread's generated ids come from.
struct IdSource {
    /// Generated ids are written here for their headers: each header holds a slice of a shared
    /// block (a reference count), not an allocation of its own.
    arena: BytesMut,
    prefix: [u8; 9],
    /// The next counter of this thread's block, and the block's end.
    next: u64,
    end: u64,
}

thread_local! {
    static IDS: RefCell<IdSource> = RefCell::new(IdSource::new());
}

impl IdSource {
    fn new() -> Self {
        Self {
            arena: BytesMut::new(),
            prefix: prefix(),
            next: 0,
            end: 0,
        }
    }

    /// A new id: the per-process prefix and a counter, in hex (`0a1b2c3d-2f`). Unique within a
    /// process, unguessable enough to not collide across restarts, and far cheaper than a random
    /// UUID per request. Written into `buffer`.
    fn generate<'b>(&mut self, buffer: &'b mut [u8; GENERATED_MAX]) -> &'b str {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        static BLOCKS: AtomicU64 = AtomicU64::new(0);
        if self.next == self.end {
            self.next = BLOCKS.fetch_add(1, Ordering::Relaxed).wrapping_mul(BLOCK);
            self.end = self.next.wrapping_add(BLOCK);
        }
        let count = self.next;
        self.next = self.next.wrapping_add(1);
        buffer[..9].copy_from_slice(&self.prefix);
        // The counter without leading zeros (at least one digit).
        let digits = (64 - count.leading_zeros()).div_ceil(4).max(1) as usize;
        for i in 0..digits {
            buffer[9 + i] = HEX[(count >> (4 * (digits - 1 - i)) & 0xf) as usize];
        }
        std::str::from_utf8(&buffer[..9 + digits]).unwrap_or("invalid")
    }

    /// `id` (ASCII) as a header value, cut from the arena.
    fn header_value(&mut self, id: &str) -> HeaderValue {
        if self.arena.capacity() < id.len() {
            // The old block lives on until the last header cut from it is dropped.
            self.arena = BytesMut::with_capacity(ARENA_SIZE);
        }
        self.arena.extend_from_slice(id.as_bytes());
        HeaderValue::from_maybe_shared(self.arena.split().freeze())
            .unwrap_or_else(|_| HeaderValue::from_static("invalid"))
    }
}

/// A generated id: its header value and a child of `logger` carrying it.
fn fresh(logger: &Logger) -> (HeaderValue, Logger) {
    let from = |ids: &mut IdSource| {
        let mut buffer = [0; GENERATED_MAX];
        let id = ids.generate(&mut buffer);
        (ids.header_value(id), logger.with_request_id(id))
    };
    IDS.try_with(|ids| from(&mut ids.borrow_mut()))
        // The thread's own source is being torn down: a source of its own for this one.
        .unwrap_or_else(|_| from(&mut IdSource::new()))
}

/// The client's `x-request-id`, when it sent one. Requests carry a few headers: comparing
/// names is cheaper than hashing this one, which is not a standard header.
fn given_id(headers: &HeaderMap) -> Option<&HeaderValue> {
    if headers.len() <= 8 {
        headers
            .iter()
            .find_map(|(name, value)| (*name == X_REQUEST_ID).then_some(value))
    } else {
        headers.get(&X_REQUEST_ID)
    }
}

/// The id as a header HTTP/2 sends without indexing it (HPACK's "never indexed" literal; no
/// effect on HTTP/1): each response has its own, so indexing it would fill the connection's
/// table with ids that never repeat, evict the headers that do (the CORS set, the content
/// type), and make the encoder compare every new id with the ids already there.
fn never_indexed(mut header: HeaderValue) -> HeaderValue {
    header.set_sensitive(true);
    header
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
        let given = given_id(request.headers()).filter(|v| is_sane(v.as_bytes()));
        // A sane id is ASCII: the conversion cannot fail, but never trust it blindly.
        let (header, logger) =
            if let Some((value, Ok(text))) = given.map(|value| (value, value.to_str())) {
                (value.clone(), self.logger.with_request_id(text))
            } else {
                fresh(&self.logger)
            };
        request.extensions_mut().insert(logger);
        ResponseFuture {
            inner: self.inner.call(request),
            header: self.echo.then(|| never_indexed(header)),
        }
    }
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
        let logger = Logger::default();
        let mut ids = Vec::new();
        // Across several arena blocks: every value keeps its own bytes.
        for _ in 0..3 * ARENA_SIZE / GENERATED_MAX {
            ids.push(fresh(&logger));
        }
        for (value, logger) in &ids {
            assert_eq!(Some(value.to_str().unwrap()), logger.request_id());
        }
    }

    #[test]
    fn generated_ids_differ_and_are_sane() {
        let (mut x, mut y) = ([0; GENERATED_MAX], [0; GENERATED_MAX]);
        let (a, b) = IDS.with_borrow_mut(|ids| {
            (
                ids.generate(&mut x).to_owned(),
                ids.generate(&mut y).to_owned(),
            )
        });
        assert_ne!(a, b);
        assert!(is_sane(a.as_bytes()));
        let (prefix, count) = a.split_once('-').unwrap();
        assert_eq!(prefix.len(), 8);
        let next = u64::from_str_radix(b.split_once('-').unwrap().1, 16).unwrap();
        assert!(next > u64::from_str_radix(count, 16).unwrap());
    }

    #[test]
    fn threads_draw_ids_from_blocks_of_their_own() {
        let on_thread = || {
            std::thread::spawn(|| fresh(&Logger::default()).0)
                .join()
                .unwrap()
        };
        let (a, b) = (on_thread(), on_thread());
        assert_ne!(a, b);
        assert_eq!(
            a.as_bytes()[..9],
            b.as_bytes()[..9],
            "one prefix per process"
        );
    }

    /// Answers every request with an empty 200.
    #[derive(Clone)]
    struct Empty;

    impl Service<Request<()>> for Empty {
        type Response = Response<()>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Response<()>, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request<()>) -> Self::Future {
            std::future::ready(Ok(Response::new(())))
        }
    }

    #[tokio::test]
    async fn echoed_ids_are_never_indexed_by_http2() {
        let mut service = RequestIdLayer::default().layer(Empty);
        let given = Request::builder()
            .header(X_REQUEST_ID, "abc-1")
            .body(())
            .unwrap();
        for request in [given, Request::new(())] {
            let response = service.call(request).await.unwrap();
            let id = &response.headers()[X_REQUEST_ID];
            assert!(id.is_sensitive(), "{id:?} would be indexed by HPACK");
        }
    }

    #[test]
    fn a_given_id_is_found_among_few_or_many_headers() {
        let mut headers = HeaderMap::new();
        headers.insert(X_REQUEST_ID, HeaderValue::from_static("abc"));
        assert_eq!(given_id(&headers).unwrap(), "abc");
        for i in 0..20 {
            headers.insert(
                HeaderName::from_bytes(format!("x-h{i}").as_bytes()).unwrap(),
                HeaderValue::from_static("v"),
            );
        }
        assert_eq!(given_id(&headers).unwrap(), "abc");
        assert!(given_id(&HeaderMap::new()).is_none());
    }
}
