//! The HTTP `QUERY` method, which `http` has no constant for.

use http::Method;

/// The HTTP `QUERY` method: safe and idempotent like GET, with a body that says what to find
/// (express-zod-api routes it since version 29). `http` has no constant for it.
pub fn query_method() -> Method {
    // A valid token: `from_bytes` cannot fail here, and keeps short names inline (no heap).
    Method::from_bytes(b"QUERY").unwrap_or_default()
}

/// Whether `method` is `QUERY`.
pub fn is_query(method: &Method) -> bool {
    method.as_str() == "QUERY"
}
