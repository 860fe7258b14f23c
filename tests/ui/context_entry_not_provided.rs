// A handler reads a context entry that no middleware of its factory provides: this must not
// compile.
use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;

struct User {
    name: String,
}

#[derive(Deserialize, Validate, JsonSchema)]
struct In {
    #[garde(skip)]
    id: u32,
}

#[derive(Serialize, Validate, JsonSchema)]
struct Out {
    #[garde(skip)]
    name: String,
}

fn main() {
    let _endpoint = default_endpoints_factory().get().handler(|input: In, ctx, _logger| async move {
        let user: &User = ctx.get();
        Ok(Out { name: format!("{} {}", user.name, input.id) })
    });
}
