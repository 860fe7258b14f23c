//! The plain hyper reference: a `service_fn` doing the work by hand (matchit routing,
//! `serde_urlencoded` and `serde_json` parsing, garde validation, the same envelope).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use garde::Validate;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde::de::DeserializeOwned;

use crate::model::{
    BulkOrder, CatalogInput, GENERATED_ROUTES, HelloInput, Order, Pong, UserInput, UserOutput,
    authenticate, catalog, describe_report, error_body, generated_path, hello, success_body,
    summarize, summarize_bulk,
};

const JSON: HeaderValue = HeaderValue::from_static("application/json; charset=utf-8");
const GET_METHODS: HeaderValue = HeaderValue::from_static("GET, HEAD, OPTIONS");
const POST_METHODS: HeaderValue = HeaderValue::from_static("POST, OPTIONS");
/// Strata's default body limit (1 MiB), which the large-input body (~100 KiB) is well within.
const BODY_LIMIT: usize = 1 << 20;

#[derive(Debug, Clone, Copy)]
enum Route {
    Hello,
    Orders,
    BulkOrders,
    Products,
    User,
    Generated,
}

impl Route {
    fn allow(self) -> HeaderValue {
        match self {
            Route::Orders | Route::BulkOrders => POST_METHODS,
            Route::Hello | Route::Products | Route::User | Route::Generated => GET_METHODS,
        }
    }
}

/// The hyper reference application.
#[derive(Clone)]
pub(crate) struct HyperApp {
    router: Arc<matchit::Router<Route>>,
}

type Reply = Response<Full<Bytes>>;

fn json(status: StatusCode, body: Vec<u8>) -> Reply {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

fn error(status: StatusCode, message: &str) -> Reply {
    json(status, error_body(message))
}

/// Why an input was refused: the status and the message of the error answer.
type Refusal = (StatusCode, String);

/// `input` when it passes its rules, else the 400 listing the problems.
fn validated<T>(input: T) -> Result<T, Refusal>
where
    T: Validate,
    T::Context: Default,
{
    match input.validate() {
        Ok(()) => Ok(input),
        Err(report) => Err((StatusCode::BAD_REQUEST, describe_report(&report))),
    }
}

/// The query of `request` read as a `T` and validated, or the 400 saying why not.
fn validated_query<T>(request: &Request<Incoming>) -> Result<T, Refusal>
where
    T: DeserializeOwned + Validate,
    T::Context: Default,
{
    let query = request.uri().query().unwrap_or("");
    serde_urlencoded::from_str::<T>(query)
        .map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))
        .and_then(validated)
}

/// The JSON body of `request` (at most [`BODY_LIMIT`] bytes) read as a `T` and validated, or
/// the 415, 413 or 400 saying why not.
async fn validated_json<T>(request: Request<Incoming>) -> Result<T, Refusal>
where
    T: DeserializeOwned + Validate,
    T::Context: Default,
{
    let json_body = request
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !json_body {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "expected JSON".to_owned(),
        ));
    }
    let body = Limited::new(request.into_body(), BODY_LIMIT)
        .collect()
        .await
        .map_err(|e| (StatusCode::PAYLOAD_TOO_LARGE, e.to_string()))?
        .to_bytes();
    serde_json::from_slice::<T>(&body)
        .map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))
        .and_then(validated)
}

impl HyperApp {
    /// The routes of every scenario, plus the generated ones when `many_routes`.
    pub(crate) fn new(many_routes: bool) -> Self {
        let mut router = matchit::Router::new();
        let mut insert = |path: &str, route| {
            router
                .insert(path, route)
                .unwrap_or_else(|e| panic!("route {path}: {e}"));
        };
        insert("/v1/hello", Route::Hello);
        insert("/v1/orders", Route::Orders);
        insert("/v1/bulk-orders", Route::BulkOrders);
        insert("/v1/products", Route::Products);
        insert("/v1/users/{id}", Route::User);
        if many_routes {
            for i in 0..GENERATED_ROUTES {
                insert(&generated_path(i), Route::Generated);
            }
        }
        Self {
            router: Arc::new(router),
        }
    }

    /// Answers one request.
    pub(crate) async fn handle(self, request: Request<Incoming>) -> Result<Reply, Infallible> {
        let path = request.uri().path();
        let mut response = match self.router.at(path) {
            Err(_) => error(
                StatusCode::NOT_FOUND,
                &format!("Can not {} {path}", request.method()),
            ),
            Ok(found) => {
                let route = *found.value;
                let id = found.params.get("id").map(str::to_owned);
                Self::route(route, id, request).await
            }
        };
        // The CORS header of Strata's answers: the methods and allowed headers go on
        // preflights only, and no scenario is one.
        response
            .headers_mut()
            .insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        Ok(response)
    }

    async fn route(route: Route, id: Option<String>, request: Request<Incoming>) -> Reply {
        let method = request.method();
        let allowed = match route {
            Route::Orders | Route::BulkOrders => method == Method::POST,
            _ => method == Method::GET || method == Method::HEAD,
        };
        if !allowed {
            let mut response = error(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("{method} is not allowed"),
            );
            response.headers_mut().insert(ALLOW, route.allow());
            return response;
        }
        match route {
            Route::Hello => match validated_query::<HelloInput>(&request) {
                Ok(input) => json(StatusCode::OK, success_body(&hello(&input))),
                Err((status, message)) => error(status, &message),
            },
            Route::Products => match validated_query::<CatalogInput>(&request) {
                Ok(input) => json(StatusCode::OK, success_body(&catalog(&input))),
                Err((status, message)) => error(status, &message),
            },
            Route::Orders => match validated_json::<Order>(request).await {
                Ok(order) => json(StatusCode::OK, success_body(&summarize(order))),
                Err((status, message)) => error(status, &message),
            },
            Route::BulkOrders => match validated_json::<BulkOrder>(request).await {
                Ok(order) => json(StatusCode::OK, success_body(&summarize_bulk(order))),
                Err((status, message)) => error(status, &message),
            },
            Route::User => {
                let token = request.headers().get("token").map(HeaderValue::as_bytes);
                let Some(user) = authenticate(token) else {
                    return error(StatusCode::UNAUTHORIZED, "Invalid token");
                };
                let input = UserInput {
                    id: id.unwrap_or_default(),
                };
                match input.validate() {
                    Err(report) => error(StatusCode::BAD_REQUEST, &describe_report(&report)),
                    Ok(()) => json(
                        StatusCode::OK,
                        success_body(&UserOutput {
                            id: input.id,
                            name: user.name,
                        }),
                    ),
                }
            }
            Route::Generated => json(StatusCode::OK, success_body(&Pong { pong: true })),
        }
    }
}

/// Binds `addr` and serves the hyper reference on it: the usual hand-written accept loop, one
/// task per connection, HTTP/1.1 or HTTP/2 by preface, like the other two. Call from a tokio
/// runtime.
pub(crate) async fn spawn(
    addr: std::net::SocketAddr,
    many_routes: bool,
) -> std::io::Result<(std::net::SocketAddr, tokio::task::JoinHandle<()>)> {
    use hyper::service::service_fn;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let app = HyperApp::new(many_routes);
    let task = tokio::spawn(async move {
        let builder = auto::Builder::new(TokioExecutor::new());
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let app = app.clone();
            let builder = builder.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| app.clone().handle(request));
                let _ = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok((addr, task))
}
