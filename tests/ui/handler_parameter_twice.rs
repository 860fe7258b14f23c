// Each parameter after the input is taken by its type, so each type comes once.
use strata::prelude::*;

#[strata::model(input)]
struct In {
    id: u32,
}

#[strata::model(output)]
struct Out {
    id: u32,
}

fn main() {
    let _endpoint = default_endpoints_factory()
        .get()
        .handler(async |input: In, _first: Logger, _second: Logger| Ok(Out { id: input.id }));
}
