//! The pre-flight check: every server answers a scenario's request with the same status and
//! the same JSON body before anything is measured.
//!
//! One difference is allowed, by design: express-zod-api's validation messages come from zod,
//! the Rust servers' from garde, and the two order the problems differently (zod in schema
//! order, garde by path). For express-zod-api, an error message that lists field problems
//! (`path: problem; path: problem`) must name the same set of field paths as the others';
//! everything else in the body must be equal.
//!
//! A second one is documented (docs/architecture.md, issue 54): express-zod-api sends
//! `Access-Control-Allow-Methods` and `-Allow-Headers` on every response; the Rust servers send
//! them (and `-Max-Age`) on preflights only, and none of the scenarios is a preflight. Only
//! express-zod-api may send them on an actual answer.
//!
//! Whole bodies are compared; what is printed of them is [`abridged`] (large-output's answer
//! is ~1 MiB).

use std::collections::BTreeSet;
use std::net::SocketAddr;

use bytes::Bytes;
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_MAX_AGE, ALLOW, CONTENT_TYPE,
};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::scenario::{RequestSpec, Scenario, ServerKind};

/// What a server answered.
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    pub(crate) status: StatusCode,
    pub(crate) allow: Option<String>,
    pub(crate) allow_origin: Option<String>,
    /// Which of the headers only a preflight's answer is read for the answer has.
    pub(crate) preflight_only: Vec<&'static str>,
    pub(crate) content_type: Option<String>,
    pub(crate) body: Bytes,
}

/// The CORS headers a browser reads on a preflight's answer only (the Fetch standard).
const PREFLIGHT_ONLY: [http::HeaderName; 3] = [
    ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_HEADERS,
    ACCESS_CONTROL_MAX_AGE,
];

impl Observed {
    /// What `response` answered.
    pub(crate) fn of(response: &http::Response<Bytes>) -> Self {
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v: &http::HeaderValue| v.to_str().ok())
                .map(str::to_owned)
        };
        Self {
            status: response.status(),
            allow: header(ALLOW),
            allow_origin: header(ACCESS_CONTROL_ALLOW_ORIGIN),
            preflight_only: PREFLIGHT_ONLY
                .iter()
                .filter(|name| response.headers().contains_key(*name))
                .map(http::HeaderName::as_str)
                .collect(),
            content_type: header(CONTENT_TYPE),
            body: response.body().clone(),
        }
    }

    /// One line: status, the headers checked, and the body ([`shown`]).
    pub(crate) fn describe(&self) -> String {
        let header = |value: &Option<String>| value.clone().unwrap_or_else(|| "-".to_owned());
        let preflight_only = if self.preflight_only.is_empty() {
            "-".to_owned()
        } else {
            self.preflight_only.join(", ")
        };
        format!(
            "{} | content-type: {} | access-control-allow-origin: {} | preflight-only: {} | \
             allow: {} | {}",
            self.status.as_u16(),
            header(&self.content_type),
            header(&self.allow_origin),
            preflight_only,
            header(&self.allow),
            shown(&self.body)
        )
    }
}

/// How many items of a list [`abridged`] keeps.
const SHOWN_ITEMS: usize = 3;

/// Bodies up to this many bytes are shown whole.
const SHOWN_BODY: usize = 4096;

/// `value` for a log line or a report: every list of more than [`SHOWN_ITEMS`] items cut to
/// its first ones and a string saying how many were left out.
pub(crate) fn abridged(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Array(items) => {
            let mut kept: Vec<Value> = items.iter().take(SHOWN_ITEMS).map(abridged).collect();
            if items.len() > SHOWN_ITEMS {
                kept.push(Value::String(format!(
                    "... {} more of {}",
                    items.len() - SHOWN_ITEMS,
                    items.len()
                )));
            }
            Value::Array(kept)
        }
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(name, field)| (name.clone(), abridged(field)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `body` as text: whole up to [`SHOWN_BODY`] bytes; over that [`abridged`] (or cut, when it
/// is not JSON), with its length.
fn shown(body: &[u8]) -> String {
    if body.len() <= SHOWN_BODY {
        return String::from_utf8_lossy(body).into_owned();
    }
    let text = match serde_json::from_slice(body) {
        Ok(json) => abridged(&json).to_string(),
        Err(_) => format!("{}...", String::from_utf8_lossy(&body[..SHOWN_BODY])),
    };
    format!("{text} ({} bytes)", body.len())
}

/// Sends `scenario`'s request to `addr` with a full HTTP/1.1 client.
pub(crate) async fn observe(addr: SocketAddr, scenario: Scenario) -> Result<Observed, String> {
    let response = send(addr, &scenario.request()).await?;
    Ok(Observed::of(&response))
}

/// Sends `spec` to `addr` on a new connection with a full HTTP/1.1 client; the response with
/// its whole body.
pub(crate) async fn send(
    addr: SocketAddr,
    spec: &RequestSpec,
) -> Result<http::Response<Bytes>, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(spec.method.clone())
        .uri(&spec.path_and_query)
        .header("host", "127.0.0.1");
    for (name, value) in &spec.headers {
        request = request.header(*name, value);
    }
    let request = request
        .body(Full::new(Bytes::from(spec.body.clone())))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("request: {e}"))?;
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    Ok(http::Response::from_parts(parts, body))
}

/// Checks the answers of every server to `scenario`: the expected status, a JSON body in the
/// envelope, the same parsed body everywhere, CORS headers, and `Allow` on a 405. Returns the
/// success or error body every server agreed on.
pub(crate) fn compare(
    scenario: Scenario,
    answers: &[(ServerKind, Observed)],
) -> Result<serde_json::Value, String> {
    let mut agreed: Option<(ServerKind, serde_json::Value)> = None;
    for (kind, observed) in answers {
        let body = shown(&observed.body);
        let fail = |what: String| Err(format!("{scenario}: {kind} {what}; body: {body}"));
        if observed.status != scenario.expected_status() {
            return fail(format!(
                "answered {}, expected {}",
                observed.status,
                scenario.expected_status()
            ));
        }
        if !observed
            .content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("application/json"))
        {
            return fail(format!("sent content-type {:?}", observed.content_type));
        }
        if observed.allow_origin.as_deref() != Some("*") {
            return fail("sent no `access-control-allow-origin: *`".to_owned());
        }
        // The documented difference: express-zod-api sends them on every answer.
        if *kind != ServerKind::ExpressZodApi && !observed.preflight_only.is_empty() {
            return fail(format!(
                "sent {} on an answer that is no preflight's",
                observed.preflight_only.join(", ")
            ));
        }
        if scenario.expected_status() == StatusCode::METHOD_NOT_ALLOWED
            && !observed.allow.as_deref().is_some_and(|a| a.contains("GET"))
        {
            return fail(format!("sent Allow {:?}", observed.allow));
        }
        let json: serde_json::Value = match serde_json::from_slice(&observed.body) {
            Ok(json) => json,
            Err(e) => return fail(format!("sent a body that is not JSON ({e})")),
        };
        let expected_status = if observed.status.is_success() {
            "success"
        } else {
            "error"
        };
        if json["status"] != expected_status {
            return fail(format!("sent no {expected_status:?} envelope"));
        }
        match &agreed {
            None => agreed = Some((*kind, json)),
            Some((first, value)) if *value != json => {
                let same_problems =
                    *kind == ServerKind::ExpressZodApi && same_field_problems(value, &json);
                if !same_problems {
                    return fail(format!(
                        "disagrees with {first}: {} vs {}",
                        abridged(value),
                        abridged(&json)
                    ));
                }
            }
            Some(_) => {}
        }
    }
    agreed
        .map(|(_, value)| value)
        .ok_or_else(|| format!("{scenario}: no answers"))
}

/// Whether two error bodies are equal but for their messages, and both messages list field
/// problems naming the same set of paths.
fn same_field_problems(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    let message = |v: &serde_json::Value| v["error"]["message"].as_str().map(str::to_owned);
    let (Some(first), Some(second)) = (message(a), message(b)) else {
        return false;
    };
    let without_message = |v: &serde_json::Value| {
        let mut v = v.clone();
        v["error"]["message"] = serde_json::Value::Null;
        v
    };
    without_message(a) == without_message(b)
        && field_paths(&first).is_some_and(|paths| Some(paths) == field_paths(&second))
}

/// The field paths a validation message names (`path: problem; path: problem`), with `[n]`
/// written `.n` so that `items[1].quantity` and `items.1.quantity` are one path. `None` when
/// the message is not such a list.
pub(crate) fn field_paths(message: &str) -> Option<BTreeSet<String>> {
    message
        .split("; ")
        .map(|problem| {
            let (path, _) = problem.split_once(": ")?;
            let path_like = !path.is_empty()
                && path
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '[' | ']'));
            path_like.then(|| path.replace('[', ".").replace(']', ""))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers;

    /// Every scenario against all three servers, in this process: the check that runs before
    /// every measurement must pass, and must catch a server that answers differently.
    /// (express-zod-api and the quick start are other programs: `strata-bench preflight`, run
    /// by `scripts/ezapi-check.sh` in CI, checks them.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn all_three_servers_answer_every_scenario_alike() {
        for many_routes in [false, true] {
            let mut running = Vec::new();
            for kind in ServerKind::IN_PROCESS {
                let server = servers::start(kind, many_routes).await;
                running.push((kind, server.unwrap_or_else(|e| panic!("{kind}: {e}"))));
            }
            for scenario in Scenario::ALL
                .into_iter()
                .filter(|s| s.many_routes() == many_routes)
            {
                let mut answers = Vec::new();
                for (kind, server) in &running {
                    let observed = observe(server.addr, scenario).await;
                    answers.push((*kind, observed.unwrap_or_else(|e| panic!("{kind}: {e}"))));
                }
                let agreed = compare(scenario, &answers).unwrap_or_else(|e| panic!("{e}"));
                match scenario {
                    Scenario::Hello | Scenario::Routes10k => assert_eq!(
                        agreed,
                        serde_json::json!({"status": "success", "data": {"greetings": "Hello, World"}})
                    ),
                    Scenario::Invalid => {
                        let message = agreed["error"]["message"].as_str().unwrap_or_default();
                        assert_eq!(message.split("; ").count(), 3, "{message}");
                    }
                    Scenario::AuthParam => {
                        assert_eq!(
                            agreed["data"],
                            serde_json::json!({"id": "42", "name": "Jane"})
                        );
                    }
                    Scenario::LargeInput => assert_eq!(
                        agreed["data"],
                        serde_json::json!({
                            "customer": "Ada Lovelace",
                            "city": "London",
                            "lines": 1200,
                            "quantity": 12_600,
                            "total": 784_045_224,
                        })
                    ),
                    Scenario::LargeOutput => {
                        let products = agreed["data"]["products"].as_array();
                        assert_eq!(products.map(Vec::len), Some(5_000));
                        assert_eq!(
                            agreed["data"]["products"][4_999],
                            serde_json::json!({
                                "id": 5000,
                                "sku": "SKU-595000",
                                "name": "Webcam, 1080p with privacy cover",
                                "description": "Made to order in the workshop: allow a week \
                                                before dispatch, tracked delivery included.",
                                "price": 68_847,
                                "in_stock": true,
                            })
                        );
                    }
                    _ => {}
                }
                // A server answering differently is caught.
                let mut tampered = answers.clone();
                tampered[2].1.body = Bytes::from_static(br#"{"status":"success","data":{}}"#);
                assert!(compare(scenario, &tampered).is_err(), "{scenario}");
                let mut tampered = answers.clone();
                tampered[1].1.status = StatusCode::IM_A_TEAPOT;
                assert!(compare(scenario, &tampered).is_err(), "{scenario}");
                let mut tampered = answers.clone();
                tampered[0].1.preflight_only = vec!["access-control-allow-methods"];
                assert!(compare(scenario, &tampered).is_err(), "{scenario}");
            }
            for (_, server) in running {
                server.stop().await;
            }
        }
    }

    fn answer(status: StatusCode, body: &str) -> Observed {
        Observed {
            status,
            allow: (status == StatusCode::METHOD_NOT_ALLOWED).then(|| "GET, HEAD".to_owned()),
            allow_origin: Some("*".to_owned()),
            preflight_only: Vec::new(),
            content_type: Some("application/json; charset=utf-8".to_owned()),
            body: Bytes::from(body.to_owned()),
        }
    }

    fn error(message: &str) -> String {
        serde_json::json!({"status": "error", "error": {"message": message}}).to_string()
    }

    /// garde's report as the Rust servers write it, and zod's as express-zod-api does (with
    /// garde's texts where zod takes a custom message, in zod's order, and in zod's default
    /// texts): the same problems.
    const GARDE: &str = "age: greater than 150; email: not a valid email: value is missing `@`; \
                         items[1].quantity: lower than 1";
    const ZOD_CUSTOM: &str = "email: not a valid email: value is missing `@`; age: greater than \
                              150; items[1].quantity: lower than 1";
    const ZOD_DEFAULT: &str = "email: Invalid email address; age: Too big: expected number to \
                               be <=150; items.1.quantity: Too small: expected number to be >=1";

    /// The documented difference of issue 54: express-zod-api sends the methods and allowed
    /// headers on every answer, the Rust servers on preflights only (no scenario is one).
    #[test]
    fn only_express_zod_api_may_send_preflight_headers_on_an_actual_answer() {
        let plain = answer(StatusCode::OK, r#"{"status":"success","data":{}}"#);
        let mut with = plain.clone();
        with.preflight_only = vec![
            "access-control-allow-methods",
            "access-control-allow-headers",
        ];
        let ezapi = [
            (ServerKind::Strata, plain.clone()),
            (ServerKind::ExpressZodApi, with.clone()),
        ];
        assert!(compare(Scenario::Hello, &ezapi).is_ok());
        let rust = [(ServerKind::Hyper, plain), (ServerKind::Strata, with)];
        let refused = compare(Scenario::Hello, &rust).unwrap_err();
        assert!(
            refused.contains("access-control-allow-methods"),
            "{refused}"
        );
    }

    #[test]
    fn express_zod_api_may_word_and_order_validation_problems_its_own_way() {
        let rust = |kind| (kind, answer(StatusCode::BAD_REQUEST, &error(GARDE)));
        let ezapi = |message: &str| {
            (
                ServerKind::ExpressZodApi,
                answer(StatusCode::BAD_REQUEST, &error(message)),
            )
        };
        let answers = |message| {
            vec![
                rust(ServerKind::Hyper),
                rust(ServerKind::Strata),
                ezapi(message),
            ]
        };
        for message in [GARDE, ZOD_CUSTOM, ZOD_DEFAULT] {
            let agreed = compare(Scenario::Invalid, &answers(message));
            assert_eq!(agreed, Ok(serde_json::from_str(&error(GARDE)).unwrap()));
        }
        // A problem missing, or one more: caught.
        for message in [
            "email: Invalid email address; age: Too big",
            "email: x; age: y; items[1].quantity: z; note: w",
            "email: x; age: y; items[2].quantity: z",
            "Invalid input",
        ] {
            assert!(
                compare(Scenario::Invalid, &answers(message)).is_err(),
                "{message}"
            );
        }
        // Only express-zod-api gets the leeway: the Rust servers must agree to the letter.
        let rust_differs = vec![
            rust(ServerKind::Hyper),
            (
                ServerKind::Strata,
                answer(StatusCode::BAD_REQUEST, &error(ZOD_CUSTOM)),
            ),
        ];
        assert!(compare(Scenario::Invalid, &rust_differs).is_err());
        // Messages that are not field problems must be equal.
        let not_found =
            |kind, message: &str| (kind, answer(StatusCode::NOT_FOUND, &error(message)));
        let same = [
            not_found(ServerKind::Axum, "Can not GET /v1/nothing/here"),
            not_found(ServerKind::ExpressZodApi, "Can not GET /v1/nothing/here"),
        ];
        assert!(compare(Scenario::NotFound, &same).is_ok());
        let other = [
            not_found(ServerKind::Axum, "Can not GET /v1/nothing/here"),
            not_found(ServerKind::ExpressZodApi, "Not Found"),
        ];
        assert!(compare(Scenario::NotFound, &other).is_err());
        // Anything else in the body differs: caught.
        let extra =
            serde_json::json!({"status": "error", "error": {"message": ZOD_CUSTOM, "code": 1}});
        let answers = [
            rust(ServerKind::Hyper),
            (
                ServerKind::ExpressZodApi,
                answer(StatusCode::BAD_REQUEST, &extra.to_string()),
            ),
        ];
        assert!(compare(Scenario::Invalid, &answers).is_err());
    }

    #[test]
    fn long_lists_are_shown_abridged() {
        let list = serde_json::json!({"status": "success", "data": {"products": [1, 2, 3, 4, 5]}});
        assert_eq!(
            abridged(&list),
            serde_json::json!({"status": "success", "data": {"products": [1, 2, 3, "... 2 more of 5"]}})
        );
        let short = serde_json::json!({"data": {"tags": ["a", "b", "c"]}});
        assert_eq!(abridged(&short), short);
        // A large body is shown abridged with its length; a small one whole.
        let large =
            crate::model::success_body(&crate::model::catalog(&crate::model::CatalogInput {
                count: 5_000,
            }));
        let text = shown(&large);
        assert!(text.len() < 2000, "{text}");
        assert!(text.contains(r#""... 4997 more of 5000"]}"#), "{text}");
        assert!(
            text.ends_with(&format!(" ({} bytes)", large.len())),
            "{text}"
        );
        assert_eq!(shown(b"{\"a\":[1,2,3,4]}"), "{\"a\":[1,2,3,4]}");
    }

    #[test]
    fn field_paths_are_normalized() {
        let paths = |m| field_paths(m).map(|p| p.into_iter().collect::<Vec<_>>());
        let expected = Some(vec![
            "age".to_owned(),
            "email".to_owned(),
            "items.1.quantity".to_owned(),
        ]);
        assert_eq!(paths(GARDE), expected);
        assert_eq!(paths(ZOD_DEFAULT), expected);
        assert_eq!(paths("DELETE is not allowed"), None);
        assert_eq!(paths("Can not GET /v1/nothing/here"), None);
        assert_eq!(paths("Invalid token"), None);
    }
}
