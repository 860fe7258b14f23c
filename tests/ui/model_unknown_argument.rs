#[strata::model(inptu)]
struct Book {
    title: String,
}

fn main() {}
