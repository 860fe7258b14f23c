use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::header::RETRY_AFTER;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use schemars::Schema;
use strata_core::logger::{Level, LogSink};
use strata_core::{
    ApiError, Body, Logger, Mode, Output, RequestInfo, ResponseDescription, http_error,
};
use tower::{Service, ServiceExt, service_fn};

use crate::{DefaultResultHandler, FormatLayer, ResultHandler};

async fn body(response: Response<Body>) -> Bytes {
    response.into_body().collect().await.unwrap().to_bytes()
}

fn request(path: &str) -> Request<()> {
    Request::get(path).body(()).unwrap()
}

fn outcome(path: &str) -> Result<Output, ApiError> {
    match path {
        "/ok" => Ok(Output::new(&serde_json::json!({"a": [1, 2]}))?),
        "/created" => Ok(Output::new(&1)?.with_status(StatusCode::CREATED)),
        "/limited" => Err(http_error!(429, "Too many \"requests\"")
            .with_header(RETRY_AFTER, HeaderValue::from_static("7"))),
        "/secret" => Err(http_error!(403, "internal detail").exposed(false)),
        "/crash" => Err(ApiError::internal("database is down")),
        "/empty-stream" => Ok(Output::streamed(
            StatusCode::OK,
            http::HeaderMap::new(),
            Body::empty(),
        )),
        "/unchanged" => {
            let mut headers = http::HeaderMap::new();
            headers.insert("etag", HeaderValue::from_static("\"v1\""));
            let mut output = Output::not_modified(headers);
            output.extensions_mut().insert(Marker);
            Ok(output)
        }
        "/panic" => panic!("handler exploded"),
        _ => Err(http_error!(404, "Not found")),
    }
}

/// An extension an output carries to the response.
#[derive(Clone, Debug, PartialEq)]
struct Marker;

fn service(
    mode: Mode,
) -> impl Service<Request<()>, Response = Response<Body>, Error = std::convert::Infallible> + Clone
{
    tower_layer::Layer::layer(
        &FormatLayer::new(DefaultResultHandler).mode(mode),
        service_fn(|request: Request<()>| {
            let path = request.uri().path().to_owned();
            assert!(path != "/panic-in-call", "call exploded");
            async move { outcome(&path) }
        }),
    )
}

#[tokio::test]
async fn success_envelope() {
    let response = service(Mode::Development)
        .oneshot(request("/ok"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/json; charset=utf-8"
    );
    assert_eq!(
        body(response).await,
        r#"{"status":"success","data":{"a":[1,2]}}"#
    );
}

#[tokio::test]
async fn an_output_without_a_body_is_sent_as_it_is() {
    let response = service(Mode::Development)
        .oneshot(request("/unchanged"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(response.headers()["etag"], "\"v1\"");
    // Not the result handler's: no envelope, no content type.
    assert_eq!(response.headers().len(), 1);
    assert_eq!(response.extensions().get::<Marker>(), Some(&Marker));
    assert!(http_body::Body::is_end_stream(response.body()));
    assert_eq!(body(response).await, "");
}

#[tokio::test]
async fn an_empty_streamed_200_still_reads_as_streamed() {
    let response = service(Mode::Development)
        .oneshot(request("/empty-stream"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // Not a body in memory: the server's `ETag` layer leaves streamed bodies untagged.
    assert_eq!(response.body().bytes(), None);
    assert_eq!(body(response).await, "");
}

#[tokio::test]
async fn handler_chosen_success_status() {
    let response = service(Mode::Development)
        .oneshot(request("/created"))
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(body(response).await, r#"{"status":"success","data":1}"#);
}

#[tokio::test]
async fn error_envelope_with_status_headers_and_escaping() {
    let response = service(Mode::Development)
        .oneshot(request("/limited"))
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()[RETRY_AFTER], "7");
    assert_eq!(
        body(response).await,
        r#"{"status":"error","error":{"message":"Too many \"requests\""}}"#
    );
}

#[tokio::test]
async fn development_shows_internal_messages() {
    let response = service(Mode::Development)
        .oneshot(request("/crash"))
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(
        body(response).await,
        r#"{"status":"error","error":{"message":"database is down"}}"#
    );
}

#[tokio::test]
async fn production_hides_internal_and_unexposed_messages() {
    let response = service(Mode::Production)
        .oneshot(request("/crash"))
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(
        body(response).await,
        r#"{"status":"error","error":{"message":"Internal Server Error"}}"#
    );
    let response = service(Mode::Production)
        .oneshot(request("/secret"))
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(
        body(response).await,
        r#"{"status":"error","error":{"message":"Forbidden"}}"#
    );
    let response = service(Mode::Production)
        .oneshot(request("/nothing"))
        .await
        .unwrap();
    assert_eq!(
        body(response).await,
        r#"{"status":"error","error":{"message":"Not found"}}"#
    );
}

#[tokio::test]
async fn panics_become_500_and_the_service_keeps_serving() {
    let mut service = service(Mode::Development);
    for path in ["/panic", "/panic-in-call"] {
        let response = service
            .ready()
            .await
            .unwrap()
            .call(request(path))
            .await
            .unwrap();
        assert_eq!(response.status(), 500, "{path}");
        let text = body(response).await;
        assert!(
            std::str::from_utf8(&text).unwrap().contains("exploded"),
            "{path}"
        );
    }
    let response = service
        .ready()
        .await
        .unwrap()
        .call(request("/ok"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[derive(Default)]
struct Capture(Mutex<Vec<(Level, String)>>);

impl LogSink for Capture {
    fn log(&self, level: Level, message: std::fmt::Arguments<'_>) {
        self.0.lock().unwrap().push((level, message.to_string()));
    }
}

#[tokio::test]
async fn server_errors_are_logged_with_the_real_message() {
    let capture = Arc::new(Capture::default());
    let mut request = request("/crash");
    request
        .extensions_mut()
        .insert(Logger::with_sink(capture.clone()));
    let response = service(Mode::Production).oneshot(request).await.unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(
        capture.0.lock().unwrap()[0],
        (Level::Error, "GET /crash: 500 database is down".to_owned())
    );
}

#[tokio::test]
async fn overloads_clients_cause_are_one_warning_per_period() {
    let capture = Arc::new(Capture::default());
    let overloaded = tower_layer::Layer::layer(
        &FormatLayer::new(DefaultResultHandler),
        service_fn(|_: Request<()>| async {
            // A message no other test logs: the limit is process-wide.
            Err::<Output, _>(
                http_error!(503, "format test: the budget is spent")
                    .with_kind(strata_core::ErrorKind::Overload)
                    .with_header(RETRY_AFTER, HeaderValue::from_static("1")),
            )
        }),
    );
    for _ in 0..50 {
        let mut request = request("/upload");
        request
            .extensions_mut()
            .insert(Logger::with_sink(capture.clone()));
        let response = overloaded.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()[RETRY_AFTER], "1");
    }
    assert_eq!(
        *capture.0.lock().unwrap(),
        [(
            Level::Warn,
            "GET /upload: 503 format test: the budget is spent".to_owned()
        )]
    );
}

/// A custom envelope: `{"ok":true,"result":...}` / `{"ok":false,"reason":...}`, errors always 200.
#[derive(Clone)]
struct Custom;

impl ResultHandler for Custom {
    fn positive(&self, output: &Schema) -> Vec<ResponseDescription> {
        vec![ResponseDescription::new(StatusCode::OK, output.clone()).mime_type("application/json")]
    }

    fn negative(&self) -> Vec<ResponseDescription> {
        Vec::new()
    }

    fn handle(
        &self,
        result: Result<Output, ApiError>,
        request: &RequestInfo,
        _: &Logger,
    ) -> Response<Body> {
        let body = match result {
            Ok(output) => format!(
                r#"{{"ok":true,"result":{},"path":"{}"}}"#,
                output.data().get(),
                request.uri.path()
            ),
            Err(error) => format!(
                r#"{{"ok":false,"reason":{}}}"#,
                serde_json::to_string(error.message()).unwrap()
            ),
        };
        crate::json_response(StatusCode::OK, body)
    }
}

#[tokio::test]
async fn custom_result_handler_replaces_the_envelope() {
    let service = tower_layer::Layer::layer(
        &FormatLayer::new(Custom),
        service_fn(|request: Request<()>| async move { outcome(request.uri().path()) }),
    );
    let response = service.clone().oneshot(request("/ok")).await.unwrap();
    assert_eq!(
        body(response).await,
        r#"{"ok":true,"result":{"a":[1,2]},"path":"/ok"}"#
    );
    let response = service.oneshot(request("/zzz")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(body(response).await, r#"{"ok":false,"reason":"Not found"}"#);
}

#[test]
fn default_descriptions_wrap_the_output_schema() {
    let output = schemars::json_schema!({"type": "string"});
    let positive = DefaultResultHandler.positive(&output);
    assert_eq!(
        positive[0].schema.as_value()["properties"]["data"],
        *output.as_value()
    );
    assert_eq!(
        DefaultResultHandler.negative()[0].mime_types,
        ["application/json"]
    );
}

/// Panics in `handle`, and reads the request's `accept` header when asked to.
#[derive(Clone)]
struct Fragile;

impl ResultHandler for Fragile {
    const REQUEST_HEADERS: bool = true;

    fn positive(&self, _: &Schema) -> Vec<ResponseDescription> {
        Vec::new()
    }

    fn negative(&self) -> Vec<ResponseDescription> {
        Vec::new()
    }

    fn handle(
        &self,
        result: Result<Output, ApiError>,
        request: &RequestInfo,
        _: &Logger,
    ) -> Response<Body> {
        assert!(result.is_ok(), "this handler cannot format errors");
        let accept = request.headers.get("accept").cloned();
        let mut response = crate::json_response(StatusCode::OK, "{}");
        if let Some(accept) = accept {
            response.headers_mut().insert("x-accepted", accept);
        }
        response
    }
}

#[tokio::test]
async fn a_panicking_result_handler_is_a_500() {
    let capture = Arc::new(Capture::default());
    let service = tower_layer::Layer::layer(
        &FormatLayer::new(Fragile),
        service_fn(|request: Request<()>| async move { outcome(request.uri().path()) }),
    );
    let mut request = request("/nothing");
    request
        .extensions_mut()
        .insert(Logger::with_sink(capture.clone()));
    let response = service.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(
        body(response).await,
        r#"{"status":"error","error":{"message":"Internal Server Error"}}"#
    );
    let last = capture
        .0
        .lock()
        .unwrap()
        .last()
        .map(|(_, message)| message.clone());
    assert_eq!(
        last.as_deref(),
        Some("Result handler failed: Panic: this handler cannot format errors")
    );
    let request = Request::get("/ok")
        .header("accept", "application/json")
        .body(())
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    assert_eq!(response.headers()["x-accepted"], "application/json");
}

#[tokio::test]
async fn error_and_output_headers_reach_custom_envelopes() {
    let service = tower_layer::Layer::layer(
        &FormatLayer::new(Custom),
        service_fn(|request: Request<()>| async move {
            if request.uri().path() == "/made" {
                let mut headers = http::HeaderMap::new();
                headers.insert(http::header::LOCATION, HeaderValue::from_static("/made/1"));
                return Ok(Output::new(&1)?
                    .with_status(StatusCode::CREATED)
                    .with_headers(headers));
            }
            outcome(request.uri().path())
        }),
    );
    let response = service.clone().oneshot(request("/limited")).await.unwrap();
    assert_eq!(response.headers()[RETRY_AFTER], "7");
    let response = service.oneshot(request("/made")).await.unwrap();
    assert_eq!(response.headers()[http::header::LOCATION], "/made/1");
}

/// Fails its readiness once.
#[derive(Clone)]
struct NotReadyOnce(Arc<std::sync::atomic::AtomicBool>);

impl Service<Request<()>> for NotReadyOnce {
    type Response = Output;
    type Error = ApiError;
    type Future = std::future::Ready<Result<Output, ApiError>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), ApiError>> {
        if self.0.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return std::task::Poll::Ready(Err(http_error!(503, "warming up")));
        }
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        std::future::ready(Output::new(&"ready").map_err(ApiError::from))
    }
}

#[tokio::test]
async fn an_inner_readiness_error_answers_the_next_request() {
    let mut service = tower_layer::Layer::layer(
        &FormatLayer::new(DefaultResultHandler).mode(Mode::Development),
        NotReadyOnce(Arc::new(std::sync::atomic::AtomicBool::new(true))),
    );
    let response = service
        .ready()
        .await
        .unwrap()
        .call(request("/"))
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        body(response).await,
        r#"{"status":"error","error":{"message":"warming up"}}"#
    );
    let response = service
        .ready()
        .await
        .unwrap()
        .call(request("/"))
        .await
        .unwrap();
    assert_eq!(
        body(response).await,
        r#"{"status":"success","data":"ready"}"#
    );
}

#[test]
fn output_headers_take_the_result_handler_s_under_them() {
    use http::header::{CONTENT_TYPE, LOCATION, SET_COOKIE, VARY};
    let mut response = Response::new(Body::empty());
    let own = response.headers_mut();
    own.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    own.append(VARY, HeaderValue::from_static("origin"));
    own.append(VARY, HeaderValue::from_static("accept"));
    own.append(SET_COOKIE, HeaderValue::from_static("handler=1"));
    own.append(SET_COOKIE, HeaderValue::from_static("handler=2"));
    let mut output = Output::new(&1).unwrap();
    let added = output.headers_mut();
    assert!(added.capacity() >= 12, "sized for the layers' headers");
    added.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    added.append(SET_COOKIE, HeaderValue::from_static("middleware=1"));
    added.insert(LOCATION, HeaderValue::from_static("/x"));
    let headers = output.take_headers().unwrap();
    // What extending the handler's map with them gave.
    let mut expected = response.headers().clone();
    expected.extend(headers.clone());
    strata_core::merge_headers_under(&mut response, headers);
    assert_eq!(*response.headers(), expected);
    let values = |name| {
        response
            .headers()
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(values(CONTENT_TYPE), ["text/plain"]);
    assert_eq!(values(SET_COOKIE), ["middleware=1"]);
    assert_eq!(values(VARY), ["origin", "accept"]);
    assert_eq!(values(LOCATION), ["/x"]);
}

/// The default result handler answers with the generic method's response: `handle`, then its
/// headers under the outcome's (the same headers in the same order, the same status and body).
#[tokio::test]
async fn default_handler_builds_on_the_outcome_s_headers_as_the_generic_method_does() {
    use http::HeaderMap;
    use http::header::{CONTENT_TYPE, ETAG, SET_COOKIE, VARY};

    /// The trait's default method, which the default handler overrides.
    #[derive(Clone)]
    struct Generic;

    impl ResultHandler for Generic {
        fn positive(&self, output: &Schema) -> Vec<ResponseDescription> {
            DefaultResultHandler.positive(output)
        }

        fn negative(&self) -> Vec<ResponseDescription> {
            DefaultResultHandler.negative()
        }

        fn handle(
            &self,
            result: Result<Output, ApiError>,
            request: &RequestInfo,
            logger: &Logger,
        ) -> Response<Body> {
            DefaultResultHandler.handle(result, request, logger)
        }
    }

    let outcomes = || -> Vec<(Result<Output, ApiError>, HeaderMap)> {
        let mut added = HeaderMap::new();
        added.insert(ETAG, HeaderValue::from_static("\"1\""));
        added.append(SET_COOKIE, HeaderValue::from_static("a=1"));
        added.append(SET_COOKIE, HeaderValue::from_static("b=2"));
        let mut typed = added.clone();
        typed.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        let with_own = || {
            http_error!(429, "Slow down")
                .with_header(CONTENT_TYPE, HeaderValue::from_static("text/x-error"))
                .with_header(VARY, HeaderValue::from_static("origin"))
                .with_header(ETAG, HeaderValue::from_static("\"own\""))
        };
        vec![
            (Ok(Output::new(&1).unwrap()), added.clone()),
            (
                Ok(Output::new(&2).unwrap().with_status(StatusCode::CREATED)),
                typed.clone(),
            ),
            (Err(http_error!(404, "Not found")), added.clone()),
            (Err(http_error!(404, "Not found")), typed.clone()),
            (Err(with_own()), added),
            (Err(with_own()), typed),
        ]
    };
    let (info, logger) = (RequestInfo::default(), Logger::default());
    for ((fast, mut fast_headers), (generic, mut generic_headers)) in
        outcomes().into_iter().zip(outcomes())
    {
        let fast =
            DefaultResultHandler.handle_with_headers(fast, &mut fast_headers, &info, &logger);
        let generic = Generic.handle_with_headers(generic, &mut generic_headers, &info, &logger);
        assert!(fast_headers.is_empty() && generic_headers.is_empty());
        assert_eq!(fast.status(), generic.status());
        let listed = |response: &Response<Body>| {
            response
                .headers()
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(listed(&fast), listed(&generic));
        assert_eq!(body(fast).await, body(generic).await);
    }
}
