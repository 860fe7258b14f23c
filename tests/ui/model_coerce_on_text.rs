// Only numbers and booleans are read from text.
#[strata::model(input)]
struct Patch {
    #[strata(coerce)]
    nickname: String,
}

fn main() {}
