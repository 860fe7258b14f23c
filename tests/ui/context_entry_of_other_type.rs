// A middleware provides `Role`; the handler takes `User`, which nothing provides: this must not
// compile.
use strata::prelude::*;

struct Role;

struct User {
    name: String,
}

#[strata::model(input)]
struct In {
    id: u32,
}

#[strata::model(output)]
struct Out {
    name: String,
}

fn main() {
    let role = Middleware::new(|(): (), _request, _logger| async { Ok(Role) });
    let _endpoint = default_endpoints_factory()
        .add_middleware(role)
        .get()
        .handler(async |input: In, user: User| Ok(Out { name: format!("{} {}", user.name, input.id) }));
}
