#[strata::model]
fn book() {}

fn main() {}
