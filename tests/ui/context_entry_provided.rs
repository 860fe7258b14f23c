// The same handler compiles once a middleware provides the entry.
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
    let auth = Middleware::new(|(): (), _request, _logger| async { Ok(User { name: "ada".into() }) });
    let _endpoint = default_endpoints_factory().add_middleware(auth).get().handler(
        |input: In, ctx, _logger| async move {
            let user: &User = ctx.get();
            Ok(Out { name: format!("{} {}", user.name, input.id) })
        },
    );
}
