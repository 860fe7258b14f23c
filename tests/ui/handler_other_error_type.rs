// A handler's error is an `ApiError`: another error type is converted with `?`, not returned.
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
        .handler(async |input: In| -> Result<Out, String> { Ok(Out { id: input.id }) });
}
