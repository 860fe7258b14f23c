// A handler that only fails returns the `ApiError` itself; `Err(..)` alone names no output type.
use strata::prelude::*;

fn main() {
    let _endpoint = default_endpoints_factory()
        .get()
        .handler_without_input(async || Err(http_error!(410, "Gone")));
}
