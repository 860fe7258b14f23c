// A handler takes a context entry that no middleware of its factory provides: this must not
// compile.
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
    let _endpoint = default_endpoints_factory()
        .get()
        .handler(async |input: In, user: User| Ok(Out { name: format!("{} {}", user.name, input.id) }));
}
