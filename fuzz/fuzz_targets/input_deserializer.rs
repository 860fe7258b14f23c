//! The input deserializer: query, path parameters and body merged by the combine stage
//! (`strata_combine::CombineLayer`, driven through `tower::ServiceExt::oneshot`), then decoded
//! into a typed, validated input by `strata_decode::Decoder`: text values leniently, JSON values
//! strictly, a lone JSON object body straight from its bytes.
//!
//! Input: byte 0 = flags (bits 0-1 the method: GET, POST, PUT, DELETE; bit 2 the body is a form
//! instead of JSON; bit 3 replace the method's sources by a permutation of query, body and
//! params chosen by bits 4-6); the rest is `query \n params \n body`, the params written as a
//! query (first value of each name). Inputs whose query, params or body the parse stage would
//! refuse are skipped (the other targets cover those refusals); as in the parse stage, a body is
//! handed over only when the method's sources take it (see `HAND_BODY_ONLY_TO_SOURCES`).
//!
//! Invariants (each a panic when broken):
//! - The merged input is exactly the reference merge: sources in order, a later source replacing
//!   an earlier key in place, new keys appended; a JSON body alone stays bytes.
//! - Decoding agrees with a field-by-field reference: a JSON value reads as
//!   `serde_json::from_value` reads it; a text value reads leniently (`"5"` a number by Rust's
//!   `FromStr`, only `"true"`/`"false"` booleans, a variant by its wire name, one value a list
//!   of one, several values only a list, never an object); absent `Option`s are `None`, absent
//!   `#[serde(default)]` lists empty, other absent fields an error; then garde's rules decide.
//! - Every failure is a 400 of kind `InputValidation` whose message (`path: message; ...`)
//!   names the field: a part starts with the wire name of a field that cannot be read, a part
//!   is `<first missing>: required`, and each violation of a rule starts with its wire
//!   path (`nickName`, `nested.pageSize`, never `nick_name` or `page_size`; a field renamed to
//!   something unrelated keeps its Rust name, as documented).
//! - A lone JSON object read from its bytes decodes exactly as the same members read as values
//!   (same value; same message when one field is wrong or none is).
#![no_main]

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::str::FromStr;
use std::sync::LazyLock;
use std::task::{Context, Poll, Waker};

use garde::Validate;
use http::{Method, Request};
use libfuzzer_sys::fuzz_target;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use strata_combine::CombineLayer;
use strata_core::{ApiError, ErrorKind, HNil, PathParams};
use strata_input::text::{PlainQuery, parse_urlencoded};
use strata_input::{Input, InputSource, InputSources, InputValue, JsonObject, Parsed, ParsedBody, Staged, TextValue};
use strata_decode::Decoder;
use tower::{Layer, ServiceExt, service_fn};

/// A typical input: numbers, a boolean, strings, an optional string with a pattern, a list, an
/// enum, a renamed field and a nested object, with camelCase wire names.
#[derive(Debug, Deserialize, Validate, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // compared through `Debug`
struct Probe {
    #[garde(range(max = 1000))]
    count: u32,
    #[garde(skip)]
    offset: i64,
    #[garde(skip)]
    flag: bool,
    #[garde(range(min = -1e9, max = 1e9))]
    ratio: f64,
    #[garde(length(chars, min = 1, max = 32))]
    name: String,
    #[garde(pattern(r"^[a-z][a-z0-9_]*$"))]
    nick_name: Option<String>,
    #[serde(default)]
    #[garde(length(max = 8))]
    ids: Vec<u32>,
    #[garde(skip)]
    role: Role,
    #[serde(rename = "label")]
    #[garde(length(max = 16))]
    title: Option<String>,
    #[garde(dive)]
    nested: Option<Inner>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Role {
    Admin,
    User,
    Guest,
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Inner {
    #[garde(range(min = 1))]
    page_size: u16,
    #[serde(default)]
    #[garde(length(max = 4))]
    tags: Vec<String>,
}

/// Wire names in declaration order, and whether each is required.
const FIELDS: [(&str, bool); 10] = [
    ("count", true),
    ("offset", true),
    ("flag", true),
    ("ratio", true),
    ("name", true),
    ("nickName", false),
    ("ids", false),
    ("role", true),
    ("label", false),
    ("nested", false),
];

/// What a rule violation's path may start with. `title` is renamed to something unrelated
/// (`label`): as documented in `strata_decode::Decoder`'s wire-name mapping, such a field keeps its
/// Rust name in messages (`title: ...`); `label:` is accepted too, should that improve.
const RULE_PATHS: [&str; 8] = [
    "count:",
    "ratio:",
    "name:",
    "nickName:",
    "ids:",
    "label:",
    "title:",
    "nested.",
];

/// The parse stage reads no body for a method whose sources do not take it, so in the default
/// pipeline the combine stage never sees one. With `false`, the target also hands such bodies
/// over and checks that the combine stage leaves them out: today it does not (README,
/// "Findings", 1: a lone JSON object body becomes the input even when the body is not a source),
/// so this stays `true` until that is fixed.
const HAND_BODY_ONLY_TO_SOURCES: bool = true;

/// README, "Findings", 2 (cosmetic): set to `false` to see it again.
const KNOWN_ENUM_MESSAGE_QUIRK: bool = false;

static DECODER: LazyLock<Decoder<Probe>> = LazyLock::new(Decoder::new);

/// Polls a future that never waits (the combine stage and the service below are synchronous).
fn now<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the combine stage waited"),
    }
}

/// One field by the reference rules: `Ok(None)` absent, `Err(())` present but unreadable.
fn field<T: DeserializeOwned>(
    entries: &[(String, InputValue)],
    wire: &str,
    text: impl Fn(&TextValue) -> Option<T>,
) -> Result<Option<T>, ()> {
    match entries.iter().find(|(k, _)| k == wire).map(|(_, v)| v) {
        None => Ok(None),
        Some(InputValue::Json(value)) => serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|_| ()),
        Some(InputValue::Text(value)) => text(value).map(Some).ok_or(()),
        Some(_) => Err(()),
    }
}

fn one<T: FromStr>(value: &TextValue) -> Option<T> {
    match value {
        TextValue::One(text) => text.parse().ok(),
        TextValue::Many(_) => None,
    }
}

fn string(value: &TextValue) -> Option<String> {
    match value {
        TextValue::One(text) => Some(text.clone()),
        TextValue::Many(_) => None,
    }
}

fn list<T: FromStr>(value: &TextValue) -> Option<Vec<T>> {
    match value {
        TextValue::One(text) => Some(vec![text.parse().ok()?]),
        TextValue::Many(texts) => texts.iter().map(|t| t.parse().ok()).collect(),
    }
}

/// The reference decoding: the value, or the wire names of unreadable fields (non-empty), or
/// the first missing required field.
enum Expected {
    Value(Probe),
    Unreadable(Vec<&'static str>),
    Missing(&'static str),
}

fn expected(entries: &[(String, InputValue)]) -> Expected {
    let count = field(entries, "count", one::<u32>);
    let offset = field(entries, "offset", one::<i64>);
    let flag = field(entries, "flag", |v| match v {
        TextValue::One(t) if t == "true" => Some(true),
        TextValue::One(t) if t == "false" => Some(false),
        _ => None,
    });
    let ratio = field(entries, "ratio", one::<f64>);
    let name = field(entries, "name", string);
    let nick_name = field::<Option<String>>(entries, "nickName", |v| string(v).map(Some));
    let ids = field(entries, "ids", list::<u32>);
    let role = field(entries, "role", |v| match v {
        TextValue::One(t) => match t.as_str() {
            "admin" => Some(Role::Admin),
            "user" => Some(Role::User),
            "guest" => Some(Role::Guest),
            _ => None,
        },
        TextValue::Many(_) => None,
    });
    let title = field::<Option<String>>(entries, "label", |v| string(v).map(Some));
    let nested = field::<Option<Inner>>(entries, "nested", |_| None);

    let unreadable: Vec<&'static str> = [
        count.is_err(),
        offset.is_err(),
        flag.is_err(),
        ratio.is_err(),
        name.is_err(),
        nick_name.is_err(),
        ids.is_err(),
        role.is_err(),
        title.is_err(),
        nested.is_err(),
    ]
    .into_iter()
    .zip(FIELDS)
    .filter_map(|(bad, (wire, _))| bad.then_some(wire))
    .collect();
    if !unreadable.is_empty() {
        return Expected::Unreadable(unreadable);
    }
    let present = [
        count.as_ref().is_ok_and(Option::is_some),
        offset.as_ref().is_ok_and(Option::is_some),
        flag.as_ref().is_ok_and(Option::is_some),
        ratio.as_ref().is_ok_and(Option::is_some),
        name.as_ref().is_ok_and(Option::is_some),
    ];
    if let Some((_, (wire, _))) = present.iter().zip(FIELDS).find(|(present, _)| !**present) {
        return Expected::Missing(wire);
    }
    let Some(role) = role.ok().flatten() else {
        return Expected::Missing("role");
    };
    Expected::Value(Probe {
        count: count.ok().flatten().expect("present"),
        offset: offset.ok().flatten().expect("present"),
        flag: flag.ok().flatten().expect("present"),
        ratio: ratio.ok().flatten().expect("present"),
        name: name.ok().flatten().expect("present"),
        nick_name: nick_name.ok().flatten().flatten(),
        ids: ids.ok().flatten().unwrap_or_default(),
        role,
        title: title.ok().flatten().flatten(),
        nested: nested.ok().flatten().flatten(),
    })
}

/// The reference merge of the combine stage (an index of keys keeps it linear).
fn merge(
    out: &mut Vec<(String, InputValue)>,
    index: &mut HashMap<String, usize>,
    entries: impl IntoIterator<Item = (String, InputValue)>,
) {
    for (key, value) in entries {
        match index.get(&key) {
            Some(&at) => out[at].1 = value,
            None => {
                index.insert(key.clone(), out.len());
                out.push((key, value));
            }
        }
    }
}

fn text_entries(pairs: &[(String, TextValue)]) -> impl Iterator<Item = (String, InputValue)> + '_ {
    pairs
        .iter()
        .map(|(k, v)| (k.clone(), InputValue::Text(v.clone())))
}

fn check_decoded(result: &Result<Probe, ApiError>, expected: &Expected) {
    match (result, expected) {
        (Ok(got), Expected::Value(want)) => {
            assert!(
                want.validate().is_ok(),
                "decoded an input that breaks a rule: {want:?}"
            );
            // Debug tells NaN and -0.0 apart, and is equal for equal values.
            assert_eq!(format!("{got:?}"), format!("{want:?}"));
        }
        (Err(error), expected) => {
            assert_eq!(error.status(), 400, "{}", error.message());
            assert_eq!(error.kind(), ErrorKind::InputValidation);
            let message = error.message();
            match expected {
                Expected::Value(want) => {
                    assert!(
                        want.validate().is_err(),
                        "refused a valid input {want:?}: {message}"
                    );
                    for part in message.split("; ") {
                        assert!(
                            RULE_PATHS.iter().any(|p| part.starts_with(p)),
                            "rule violation without its wire path: {part:?} in {message:?}"
                        );
                    }
                }
                // Every problem is listed, `path: message; path: message`: one of them names
                // an unreadable field.
                Expected::Unreadable(fields) => assert!(
                    message.split("; ").any(|part| fields.iter().any(|f| {
                        part.strip_prefix(f).is_some_and(|rest| {
                            rest.starts_with(": ") || rest.starts_with('[') || rest.starts_with('.')
                        })
                    })),
                    "type error {message:?} names none of {fields:?}"
                ),
                Expected::Missing(wire) => {
                    let part = format!("{wire}: required");
                    assert!(
                        message.split("; ").any(|p| p == part),
                        "{message:?} does not say {part:?}"
                    );
                }
            }
        }
        (Ok(got), Expected::Unreadable(fields)) => {
            panic!("decoded {got:?} though {fields:?} cannot be read")
        }
        (Ok(got), Expected::Missing(wire)) => panic!("decoded {got:?} though {wire} is missing"),
    }
}

const PERMUTATIONS: [[InputSource; 3]; 6] = {
    use InputSource::{Body, Params, Query};
    [
        [Query, Body, Params],
        [Query, Params, Body],
        [Body, Query, Params],
        [Body, Params, Query],
        [Params, Query, Body],
        [Params, Body, Query],
    ]
};

fuzz_target!(|data: &[u8]| {
    let [flags, rest @ ..] = data else {
        return;
    };
    let method =
        [Method::GET, Method::POST, Method::PUT, Method::DELETE][usize::from(flags & 3)].clone();
    let form_body = flags & 4 != 0;
    let mut sources = InputSources::default();
    if flags & 8 != 0 {
        sources.set(&method, PERMUTATIONS[usize::from(flags >> 4) % 6].to_vec());
    }
    let mut sections = rest.splitn(3, |&b| b == b'\n');
    let query = sections.next().unwrap_or_default();
    let params = sections.next().unwrap_or_default();
    let body = sections.next().unwrap_or_default();

    let query_text = query;
    let Ok(query) = parse_urlencoded(query_text, 1000) else {
        return;
    };
    // As the parse stage hands it over: kept as it is when it needs no decoding.
    let plain = std::str::from_utf8(query_text)
        .ok()
        .and_then(|text| {
            let uri = http::Uri::try_from(format!("/?{text}")).ok()?;
            (uri.query() == Some(text)).then_some(uri)
        })
        .and_then(|uri| PlainQuery::check(&uri, 1000).ok().flatten());
    let Ok(params) = parse_urlencoded(params, 1000) else {
        return;
    };
    let params: PathParams = params
        .into_iter()
        .map(|(k, v)| {
            let first = match v {
                TextValue::One(one) => one,
                TextValue::Many(mut many) => many.swap_remove(0),
            };
            (k, first)
        })
        .collect();
    let body_is_a_source = sources.for_method(&method).contains(&InputSource::Body);
    let body = if body.is_empty() || (HAND_BODY_ONLY_TO_SOURCES && !body_is_a_source) {
        ParsedBody::Empty
    } else if form_body {
        match parse_urlencoded(body, 1000) {
            Ok(pairs) => ParsedBody::Form(pairs),
            Err(_) => return,
        }
    } else {
        match JsonObject::new(body.to_vec()) {
            Ok(object) => ParsedBody::JsonObject(object),
            Err(_) => return,
        }
    };

    // The reference merge.
    let mut reference: Vec<(String, InputValue)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for source in sources.for_method(&method) {
        match source {
            InputSource::Query => merge(&mut reference, &mut index, text_entries(&query)),
            InputSource::Params => merge(
                &mut reference,
                &mut index,
                params
                    .iter()
                    .map(|(k, v)| (k.to_owned(), InputValue::Text(TextValue::One(v.to_owned())))),
            ),
            InputSource::Body => match &body {
                ParsedBody::JsonObject(object) => merge(
                    &mut reference,
                    &mut index,
                    object
                        .to_map()
                        .into_iter()
                        .map(|(k, v)| (k, InputValue::Json(v))),
                ),
                ParsedBody::Form(pairs) => merge(&mut reference, &mut index, text_entries(pairs)),
                _ => {}
            },
            InputSource::Files
            | InputSource::Headers
            | InputSource::Cookies
            | InputSource::SignedCookies => {}
        }
    }

    // The combine stage.
    let parsed = Parsed {
        query: match plain {
            Some(plain) => plain.into(),
            None => query.into(),
        },
        body,
        params,
        files: Vec::new(),
    };
    let request = Request::builder()
        .method(method)
        .uri("/")
        .body(parsed)
        .expect("a request");
    let service =
        CombineLayer::with_sources(sources).layer(service_fn(
            |request: Request<Staged<HNil>>| async move {
                Ok::<Input, ApiError>(request.into_body().input)
            },
        ));
    let input = now(service.oneshot(request)).expect("combining text and JSON objects cannot fail");
    let merged: Vec<(&str, &InputValue)> = input.iter().collect();
    assert_eq!(merged.len(), reference.len(), "merged keys");
    for ((key, value), (want_key, want_value)) in merged.iter().zip(&reference) {
        assert_eq!(key, want_key);
        assert_eq!(*value, want_value, "value of {key}");
    }

    let expected = expected(&reference);
    let decoded = DECODER.decode(&input);
    check_decoded(&decoded, &expected);

    if input.as_json_object().is_some() {
        // The same members as values: the same outcome.
        let as_values: Input = input
            .iter()
            .map(|(k, v)| (k.to_owned(), v.clone()))
            .collect();
        assert!(as_values.as_json_object().is_none());
        let from_values = DECODER.decode(&as_values);
        check_decoded(&from_values, &expected);
        let one_or_none_wrong = match &expected {
            Expected::Unreadable(fields) => fields.len() == 1,
            _ => true,
        };
        // README, "Findings", 2: for an enum given something other than a string, serde_json's
        // byte reader and its value reader word the error differently (`expected value` for
        // `[]`; `unknown variant` for an object of two keys, where values say `expected map
        // with a single key`).
        let enum_quirk = matches!(&expected, Expected::Unreadable(fields) if fields == &["role"])
            && matches!(input.get("role"), Some(InputValue::Json(v)) if !v.is_string());
        let one_or_none_wrong = one_or_none_wrong && !(KNOWN_ENUM_MESSAGE_QUIRK && enum_quirk);
        if let (Err(bytes), Err(values), true) = (&decoded, &from_values, one_or_none_wrong) {
            assert_eq!(
                bytes.message(),
                values.message(),
                "bytes and values disagree"
            );
        }
    }
});
