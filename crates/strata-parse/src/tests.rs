use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Method, Request};
use http_body::{Body, Frame};
use strata_core::{ApiError, ClientAddr, ErrorKind, PathParams};
use strata_input::text::parse_urlencoded;
use strata_input::{InputSource, InputSources, Parsed, ParsedBody, TextValue};
#[cfg(feature = "upload")]
use strata_upload::UploadedFile;
use strata_upload::{MultipartForm, UploadLimits};
use tower::{ServiceExt, service_fn};

use crate::{BodyBudget, ParseLayer};

async fn parse<B>(layer: ParseLayer, request: Request<B>) -> Result<Parsed, ApiError>
where
    B: Body + Send + 'static,
    B::Error: Into<strata_core::BoxError>,
{
    let service = tower_layer::Layer::layer(
        &layer,
        service_fn(
            |request: Request<Parsed>| async move { Ok::<_, ApiError>(request.into_body()) },
        ),
    );
    service.oneshot(request).await
}

fn post(content_type: &str, body: &'static str) -> Request<String> {
    Request::post("/")
        .header("content-type", content_type)
        .body(body.to_owned())
        .unwrap()
}

#[tokio::test]
async fn json_bodies() {
    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "application/vnd.api+json",
    ] {
        let parsed = parse(ParseLayer::new(), post(content_type, r#"{"a":1}"#))
            .await
            .unwrap();
        let ParsedBody::JsonObject(object) = parsed.body else {
            panic!("not json for {content_type}")
        };
        assert_eq!(object.to_map()["a"], 1);
    }
}

#[tokio::test]
async fn a_deferred_json_check_leaves_the_body_unread() {
    let layer = ParseLayer::new().defer_json_check(true);
    let parsed = parse(layer.clone(), post("application/json", r#"{"a": 1,}"#))
        .await
        .unwrap();
    let ParsedBody::JsonObject(mut object) = parsed.body else {
        panic!("not json")
    };
    assert!(!object.is_checked());
    assert!(object.check().is_err());
    // What is not an object is still refused here, as without the option.
    let error = parse(layer, post("application/json", "[1]"))
        .await
        .unwrap_err();
    assert_eq!(
        (error.status(), error.message()),
        (
            http::StatusCode::BAD_REQUEST,
            "JSON body must be an object, got an array"
        )
    );
}

#[tokio::test]
async fn form_bodies_group_repeated_keys() {
    let request = post("application/x-www-form-urlencoded", "a=1&b=caf%C3%A9&a=2");
    let parsed = parse(ParseLayer::new(), request).await.unwrap();
    assert_eq!(
        parsed.body,
        ParsedBody::Form(vec![
            ("a".into(), TextValue::Many(vec!["1".into(), "2".into()])),
            ("b".into(), TextValue::One("café".into())),
        ])
    );
}

#[tokio::test]
async fn query_lists_and_utf8() {
    let request = Request::get("/x?a=1&a=2&name=J%C3%BCrgen+M")
        .body(String::new())
        .unwrap();
    let parsed = parse(ParseLayer::new(), request).await.unwrap();
    assert!(
        parsed.query.as_plain().is_none(),
        "escapes and repeats need decoding"
    );
    assert_eq!(
        parsed.query.into_pairs(),
        vec![
            ("a".into(), TextValue::Many(vec!["1".into(), "2".into()])),
            ("name".into(), TextValue::One("Jürgen M".into())),
        ]
    );
}

#[tokio::test]
async fn a_plain_query_is_kept_as_it_is_and_reads_the_same() {
    let request = Request::get("/x?name=Ada&&flag&n=5")
        .body(String::new())
        .unwrap();
    let parsed = parse(ParseLayer::new(), request).await.unwrap();
    let plain = parsed.query.as_plain().expect("no decoding needed");
    assert_eq!(plain.as_str(), "name=Ada&&flag&n=5");
    assert_eq!(parsed.query.len(), 3);
    assert_eq!(
        parsed.query.to_pairs(),
        parse_urlencoded(b"name=Ada&&flag&n=5", 100).unwrap()
    );
}

#[tokio::test]
async fn the_pair_limit_holds_for_plain_and_decoded_queries() {
    for uri in ["/x?a&b&c", "/x?a=%41&b&c", "/x?a&a&c"] {
        let request = Request::get(uri).body(String::new()).unwrap();
        let error = parse(ParseLayer::new().max_fields(2), request)
            .await
            .unwrap_err();
        assert_eq!(error.status(), 400, "{uri}");
        assert_eq!(
            error.message(),
            "Invalid query string: more than 2 parameters",
            "{uri}"
        );
    }
}

#[tokio::test]
async fn bad_query_encoding_is_400() {
    for uri in ["/x?a=%zz", "/x?a=%FF%FE"] {
        let request = Request::get(uri).body(String::new()).unwrap();
        let error = parse(ParseLayer::new(), request).await.unwrap_err();
        assert_eq!(error.status(), 400, "{uri}");
        assert_eq!(error.kind(), ErrorKind::Parse);
        assert!(
            error.message().starts_with("Invalid query string: "),
            "{}",
            error.message()
        );
    }
}

#[tokio::test]
async fn too_many_fields_is_400_naming_the_limit() {
    let request = Request::get("/x?a=1&b=2&c=3").body(String::new()).unwrap();
    let error = parse(ParseLayer::new().max_fields(2), request)
        .await
        .unwrap_err();
    assert_eq!(error.status(), 400);
    assert_eq!(
        error.message(),
        "Invalid query string: more than 2 parameters"
    );
}

#[tokio::test]
async fn empty_body_is_empty_object() {
    let parsed = parse(ParseLayer::new(), post("application/json", ""))
        .await
        .unwrap();
    assert_eq!(parsed.body, ParsedBody::Empty);
    // even without a content type
    let request = Request::post("/").body(String::new()).unwrap();
    assert_eq!(
        parse(ParseLayer::new(), request).await.unwrap().body,
        ParsedBody::Empty
    );
}

#[tokio::test]
async fn malformed_json_says_where() {
    let error = parse(ParseLayer::new(), post("application/json", "{\n  \"a\": }"))
        .await
        .unwrap_err();
    assert_eq!(error.status(), 400);
    assert_eq!(
        error.message(),
        "Invalid JSON body: expected value at line 2 column 8"
    );
}

#[tokio::test]
async fn json_must_be_an_object() {
    let error = parse(ParseLayer::new(), post("application/json", "[1]"))
        .await
        .unwrap_err();
    assert_eq!(error.status(), 400);
    assert_eq!(error.message(), "JSON body must be an object, got an array");
}

#[tokio::test]
async fn unreadable_content_type_is_415() {
    let error = parse(ParseLayer::new(), post("text/plain", "hello"))
        .await
        .unwrap_err();
    assert_eq!(error.status(), 415);
    assert_eq!(error.message(), "Unsupported Content-Type: text/plain");
    let request = Request::post("/").body("hello".to_owned()).unwrap();
    let error = parse(ParseLayer::new(), request).await.unwrap_err();
    assert_eq!(error.status(), 415);
    assert_eq!(error.message(), "Request body has no Content-Type");
}

#[tokio::test]
async fn multipart_without_uploads_is_415() {
    let error = parse(
        ParseLayer::new(),
        post("multipart/form-data; boundary=x", "--x--"),
    )
    .await
    .unwrap_err();
    assert_eq!(error.status(), 415);
    assert_eq!(
        error.message(),
        "Unsupported Content-Type: multipart/form-data (uploads are not enabled)"
    );
}

fn multipart(form: MultipartForm) -> Request<http_body_util::Full<Bytes>> {
    Request::post("/")
        .header("content-type", form.content_type())
        .body(http_body_util::Full::new(form.into_bytes()))
        .unwrap()
}

/// Built without the `upload` feature (`cargo test -p strata-parse --no-default-features`), a
/// multipart body is refused even with uploads set, and the message says why.
#[cfg(not(feature = "upload"))]
#[tokio::test]
async fn multipart_needs_the_upload_feature() {
    let form = MultipartForm::new().text("title", "Trip");
    let error = parse(
        ParseLayer::new().upload(UploadLimits::new()),
        multipart(form),
    )
    .await
    .unwrap_err();
    assert_eq!(error.status(), 415);
    assert_eq!(
        error.message(),
        "Unsupported Content-Type: multipart/form-data (this server is built without Strata's \
         `upload` feature)"
    );
}

#[cfg(feature = "upload")]
#[tokio::test]
async fn multipart_gives_text_fields_and_files_when_uploads_are_on() {
    let form = MultipartForm::new().text("title", "Trip").file(
        "photo",
        UploadedFile::new("a.jpg", "image/jpeg", &b"jpeg"[..]),
    );
    let layer = ParseLayer::new().upload(UploadLimits::new());
    let parsed = parse(layer, multipart(form)).await.unwrap();
    assert_eq!(
        parsed.body,
        ParsedBody::Form(vec![("title".into(), TextValue::One("Trip".into()))])
    );
    assert_eq!(parsed.files[0].0, "photo");
    assert_eq!(parsed.files[0].1[0].data().unwrap().as_ref(), b"jpeg");
}

#[cfg(feature = "upload")]
#[tokio::test]
async fn multipart_is_refused_for_methods_whose_input_takes_no_files() {
    let form = MultipartForm::new().text("title", "Trip");
    let mut request = multipart(form);
    *request.method_mut() = Method::PUT;
    let error = parse(ParseLayer::new().upload(UploadLimits::new()), request)
        .await
        .unwrap_err();
    assert_eq!(error.status(), 415);
    assert_eq!(
        error.message(),
        "Unsupported Content-Type: multipart/form-data (this method's input takes no files)"
    );
}

#[cfg(feature = "upload")]
#[tokio::test]
async fn multipart_limits_apply_before_and_while_reading() {
    let limits = UploadLimits::builder().file_size(4).body_size(1000).build();
    let layer = ParseLayer::new().upload(limits);
    let form = MultipartForm::new().file("photo", UploadedFile::new("a.jpg", "", &b"12345"[..]));
    let error = parse(layer.clone(), multipart(form)).await.unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(
        error.message(),
        r#"File "photo" exceeds the size limit of 4 bytes"#
    );

    // A declared length over the body limit is refused before a byte is read.
    let polled = Arc::new(AtomicUsize::new(0));
    let request = Request::post("/")
        .header("content-type", "multipart/form-data; boundary=x")
        .header("content-length", "1001")
        .body(Counting(Arc::clone(&polled)))
        .unwrap();
    let error = parse(layer.clone(), request).await.unwrap_err();
    assert_eq!(
        error.message(),
        "Multipart body exceeds the limit of 1000 bytes"
    );
    assert_eq!(polled.load(Ordering::SeqCst), 0);

    let error = parse(layer, post("multipart/form-data", "--x--"))
        .await
        .unwrap_err();
    assert_eq!(error.status(), 400);
    assert!(error.message().contains("boundary"), "{}", error.message());
}

/// A body that counts how often it is polled and never ends.
#[cfg(feature = "upload")]
struct Counting(Arc<AtomicUsize>);

#[cfg(feature = "upload")]
impl Body for Counting {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"----")))))
    }
}

#[tokio::test]
async fn body_is_ignored_when_the_method_does_not_read_it() {
    let request = Request::get("/")
        .header("content-type", "text/plain")
        .body("x".to_owned())
        .unwrap();
    assert_eq!(
        parse(ParseLayer::new(), request).await.unwrap().body,
        ParsedBody::Empty
    );
    // unless the sources say otherwise
    let mut sources = InputSources::default();
    sources.set(&Method::GET, [InputSource::Body]);
    let request = Request::get("/")
        .header("content-type", "application/json")
        .body("{}".to_owned())
        .unwrap();
    let parsed = parse(ParseLayer::new().input_sources(sources), request)
        .await
        .unwrap();
    let ParsedBody::JsonObject(object) = parsed.body else {
        panic!("not json")
    };
    assert!(object.to_map().is_empty());
}

#[tokio::test]
async fn declared_length_over_limit_is_413_before_reading() {
    let request = Request::post("/")
        .header("content-type", "application/json")
        .header("content-length", "100")
        .body(Endless::default())
        .unwrap();
    let polls = request.body().polls.clone();
    let error = parse(ParseLayer::new().body_limit(10), request)
        .await
        .unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(
        error.message(),
        "Request body exceeds the limit of 10 bytes"
    );
    assert_eq!(polls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn streamed_body_stops_at_the_limit() {
    let request = Request::post("/")
        .header("content-type", "application/json")
        .body(Endless::default())
        .unwrap();
    let polls = request.body().polls.clone();
    let error = parse(ParseLayer::new().body_limit(4096), request)
        .await
        .unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(error.kind(), ErrorKind::PayloadTooLarge);
    // 1 KiB chunks: the fifth one crosses 4 KiB and reading stops there.
    assert_eq!(polls.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn body_exactly_at_limit_is_read() {
    let parsed = parse(
        ParseLayer::new().body_limit(7),
        post("application/json", r#"{"a":1}"#),
    )
    .await;
    assert!(parsed.is_ok());
}

#[tokio::test]
async fn path_params_come_from_extensions() {
    let mut request = Request::get("/users/7").body(String::new()).unwrap();
    request
        .extensions_mut()
        .insert([("id", "7")].into_iter().collect::<PathParams>());
    let parsed = parse(ParseLayer::new(), request).await.unwrap();
    assert_eq!(parsed.params.iter().collect::<Vec<_>>(), [("id", "7")]);
}

#[tokio::test]
async fn body_errors_are_400() {
    let request = Request::post("/")
        .header("content-type", "application/json")
        .body(Failing)
        .unwrap();
    let error = parse(ParseLayer::new(), request).await.unwrap_err();
    assert_eq!(error.status(), 400);
    assert_eq!(
        error.message(),
        "Failed to read the request body: connection reset"
    );
}

/// A body that never ends, counting how many chunks were pulled.
#[derive(Default)]
struct Endless {
    polls: Arc<AtomicUsize>,
}

impl Body for Endless {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&[b' '; 1024])))))
    }
}

struct Failing;

impl Body for Failing {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(Some(Err(std::io::Error::other("connection reset"))))
    }
}

/// A body of the given chunks whose length is not known up front (like a chunked upload).
struct Chunks(std::collections::VecDeque<&'static [u8]>);

impl Chunks {
    fn new(chunks: &[&'static [u8]]) -> Self {
        Self(chunks.iter().copied().collect())
    }
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(
            self.0
                .pop_front()
                .map(|c| Ok(Frame::data(Bytes::from_static(c)))),
        )
    }
}

#[tokio::test]
async fn empty_streamed_body_without_content_type_is_empty() {
    let request = Request::post("/").body(Chunks::new(&[])).unwrap();
    assert_eq!(
        parse(ParseLayer::new(), request).await.unwrap().body,
        ParsedBody::Empty
    );
    let request = Request::post("/").body(Chunks::new(&[b""])).unwrap();
    assert_eq!(
        parse(ParseLayer::new(), request).await.unwrap().body,
        ParsedBody::Empty
    );
}

#[tokio::test]
async fn streamed_body_of_unreadable_type_is_415_at_its_first_byte() {
    let request = Request::post("/")
        .header("content-type", "text/plain")
        .body(Chunks::new(&[b"a", b"b"]))
        .unwrap();
    let error = parse(ParseLayer::new(), request).await.unwrap_err();
    assert_eq!(error.status(), 415);
    assert_eq!(error.message(), "Unsupported Content-Type: text/plain");
}

#[tokio::test]
async fn streamed_json_is_read_whole() {
    let request = Request::post("/")
        .header("content-type", "application/json")
        .body(Chunks::new(&[b"{\"a\"", b":", b"1}"]))
        .unwrap();
    let ParsedBody::JsonObject(object) = parse(ParseLayer::new(), request).await.unwrap().body
    else {
        panic!("not json")
    };
    assert_eq!(object.to_map()["a"], 1);
}

#[tokio::test]
async fn default_limit_is_one_mebibyte() {
    let exactly = format!("{{\"a\":\"{}\"}}", "x".repeat(1024 * 1024 - 8));
    assert_eq!(exactly.len(), 1024 * 1024);
    let request = Request::post("/")
        .header("content-type", "application/json")
        .body(exactly)
        .unwrap();
    assert!(parse(ParseLayer::new(), request).await.is_ok());
    let over = format!("{{\"a\":\"{}\"}}", "x".repeat(1024 * 1024 - 7));
    let request = Request::post("/")
        .header("content-type", "application/json")
        .body(over)
        .unwrap();
    let error = parse(ParseLayer::new(), request).await.unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(
        error.message(),
        "Request body exceeds the limit of 1048576 bytes"
    );
}

#[tokio::test]
async fn a_lying_content_length_does_not_lift_the_limit() {
    let request = Request::post("/")
        .header("content-type", "application/json")
        .header("content-length", "2")
        .body(Endless::default())
        .unwrap();
    let polls = request.body().polls.clone();
    let error = parse(ParseLayer::new().body_limit(2048), request)
        .await
        .unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(polls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn an_outer_length_limit_is_413() {
    let limited = http_body_util::Limited::new(Chunks::new(&[b"{\"a\":", b"1234567890}"]), 8);
    let request = Request::post("/")
        .header("content-type", "application/json")
        .body(limited)
        .unwrap();
    let error = parse(ParseLayer::new(), request).await.unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(error.kind(), ErrorKind::PayloadTooLarge);
}

/// A body the test feeds: each chunk sent is one frame; it ends when the sender is dropped.
struct Fed(tokio::sync::mpsc::UnboundedReceiver<Bytes>);

impl Body for Fed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|chunk| Ok(Frame::data(chunk))))
    }
}

/// A JSON POST of `declared` bytes (when given) from `client` (when given), its body fed
/// through the sender.
fn fed_post(
    declared: Option<usize>,
    client: Option<ClientAddr>,
) -> (tokio::sync::mpsc::UnboundedSender<Bytes>, Request<Fed>) {
    fed_post_of("application/json", declared, client)
}

/// A POST of `content_type`, as [`fed_post`].
fn fed_post_of(
    content_type: &str,
    declared: Option<usize>,
    client: Option<ClientAddr>,
) -> (tokio::sync::mpsc::UnboundedSender<Bytes>, Request<Fed>) {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let mut request = Request::post("/").header("content-type", content_type);
    if let Some(declared) = declared {
        request = request.header("content-length", declared);
    }
    let mut request = request.body(Fed(receiver)).unwrap();
    if let Some(client) = client {
        request.extensions_mut().insert(client);
    }
    (sender, request)
}

/// The parse stage in a task, its inner service holding each parsed request until `answer`
/// gets a permit (as a handler would until it answers).
fn spawn_held<B>(
    layer: &ParseLayer,
    request: Request<B>,
    answer: &Arc<tokio::sync::Semaphore>,
) -> tokio::task::JoinHandle<Result<Parsed, ApiError>>
where
    B: Body + Send + 'static,
    B::Error: Into<strata_core::BoxError>,
{
    let answer = Arc::clone(answer);
    let service = tower_layer::Layer::layer(
        layer,
        service_fn(move |request: Request<Parsed>| {
            let answer = Arc::clone(&answer);
            async move {
                let _permit = answer.acquire().await;
                Ok::<_, ApiError>(request.into_body())
            }
        }),
    );
    tokio::spawn(service.oneshot(request))
}

/// Lets the spawned tasks run until they wait again.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

fn client(last: u8) -> ClientAddr {
    ClientAddr([192, 0, 2, last].into())
}

#[tokio::test]
async fn a_slow_body_with_a_large_content_length_holds_only_what_arrived() {
    let budget = BodyBudget::new(1 << 20);
    let layer = ParseLayer::new().body_budget(budget.clone());
    let answer = Arc::new(tokio::sync::Semaphore::new(0));
    let body = format!(r#"{{"text":"{}"}}"#, "x".repeat(990));
    let (sender, request) = fed_post(Some(body.len()), Some(client(1)));
    let parsed = spawn_held(&layer, request, &answer);
    settle().await;
    assert_eq!(budget.used(), 0, "a declared length reserves nothing");
    let mut arrived = 0;
    for chunk in body.as_bytes().chunks(100) {
        sender.send(Bytes::copy_from_slice(chunk)).unwrap();
        arrived += chunk.len();
        settle().await;
        let used = budget.used();
        assert!(arrived <= used && used <= 2 * arrived, "{arrived} {used}");
        assert_eq!(budget.used_by(client(1)), used);
    }
    assert_eq!(
        budget.used(),
        body.len(),
        "an honest body ends in one buffer"
    );
    drop(sender);
    settle().await;
    assert_eq!(
        budget.used(),
        body.len(),
        "held until the request is answered"
    );
    answer.add_permits(1);
    let parsed = parsed.await.unwrap().unwrap();
    assert!(matches!(parsed.body, ParsedBody::JsonObject(_)));
    drop(parsed);
    assert_eq!((budget.used(), budget.used_by(client(1))), (0, 0));
}

#[tokio::test]
async fn a_chunk_over_the_budget_is_a_503_that_closes_the_connection() {
    let budget = BodyBudget::new(1000);
    let layer = ParseLayer::new().body_budget(budget.clone());
    let answer = Arc::new(tokio::sync::Semaphore::new(0));
    // Stalled bodies with a megabyte declared hold a byte each.
    let mut stalled = Vec::new();
    for _ in 0..100 {
        let (sender, request) = fed_post(Some(1 << 20), None);
        sender.send(Bytes::from_static(b"{")).unwrap();
        stalled.push((sender, spawn_held(&layer, request, &answer)));
    }
    settle().await;
    assert_eq!(budget.used(), 100);
    // An ordinary body fits beside them (before, their promises held the whole budget).
    let small = format!(r#"{{"text":"{}"}}"#, "x".repeat(500));
    let request = Request::post("/")
        .header("content-type", "application/json")
        .body(small.clone())
        .unwrap();
    let held = spawn_held(&layer, request, &answer);
    settle().await;
    assert_eq!(budget.used(), 100 + small.len());
    // A chunk that does not fit ends its request.
    let (sender, request) = fed_post(Some(2000), None);
    sender.send(Bytes::from(vec![b' '; 500])).unwrap();
    let error = parse(layer.clone(), request).await.unwrap_err();
    assert_eq!(error.status(), 503);
    assert_eq!(error.kind(), ErrorKind::Overload);
    let headers = error.headers().unwrap();
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(
        headers["connection"], "close",
        "the rest of the body is unread"
    );
    assert_eq!(
        budget.used(),
        100 + small.len(),
        "the refused chunk holds nothing"
    );
    answer.add_permits(1000);
    assert!(held.await.unwrap().is_ok());
    drop(stalled);
    settle().await;
    assert_eq!(budget.used(), 0);
}

#[tokio::test]
async fn one_address_over_its_share_gets_a_503_while_another_fits() {
    let budget = BodyBudget::new(1000);
    let layer = ParseLayer::new().body_budget(budget.clone());
    let answer = Arc::new(tokio::sync::Semaphore::new(0));
    let (first, request) = fed_post(Some(900), Some(client(1)));
    first.send(Bytes::from(vec![b' '; 200])).unwrap();
    let held = spawn_held(&layer, request, &answer);
    settle().await;
    assert_eq!(budget.used_by(client(1)), 200);
    // A second body from the address goes over its share (a quarter: 250).
    let (second, request) = fed_post(Some(100), Some(client(1)));
    second.send(Bytes::from(vec![b' '; 100])).unwrap();
    let error = parse(layer.clone(), request).await.unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.kind()),
        (503, ErrorKind::Overload)
    );
    assert_eq!(
        error.message(),
        "The server holds too many request bodies from this address right now; retry shortly"
    );
    assert_eq!(error.headers().unwrap()["connection"], "close");
    // Another address (one counted apart: the counters are hashed) still fits.
    let other = (2..=255)
        .map(client)
        .find(|other| budget.used_by(*other) == 0)
        .unwrap();
    let body = format!(r#"{{"text":"{}"}}"#, "y".repeat(189));
    let mut request = Request::post("/")
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    request.extensions_mut().insert(other);
    let parsed = spawn_held(&layer, request, &answer);
    settle().await;
    assert_eq!(budget.used_by(other), 200);
    // Both give their share back when answered, the first one failing (its body ends short);
    // the first address may then send again.
    answer.add_permits(2);
    drop(first);
    assert_eq!(held.await.unwrap().unwrap_err().status(), 400);
    assert!(parsed.await.unwrap().is_ok());
    assert_eq!(budget.used(), 0);
    let mut request = Request::post("/")
        .header("content-type", "application/json")
        .body(format!(r#"{{"text":"{}"}}"#, "z".repeat(230)))
        .unwrap();
    request.extensions_mut().insert(client(1));
    assert!(parse(layer, request).await.is_ok());
}

#[cfg(feature = "upload")]
#[tokio::test]
async fn a_multipart_upload_reserves_what_arrives_and_past_the_budget_is_a_503() {
    let budget = BodyBudget::new(4000);
    let layer = ParseLayer::new()
        .upload(UploadLimits::new())
        .body_budget(budget.clone());
    let answer = Arc::new(tokio::sync::Semaphore::new(0));
    let form = MultipartForm::new().text("title", "Trip").file(
        "photo",
        UploadedFile::new("a.jpg", "image/jpeg", vec![7_u8; 2500]),
    );
    let content_type = form.content_type();
    let bytes = form.into_bytes();
    let (sender, request) = fed_post_of(&content_type, Some(bytes.len()), Some(client(1)));
    let upload = spawn_held(&layer, request, &answer);
    sender.send(bytes.slice(..100)).unwrap();
    settle().await;
    assert_eq!(budget.used(), 100, "what arrived, not what was declared");
    sender.send(bytes.slice(100..)).unwrap();
    drop(sender);
    settle().await;
    // Files stay in memory until the request is answered: all of it is held.
    assert_eq!(budget.used(), bytes.len());
    // A second upload does not fit: the budget's 503, not a malformed body.
    let (sender, request) = fed_post_of(&content_type, Some(bytes.len()), None);
    sender.send(bytes.clone()).unwrap();
    let error = parse(layer, request).await.unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.kind()),
        (503, ErrorKind::Overload)
    );
    assert_eq!(error.headers().unwrap()["connection"], "close");
    assert_eq!(budget.used(), bytes.len());
    answer.add_permits(1);
    let parsed = upload.await.unwrap().unwrap();
    assert_eq!(parsed.files[0].1[0].size(), 2500);
    assert_eq!(budget.used(), 0);
}

/// A body sent `size` bytes a frame, pending between frames as a network body is (multer reads
/// what is ready at once).
#[cfg(feature = "upload")]
struct Paced {
    rest: Bytes,
    size: usize,
    waiting: bool,
}

#[cfg(feature = "upload")]
impl Body for Paced {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.waiting = !self.waiting;
        if self.waiting {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        let n = self.size.min(self.rest.len());
        let frame = self.rest.split_to(n);
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }
}

#[cfg(feature = "upload")]
#[tokio::test]
async fn files_written_to_disk_give_their_bytes_back_to_the_body_budget() {
    const FILE: usize = 1024 * 1024;
    let dir = std::env::temp_dir().join(format!("strata-parse-spool-{}", std::process::id()));
    // A quarter of the file: without the file going to disk, the budget would refuse it.
    let budget = BodyBudget::new(FILE / 4);
    let limits = UploadLimits::builder()
        .file_size(2 * FILE as u64)
        .spool_threshold(16 * 1024)
        .spool_dir(&dir)
        .build();
    let layer = ParseLayer::new()
        .body_budget(budget.clone())
        .upload(limits.clone());
    let form = MultipartForm::new()
        .text("title", "Big")
        .file("f", UploadedFile::new("f.bin", "", vec![b'z'; FILE]));
    let request = Request::post("/")
        .header("content-type", form.content_type())
        .body(Paced {
            rest: form.into_bytes(),
            size: 8192,
            waiting: false,
        })
        .unwrap();
    let held = budget.clone();
    let service = tower_layer::Layer::layer(
        &layer,
        service_fn(move |request: Request<Parsed>| {
            // What the request holds while the handler runs: its text field, not its file.
            let used = held.used();
            async move { Ok::<_, ApiError>((request.into_body(), used)) }
        }),
    );
    let (parsed, used) = service.oneshot(request).await.unwrap();
    let file = &parsed.files[0].1[0];
    assert!(file.path().is_some());
    assert_eq!(file.len(), FILE as u64);
    assert!(used < 32 * 1024, "{used} bytes held in memory");
    assert_eq!(budget.used(), 0);
    drop(parsed);
    assert_eq!(limits.disk_used(), 0);
    drop((layer, limits));
    std::fs::remove_dir_all(&dir).unwrap();
}
