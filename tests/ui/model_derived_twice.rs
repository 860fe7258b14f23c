// The attribute derives serde's traits itself.
#[strata::model]
#[derive(Debug, serde::Serialize)]
struct Book {
    title: String,
}

fn main() {}
