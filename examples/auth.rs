//! An API behind an authentication middleware: the middleware reads a key from the input and a
//! token from the headers and adds the user to the context; endpoints read it by type.
//! `tests/testing.rs` tests these endpoints and the middleware with `strata::testing`.
//!
//! `cargo run --example auth`, then
//! `curl -H 'token: 456' 'localhost:8093/v1/profile?key=123'`.
//!
//! `/openapi.json` describes the API (the middleware's credentials as security schemes, its 401
//! and the 429 of `/v1/limited` as responses);
//! `cargo run --example auth -- --openapi auth.json` writes it and exits; `-- --client auth.ts`
//! writes the typed TypeScript client (credentials go in with a custom implementation or per
//! call: see `tests/client/auth.test.ts`).

use std::net::SocketAddr;
use strata::core::HNil;
use strata::{Config, Endpoint, EndpointsFactory, ResultHandler, Routing, Security};

use http::HeaderValue;
use http::header::RETRY_AFTER;
use strata::core::{DeclaredError, Output, ResponseHeader};
use strata::openapi::{
    Documentation, DocumentationError, OpenApi, OpenApiVersion, openapi_endpoint,
};
use strata::prelude::*;
use strata::typescript::{Integration, IntegrationError, TypeScript};
use strata::{Body, Level, RequestInfo, ResponseDescription};

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub(crate) name: String,
}

#[strata::model(input)]
#[derive(Debug)]
pub(crate) struct AuthInput {
    #[garde(length(min = 1))]
    #[schemars(example = &"123")]
    key: String,
}

/// Grants with the user for key `123` and header `token: 456`; denies with 401 otherwise.
pub(crate) fn auth_middleware() -> Middleware<
    AuthInput,
    impl strata::stages::middleware::MiddlewareHandler<AuthInput, HNil, Output = User>,
> {
    // `owned`: the request and the logger are the async block's own.
    Middleware::owned(
        |input: AuthInput, request: RequestInfo, logger| async move {
            logger.debug("checking credentials");
            let token = request.headers.get("token");
            if input.key == "123" && token.is_some_and(|t| t == "456") {
                Ok(User {
                    name: "Jane".into(),
                })
            } else {
                logger.warn("invalid credentials");
                Err(http_error!(401, "Invalid key"))
            }
        },
    )
    .security(Security::and([
        Security::input("key").description("The account key"),
        Security::header("token").description("The session token"),
    ]))
    .error_response(http::StatusCode::UNAUTHORIZED, "Invalid key or token")
}

#[strata::model(input)]
pub(crate) struct ProfileInput {
    #[garde(range(min = 1, max = 3))]
    detail: Option<u8>,
}

#[strata::model(output)]
pub(crate) struct Profile {
    #[garde(length(chars, min = 1))]
    name: String,
    #[garde(range(max = 3))]
    detail: u8,
}

/// The endpoints, built on a factory with the middleware (and, for `plain`, a custom result
/// handler).
pub(crate) struct Endpoints {
    pub(crate) profile: Endpoint,
    pub(crate) limited: Endpoint,
    #[allow(dead_code)] // shown by tests/testing.rs, not served
    pub(crate) broken: Endpoint,
    pub(crate) plain: Endpoint,
}

/// A result handler answering plain text: `ok <json>` or `failed: <message>`.
#[derive(Clone, Debug)]
pub(crate) struct PlainText;

impl ResultHandler for PlainText {
    // The body is text (`ok <json>`), so the output schema does not describe it.
    fn positive(&self, _output: &schemars::Schema) -> Vec<ResponseDescription> {
        let text = schemars::json_schema!({ "type": "string", "pattern": "^ok " });
        vec![ResponseDescription::new(http::StatusCode::OK, text).mime_type("text/plain")]
    }

    fn negative(&self) -> Vec<ResponseDescription> {
        let text = schemars::json_schema!({ "type": "string", "pattern": "^failed: " });
        vec![ResponseDescription::new(http::StatusCode::BAD_REQUEST, text).mime_type("text/plain")]
    }

    fn handle(
        &self,
        result: Result<Output, ApiError>,
        _: &RequestInfo,
        _: &Logger,
    ) -> http::Response<Body> {
        let (status, text) = match result {
            Ok(output) => (output.status(), format!("ok {}", output.json())),
            Err(error) => (error.status(), format!("failed: {}", error.message())),
        };
        let mut response = http::Response::new(Body::from(text));
        *response.status_mut() = status;
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        response
    }
}

pub(crate) fn endpoints() -> Endpoints {
    let secured = default_endpoints_factory().add_middleware(auth_middleware());
    let profile = secured
        .get()
        .tag("account")
        .short_description("The caller's profile")
        .handler(async |input: ProfileInput, user: User, logger: Logger| {
            logger.info(format_args!("profile of {}", user.name));
            Ok(Profile {
                name: user.name,
                detail: input.detail.unwrap_or(1),
            })
        });
    let limited = secured
        .get()
        .tag("account")
        .short_description("Always rate-limited")
        .declared_error(
            DeclaredError::new(http::StatusCode::TOO_MANY_REQUESTS, "Too many requests")
                .header(ResponseHeader::new("retry-after", "Seconds to wait")),
        )
        // Only fails: returns the error alone, and the document shows no success.
        .handler_without_input(async |logger: Logger| {
            logger.log_with(Level::Warn, "rate limit reached", &[("retry_after", &30)]);
            http_error!(429, "Too many requests")
                .with_header(RETRY_AFTER, HeaderValue::from_static("30"))
        });
    let broken = secured.get().handler_without_input(async |logger: Logger| {
        logger.error("about to return an invalid profile");
        Ok(Profile {
            name: String::new(),
            detail: 9,
        })
    });
    let plain = EndpointsFactory::new(PlainText)
        .add_middleware(auth_middleware())
        .get()
        .tag("account")
        .short_description("The caller's name as text")
        .handler_without_input(async |user: User| {
            Ok(Profile {
                name: user.name,
                detail: 1,
            })
        });
    Endpoints {
        profile,
        limited,
        broken,
        plain,
    }
}

/// The routing of the example. `broken` (an output that fails its own rules: a defect, a 500)
/// is shown by the tests, not served.
pub(crate) fn auth_routing() -> Routing {
    let Endpoints {
        profile,
        limited,
        plain,
        ..
    } = endpoints();
    routing! { "v1" => { "profile" => profile, "limited" => limited, "plain" => plain } }
}

/// The OpenAPI document of the example.
pub(crate) fn auth_documentation(
    routing: &Routing,
    config: &Config,
    version: OpenApiVersion,
) -> Result<OpenApi, DocumentationError> {
    Documentation::new(routing, config)
        .openapi_version(version)
        .title("Accounts")
        .version("1.0.0")
        .server_url("http://127.0.0.1:8093")
        .tag_description("account", "The signed-in caller")
        .build()
}

/// The typed TypeScript client of the example.
pub(crate) fn auth_client(
    routing: &Routing,
    config: &Config,
) -> Result<TypeScript, IntegrationError> {
    Integration::new(routing, config)
        .server_url("http://127.0.0.1:8093")
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = match std::env::var("PORT") {
        Ok(port) => port
            .parse::<u16>()
            .map_err(|e| format!("PORT={port:?} is not a port: {e}"))?,
        Err(_) => 8093,
    };
    let config = create_config()
        .cors(Cors::Enabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], port)))
        .logger(Level::Debug)
        .build();
    let routing = auth_routing();
    let doc = auth_documentation(&routing, &config, OpenApiVersion::V3_2)?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, file] if flag == "--openapi" => return Ok(doc.write_file(file)?),
        [flag, file] if flag == "--openapi-3.1" => {
            let doc = auth_documentation(&routing, &config, OpenApiVersion::V3_1)?;
            return Ok(doc.write_file(file)?);
        }
        [flag, file] if flag == "--client" => {
            return Ok(auth_client(&routing, &config)?.write_file(file)?);
        }
        _ => {}
    }
    let routing = routing.route("openapi.json", openapi_endpoint(&doc));
    create_server(&config, &routing).await?.run().await;
    Ok(())
}
