// A handler without input takes only its context, logger and request; its input goes to
// `handler`.
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
        .handler_without_input(async |input: In| Ok(Out { id: input.id }));
}
