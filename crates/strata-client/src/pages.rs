//! Following the pages of a paginated operation: [`Pages`], a stream of its pages, and
//! [`Items`], a stream of their items.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures_core::{FusedStream, Stream};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use strata_paginate::{
    CursorConfig, CursorInput, CursorPage, OffsetConfig, OffsetInput, OffsetPage,
};

use crate::{Client, ClientError, Envelope, Operation, Transport};

/// The input of a paginated operation whose pages are `O`: what the input of the page after
/// one is, and what a page's items are.
///
/// Implemented for the two styles of `strata-paginate`: [`OffsetInput`] with [`OffsetPage`]
/// (the next offset is `offset + limit` while that is below `total`) and [`CursorInput`] with
/// [`CursorPage`] (the next cursor is the page's `nextCursor` until it is null). Implement it
/// for pages of another making to follow them with [`Client::pages`].
pub trait Paginated<O>: Sized {
    /// What a page lists.
    type Item;

    /// The input of the page after `page`, which answered `self`; `None` after the last page.
    fn next_input(self, page: &O) -> Option<Self>;

    /// The page's items, in order.
    fn into_items(page: O) -> Vec<Self::Item>;
}

/// Offsets: the next page starts at `offset + limit` while that is below `total` (the page's
/// `has_more`). A page that would not move forward (a `limit` of 0) is the last: no page is
/// asked for twice.
impl<P: OffsetConfig, F, T> Paginated<OffsetPage<P, T>> for OffsetInput<P, F> {
    type Item = T;

    fn next_input(mut self, page: &OffsetPage<P, T>) -> Option<Self> {
        if !page.has_more() {
            return None;
        }
        let next = page.meta.offset.saturating_add(u64::from(page.meta.limit));
        if next <= self.offset {
            return None;
        }
        self.offset = next;
        Some(self)
    }

    fn into_items(page: OffsetPage<P, T>) -> Vec<T> {
        page.items
    }
}

/// Cursors: the next page starts at the page's `nextCursor` until it is null. A page that
/// answers the cursor it was asked with is the last: no page is asked for twice.
impl<P: CursorConfig, F, T> Paginated<CursorPage<P, T>> for CursorInput<P, F> {
    type Item = T;

    fn next_input(mut self, page: &CursorPage<P, T>) -> Option<Self> {
        let next = page.meta.next_cursor.as_ref()?;
        if self.cursor.as_ref() == Some(next) {
            return None;
        }
        self.cursor = Some(next.clone());
        Some(self)
    }

    fn into_items(page: CursorPage<P, T>) -> Vec<T> {
        page.items
    }
}

/// A page's request in flight: the future gives the input back with the page.
type PageFuture<I, O> = Pin<Box<dyn Future<Output = (I, Result<O, ClientError>)> + Send>>;

enum State<I, O> {
    /// The input of the next page, not asked for yet.
    Next(I),
    Waiting(PageFuture<I, O>),
    Done,
}

/// The pages of a paginated operation, from [`Client::pages`]: a [`Stream`] of
/// `Result<O, ClientError>` that asks for a page only when the one before has been taken (one
/// request per page pulled), and ends after the last page, or after yielding the first error.
///
/// Each request carries the client's headers and this stream's own ([`Pages::header`]), and
/// has its own timeout ([`Pages::timeout`], the client's by default).
///
/// It owns a clone of the client: it can be moved to another task
/// (`tokio::spawn(async move { let mut items = client.pages(..).items(); .. })`).
#[must_use = "a stream asks for pages when polled"]
pub struct Pages<S, E, I, O> {
    client: Client<S, E>,
    operation: Operation<I, O>,
    headers: HeaderMap,
    timeout: Option<Duration>,
    state: State<I, O>,
}

// Nothing is pinned in place: the input moves into each request's boxed future, and the client
// is only cloned.
impl<S, E, I, O> Unpin for Pages<S, E, I, O> {}

impl<S, E, I, O> Pages<S, E, I, O> {
    pub(crate) fn new(client: Client<S, E>, operation: Operation<I, O>, input: I) -> Self {
        Self {
            timeout: client.settings.timeout,
            client,
            operation,
            headers: HeaderMap::new(),
            state: State::Next(input),
        }
    }

    /// A header of every page's request (it wins over the client's).
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// The timeout of each page's request, instead of the client's.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// No timeout for the pages' requests, whatever the client's.
    pub fn no_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// The pages' items, one by one: a [`Stream`] of `Result<item, ClientError>` that asks for
    /// the next page when the items of the one before have been taken, and ends as the pages
    /// do.
    pub fn items(self) -> Items<S, E, I, O>
    where
        I: Paginated<O>,
    {
        Items {
            pages: self,
            buffer: Vec::new().into_iter(),
        }
    }

    /// The next page, `None` after the last one or after an error: `Stream::next` without
    /// importing a stream extension trait.
    pub async fn next(&mut self) -> Option<Result<O, ClientError>>
    where
        Self: Stream<Item = Result<O, ClientError>>,
    {
        poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl<S, E, I, O> Stream for Pages<S, E, I, O>
where
    S: Transport,
    E: Envelope,
    I: Paginated<O> + Serialize + Send + 'static,
    O: DeserializeOwned + Send + 'static,
{
    type Item = Result<O, ClientError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match std::mem::replace(&mut this.state, State::Done) {
                State::Next(input) => {
                    // The request of the page of `input`, under way once polled.
                    let client = this.client.clone();
                    let request = client.request(&this.operation, &this.headers, &input);
                    let timeout = this.timeout;
                    let page = client.respond(request, timeout, |_, page| page);
                    this.state = State::Waiting(Box::pin(async move { (input, page.await) }));
                }
                State::Waiting(mut future) => {
                    let Poll::Ready((input, page)) = future.as_mut().poll(cx) else {
                        this.state = State::Waiting(future);
                        return Poll::Pending;
                    };
                    // After an error, nothing: the state stays `Done`.
                    if let Ok(page) = &page
                        && let Some(next) = input.next_input(page)
                    {
                        this.state = State::Next(next);
                    }
                    return Poll::Ready(Some(page));
                }
                State::Done => return Poll::Ready(None),
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.state {
            State::Done => (0, Some(0)),
            _ => (1, None),
        }
    }
}

impl<S, E, I, O> FusedStream for Pages<S, E, I, O>
where
    Self: Stream,
{
    fn is_terminated(&self) -> bool {
        matches!(self.state, State::Done)
    }
}

impl<S, E, I, O> fmt::Debug for Pages<S, E, I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Next(_) => "next",
            State::Waiting(_) => "waiting",
            State::Done => "done",
        };
        f.debug_struct("Pages")
            .field("operation", &self.operation)
            .field("headers", &self.headers)
            .field("timeout", &self.timeout)
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

/// The items of a paginated operation's pages, from [`Pages::items`]: a [`Stream`] of
/// `Result<item, ClientError>` in order, asking for a page when the items of the one before
/// have been taken; it ends after the last page's items, or after yielding the first error.
#[must_use = "a stream asks for pages when polled"]
pub struct Items<S, E, I: Paginated<O>, O> {
    pages: Pages<S, E, I, O>,
    /// The items of the last page not taken yet.
    buffer: std::vec::IntoIter<I::Item>,
}

// Nothing is pinned in place (see `Pages`); the items wait in a vector.
impl<S, E, I: Paginated<O>, O> Unpin for Items<S, E, I, O> {}

impl<S, E, I: Paginated<O>, O> Items<S, E, I, O> {
    /// The next item, `None` after the last one or after an error: `Stream::next` without
    /// importing a stream extension trait.
    pub async fn next(&mut self) -> Option<Result<I::Item, ClientError>>
    where
        Self: Stream<Item = Result<I::Item, ClientError>>,
    {
        poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl<S, E, I: Paginated<O>, O> Stream for Items<S, E, I, O>
where
    Pages<S, E, I, O>: Stream<Item = Result<O, ClientError>>,
{
    type Item = Result<I::Item, ClientError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = this.buffer.next() {
                return Poll::Ready(Some(Ok(item)));
            }
            // An empty page is skipped: the next one is asked for at once.
            match ready!(Pin::new(&mut this.pages).poll_next(cx)) {
                Some(Ok(page)) => this.buffer = I::into_items(page).into_iter(),
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                None => return Poll::Ready(None),
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let waiting = self.buffer.len();
        match self.pages.state {
            State::Done => (waiting, Some(waiting)),
            _ => (waiting, None),
        }
    }
}

impl<S, E, I: Paginated<O>, O> FusedStream for Items<S, E, I, O>
where
    Self: Stream,
    Pages<S, E, I, O>: FusedStream,
{
    fn is_terminated(&self) -> bool {
        self.buffer.len() == 0 && self.pages.is_terminated()
    }
}

impl<S, E, I: Paginated<O>, O> fmt::Debug for Items<S, E, I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Items")
            .field("pages", &self.pages)
            .field("waiting", &self.buffer.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::convert::Infallible;
    use std::sync::{Arc, Mutex};

    use bytes::Bytes;
    use http::{Request, Response};
    use http_body_util::Full;
    use serde::Deserialize;
    use serde_json::json;
    use strata_paginate::{Cursor, NoFilters, Offset, Page, pagination};
    use tower::Service;

    use super::*;

    pagination! { Letters: offset { items_name: "letters", max_limit: 5, default_limit: 3 } }
    pagination! { Chain: cursor { items_name: "letters", max_limit: 5, default_limit: 3 } }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Tagged {
        tag: String,
    }

    const LETTERS: Operation<OffsetInput<Letters, Tagged>, OffsetPage<Letters, String>> =
        Operation::get("/letters");
    const CHAIN: Operation<CursorInput<Chain>, CursorPage<Chain, String>> =
        Operation::get("/chain");

    /// What the fake server saw: each request's query and `token` header.
    type Seen = Arc<Mutex<Vec<(HashMap<String, String>, Option<String>)>>>;

    /// A server of `a..=g` as offset pages (`/letters`, each letter with the request's `tag`
    /// appended) and as cursor pages (`/chain`, the cursor being the next index; `"4"` an empty
    /// page continued at `"4+"`; the cursor of index 6, `"stale"`, refused with 400).
    fn server(
        seen: &Seen,
    ) -> impl Service<
        Request<crate::Body>,
        Response = Response<Full<Bytes>>,
        Error = Infallible,
        Future: Send,
    > + Clone
    + Send
    + Sync
    + use<> {
        let seen = seen.clone();
        tower::service_fn(move |request: Request<crate::Body>| {
            let query: HashMap<String, String> =
                form_urlencoded::parse(request.uri().query().unwrap_or("").as_bytes())
                    .into_owned()
                    .collect();
            let token = request
                .headers()
                .get("token")
                .map(|t| t.to_str().unwrap().to_owned());
            seen.lock().unwrap().push((query.clone(), token));
            let letters: Vec<String> = ('a'..='g').map(String::from).collect();
            let number = |name: &str, default: usize| {
                query.get(name).map_or(default, |v| v.parse().unwrap())
            };
            let limit = number("limit", 3);
            let (status, body) = if request.uri().path() == "/letters" {
                let offset = number("offset", 0);
                let tag = query.get("tag").cloned().unwrap_or_default();
                let page: Vec<String> = letters
                    .iter()
                    .skip(offset)
                    .take(limit)
                    .map(|l| format!("{l}{tag}"))
                    .collect();
                let data = json!({"letters": page, "total": 7, "limit": limit, "offset": offset});
                (200, json!({"status": "success", "data": data}))
            } else if query.get("cursor").map(String::as_str) == Some("stale") {
                let error = json!({"message": "cursor: stale"});
                (400, json!({"status": "error", "error": error}))
            } else {
                let cursor = query.get("cursor").map(String::as_str);
                let at: usize = cursor.map_or(0, |c| c.trim_end_matches('+').parse().unwrap());
                let (end, next) = if cursor == Some("4") {
                    // An empty page, continued (a server that skipped what was deleted).
                    (4, Some("4+".to_owned()))
                } else {
                    let end = (at + limit).min(7);
                    let next = (end < 7).then(|| match end {
                        6 => "stale".to_owned(),
                        _ => end.to_string(),
                    });
                    (end, next)
                };
                let page = &letters[at..end];
                let data = json!({"letters": page, "nextCursor": next, "limit": limit});
                (200, json!({"status": "success", "data": data}))
            };
            let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
            *response.status_mut() = http::StatusCode::from_u16(status).unwrap();
            async move { Ok(response) }
        })
    }

    /// Compiles when `T` can move to another task.
    fn sendable<T: Send>(_: &T) {}

    fn offsets(seen: &Seen) -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .map(|(query, _)| query.get("offset").cloned().unwrap_or_default())
            .collect()
    }

    #[tokio::test]
    async fn offset_pages_are_asked_for_one_by_one_with_the_same_filters_and_headers() {
        let seen = Seen::default();
        let token = HeaderName::from_static("token");
        let client =
            Client::new(server(&seen)).header(token.clone(), HeaderValue::from_static("client"));
        let tagged = Tagged { tag: "!".into() };
        let mut pages = client
            .pages(&LETTERS, OffsetInput::first(tagged))
            .header(token, HeaderValue::from_static("pages"));
        sendable(&pages);
        assert!(
            seen.lock().unwrap().is_empty(),
            "nothing asked before polled"
        );
        let first = pages.next().await.unwrap().unwrap();
        assert_eq!(first.items, ["a!", "b!", "c!"]);
        assert_eq!(offsets(&seen), ["0"], "one request per page taken");
        let mut rest = Vec::new();
        while let Some(page) = pages.next().await {
            rest.push(page.unwrap().items);
        }
        assert_eq!(rest, [vec!["d!", "e!", "f!"], vec!["g!"]]);
        assert_eq!(offsets(&seen), ["0", "3", "6"]);
        assert!(pages.is_terminated());
        assert!(pages.next().await.is_none());
        for (query, token) in seen.lock().unwrap().iter() {
            assert_eq!(query["tag"], "!");
            assert_eq!(query["limit"], "3");
            assert_eq!(token.as_deref(), Some("pages"), "the stream's header wins");
        }

        // Items, pages of 5, with the client's header.
        seen.lock().unwrap().clear();
        let tagged = Tagged { tag: "?".into() };
        let mut items = client
            .pages(&LETTERS, OffsetInput::first(tagged).with_limit(5))
            .items();
        let mut letters = String::new();
        while let Some(letter) = items.next().await {
            letters.push_str(&letter.unwrap());
        }
        assert_eq!(letters, "a?b?c?d?e?f?g?");
        assert_eq!(offsets(&seen), ["0", "5"]);
        assert!(items.is_terminated());
        let (_, token) = &seen.lock().unwrap()[0];
        assert_eq!(token.as_deref(), Some("client"));
    }

    #[tokio::test]
    async fn cursor_pages_follow_next_cursor_and_end_at_the_first_error() {
        let seen = Seen::default();
        let client = Client::new(server(&seen));
        let mut items = client
            .pages(&CHAIN, CursorInput::first(NoFilters).with_limit(2))
            .items();
        let mut taken = Vec::new();
        let error = loop {
            match items.next().await.unwrap() {
                Ok(letter) => taken.push(letter),
                Err(error) => break error,
            }
        };
        // a b | c d | (empty) | e f | refused: the empty page skipped.
        assert_eq!(taken, ["a", "b", "c", "d", "e", "f"]);
        assert_eq!(error.status(), Some(http::StatusCode::BAD_REQUEST));
        assert_eq!(error.message(), Some("cursor: stale"));
        assert!(items.next().await.is_none(), "nothing after the error");
        assert!(items.is_terminated());
        let cursors: Vec<Option<String>> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|(query, _)| query.get("cursor").cloned())
            .collect();
        let expected = [None, Some("2"), Some("4"), Some("4+"), Some("stale")];
        assert_eq!(cursors, expected.map(|c| c.map(str::to_owned)));
    }

    #[test]
    fn the_next_input_moves_forward_or_is_none() {
        let input = OffsetInput::<Letters>::new(3, 3, NoFilters);
        let page = |offset, limit, total| {
            let meta = Offset {
                total,
                limit,
                offset,
            };
            Page::<Letters, u8, Offset>::from_parts(Vec::new(), meta)
        };
        let next = input.clone().next_input(&page(3, 3, 7)).unwrap();
        assert_eq!((next.limit, next.offset), (3, 6));
        assert!(input.clone().next_input(&page(3, 3, 6)).is_none());
        assert!(
            input.clone().next_input(&page(3, 0, 9)).is_none(),
            "no progress"
        );
        assert!(input.next_input(&page(u64::MAX, 3, u64::MAX)).is_none());

        let input = CursorInput::<Chain>::new(2, Some("x".into()), NoFilters);
        let page = |next: Option<&str>| {
            let meta = Cursor {
                next_cursor: next.map(str::to_owned),
                limit: 2,
            };
            Page::<Chain, u8, Cursor>::from_parts(vec![1], meta)
        };
        let next = input.clone().next_input(&page(Some("y"))).unwrap();
        assert_eq!(next.cursor.as_deref(), Some("y"));
        assert!(input.clone().next_input(&page(None)).is_none());
        assert!(
            input.next_input(&page(Some("x"))).is_none(),
            "the same page"
        );
        assert_eq!(
            <CursorInput<Chain> as Paginated<_>>::into_items(page(None)),
            [1]
        );
    }
}
