//! The quick-start endpoint: GET with an optional `name`, answering
//! `{"status":"success","data":{"greetings":"Hello, <name or World>"}}`.
//!
//! Until the server crate lands, this example calls the endpoint's tower service directly with a
//! few requests and prints the responses: `cargo run --example hello`.

use garde::Validate;
use http::Request;
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;
use tower::ServiceExt;

#[derive(Deserialize, Validate, JsonSchema)]
struct HelloInput {
    #[garde(length(chars, min = 1))]
    name: Option<String>,
}

#[derive(Serialize, Validate, JsonSchema)]
struct HelloOutput {
    #[garde(skip)]
    greetings: String,
}

/// The endpoint of the quick start.
pub(crate) fn hello_endpoint() -> Endpoint {
    default_endpoints_factory()
        .get()
        .tag("greetings")
        .short_description("Says hello")
        .handler(|input: HelloInput, _ctx, logger| async move {
            let name = input.name.as_deref().unwrap_or("World");
            logger.debug(format_args!("greeting {name}"));
            Ok(HelloOutput {
                greetings: format!("Hello, {name}"),
            })
        })
}

/// Sends `uri` to the endpoint and returns the status and body.
pub(crate) async fn ask(endpoint: &Endpoint, uri: &str) -> (u16, String) {
    let request = Request::get(uri)
        .body(String::new())
        .expect("valid request");
    let response = endpoint
        .service()
        .oneshot(request)
        .await
        .expect("the service never fails");
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("in-memory body")
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let hello = hello_endpoint();
    for uri in ["/v1/hello", "/v1/hello?name=Strata", "/v1/hello?name="] {
        let (status, body) = ask(&hello, uri).await;
        println!("GET {uri} -> {status} {body}");
    }
}
