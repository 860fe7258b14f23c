// Shared state is a typed context entry: reading a type the factory was not given is a
// compile error, like any missing context entry.
use garde::Validate;
use schemars::JsonSchema;
use serde::Serialize;
use strata::prelude::*;

#[derive(Clone)]
struct Store;

#[derive(Clone)]
struct Mailer;

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Out {
    ok: bool,
}

fn main() {
    let _endpoint = default_endpoints_factory()
        .with_state(Store)
        .get()
        .handler_without_input(|ctx, _logger| async move {
            let _mailer: &Mailer = ctx.get();
            Ok(Out { ok: true })
        });
}
