// A key without `=>`: the error points at the key and says what is expected.
use strata::prelude::*;

fn main() {
    let _tree = routing! { "users" : Routing::new() };
}
