#[strata::model(input)]
struct Patch {
    #[strata(not_null)]
    nickname: String,
}

fn main() {}
