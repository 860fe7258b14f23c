// A nested model without `dive` would go unchecked: the attribute says what to write.
#[strata::model]
struct Author {
    #[garde(length(min = 1))]
    name: String,
}

#[strata::model]
struct Book {
    title: String,
    author: Author,
}

fn main() {}
