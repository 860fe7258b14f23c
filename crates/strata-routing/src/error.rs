use http::Method;

/// Why a routing tree cannot be served. Found once, at startup; never at request time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoutingError {
    /// Two entries resolve to the same method and path (parameter names do not matter).
    #[error("Route {method} {path} is defined twice")]
    Duplicate {
        /// The method.
        method: Method,
        /// The path.
        path: String,
    },
    /// An explicit method key names a method the endpoint does not declare.
    #[error("{method} {path}: the endpoint does not support {method}")]
    MethodNotSupported {
        /// The method of the key.
        method: Method,
        /// The path.
        path: String,
    },
    /// An endpoint declares a method outside GET, POST, PUT, PATCH, DELETE, QUERY.
    #[error(
        "{method} {path}: endpoints serve GET, POST, PUT, PATCH, DELETE or QUERY, not {method}"
    )]
    UnsupportedMethod {
        /// The method.
        method: Method,
        /// The path.
        path: String,
    },
    /// A `:param` that is not a field of the endpoint's input.
    #[error("{method} {path}: path parameter :{param} is not a field of the endpoint's input")]
    UnknownParam {
        /// The parameter.
        param: String,
        /// The method.
        method: Method,
        /// The path.
        path: String,
    },
    /// A key that is not a valid path segment, flat path or `<method> <path>`.
    #[error("Invalid routing key {key:?} under {parent:?}: {reason}")]
    InvalidKey {
        /// The key.
        key: String,
        /// Where it is (the parent path).
        parent: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// Two routes that the trie cannot tell apart (e.g. static files over an endpoint's path).
    #[error("{route} conflicts with {with}")]
    Conflict {
        /// The route being added (`GET /public/:id`, `static files under /public`).
        route: String,
        /// The route it clashes with.
        with: String,
    },
    /// An endpoint that implements an [`Operation`](strata_core::Operation) is mounted at
    /// another method or path than the operation declares (its clients would call the
    /// declared one and get a 404).
    #[error(
        "{mounted}: the endpoint implements the operation {declared}, so it must be mounted there"
    )]
    NotAsDeclared {
        /// Where the operation says it is (`GET /v1/books/:id`).
        declared: String,
        /// Where the routing mounts it.
        mounted: String,
    },
    /// `cors` was not chosen in the config: it must be set to `true`, `false` or a function.
    #[error(
        "cors must be configured explicitly: true, false or a function (create_config().cors(..))"
    )]
    CorsNotConfigured,
    /// The pipeline's settings turn uploads on, but this build reads no multipart bodies
    /// (Strata's `upload` feature is off).
    #[error(
        "uploads are configured, but this build reads no multipart bodies: turn on Strata's `upload` feature"
    )]
    UploadsNotBuilt,
    /// A method reads signed cookies (`InputSource::SignedCookies`), but no keys verify them
    /// (`create_config().cookie_keys(..)`).
    #[error(
        "{method} reads signed cookies, but no secret verifies them: set create_config().cookie_keys(..)"
    )]
    NoCookieKeys {
        /// The first method whose sources name signed cookies.
        method: Method,
    },
}
