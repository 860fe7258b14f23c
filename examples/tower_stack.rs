//! The stage layers stacked by hand around a plain `service_fn`, without the facade's factory:
//! format → parse → combine → middleware → validate → output-check, each a separate
//! `tower::Layer`.
//!
//! `cargo run --example tower_stack`

use http::Request;
use http_body_util::BodyExt;
use strata::core::{HCons, HNil, Validated};
use strata::stages::combine::CombineLayer;
use strata::stages::format::FormatLayer;
use strata::stages::middleware::MiddlewareLayer;
use strata::stages::output::OutputLayer;
use strata::stages::parse::ParseLayer;
use strata::stages::validate::ValidateLayer;
use strata::{ApiError, DefaultResultHandler, Middleware, http_error};
use tower::{ServiceBuilder, ServiceExt, service_fn};

#[strata::model(input)]
struct Sum {
    #[garde(length(min = 1, max = 100))]
    numbers: Vec<i64>,
}

#[strata::model(output)]
struct Total {
    total: i64,
}

/// Who is calling, from the `x-caller` header.
struct Caller(String);

/// Runs four requests through the hand-made stack; returns `(status, body)` of each.
pub(crate) async fn run() -> Vec<(u16, String)> {
    let caller = Middleware::new(|(): (), request, _logger| {
        let name = request
            .headers
            .get("x-caller")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        async move {
            name.map(Caller)
                .ok_or_else(|| http_error!(401, "Who is calling?"))
        }
    });
    let service = ServiceBuilder::new()
        .layer(FormatLayer::new(DefaultResultHandler))
        .layer(ParseLayer::new().body_limit(4096))
        .layer(CombineLayer::new())
        .layer(MiddlewareLayer::new(caller))
        .layer(ValidateLayer::<Sum>::new())
        .layer(OutputLayer::<Total>::new())
        .service(service_fn(
            |request: Request<Validated<Sum, HCons<Caller, HNil>>>| async move {
                let Validated { input, ctx } = request.into_body();
                println!("{} asks for a sum", ctx.head.0);
                let total = input
                    .numbers
                    .iter()
                    .try_fold(0i64, |sum, n| sum.checked_add(*n))
                    .ok_or_else(|| http_error!(422, "The total does not fit in 64 bits"))?;
                Ok::<_, ApiError>(Total { total })
            },
        ));

    let requests = [
        (Some("ada"), r#"{"numbers":[1,2,3]}"#),
        (Some("ada"), r#"{"numbers":[]}"#),
        (Some("ada"), r#"{"numbers":[9223372036854775807,1]}"#),
        (None, r#"{"numbers":[1]}"#),
    ];
    let mut results = Vec::new();
    for (caller, body) in requests {
        let mut request = Request::post("/sum").header("content-type", "application/json");
        if let Some(caller) = caller {
            request = request.header("x-caller", caller);
        }
        let request = request.body(body.to_owned()).expect("valid request");
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
