use std::task::{Context, Poll};

use http::{HeaderMap, Request};
use strata_core::{ApiError, BoxError, ErrorKind, HNil};
use strata_input::cookies::{CookieKeys, RequestCookies};
use strata_input::{
    Input, InputSource, InputSources, InputValue, JsonObjectError, Parsed, ParsedBody, Staged,
    TextValue,
};
use tower_service::Service;

use strata_core::future::ShortCircuit;

use crate::future::ResponseFuture;
use crate::layer::CombineLayer;

/// Merges the input sources of each request; see the [crate docs](crate).
#[derive(Debug, Clone)]
pub struct CombineService<S> {
    inner: S,
    sources: InputSources,
    cookie_keys: Option<CookieKeys>,
}

impl<S> CombineService<S> {
    /// Wraps `inner` with the default sources.
    pub fn new(inner: S) -> Self {
        Self::from_sources(inner, InputSources::default(), None)
    }

    pub(crate) fn from_sources(
        inner: S,
        sources: InputSources,
        cookie_keys: Option<CookieKeys>,
    ) -> Self {
        Self {
            inner,
            sources,
            cookie_keys,
        }
    }

    /// A [`CombineLayer`] with the default sources.
    pub fn layer() -> CombineLayer {
        CombineLayer::new()
    }

    strata_core::inner_service_accessors!();
}

fn text_value(value: String) -> InputValue {
    InputValue::Text(TextValue::One(value))
}

fn text(entries: Vec<(String, TextValue)>) -> impl Iterator<Item = (String, InputValue)> {
    entries.into_iter().map(|(k, v)| (k, InputValue::Text(v)))
}

fn headers(map: &HeaderMap) -> Result<Vec<(String, InputValue)>, ApiError> {
    let mut entries = Vec::with_capacity(map.keys_len());
    for name in map.keys() {
        let mut value: Option<TextValue> = None;
        for raw in map.get_all(name) {
            let text = std::str::from_utf8(raw.as_bytes()).map_err(|_| {
                ApiError::bad_request(
                    ErrorKind::Parse,
                    format!("Header {name} is not valid UTF-8"),
                )
            })?;
            match &mut value {
                Some(existing) => existing.push(text.to_owned()),
                None => value = Some(TextValue::One(text.to_owned())),
            }
        }
        if let Some(value) = value {
            entries.push((name.as_str().to_owned(), InputValue::Text(value)));
        }
    }
    Ok(entries)
}

/// Whether `kept` is one of `sources` and every other source of them is empty.
fn alone(
    kept: InputSource,
    sources: &[InputSource],
    parsed: &Parsed,
    header_map: &HeaderMap,
) -> bool {
    sources.contains(&kept)
        && sources.iter().all(|&source| {
            source == kept
                || match source {
                    InputSource::Query => parsed.query.is_empty(),
                    InputSource::Body => matches!(parsed.body, ParsedBody::Empty),
                    InputSource::Params => parsed.params.is_empty(),
                    InputSource::Files => parsed.files.is_empty(),
                    InputSource::Headers => header_map.is_empty(),
                    InputSource::Cookies | InputSource::SignedCookies => {
                        !header_map.contains_key(http::header::COOKIE)
                    }
                }
        })
}

/// Merges `parsed` per `sources`; consumed sources are taken out of `parsed`.
pub(crate) fn combine(
    sources: &[InputSource],
    parsed: &mut Parsed,
    header_map: &HeaderMap,
    cookie_keys: Option<&CookieKeys>,
) -> Result<Input, ApiError> {
    if matches!(parsed.body, ParsedBody::JsonObject(_)) {
        // A JSON object body that is the only input is handed over as it is: decoding reads it
        // straight from its bytes (no values built in between), and checks it then if its
        // check was deferred. Only when the method reads the body at all (found by fuzzing: a
        // JSON body used to become the input of a method whose sources leave the body out).
        if alone(InputSource::Body, sources, parsed, header_map)
            && let ParsedBody::JsonObject(object) = std::mem::take(&mut parsed.body)
        {
            return Ok(Input::from(object));
        }
        // Merged with other sources: checked first, so that a malformed body is refused
        // before anything else here, as when the parse stage checks it.
        if let ParsedBody::JsonObject(object) = &mut parsed.body {
            object.check().map_err(JsonObjectError::into_api_error)?;
        }
    }
    // The same for a query that needs no decoding: read in place.
    if parsed.query.as_plain().is_some()
        && alone(InputSource::Query, sources, parsed, header_map)
        && let Some(plain) = std::mem::take(&mut parsed.query).into_plain()
    {
        return Ok(Input::from(plain));
    }
    let mut input = Input::new();
    // The names of the path parameters, once merged: a header of one of these names is left
    // out (see `InputSource::Headers`). Kept only when headers are a source.
    let mut param_names: Vec<std::sync::Arc<str>> = Vec::new();
    let holds_back =
        |source: &InputSource| matches!(source, InputSource::Headers) || source.is_cookies();
    let mut cookies: Option<RequestCookies> = None;
    for source in sources {
        match source {
            InputSource::Query => input.merge(text(std::mem::take(&mut parsed.query).into_pairs())),
            InputSource::Body => match std::mem::take(&mut parsed.body) {
                ParsedBody::Json(map) => {
                    input.merge(map.into_iter().map(|(k, v)| (k, InputValue::Json(v))));
                }
                ParsedBody::JsonObject(object) => input.merge(
                    object
                        .to_map()
                        .into_iter()
                        .map(|(k, v)| (k, InputValue::Json(v))),
                ),
                ParsedBody::Form(pairs) => input.merge(text(pairs)),
                ParsedBody::Raw(body) => input.merge([(
                    strata_input::raw::RAW_FIELD.to_owned(),
                    InputValue::Files(vec![body]),
                )]),
                _ => {}
            },
            InputSource::Params => {
                let params = std::mem::take(&mut parsed.params).into_inner();
                if sources.iter().any(holds_back) {
                    param_names.extend(params.iter().map(|(k, _)| k.clone()));
                }
                input.merge(
                    params
                        .into_iter()
                        .map(|(k, v)| (String::from(&*k), InputValue::Text(TextValue::One(v)))),
                );
            }
            // Files exist only when uploads are enabled; the parse stage then provides them.
            InputSource::Files => input.merge(
                std::mem::take(&mut parsed.files)
                    .into_iter()
                    .map(|(k, files)| (k, InputValue::Files(files))),
            ),
            // A header never overrides a path parameter, whatever the order: the path names
            // the resource, while headers are whatever a client or a proxy adds, outside what
            // a body signature covers. Only headers: the other sources keep express-zod-api's
            // rule, later ones win (the spec's POST merges files after the parameters).
            InputSource::Headers => input.merge(
                headers(header_map)?
                    .into_iter()
                    .filter(|(name, _)| !param_names.iter().any(|param| **param == **name)),
            ),
            // Cookies are a client's to set, like headers: never over a path parameter.
            InputSource::Cookies | InputSource::SignedCookies => {
                let cookies = match &mut cookies {
                    Some(cookies) => cookies,
                    None => cookies.insert(RequestCookies::parse(header_map)?),
                };
                let not_a_param = |name: &str| !param_names.iter().any(|param| **param == *name);
                let entries: Vec<(String, InputValue)> = if *source == InputSource::Cookies {
                    cookies
                        .iter()
                        .filter(|(name, _)| not_a_param(name))
                        .map(|(name, value)| (name.to_owned(), text_value(value.to_owned())))
                        .collect()
                } else {
                    // Routing refuses signed cookies as a source without keys; a stage
                    // used alone without them has no cookie it could trust.
                    cookie_keys
                        .map(|keys| {
                            cookies
                                .signed(keys)
                                .filter(|(name, _)| not_a_param(name))
                                .map(|(name, value)| (name.to_owned(), text_value(value)))
                                .collect()
                        })
                        .unwrap_or_default()
                };
                input.merge(entries);
            }
        }
    }
    Ok(input)
}

impl<S> Service<Request<Parsed>> for CombineService<S>
where
    S: Service<Request<Staged<HNil>>>,
    S::Error: Into<BoxError> + 'static,
{
    type Response = S::Response;
    type Error = ApiError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ApiError::from_inner)
    }

    fn call(&mut self, request: Request<Parsed>) -> Self::Future {
        let (parts, mut parsed) = request.into_parts();
        let sources = self.sources.for_method(&parts.method);
        match combine(
            sources,
            &mut parsed,
            &parts.headers,
            self.cookie_keys.as_ref(),
        ) {
            Ok(input) => {
                let staged = Staged { input, ctx: HNil };
                ShortCircuit::inner(self.inner.call(Request::from_parts(parts, staged)))
            }
            Err(error) => ShortCircuit::error(error),
        }
    }
}
