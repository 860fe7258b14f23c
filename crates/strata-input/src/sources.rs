//! Where a request's input comes from ([`InputSource`]) and which sources each method merges
//! ([`InputSources`], spec table 2.2).

use std::sync::Arc;

use http::Method;
use strata_core::is_query;

/// A place a request's input comes from (spec table 2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputSource {
    /// The parsed query string.
    Query,
    /// The parsed body (JSON or urlencoded form).
    Body,
    /// The path parameters found by routing.
    Params,
    /// Uploaded files (multipart; only when uploads are enabled).
    Files,
    /// Request headers, with lower-case names; repeated headers are lists.
    ///
    /// A header never overrides a path parameter, wherever `Headers` is in the list: a header
    /// named like a parameter of the route is left out of the input (`topic: payments` on
    /// `POST /hooks/orders` leaves `topic` = `orders`). Headers are what any client or proxy
    /// adds, the path names the resource. Against the other sources headers keep their place:
    /// put them first to let every other source override them, as express-zod-api advises.
    Headers,
    /// The request's cookies, by name ([`RequestCookies`](crate::cookies::RequestCookies):
    /// percent-decoded, within limits). Like headers, a cookie never overrides a path
    /// parameter.
    Cookies,
    /// The request's signed cookies whose signature one of the configured keys verifies, by
    /// name, with the value that was signed; a forged, altered or unsigned cookie is absent
    /// (express's `signedCookies`). Routing refuses to start without keys
    /// (`create_config().cookie_keys(..)`).
    SignedCookies,
}

impl InputSource {
    /// Whether the source is the request's cookies, signed or not.
    pub fn is_cookies(self) -> bool {
        matches!(self, InputSource::Cookies | InputSource::SignedCookies)
    }
}

/// Which sources are merged into the input, per method (spec table 2.2).
///
/// The sources of a method are merged in their order, a later source replacing the values of
/// an earlier one key by key (express-zod-api's rule), with one exception: a header never
/// replaces a path parameter ([`InputSource::Headers`]).
///
/// HEAD uses GET's sources. Methods outside the six use body, query, params. Cloning shares the
/// table (every endpoint of a routing holds the same one); a change copies it first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSources(Arc<Table>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Table {
    get: Vec<InputSource>,
    post: Vec<InputSource>,
    put: Vec<InputSource>,
    patch: Vec<InputSource>,
    delete: Vec<InputSource>,
    query: Vec<InputSource>,
}

const FALLBACK_SOURCES: &[InputSource] =
    &[InputSource::Body, InputSource::Query, InputSource::Params];

impl Default for InputSources {
    fn default() -> Self {
        use InputSource::{Body, Files, Params, Query};
        Self(Arc::new(Table {
            get: vec![Query, Params],
            post: vec![Body, Params, Files],
            put: vec![Body, Params],
            patch: vec![Body, Params],
            delete: vec![Query, Params],
            // express-zod-api 29: the query string, then the body, then path parameters.
            query: vec![Query, Body, Params],
        }))
    }
}

impl InputSources {
    /// The sources of `method`, in merge order (later ones win, but headers never over path
    /// parameters).
    ///
    /// ```
    /// use http::Method;
    /// use strata_input::{InputSource, InputSources};
    ///
    /// let sources = InputSources::default();
    /// assert_eq!(sources.for_method(&Method::HEAD), [InputSource::Query, InputSource::Params]);
    /// ```
    pub fn for_method(&self, method: &Method) -> &[InputSource] {
        let table = &*self.0;
        match *method {
            Method::GET | Method::HEAD => &table.get,
            Method::POST => &table.post,
            Method::PUT => &table.put,
            Method::PATCH => &table.patch,
            Method::DELETE => &table.delete,
            ref other if is_query(other) => &table.query,
            _ => FALLBACK_SOURCES,
        }
    }

    /// Replaces the sources of `method`, one of GET, POST, PUT, PATCH, DELETE, QUERY, and
    /// returns `true`; other methods (HEAD follows GET) have no list of their own, and `false`
    /// is returned.
    ///
    /// `sources` are in merge order: a later source replaces an earlier one's values key by
    /// key, except that headers never replace path parameters ([`InputSource::Headers`]).
    pub fn set(&mut self, method: &Method, sources: impl Into<Vec<InputSource>>) -> bool {
        if !(matches!(
            *method,
            Method::GET | Method::POST | Method::PUT | Method::PATCH | Method::DELETE
        ) || is_query(method))
        {
            return false;
        }
        let table = Arc::make_mut(&mut self.0);
        let slot = match *method {
            Method::GET => &mut table.get,
            Method::POST => &mut table.post,
            Method::PUT => &mut table.put,
            Method::PATCH => &mut table.patch,
            Method::DELETE => &mut table.delete,
            _ => &mut table.query,
        };
        *slot = sources.into();
        true
    }

    /// The first method (GET, POST, PUT, PATCH, DELETE, QUERY, in this order) whose sources
    /// include `source`.
    pub fn reading(&self, source: InputSource) -> Option<Method> {
        let table = &*self.0;
        [
            (Method::GET, &table.get),
            (Method::POST, &table.post),
            (Method::PUT, &table.put),
            (Method::PATCH, &table.patch),
            (Method::DELETE, &table.delete),
            (strata_core::query_method(), &table.query),
        ]
        .into_iter()
        .find(|(_, sources)| sources.contains(&source))
        .map(|(method, _)| method)
    }

    /// Whether the body is read for `method` (it is a source, directly or through files).
    pub fn reads_body(&self, method: &Method) -> bool {
        self.for_method(method)
            .iter()
            .any(|s| matches!(s, InputSource::Body | InputSource::Files))
    }
}

/// Header names an input field may be read from when a method's sources include
/// [`InputSource::Headers`], besides `x-` names (and a middleware's header credentials): the
/// rule the OpenAPI document and the Rust client place header fields by.
pub const WELL_KNOWN_HEADERS: [&str; 12] = [
    "accept",
    "accept-encoding",
    "accept-language",
    "authorization",
    "cache-control",
    "content-language",
    "cookie",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "origin",
    "user-agent",
];

/// Whether an input field named `name` is a header's (when the method reads headers): headers
/// reach the input under lower-case names, so a name with capitals never is one; `x-` names
/// and [`WELL_KNOWN_HEADERS`] are.
pub fn looks_like_header(name: &str) -> bool {
    !name.bytes().any(|b| b.is_ascii_uppercase())
        && (name.starts_with("x-") || WELL_KNOWN_HEADERS.contains(&name))
}

#[cfg(test)]
mod tests {
    use strata_core::query_method;

    use super::*;

    #[test]
    fn only_the_five_methods_and_query_have_their_own_sources() {
        let mut sources = InputSources::default();
        let shared = sources.clone();
        assert!(sources.set(&Method::GET, [InputSource::Headers]));
        assert!(!sources.set(&Method::HEAD, [InputSource::Body]));
        assert!(!sources.set(&Method::OPTIONS, [InputSource::Body]));
        assert_eq!(sources.for_method(&Method::HEAD), [InputSource::Headers]);
        assert_eq!(
            shared.for_method(&Method::GET),
            [InputSource::Query, InputSource::Params],
            "a clone keeps the table it shared"
        );
        assert!(!sources.reads_body(&Method::GET));
        assert!(sources.reads_body(&Method::POST));
        let query = query_method();
        assert_eq!(
            sources.for_method(&query),
            [InputSource::Query, InputSource::Body, InputSource::Params]
        );
        assert!(sources.reads_body(&query));
        assert!(sources.set(&query, [InputSource::Body]));
        assert_eq!(sources.for_method(&query), [InputSource::Body]);
    }
}
