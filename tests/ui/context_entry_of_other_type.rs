// A middleware provides `Role`; the handler reads `User`, which nothing provides: this must not
// compile.
use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;

struct Role;

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
    let role = Middleware::new(|(): (), _request, _logger| async { Ok(Role) });
    let _endpoint = default_endpoints_factory().add_middleware(role).get().handler(|input: In, ctx, _logger| async move {
        let user: &User = ctx.get();
        Ok(Out { name: format!("{} {}", user.name, input.id) })
    });
}
