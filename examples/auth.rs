//! An API behind an authentication middleware: the middleware reads a key from the input and a
//! token from the headers and adds the user to the context; endpoints read it by type.
//! `tests/testing.rs` tests these endpoints and the middleware with `strata::testing`.
//!
//! `cargo run --example auth`, then
//! `curl -H 'token: 456' 'localhost:8093/v1/profile?key=123'`.

use std::net::SocketAddr;

use garde::Validate;
use http::HeaderValue;
use http::header::RETRY_AFTER;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;
use strata::{Level, Output, RequestInfo, ResponseBody, ResponseDescription};

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub(crate) name: String,
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
pub(crate) struct AuthInput {
    #[garde(length(min = 1))]
    key: String,
}

/// Grants with the user for key `123` and header `token: 456`; denies with 401 otherwise.
pub(crate) fn auth_middleware()
-> Middleware<AuthInput, impl strata::middleware::MiddlewareHandler<AuthInput, HNil, Output = User>>
{
    Middleware::new(|input: AuthInput, request, logger| {
        let token = request.headers.get("token").cloned();
        logger.debug("checking credentials");
        let granted = input.key == "123" && token.is_some_and(|t| t == "456");
        if !granted {
            logger.warn("invalid credentials");
        }
        async move {
            if granted {
                Ok(User {
                    name: "Jane".into(),
                })
            } else {
                Err(http_error!(401, "Invalid key"))
            }
        }
    })
    .security(Security::and([
        Security::input("key"),
        Security::header("token"),
    ]))
}

#[derive(Deserialize, Validate, JsonSchema)]
pub(crate) struct ProfileInput {
    #[garde(range(min = 1, max = 3))]
    detail: Option<u8>,
}

#[derive(Serialize, Validate, JsonSchema)]
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
    pub(crate) broken: Endpoint,
    pub(crate) plain: Endpoint,
}

/// A result handler answering plain text: `ok <json>` or `failed: <message>`.
#[derive(Clone, Debug)]
pub(crate) struct PlainText;

impl ResultHandler for PlainText {
    fn positive(&self, output: &schemars::Schema) -> Vec<ResponseDescription> {
        vec![ResponseDescription {
            status: http::StatusCode::OK,
            schema: output.clone(),
            mime_types: vec!["text/plain".into()],
        }]
    }

    fn negative(&self) -> Vec<ResponseDescription> {
        Vec::new()
    }

    fn handle(
        &self,
        result: Result<Output, ApiError>,
        _: &RequestInfo,
        _: &Logger,
    ) -> http::Response<ResponseBody> {
        let (status, text) = match result {
            Ok(output) => (output.status(), format!("ok {}", output.data().get())),
            Err(error) => (error.status(), format!("failed: {}", error.message())),
        };
        let mut response = http::Response::new(ResponseBody::from(text));
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
        .handler(|input: ProfileInput, ctx, logger| async move {
            let user: &User = ctx.get();
            logger.info(format_args!("profile of {}", user.name));
            Ok(Profile {
                name: user.name.clone(),
                detail: input.detail.unwrap_or(1),
            })
        });
    let limited = secured.get().handler(|(): (), _ctx, logger| async move {
        logger.log_with(Level::Warn, "rate limit reached", &[("retry_after", &30)]);
        Err::<Profile, _>(
            http_error!(429, "Too many requests")
                .with_header(RETRY_AFTER, HeaderValue::from_static("30")),
        )
    });
    let broken = secured.get().handler(|(): (), _ctx, logger| async move {
        logger.error("about to return an invalid profile");
        Ok(Profile {
            name: String::new(),
            detail: 9,
        })
    });
    let plain = EndpointsFactory::new(PlainText)
        .add_middleware(auth_middleware())
        .get()
        .handler(|(): (), ctx, _logger| async move {
            let user: &User = ctx.get();
            Ok(Profile {
                name: user.name.clone(),
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

/// The routing of the example.
pub(crate) fn auth_routing() -> Routing {
    let Endpoints {
        profile,
        limited,
        broken,
        plain,
    } = endpoints();
    routing! { "v1" => { "profile" => profile, "limited" => limited, "broken" => broken, "plain" => plain } }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = create_config()
        .cors(true)
        .listen(SocketAddr::from(([127, 0, 0, 1], 8093)))
        .logger(Level::Debug, true)
        .build();
    create_server(&config, &auth_routing()).await?.run().await;
    Ok(())
}
