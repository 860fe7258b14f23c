use std::fmt;

use http::Method;

/// Why a routing tree cannot be served. Found once, at startup; never at request time.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RoutingError {
    /// Two entries resolve to the same method and path (parameter names do not matter).
    Duplicate {
        /// The method.
        method: Method,
        /// The path.
        path: String,
    },
    /// An explicit method key names a method the endpoint does not declare.
    MethodNotSupported {
        /// The method of the key.
        method: Method,
        /// The path.
        path: String,
    },
    /// An endpoint declares a method outside GET, POST, PUT, PATCH, DELETE, QUERY.
    UnsupportedMethod {
        /// The method.
        method: Method,
        /// The path.
        path: String,
    },
    /// A `:param` that is not a field of the endpoint's input.
    UnknownParam {
        /// The parameter.
        param: String,
        /// The method.
        method: Method,
        /// The path.
        path: String,
    },
    /// A key that is not a valid path segment, flat path or `<method> <path>`.
    InvalidKey {
        /// The key.
        key: String,
        /// Where it is (the parent path).
        parent: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// Two routes that the trie cannot tell apart (e.g. static files over an endpoint's path).
    Conflict {
        /// The route being added (`GET /public/:id`, `static files under /public`).
        route: String,
        /// The route it clashes with.
        with: String,
    },
    /// An endpoint that implements an [`Operation`](strata_core::Operation) is mounted at
    /// another method or path than the operation declares (its clients would call the
    /// declared one and get a 404).
    NotAsDeclared {
        /// Where the operation says it is (`GET /v1/books/:id`).
        declared: String,
        /// Where the routing mounts it.
        mounted: String,
    },
    /// `cors` was not chosen in the config: it must be set to `true`, `false` or a function.
    CorsNotConfigured,
    /// The pipeline's settings turn uploads on, but this build reads no multipart bodies
    /// (Strata's `upload` feature is off).
    UploadsNotBuilt,
    /// A method reads signed cookies (`InputSource::SignedCookies`), but no keys verify them
    /// (`create_config().cookie_keys(..)`).
    NoCookieKeys {
        /// The first method whose sources name signed cookies.
        method: Method,
    },
}

impl fmt::Display for RoutingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Duplicate { method, path } => write!(f, "Route {method} {path} is defined twice"),
            Self::MethodNotSupported { method, path } => {
                write!(f, "{method} {path}: the endpoint does not support {method}")
            }
            Self::UnsupportedMethod { method, path } => write!(
                f,
                "{method} {path}: endpoints serve GET, POST, PUT, PATCH, DELETE or QUERY, not {method}"
            ),
            Self::UnknownParam { param, method, path } => write!(
                f,
                "{method} {path}: path parameter :{param} is not a field of the endpoint's input"
            ),
            Self::InvalidKey { key, parent, reason } => {
                write!(f, "Invalid routing key {key:?} under {parent:?}: {reason}")
            }
            Self::Conflict { route, with } => write!(f, "{route} conflicts with {with}"),
            Self::NotAsDeclared { declared, mounted } => write!(
                f,
                "{mounted}: the endpoint implements the operation {declared}, so it must be mounted there"
            ),
            Self::CorsNotConfigured => f.write_str(
                "cors must be configured explicitly: true, false or a function (create_config().cors(..))",
            ),
            Self::UploadsNotBuilt => f.write_str(
                "uploads are configured, but this build reads no multipart bodies: turn on Strata's `upload` feature",
            ),
            Self::NoCookieKeys { method } => write!(
                f,
                "{method} reads signed cookies, but no secret verifies them: set create_config().cookie_keys(..)"
            ),
        }
    }
}

impl std::error::Error for RoutingError {}
