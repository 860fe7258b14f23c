//! The server of `strata-bench client`: two operations declared once ([`HELLO`], [`ORDER`]),
//! implemented with `implement` and mounted with `Routing::operation`, under the Strata bench
//! app's configuration (production, CORS on, the default logger at `warn`). The clients measured
//! call these very declarations.

use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;
use strata::{Operation, Routing};

use crate::model::{HelloOutput, Order, OrderSummary, summarize};

/// Input of `GET /v1/hello/:name`: the name, a path parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct HelloName {
    #[garde(length(chars, min = 1, max = 64))]
    pub(crate) name: String,
}

/// `GET /v1/hello/:name`: a path parameter in, a greeting out.
pub(crate) const HELLO: Operation<HelloName, HelloOutput> = Operation::get("/v1/hello/:name");

/// `POST /v1/orders`: the ~1 KiB validated order of the `validated-post` scenario in, its
/// summary out.
pub(crate) const ORDER: Operation<Order, OrderSummary> = Operation::post("/v1/orders");

/// The two operations, implemented.
pub(crate) fn routing() -> Routing {
    let factory = default_endpoints_factory();
    let hello = factory
        .endpoint()
        .implement(&HELLO, async |input: HelloName| {
            Ok(HelloOutput {
                greetings: format!("Hello, {}", input.name),
            })
        });
    let order = factory
        .endpoint()
        .implement(&ORDER, async |order: Order| Ok(summarize(order)));
    Routing::new().operation(hello).operation(order)
}
