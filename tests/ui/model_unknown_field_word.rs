#[strata::model(input)]
struct Patch {
    #[strata(nullable)]
    nickname: Option<String>,
}

fn main() {}
