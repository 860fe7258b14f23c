// The same handler compiles once a middleware provides the entry.
use strata::prelude::*;

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
    let auth = Middleware::new(|(): (), _request, _logger| async { Ok(User { name: "ada".into() }) });
    let _endpoint = default_endpoints_factory()
        .add_middleware(auth)
        .get()
        .handler(async |input: In, user: User| Ok(Out { name: format!("{} {}", user.name, input.id) }));
}
