//! Weak `ETag`s for responses held in memory, and 304s for a matching `If-None-Match`.

use std::future::Future;
use std::hash::{DefaultHasher, Hasher as _};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::header::{CONTENT_LENGTH, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use pin_project_lite::pin_project;
use strata_core::{Body, HeadBody};
use tower_layer::Layer;
use tower_service::Service;

/// Applies [`ETag`]: weak `ETag`s for responses held in memory, and 304s for a matching
/// `If-None-Match`.
///
/// As express does for every response (Strata only when asked: `create_config().etags(ETags::Weak)`,
/// or this layer in any tower stack): a successful GET whose body is in memory (JSON, text)
/// gets `ETag: W/"<length>-<hash>"`; a request whose `If-None-Match` names that tag gets a 304
/// with the same headers and no body. Streamed bodies are left alone (static files carry their
/// own `ETag`); with compression on, the server takes the tag before compressing.
///
/// ```
/// use http::{Request, Response, StatusCode};
/// use strata_core::Body;
/// use strata_server::ETagLayer;
/// use tower::{ServiceBuilder, ServiceExt, service_fn};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let app = ServiceBuilder::new().layer(ETagLayer::new()).service(service_fn(|_: Request<()>| async {
///     Ok::<_, std::convert::Infallible>(Response::new(Body::from(r#"{"a":1}"#)))
/// }));
/// let first = app.clone().oneshot(Request::new(())).await.unwrap();
/// let tag = first.headers()["etag"].clone();
/// assert!(tag.to_str().unwrap().starts_with("W/\""));
///
/// let again = Request::builder().header("if-none-match", tag).body(()).unwrap();
/// let cached = app.oneshot(again).await.unwrap();
/// assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ETagLayer {
    _priv: (),
}

impl ETagLayer {
    /// A layer giving in-memory GET responses an `ETag`.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<S> Layer<S> for ETagLayer {
    type Service = ETag<S>;

    fn layer(&self, inner: S) -> ETag<S> {
        ETag { inner }
    }
}

/// Gives successful GET responses held in memory a weak `ETag`, and answers a matching
/// `If-None-Match` with 304; see [`ETagLayer`].
#[derive(Debug, Clone)]
pub struct ETag<S> {
    inner: S,
}

impl<S> ETag<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Self { inner }
    }

    strata_core::inner_service_accessors!();
}

impl<S, B> Service<Request<B>> for ETag<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ETagFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // HEAD gets the tag GET would get (from the bytes the router kept, `HeadBody`).
        let get = request.method() == Method::GET || request.method() == Method::HEAD;
        let if_none_match = get
            .then(|| request.headers().get(IF_NONE_MATCH).cloned())
            .flatten();
        ETagFuture {
            inner: self.inner.call(request),
            get,
            if_none_match,
        }
    }
}

pin_project! {
    /// Response future of [`ETag`].
    pub struct ETagFuture<F> {
        #[pin]
        inner: F,
        get: bool,
        if_none_match: Option<HeaderValue>,
    }
}

impl<F, E> Future for ETagFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = ready!(this.inner.poll(cx))?;
        if !*this.get
            || response.status() != StatusCode::OK
            || response.headers().contains_key(ETAG)
        {
            return Poll::Ready(Ok(response));
        }
        let tag = match response.extensions().get::<HeadBody>() {
            Some(HeadBody(bytes)) => Some(weak_tag(bytes)),
            None => response.body().bytes().map(weak_tag),
        };
        let Some(tag) = tag else {
            return Poll::Ready(Ok(response));
        };
        let fresh = this
            .if_none_match
            .as_ref()
            .is_some_and(|header| matches(header, &tag));
        response.headers_mut().insert(ETAG, tag);
        if fresh {
            let (mut parts, _) = response.into_parts();
            parts.status = StatusCode::NOT_MODIFIED;
            parts.headers.remove(CONTENT_TYPE);
            parts.headers.remove(CONTENT_LENGTH);
            return Poll::Ready(Ok(Response::from_parts(parts, Body::empty())));
        }
        Poll::Ready(Ok(response))
    }
}

/// `W/"<length in hex>-<64-bit hash in hex>"`: weak, as the bytes, not their representation,
/// are compared (a compressed copy has the same tag).
fn weak_tag(body: &[u8]) -> HeaderValue {
    let mut hasher = DefaultHasher::new();
    hasher.write(body);
    let text = format!("W/\"{:x}-{:x}\"", body.len(), hasher.finish());
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("W/\"0\""))
}

/// Whether `If-None-Match` names `tag` (weak comparison, RFC 9110 13.1.2), or is `*`.
fn matches(header: &HeaderValue, tag: &HeaderValue) -> bool {
    let Ok(list) = header.to_str() else {
        return false;
    };
    let opaque = |t: &str| t.trim().trim_start_matches("W/").to_owned();
    let wanted = opaque(tag.to_str().unwrap_or_default());
    list.split(',')
        .any(|candidate| candidate.trim() == "*" || opaque(candidate) == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_compare_weakly_in_lists() {
        let tag = weak_tag(b"{}");
        let text = tag.to_str().unwrap().to_owned();
        assert!(text.starts_with("W/\"2-"));
        assert_eq!(weak_tag(b"{}"), tag, "stable");
        assert_ne!(weak_tag(b"[]"), tag);
        let strong = text.trim_start_matches("W/").to_owned();
        for header in [
            text.clone(),
            strong,
            format!("\"other\", {text}"),
            "*".to_owned(),
        ] {
            assert!(
                matches(&HeaderValue::from_str(&header).unwrap(), &tag),
                "{header}"
            );
        }
        assert!(!matches(&HeaderValue::from_static("\"other\""), &tag));
    }
}
