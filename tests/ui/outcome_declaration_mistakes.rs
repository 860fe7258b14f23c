// What the derive refuses, each with a message saying what to write.
use strata::Outcomes;

#[strata::model]
struct Book {
    id: u32,
}

// One status, two variants: a client could not tell them apart.
#[derive(Outcomes)]
enum SameStatus {
    #[outcome(status = 200)]
    Found(Book),
    #[outcome(status = 200)]
    Other,
}

// Several statuses, and no field saying which one is sent.
#[derive(Outcomes)]
enum Several {
    #[outcome(status(200, 203))]
    Found(Book),
}

// A named field that says nothing of what it is.
#[derive(Outcomes)]
enum Unmarked {
    #[outcome(status = 201)]
    Created {
        #[outcome(body)]
        book: Book,
        location: String,
    },
}

// No status.
#[derive(Outcomes)]
enum NoStatus {
    Found(Book),
}

// Not a status.
#[derive(Outcomes)]
enum OutOfRange {
    #[outcome(status = 700)]
    Found(Book),
}

fn main() {}
