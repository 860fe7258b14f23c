//! The servers of `strata-bench middleware`: the `hello` endpoint of the bench app (the quick
//! start's, as `strata_app` serves it), alone at `/v1/hello`, with no middleware or behind one
//! of issue 28's: cookies, caching, rate limits. Each runs under the bench app's configuration
//! (production, CORS on, the default logger at `warn`), with metrics and traces on for the
//! servers that measure them (`servers::start_middleware`).

use std::time::Duration;
use strata::Routing;

use http::request::Parts;
use strata::cache::{Cache, CacheControl, Caching, ETag};
use strata::cookies::Cookies;
use strata::prelude::*;
use strata::ratelimit::{HeadersOn, Key, Quota, RateLimit};
use strata::stages::middleware::{Amend, AmendResponse, MiddlewareHandler, outcome_headers};

use crate::middleware::Server;
use crate::model::{HelloInput, HelloOutput};

/// The tag the cached hello's handler sets (`ETag: "hello-1"`).
pub(crate) const HELLO_TAG: &str = "hello-1";

/// The rate limiter's quota: a million requests per second per client, far more than one
/// loopback client sends, so that no request is denied during a run.
pub(crate) const QUOTA_PER_SECOND: u32 = 1_000_000;

/// The cookie the cookie variant's handler reads.
pub(crate) const READ_COOKIE: &str = "theme";

/// The hello handler's work, as `strata_app` writes it.
fn greet(input: &HelloInput, logger: &Logger) -> HelloOutput {
    let name = input.name.as_deref().unwrap_or("World");
    logger.debug(format_args!("greeting {name}"));
    HelloOutput {
        greetings: format!("Hello, {name}"),
    }
}

/// The context entry of the middleware that does nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Nothing;

/// A middleware that only adds one fixed header to every response (`x-bench: 1`), through the
/// same path as the cookie, cache and rate-limit middleware (`MiddlewareHandler::Amends`):
/// what adding response headers costs, whatever a middleware does besides.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OneHeader;

/// What [`OneHeader`] leaves to amend the response with.
pub(crate) struct AddHeader;

/// The header's name, made once as the middleware make theirs (a `&str` would be parsed and
/// copied per request, ~300 instructions and an allocation no middleware pays).
const X_BENCH: http::HeaderName = http::HeaderName::from_static("x-bench");

impl AmendResponse for AddHeader {
    fn amend<R: Amend>(self, outcome: &mut Result<R, strata::ApiError>) {
        outcome_headers(outcome).insert(X_BENCH, http::HeaderValue::from_static("1"));
    }
}

impl<C> MiddlewareHandler<(), C> for OneHeader {
    type Output = Nothing;
    type Future = std::future::Ready<Result<Nothing, strata::ApiError>>;
    type Amends = AddHeader;

    fn call(&self, (): (), _request: &Parts, _ctx: &C, _logger: &Logger) -> Self::Future {
        std::future::ready(Ok(Nothing))
    }

    fn amends(_output: &Nothing) -> AddHeader {
        AddHeader
    }
}

/// The routing of `server`: `GET /v1/hello` and nothing else.
pub(crate) fn routing(server: Server) -> Routing {
    let factory = default_endpoints_factory();
    let hello = match server {
        Server::Plain | Server::Metrics | Server::Tracing0 | Server::Tracing1 => factory
            .get()
            .tag("greetings")
            .short_description("Says hello")
            .handler(async |input: HelloInput, logger: Logger| Ok(greet(&input, &logger))),
        Server::Noop => factory
            .add_middleware(Middleware::new(|(): (), _request, _logger| async {
                Ok(Nothing)
            }))
            .get()
            .tag("greetings")
            .short_description("Says hello")
            .handler(async |input: HelloInput, logger: Logger| Ok(greet(&input, &logger))),
        Server::OneHeader => factory
            .add_middleware(Middleware::custom(OneHeader))
            .get()
            .tag("greetings")
            .short_description("Says hello")
            .handler(async |input: HelloInput, logger: Logger| Ok(greet(&input, &logger))),
        // The handler reads one cookie of the request; a request without it is a 400, so the
        // pre-flight's 200 says it was read.
        Server::Cookies => factory
            .add_middleware(strata::cookies::cookies())
            .get()
            .tag("greetings")
            .short_description("Says hello")
            .handler(
                async |input: HelloInput, cookies: Cookies, logger: Logger| {
                    let theme = cookies
                        .get(READ_COOKIE)
                        .ok_or_else(|| http_error!(400, "No theme cookie"))?;
                    logger.debug(format_args!("theme {theme}"));
                    Ok(greet(&input, &logger))
                },
            ),
        // A public policy of a minute; the handler sets its tag first (`?`: a matching
        // `If-None-Match` is answered 304 there, before the output stage).
        Server::Cache => {
            let policy = CacheControl::builder()
                .public()
                .max_age(Duration::from_secs(60))
                .build()
                .unwrap_or_else(|_| CacheControl::no_cache());
            factory
                .add_middleware(Caching::new(policy).middleware())
                .get()
                .tag("greetings")
                .short_description("Says hello")
                .handler(async |input: HelloInput, cache: Cache, logger: Logger| {
                    cache.etag(ETag::strong(HELLO_TAG)?)?;
                    Ok(greet(&input, &logger))
                })
        }
        // Keyed by the client's address (the server's `ClientAddr`), its headers on a 429 only
        // (the default).
        Server::RateLimit => factory
            .add_middleware(
                RateLimit::new(Quota::per_second(QUOTA_PER_SECOND), Key::client_addr())
                    .middleware(),
            )
            .get()
            .tag("greetings")
            .short_description("Says hello")
            .handler(async |input: HelloInput, logger: Logger| Ok(greet(&input, &logger))),
        // The same limiter with its two headers on every response (`headers(HeadersOn::EveryResponse)`): what
        // telling the client its budget costs on top of the check.
        Server::RateLimitHeaders => factory
            .add_middleware(
                RateLimit::new(Quota::per_second(QUOTA_PER_SECOND), Key::client_addr())
                    .headers(HeadersOn::EveryResponse)
                    .middleware(),
            )
            .get()
            .tag("greetings")
            .short_description("Says hello")
            .handler(async |input: HelloInput, logger: Logger| Ok(greet(&input, &logger))),
    };
    routing! { "v1" => { "hello" => hello } }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the API document says hello answers on `server`: its statuses, and the headers of
    /// its 200.
    fn described(server: Server) -> (Vec<String>, Vec<String>) {
        let config = create_config().cors(Cors::Enabled).build();
        let doc = strata::openapi::Documentation::new(&routing(server), &config)
            .title("bench")
            .version("1")
            .build()
            .unwrap()
            .to_value();
        let responses = &doc["paths"]["/v1/hello"]["get"]["responses"];
        let statuses = responses.as_object().unwrap().keys().cloned().collect();
        let headers = responses["200"]["headers"]
            .as_object()
            .map(|headers| headers.keys().cloned().collect())
            .unwrap_or_default();
        (statuses, headers)
    }

    /// The pre-flight cannot tell the default limiter's 200 from plain hello's: its hello is
    /// checked to have the limiter (the 429 declared) here instead.
    #[test]
    fn each_rate_limit_server_has_its_limiter_and_the_others_none() {
        for server in Server::ALL {
            let (statuses, headers) = described(server);
            let limited = matches!(server, Server::RateLimit | Server::RateLimitHeaders);
            assert_eq!(
                statuses.contains(&"429".to_owned()),
                limited,
                "{server:?}: {statuses:?}"
            );
            assert_eq!(
                headers.contains(&"ratelimit".to_owned()),
                server == Server::RateLimitHeaders,
                "{server:?}: {headers:?}"
            );
        }
    }
}
