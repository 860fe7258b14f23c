// An event-stream operation declares its events: a handler emitting another type, or calling
// the operation as an ordinary one, must not compile.
use strata::{Events, Operation, Router};
use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::events::Emitter;
use strata::client::Client;
use strata::prelude::*;

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
struct Input {
    #[garde(skip)]
    from: u32,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
enum Countdown {
    Tick { left: u32 },
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
enum Clock {
    Tick { n: u32 },
}

const COUNTDOWN: Operation<Input, Events<Countdown>> = Operation::get("/countdown");

fn main() {
    let _clocks = default_endpoints_factory().endpoint().implement_events(
        &COUNTDOWN,
        async |_input: Input, emitter: Emitter<Clock>| {
            emitter.emit(Clock::Tick { n: 1 }).await?;
            Ok(())
        },
    );
}

async fn called(client: Client<Router>) {
    let _ = client.call(&COUNTDOWN, Input { from: 1 }).await;
}
