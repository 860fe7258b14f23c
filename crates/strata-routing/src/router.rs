//! The routing service: trie lookup, method dispatch, HEAD, OPTIONS, CORS.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use http::header::{ALLOW, CONTENT_LENGTH};
use http::request::Parts;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body::Body as _;
use strata_core::error_response;
use strata_core::{
    ApiError, Body, ErrorHandler, ErrorKind, HeadBody, IncomingBody, Logger, PathParams, echoed,
};
use strata_cors::{ACCESS_CONTROL_REQUEST_METHOD, Cors, CorsHeaders};
use strata_endpoint::{Endpoint, EndpointFuture, PipelineSettings, into_request_body};
use strata_input::InputSource;
use strata_input::text::percent_decode;
use tower_service::Service;

use crate::compile::{Compiled, PathTable, compile};
use crate::error::RoutingError;
use crate::settings::{RouterSettings, WrongMethodBehavior};
use crate::tree::Routing;

struct Shared {
    compiled: Compiled,
    cors: Cors,
    wrong_method: WrongMethodBehavior,
    errors: Option<ErrorHandler>,
}

impl Shared {
    fn error(&self, error: ApiError, parts: &Parts) -> Response<Body> {
        let kind = error.kind();
        let mut response = ErrorHandler::respond_or_default(self.errors.as_ref(), error, parts);
        // Says why to the layers above (metrics count refusals by it): an error response only.
        response.extensions_mut().insert(kind);
        response
    }
}

/// A compiled [`Routing`]: one tower service for every route, with `Error = Infallible`.
///
/// Built once at startup by [`Router::new`], which checks the tree and returns a
/// [`RoutingError`] instead of serving something wrong. Cloning is cheap.
#[derive(Clone)]
pub struct Router {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("paths", &self.shared.compiled.tables.len())
            .field("cors", &self.shared.cors)
            .finish_non_exhaustive()
    }
}

impl Router {
    /// Compiles `routing` for `config` (a [`RoutingSettings`](crate::RoutingSettings), or a server's
    /// configuration: anything that lends [`RouterSettings`] and [`PipelineSettings`]): flattens
    /// and checks the tree, builds the trie and every endpoint's service.
    ///
    /// Warnings go to the default logger (`tracing`): one for each path parameter of a method
    /// that merges headers into its input, since a header of that name is ignored (the path
    /// wins, see [`InputSource::Headers`](strata_input::InputSource::Headers)).
    pub fn new<C>(routing: &Routing, config: &C) -> Result<Self, RoutingError>
    where
        C: AsRef<RouterSettings> + AsRef<PipelineSettings>,
    {
        Self::with_logger(routing, config, &Logger::tracing())
    }

    /// [`Router::new`], its startup warnings sent to `logger`.
    pub fn with_logger<C>(
        routing: &Routing,
        config: &C,
        logger: &Logger,
    ) -> Result<Self, RoutingError>
    where
        C: AsRef<RouterSettings> + AsRef<PipelineSettings>,
    {
        let router: &RouterSettings = config.as_ref();
        let pipeline: &PipelineSettings = config.as_ref();
        let compiled = compile(routing, router, pipeline)?;
        let cors = router.cors.clone().ok_or(RoutingError::CorsNotConfigured)?;
        let built = Self {
            shared: Arc::new(Shared {
                compiled,
                cors,
                wrong_method: router.wrong_method_behavior,
                errors: router.error_handler.clone(),
            }),
        };
        built.warn_of_ignored_headers(pipeline, logger);
        Ok(built)
    }

    /// Warns of each path parameter a header could name on a method that merges both: the
    /// combine stage leaves such a header out (the path wins), which its sender may not expect.
    fn warn_of_ignored_headers(&self, pipeline: &PipelineSettings, logger: &Logger) {
        for route in self.routes() {
            let sources = pipeline.input_sources.for_method(route.method());
            if !(sources.contains(&InputSource::Headers) && sources.contains(&InputSource::Params))
            {
                continue;
            }
            // Header names reach the input in lower case: `:userId` meets no header.
            for param in route
                .params()
                .filter(|name| !name.bytes().any(|b| b.is_ascii_uppercase()))
            {
                logger.warn(format_args!(
                    "{method} {path}: header `{param}` is ignored, the path parameter of that \
                     name wins (headers are an input source of {method})",
                    method = route.method(),
                    path = route.path(),
                ));
            }
        }
    }

    /// The route template a request for `method` and `path` reaches (`/v1/users/:id` as the
    /// routing writes it; a static directory's mount path), or `None` when no route has that
    /// path. A known path requested with a method it does not answer gives the template of
    /// its first method: the request is still about that route (a 405). For labels that must
    /// not grow with what clients send (metrics): one lookup in the trie, no allocation.
    pub fn route_template(&self, method: &Method, path: &str) -> Option<&Arc<str>> {
        let found = self
            .shared
            .compiled
            .trie
            .at(trim_trailing_slash(path))
            .ok()?;
        let table = &self.shared.compiled.tables[*found.value];
        table
            .find(method)
            .or_else(|| table.methods.first().map(|(_, target)| target))
            .or(table.statics.as_ref())
            .map(|target| &target.path)
    }

    /// Every route template [`route_template`](Self::route_template) can give, each once per
    /// method (the same `Arc`s it returns: a caller may key a table by their addresses).
    pub fn route_templates(&self) -> impl Iterator<Item = &Arc<str>> {
        self.shared.compiled.tables.iter().flat_map(|table| {
            table
                .methods
                .iter()
                .map(|(_, target)| &target.path)
                .chain(table.statics.as_ref().map(|target| &target.path))
        })
    }

    pub(crate) fn compiled(&self) -> &Compiled {
        &self.shared.compiled
    }
}

impl Shared {
    /// What CORS adds to the response to `parts`, for a path (`None`: unknown) and an
    /// endpoint.
    fn cors_headers(
        &self,
        parts: &Parts,
        table: Option<&PathTable>,
        endpoint: Option<&Endpoint>,
    ) -> CorsHeaders {
        let path = table.map_or(&self.compiled.not_found_cors, |table| &table.cors);
        self.cors.headers(parts, path, endpoint.map(Endpoint::meta))
    }
}

/// `/v1/hello/` is `/v1/hello`; `//` and `/v1/hello//` stay as they are (and match nothing).
fn trim_trailing_slash(path: &str) -> &str {
    match path.strip_suffix('/') {
        Some(trimmed) if !trimmed.is_empty() && !trimmed.ends_with('/') => trimmed,
        _ => path,
    }
}

impl<B> Service<Request<B>> for Router
where
    B: IncomingBody,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = RouterFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Endpoint services are driven to readiness per request (`Oneshot`).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> RouterFuture {
        let shared = &*self.shared;
        let (mut parts, body) = request.into_parts();
        let path = parts.uri.path();
        let Ok(found) = shared.compiled.trie.at(trim_trailing_slash(path)) else {
            let response = shared.error(ApiError::route_not_found(&parts.method, path), &parts);
            return RouterFuture::ready(response, shared.cors_headers(&parts, None, None));
        };
        let table = &shared.compiled.tables[*found.value];
        if parts.method == Method::OPTIONS && shared.cors.is_enabled() && table.statics.is_none() {
            // A preflight names the method it asks about; its endpoint is the one CORS
            // functions see.
            let asked = parts
                .headers
                .get(ACCESS_CONTROL_REQUEST_METHOD)
                .and_then(|m| Method::from_bytes(m.as_bytes()).ok());
            let endpoint = asked
                .and_then(|m| table.find(&m))
                .or_else(|| table.methods.first().map(|(_, t)| t))
                .and_then(|t| t.endpoint.as_ref());
            let cors = shared.cors_headers(&parts, Some(table), endpoint);
            return RouterFuture::ready(Response::new(Body::empty()), cors);
        }
        let Some(target) = table.find(&parts.method) else {
            let cors = shared.cors_headers(&parts, Some(table), None);
            // Static files answer GET and HEAD only; other methods find nothing there.
            let (Some(allow), WrongMethodBehavior::MethodNotAllowed) =
                (&table.allow, shared.wrong_method)
            else {
                let response = shared.error(ApiError::route_not_found(&parts.method, path), &parts);
                return RouterFuture::ready(response, cors);
            };
            let error = ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{} is not allowed", echoed(parts.method.as_str())),
            )
            .with_kind(ErrorKind::Routing)
            .with_header(ALLOW, allow.clone());
            return RouterFuture::ready(shared.error(error, &parts), cors);
        };
        if !target.params.is_empty() {
            let mut params = PathParams::with_capacity(target.params.len());
            for ((_, raw), name) in found.params.iter().zip(target.params.iter()) {
                match percent_decode(raw.as_bytes(), false, 0) {
                    Ok(value) => params.push(Arc::clone(name), value.into_owned()),
                    Err(error) => {
                        let error = ApiError::bad_request(
                            ErrorKind::Parse,
                            format!("Invalid path parameter :{name}: {error}"),
                        );
                        let cors =
                            shared.cors_headers(&parts, Some(table), target.endpoint.as_ref());
                        return RouterFuture::ready(shared.error(error, &parts), cors);
                    }
                }
            }
            parts.extensions.insert(params);
        }
        let head = parts.method == Method::HEAD && table.statics.is_none();
        let cors = shared.cors_headers(&parts, Some(table), target.endpoint.as_ref());
        let request = Request::from_parts(parts, into_request_body(body));
        RouterFuture::call(target.service.call_shared(request), head, cors)
    }
}

enum State {
    /// Boxed: answers without an endpoint (404, 405, preflights), and an endpoint's answer
    /// waiting for an asynchronous CORS function, are rare; inline, a response would double
    /// the size of every request's future.
    Ready(Option<Box<Response<Body>>>),
    Calling(EndpointFuture),
}

/// Response future of [`Router`].
pub struct RouterFuture {
    state: State,
    head: bool,
    cors: CorsHeaders,
}

impl RouterFuture {
    fn ready(response: Response<Body>, cors: CorsHeaders) -> Self {
        Self {
            state: State::Ready(Some(Box::new(response))),
            head: false,
            cors,
        }
    }

    fn call(call: EndpointFuture, head: bool, cors: CorsHeaders) -> Self {
        Self {
            state: State::Calling(call),
            head,
            cors,
        }
    }
}

impl Future for RouterFuture {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut answered = None;
        if let State::Calling(call) = &mut this.state {
            answered = Some(match ready!(call.as_mut().poll(cx)) {
                Ok(response) => response,
                Err(never) => match never {},
            });
            // Done with: polled again, the future answers "polled after completion".
            this.state = State::Ready(None);
        }
        if this.cors.poll_ready(cx).is_pending() {
            if let Some(response) = answered {
                this.state = State::Ready(Some(Box::new(response)));
            }
            return Poll::Pending;
        }
        let mut response = if let Some(response) = answered {
            response
        } else {
            let State::Ready(response) = &mut this.state else {
                unreachable_state()
            };
            response.take().map_or_else(
                || error_response(ApiError::internal("router future polled after completion")),
                |response| *response,
            )
        };
        if this.head {
            // HEAD: the headers GET would send, with the length of the body it would send. A
            // 304 or 204 sends none: a length there would claim the 200's (RFC 9110 §8.6).
            let bodiless = matches!(
                response.status(),
                StatusCode::NOT_MODIFIED | StatusCode::NO_CONTENT
            );
            if !bodiless && let Some(length) = response.body().size_hint().exact() {
                response
                    .headers_mut()
                    .insert(CONTENT_LENGTH, HeaderValue::from(length));
            }
            let body = std::mem::take(response.body_mut());
            // Kept for the layers above that describe the body (an `ETag`): no copy.
            if let Some(bytes) = body.into_bytes().filter(|bytes| !bytes.is_empty()) {
                response.extensions_mut().insert(HeadBody(bytes));
            }
        }
        std::mem::replace(&mut this.cors, CorsHeaders::none()).apply(&mut response);
        Poll::Ready(Ok(response))
    }
}

#[allow(clippy::panic)] // `Calling` is replaced by `Ready` just above
fn unreachable_state() -> ! {
    unreachable!("the router future is ready once its call has completed")
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use strata_core::{Level, LogSink};

    use super::*;
    use crate::walk::tests::endpoint;
    use crate::{Nest, RoutingSettings, routing};

    #[derive(Default)]
    struct Capture(Mutex<Vec<(Level, String)>>);

    impl LogSink for Capture {
        fn log(&self, level: Level, message: std::fmt::Arguments<'_>) {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((level, message.to_string()));
        }
    }

    /// The warnings of compiling `routing` with headers merged for POST.
    fn warnings(routing: &Routing, sources: &[InputSource]) -> Vec<(Level, String)> {
        let mut config = RoutingSettings::new(Cors::Disabled);
        config.pipeline.input_sources.set(&Method::POST, sources);
        let capture = Arc::new(Capture::default());
        let logger = Logger::with_sink(capture.clone());
        Router::with_logger(routing, &config, &logger).unwrap_or_else(|error| panic!("{error}"));
        let records = capture
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        records.clone()
    }

    #[test]
    fn the_route_template_of_a_request_is_the_routing_s_never_the_raw_path() {
        let tree = routing! {
            "v1" => {
                "books" => {
                    ":id" => endpoint(&[Method::GET], &["id"]),
                    ":bookId" => endpoint(&[Method::POST], &["bookId"]),
                },
                "hello" => endpoint(&[Method::GET], &[]),
            },
        };
        let router = Router::new(&tree, &RoutingSettings::new(Cors::Disabled))
            .unwrap_or_else(|error| panic!("{error}"));
        let template = |method: Method, path: &str| {
            router
                .route_template(&method, path)
                .map(ToString::to_string)
        };
        let books = |param: &str| Some(format!("/v1/books/:{param}"));
        assert_eq!(template(Method::GET, "/v1/books/42"), books("id"));
        assert_eq!(template(Method::HEAD, "/v1/books/42/"), books("id"));
        // One shape, a parameter name per method.
        assert_eq!(template(Method::POST, "/v1/books/42"), books("bookId"));
        // A method the path does not answer (a 405): still that route.
        assert_eq!(
            template(Method::DELETE, "/v1/hello"),
            Some("/v1/hello".into())
        );
        assert_eq!(template(Method::GET, "/v1/nowhere"), None);
        assert_eq!(template(Method::GET, "/v1/hello/x"), None);
        // The very `Arc`s the lookup gives.
        let found = router
            .route_template(&Method::POST, "/v1/books/1")
            .unwrap_or_else(|| panic!("a route"));
        assert!(router.route_templates().any(|t| Arc::ptr_eq(t, found)));
        let mut all: Vec<&str> = router.route_templates().map(|t| &**t).collect();
        all.sort_unstable();
        assert_eq!(all, ["/v1/books/:bookId", "/v1/books/:id", "/v1/hello"]);
    }

    #[test]
    fn a_path_parameter_of_a_method_merging_headers_is_a_warning() {
        use InputSource::{Body, Headers, Params};
        let tree = routing! {
            "hooks" => { ":topic" => endpoint(&[Method::POST], &["topic"]) },
            // GET merges no headers; `:userId` is no header's name; `/plain` has no parameter.
            "users" => endpoint(&[Method::GET], &[]).nest(routing! {
                ":userId" => endpoint(&[Method::GET, Method::POST], &["userId"]),
                "/:id/posts" => endpoint(&[Method::GET, Method::POST], &["id"]),
            }),
            "plain" => endpoint(&[Method::POST], &[]),
        };
        let expected = [
            "POST /hooks/:topic: header `topic` is ignored, the path parameter of that name \
             wins (headers are an input source of POST)",
            "POST /users/:id/posts: header `id` is ignored, the path parameter of that name \
             wins (headers are an input source of POST)",
        ];
        for sources in [[Body, Params, Headers], [Headers, Body, Params]] {
            let records = warnings(&tree, &sources);
            assert_eq!(
                records,
                expected.map(|line| (Level::Warn, line.to_owned())),
                "{sources:?}"
            );
        }
        assert_eq!(
            warnings(&tree, &[Body, Params]),
            [],
            "no headers, no warning"
        );
        assert_eq!(
            warnings(&tree, &[Body, Headers]),
            [],
            "no parameters in the input, nothing ignored"
        );
    }
}
