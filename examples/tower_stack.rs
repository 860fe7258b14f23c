//! The stage layers stacked by hand around a plain `service_fn`, without the facade's factory:
//! parse → combine → validate → output-check → format, each a separate `tower::Layer`.
//!
//! `cargo run --example tower_stack`

use garde::Validate;
use http::Request;
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::combine::CombineLayer;
use strata::format::FormatLayer;
use strata::output::OutputLayer;
use strata::parse::ParseLayer;
use strata::validate::ValidateLayer;
use strata::{ApiError, DefaultResultHandler, HNil, Validated, http_error};
use tower::{ServiceBuilder, ServiceExt, service_fn};

#[derive(Deserialize, Validate, JsonSchema)]
struct Sum {
    #[garde(length(min = 1, max = 100))]
    numbers: Vec<i64>,
}

#[derive(Serialize, Validate, JsonSchema)]
struct Total {
    #[garde(skip)]
    total: i64,
}

/// Runs three requests through the hand-made stack; returns `(status, body)` of each.
pub(crate) async fn run() -> Vec<(u16, String)> {
    let service = ServiceBuilder::new()
        .layer(FormatLayer::new(DefaultResultHandler))
        .layer(ParseLayer::new().body_limit(4096))
        .layer(CombineLayer::new())
        .layer(ValidateLayer::<Sum>::new())
        .layer(OutputLayer::<Total>::new())
        .service(service_fn(
            |request: Request<Validated<Sum, HNil>>| async move {
                let numbers = request.into_body().input.numbers;
                let total = numbers
                    .iter()
                    .try_fold(0i64, |sum, n| sum.checked_add(*n))
                    .ok_or_else(|| http_error!(422, "The total does not fit in 64 bits"))?;
                Ok::<_, ApiError>(Total { total })
            },
        ));

    let mut results = Vec::new();
    for body in [
        r#"{"numbers":[1,2,3]}"#,
        r#"{"numbers":[]}"#,
        r#"{"numbers":[9223372036854775807,1]}"#,
    ] {
        let request = Request::post("/sum")
            .header("content-type", "application/json")
            .body(body.to_owned())
            .expect("valid request");
        let response = service
            .clone()
            .oneshot(request)
            .await
            .expect("the service never fails");
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("in-memory body")
            .to_bytes();
        results.push((status, String::from_utf8_lossy(&bytes).into_owned()));
    }
    results
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    for (status, body) in run().await {
        println!("{status} {body}");
    }
}
