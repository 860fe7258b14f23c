// The positional `(input, ctx, logger)` handler of Strata 0.2: each parameter after the input
// now names its type, and the compiler asks for it.
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
    let _endpoint = default_endpoints_factory().get().handler(|input: In, _ctx, logger| async move {
        logger.debug("reading");
        Ok(Out { id: input.id })
    });
}
