// Shared state is a typed context entry: taking a type the factory was not given is a
// compile error, like any missing context entry.
use strata::prelude::*;

#[derive(Clone)]
struct Store;

#[derive(Clone)]
struct Mailer;

#[strata::model(output)]
struct Out {
    ok: bool,
}

fn main() {
    let _endpoint = default_endpoints_factory()
        .with_state(Store)
        .get()
        .handler_without_input(async |_mailer: Mailer| Ok(Out { ok: true }));
}
