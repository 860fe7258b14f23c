// A key that is not a string literal.
use strata::Routing;
use strata::prelude::*;

fn main() {
    let users = Routing::new();
    let _tree = routing! { users => Routing::new() };
}
