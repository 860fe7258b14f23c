use http::{Method, Request};
use serde_json::json;
use strata_core::{ApiError, HNil, PathParams};
use strata_input::{
    Input, InputSource, InputSources, InputValue, JsonObject, Parsed, ParsedBody, Staged,
    TextValue, UploadedFile,
};
use tower::{ServiceExt, service_fn};

use crate::CombineLayer;

async fn combine(layer: CombineLayer, request: Request<Parsed>) -> Result<Input, ApiError> {
    let service = tower_layer::Layer::layer(
        &layer,
        service_fn(|request: Request<Staged<HNil>>| async move {
            Ok::<_, ApiError>(request.into_body().input)
        }),
    );
    service.oneshot(request).await
}

fn everything() -> Parsed {
    let mut body = serde_json::Map::new();
    body.insert("id".into(), json!(1));
    body.insert("b".into(), json!(true));
    Parsed {
        query: vec![
            ("id".into(), TextValue::One("q".into())),
            ("q".into(), TextValue::One("1".into())),
        ]
        .into(),
        body: ParsedBody::Json(body),
        params: [("id", "p")].into_iter().collect::<PathParams>(),
        files: Vec::new(),
    }
}

fn keys(input: &Input) -> Vec<&str> {
    input.iter().map(|(k, _)| k).collect()
}

fn request(method: Method) -> Request<Parsed> {
    Request::builder()
        .method(method)
        .uri("/")
        .header("X-Key", "k")
        .body(everything())
        .unwrap()
}

#[tokio::test]
async fn get_and_delete_use_query_then_params() {
    for method in [Method::GET, Method::HEAD, Method::DELETE] {
        let input = combine(CombineLayer::new(), request(method.clone()))
            .await
            .unwrap();
        assert_eq!(keys(&input), ["id", "q"], "{method}");
        assert_eq!(
            input.get("id"),
            Some(&"p".into()),
            "path param beats query for {method}"
        );
    }
}

#[tokio::test]
async fn post_put_patch_use_body_then_params() {
    for method in [Method::POST, Method::PUT, Method::PATCH] {
        let input = combine(CombineLayer::new(), request(method.clone()))
            .await
            .unwrap();
        assert_eq!(keys(&input), ["b", "id"], "{method}");
        assert_eq!(input.get("id"), Some(&"p".into()));
        assert_eq!(input.get("b"), Some(&InputValue::Json(json!(true))));
    }
}

#[tokio::test]
async fn configured_sources_replace_the_defaults() {
    let mut sources = InputSources::default();
    sources.set(
        &Method::GET,
        [
            InputSource::Params,
            InputSource::Body,
            InputSource::Query,
            InputSource::Headers,
        ],
    );
    let input = combine(CombineLayer::with_sources(sources), request(Method::GET))
        .await
        .unwrap();
    assert_eq!(keys(&input), ["id", "b", "q", "x-key"]);
    assert_eq!(
        input.get("id"),
        Some(&"q".into()),
        "query is last but one now"
    );
    assert_eq!(
        input.get("x-key"),
        Some(&"k".into()),
        "header names are lower-case"
    );
}

/// The webhook case of issue 25: `POST /hooks/orders` with `topic: payments`.
fn hook(sources: &[InputSource]) -> (CombineLayer, Request<Parsed>) {
    let mut table = InputSources::default();
    table.set(&Method::POST, sources);
    let parsed = Parsed {
        params: [("topic", "orders")].into_iter().collect::<PathParams>(),
        ..Parsed::default()
    };
    let request = Request::post("/hooks/orders")
        .header("Topic", "payments")
        .header("x-signature", "sha256=00")
        .body(parsed)
        .unwrap();
    (CombineLayer::with_sources(table), request)
}

#[tokio::test]
async fn a_header_never_overrides_a_path_parameter() {
    use InputSource::{Body, Headers, Params};
    for sources in [[Body, Params, Headers], [Headers, Body, Params]] {
        let (layer, request) = hook(&sources);
        let input = combine(layer, request).await.unwrap();
        assert_eq!(
            input.get("topic"),
            Some(&"orders".into()),
            "the path wins with {sources:?}"
        );
        assert_eq!(
            input.get("x-signature"),
            Some(&"sha256=00".into()),
            "other headers stay"
        );
    }
    // Without path parameters among the sources, the header is the only `topic`.
    let (layer, request) = hook(&[Body, Headers]);
    let input = combine(layer, request).await.unwrap();
    assert_eq!(input.get("topic"), Some(&"payments".into()));
}

#[tokio::test]
async fn headers_keep_their_place_against_the_other_sources() {
    let mut sources = InputSources::default();
    sources.set(
        &Method::GET,
        [
            InputSource::Query,
            InputSource::Params,
            InputSource::Headers,
        ],
    );
    let request = Request::get("/")
        .header("q", "from a header")
        .header("id", "from a header")
        .body(everything())
        .unwrap();
    let input = combine(CombineLayer::with_sources(sources), request)
        .await
        .unwrap();
    assert_eq!(
        input.get("q"),
        Some(&"from a header".into()),
        "over the query"
    );
    assert_eq!(input.get("id"), Some(&"p".into()), "not over the path");
}

#[tokio::test]
async fn repeated_headers_become_lists() {
    let mut sources = InputSources::default();
    sources.set(&Method::GET, [InputSource::Headers]);
    let request = Request::get("/")
        .header("x-tag", "a")
        .header("x-tag", "b")
        .body(Parsed::default())
        .unwrap();
    let input = combine(CombineLayer::with_sources(sources), request)
        .await
        .unwrap();
    assert_eq!(
        input.get("x-tag"),
        Some(&TextValue::Many(vec!["a".into(), "b".into()]).into())
    );
}

#[tokio::test]
async fn non_utf8_header_is_400_when_headers_are_a_source() {
    let mut sources = InputSources::default();
    sources.set(&Method::GET, [InputSource::Headers]);
    let value = http::HeaderValue::from_bytes(b"\xff").unwrap();
    let request = Request::get("/")
        .header("x-bad", value)
        .body(Parsed::default())
        .unwrap();
    let error = combine(CombineLayer::with_sources(sources), request)
        .await
        .unwrap_err();
    assert_eq!(error.status(), 400);
    assert_eq!(error.message(), "Header x-bad is not valid UTF-8");
}

#[tokio::test]
async fn form_fields_are_text() {
    let parsed = Parsed {
        body: ParsedBody::Form(vec![("n".into(), TextValue::One("5".into()))]),
        ..Parsed::default()
    };
    let input = combine(
        CombineLayer::new(),
        Request::post("/").body(parsed).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(input.get("n"), Some(&"5".into()));
}

#[tokio::test]
async fn post_merges_files_after_body_and_params() {
    let avatar = UploadedFile::new("me.png", "image/png", &b"png"[..]);
    let parsed = Parsed {
        body: ParsedBody::Form(vec![
            ("caption".into(), TextValue::One("hi".into())),
            (
                "avatar".into(),
                TextValue::One("a text field loses to the file".into()),
            ),
        ]),
        files: vec![("avatar".into(), vec![avatar.clone()])],
        ..Parsed::default()
    };
    let input = combine(
        CombineLayer::new(),
        Request::post("/").body(parsed.clone()).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(keys(&input), ["caption", "avatar"]);
    assert_eq!(input.get("avatar"), Some(&InputValue::Files(vec![avatar])));

    // PUT does not list files among its sources (spec table 2.2).
    let input = combine(CombineLayer::new(), Request::put("/").body(parsed).unwrap())
        .await
        .unwrap();
    assert_eq!(
        input.get("avatar"),
        Some(&"a text field loses to the file".into())
    );
}

#[tokio::test]
async fn a_deferred_json_body_merged_with_other_sources_is_checked_first() {
    let parsed = |body: &str| Parsed {
        body: ParsedBody::JsonObject(JsonObject::deferred(body.to_owned()).unwrap()),
        params: [("id", "7")].into_iter().collect::<PathParams>(),
        ..Parsed::default()
    };
    let error = combine(
        CombineLayer::new(),
        Request::post("/").body(parsed(r#"{"n": 1,}"#)).unwrap(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.status(), 400);
    assert_eq!(
        error.message(),
        "Invalid JSON body: trailing comma at line 1 column 9"
    );
    let input = combine(
        CombineLayer::new(),
        Request::post("/")
            .body(parsed(r#"{"id": "body", "n": 1}"#))
            .unwrap(),
    )
    .await
    .unwrap();
    // Body, then params: the path wins.
    assert_eq!(input.get("id"), Some(&"7".into()));
    assert_eq!(input.len(), 2);
}

#[tokio::test]
async fn a_json_body_alone_is_handed_over_as_bytes() {
    let object = JsonObject::new(r#"{"id": 1}"#).unwrap();
    let parsed = Parsed {
        body: ParsedBody::JsonObject(object.clone()),
        ..Parsed::default()
    };
    let input = combine(
        CombineLayer::new(),
        Request::post("/").body(parsed).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(input.as_json_object(), Some(&object));

    // With a path parameter too, the members are merged like any source's.
    let parsed = Parsed {
        body: ParsedBody::JsonObject(object),
        params: [("id", "7")].into_iter().collect::<PathParams>(),
        ..Parsed::default()
    };
    let input = combine(
        CombineLayer::new(),
        Request::post("/").body(parsed).unwrap(),
    )
    .await
    .unwrap();
    assert!(input.as_json_object().is_none());
    assert_eq!(input.get("id"), Some(&"7".into()));
}

#[tokio::test]
async fn a_plain_query_alone_or_with_params_merges_the_same() {
    let uri: http::Uri = "/x?id=q&q=1".parse().unwrap();
    let plain = strata_input::text::PlainQuery::check(&uri, 100)
        .unwrap()
        .unwrap();
    let alone = Parsed {
        query: plain.clone().into(),
        ..Parsed::default()
    };
    let input = combine(
        CombineLayer::new(),
        Request::get(uri.clone()).body(alone).unwrap(),
    )
    .await
    .unwrap();
    assert!(input.as_plain_query().is_some(), "read in place");
    assert_eq!(keys(&input), ["id", "q"]);
    assert_eq!(input.get("id"), Some(&"q".into()));
    // With path parameters the query is decoded into entries and merged as always.
    let with_params = Parsed {
        query: plain.into(),
        params: [("id", "p")].into_iter().collect::<PathParams>(),
        ..Parsed::default()
    };
    let input = combine(
        CombineLayer::new(),
        Request::get(uri).body(with_params).unwrap(),
    )
    .await
    .unwrap();
    assert!(input.as_plain_query().is_none());
    assert_eq!(keys(&input), ["id", "q"]);
    assert_eq!(input.get("id"), Some(&"p".into()), "path param beats query");
}

fn with_cookies(cookie: &str) -> Request<Parsed> {
    Request::builder()
        .method(Method::GET)
        .uri("/")
        .header("cookie", cookie)
        .body(everything())
        .unwrap()
}

#[tokio::test]
async fn cookies_are_a_source_and_never_override_path_parameters() {
    use strata_input::cookies::CookieKeys;
    let keys = CookieKeys::new(["0123456789abcdef0123456789abcdef"]).unwrap();
    let signed = keys.sign("session", "ada");
    let mut sources = InputSources::default();
    sources.set(
        &Method::GET,
        [
            InputSource::Query,
            InputSource::Params,
            InputSource::Cookies,
            InputSource::SignedCookies,
        ],
    );
    let layer = CombineLayer::with_sources(sources.clone()).cookie_keys(keys.clone());
    let input = combine(
        layer.clone(),
        with_cookies(&format!("theme=dark%20blue; id=forged; session={signed}")),
    )
    .await
    .unwrap();
    assert_eq!(input.get("theme"), Some(&"dark blue".into()));
    // A cookie named like a path parameter is left out, wherever the source stands.
    assert_eq!(input.get("id"), Some(&"p".into()));
    // The signed source gives the value that was signed; the plain one the raw cookie.
    assert_eq!(input.get("session"), Some(&"ada".into()));

    // A forged signature: the signed source leaves it out, and the plain source never has a
    // cookie marked signed.
    let forged = signed.replace("ada", "eve");
    let input = combine(layer.clone(), with_cookies(&format!("session={forged}")))
        .await
        .unwrap();
    assert_eq!(input.get("session"), None);
    sources.set(&Method::GET, [InputSource::SignedCookies]);
    let only_signed = CombineLayer::with_sources(sources.clone()).cookie_keys(keys);
    let input = combine(only_signed, with_cookies(&format!("session={forged}")))
        .await
        .unwrap();
    assert_eq!(input.get("session"), None);
    // Without keys no signed cookie is trusted.
    let input = combine(
        CombineLayer::with_sources(sources),
        with_cookies(&format!("session={signed}")),
    )
    .await
    .unwrap();
    assert_eq!(input.get("session"), None);
}

#[tokio::test]
async fn a_cookie_header_beyond_its_limits_is_a_400() {
    let mut sources = InputSources::default();
    sources.set(&Method::GET, [InputSource::Cookies]);
    let layer = CombineLayer::with_sources(sources);
    let long = format!("big={}", "x".repeat(5000));
    let error = combine(layer.clone(), with_cookies(&long))
        .await
        .unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (400, "Cookie big: longer than 4096 bytes")
    );
    // Not a source: the header is not read at all.
    let error = combine(CombineLayer::new(), with_cookies(&long)).await;
    assert!(error.is_ok());
}
