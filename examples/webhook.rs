//! A webhook receiver: the handler gets the exact bytes of the body (`raw: RawBody`) and checks
//! their HMAC-SHA256 signature before trusting a byte of it, as GitHub's and Stripe's webhooks
//! ask. Parsing JSON first and serializing it again would change the bytes and break the
//! signature.
//!
//! `cargo run --example webhook`, then:
//! `curl -X POST localhost:8093/hooks/orders -H 'x-signature: sha256=…' --data-binary @event.json`
//! (the example prints a valid signature of a sample body at start). `PORT` sets the port;
//! `/openapi.json` describes the API, and `-- --openapi webhook.json` (`--openapi-3.1` for
//! OpenAPI 3.1) writes it and exits.

use std::fmt::Write as _;
use strata::{Config, InputSource, Routing};

use ring::hmac;
use strata::RawBody;
use strata::core::DeclaredError;
use strata::openapi::{Documentation, DocumentationError, OpenApi, OpenApiVersion};
use strata::prelude::*;

/// The secret shared with the sender (read from the environment in a real deployment).
pub(crate) const SECRET: &[u8] = b"it's a secret to everybody";

/// `sha256=<hex of HMAC-SHA256(secret, body)>`, the header value a sender computes.
pub(crate) fn signature(body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, SECRET);
    let tag = hmac::sign(&key, body);
    let mut header = String::from("sha256=");
    for byte in tag.as_ref() {
        let _ = write!(header, "{byte:02x}");
    }
    header
}

/// Whether `header` is a valid signature of `body` (compared in constant time).
fn verify(header: &str, body: &[u8]) -> bool {
    let Some(hex) = header.strip_prefix("sha256=") else {
        return false;
    };
    if hex.len() != 64 || !hex.is_ascii() {
        return false;
    }
    let tag: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect();
    let key = hmac::Key::new(hmac::HMAC_SHA256, SECRET);
    tag.is_some_and(|tag| hmac::verify(&key, body, &tag).is_ok())
}

#[strata::model(input)]
pub(crate) struct Delivery {
    /// The body, byte for byte.
    raw: RawBody,
    /// Which integration sent it (a path parameter).
    topic: String,
    /// The sender's signature of the body.
    #[serde(rename = "x-signature")]
    signature: String,
}

#[strata::model(output)]
pub(crate) struct Received {
    topic: String,
    bytes: usize,
    /// The `type` of the event, once the body is trusted and parsed.
    event: Option<String>,
}

/// The routing: `POST /hooks/:topic`.
pub(crate) fn webhook_routing() -> Routing {
    let receive = default_endpoints_factory()
        .post()
        .tag("webhooks")
        .short_description("Receives a signed event")
        .declared_error(DeclaredError::new(
            http::StatusCode::UNAUTHORIZED,
            "The signature does not match the body",
        ))
        .handler(async |input: Delivery, logger: Logger| {
            let body = input.raw.data();
            if !verify(&input.signature, body) {
                logger.warn("a delivery with a bad signature");
                return Err(http_error!(401, "Invalid signature"));
            }
            // Trusted: now parse it.
            let event = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|value| value.get("type")?.as_str().map(str::to_owned));
            Ok(Received {
                topic: input.topic,
                bytes: body.len(),
                event,
            })
        });
    routing! { "hooks" => { ":topic" => receive } }
}

/// The configuration: headers are an input source for POST (the signature), and webhooks are
/// small. A `topic` header cannot redirect a delivery: path parameters win over headers (the
/// server warns of `:topic` at start).
pub(crate) fn webhook_config() -> strata::ConfigBuilder {
    create_config()
        .cors(Cors::Disabled)
        .body_limit(64 * 1024)
        .input_sources(
            &http::Method::POST,
            [InputSource::Body, InputSource::Params, InputSource::Headers],
        )
}

/// The API's OpenAPI document.
pub(crate) fn webhook_documentation(
    routing: &Routing,
    config: &Config,
    version: OpenApiVersion,
) -> Result<OpenApi, DocumentationError> {
    Documentation::new(routing, config)
        .openapi_version(version)
        .title("Webhooks")
        .version("1.0.0")
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
    let config = webhook_config().listen(port).build();
    let routing = webhook_routing();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, file] = args.as_slice() {
        let version = match flag.as_str() {
            "--openapi" => OpenApiVersion::V3_2,
            "--openapi-3.1" => OpenApiVersion::V3_1,
            _ => return Err(format!("unknown option {flag}").into()),
        };
        return Ok(webhook_documentation(&routing, &config, version)?.write_file(file)?);
    }
    let sample = br#"{"type":"order.paid","id":17}"#;
    println!("a sample delivery: {}", String::from_utf8_lossy(sample));
    println!("its signature:     x-signature: {}", signature(sample));
    let doc = webhook_documentation(&routing, &config, OpenApiVersion::V3_2)?;
    let routing = routing.route("openapi.json", strata::openapi::openapi_endpoint(&doc));
    create_server(&config, &routing).await?.run().await;
    Ok(())
}
