//! Server-sent events: a countdown whose events are an enum, sent as they happen, resumed
//! where a reconnecting client left off (`Last-Event-ID`), stopped when the client leaves.
//!
//! `cargo run --example events`, then `curl -N localhost:8095/countdown?from=5` (or open it
//! with `new EventSource(..)` in a browser). `PORT` sets the port; `/openapi.json` describes the
//! API, and `-- --openapi events.json` (`--openapi-3.1` for OpenAPI 3.1) writes it and exits.

use std::time::Duration;
use strata::Routing;
use strata::events::Emitter;

use strata::openapi::OpenApiVersion;
use strata::prelude::*;

/// The countdown, declared once for the server and its clients (`strata::client`'s
/// `subscribe` reads the typed events).
pub(crate) const COUNTDOWN: strata::Operation<CountdownInput, strata::Events<Countdown>> =
    strata::Operation::get("/countdown");

/// The events of the countdown.
#[strata::model]
#[derive(Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Countdown {
    /// One step: the seconds left.
    Tick {
        #[garde(range(max = 3600))]
        left: u32,
    },
    /// The end.
    Liftoff,
}

#[strata::model]
pub(crate) struct CountdownInput {
    /// Where to start.
    #[garde(range(min = 1, max = 3600))]
    pub(crate) from: u32,
    /// Milliseconds between ticks (default 1000).
    #[garde(range(min = 1, max = 10_000))]
    pub(crate) every_ms: Option<u64>,
}

/// The routing: `GET /countdown?from=N`.
pub(crate) fn events_routing() -> Routing {
    let countdown = default_endpoints_factory()
        .endpoint()
        .tag("events")
        .short_description("Counts down, one event per tick")
        .implement_events(
            &COUNTDOWN,
            async |input: CountdownInput, emitter: Emitter<Countdown>, logger: Logger| {
                // A client that reconnects says the last tick it got: go on from there.
                let from = emitter
                    .last_event_id()
                    .and_then(|id| id.parse::<u32>().ok())
                    .map_or(input.from, |last| last.saturating_sub(1).min(input.from));
                let every = Duration::from_millis(input.every_ms.unwrap_or(1000));
                for left in (1..=from).rev() {
                    emitter
                        .emit_with_id(Countdown::Tick { left }, &left.to_string())
                        .await?;
                    tokio::time::sleep(every).await;
                }
                emitter.emit(Countdown::Liftoff).await?;
                logger.info("liftoff");
                Ok(())
            },
        );
    Routing::new().operation(countdown)
}

/// The generated TypeScript client: `Subscription` with the countdown's typed events.
pub(crate) fn events_client(
    routing: &Routing,
    config: &strata::Config,
) -> Result<strata::typescript::TypeScript, strata::typescript::IntegrationError> {
    strata::typescript::Integration::new(routing, config)
        .server_url("http://localhost:8095")
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = match std::env::var("PORT") {
        Ok(port) => port
            .parse::<u16>()
            .map_err(|e| format!("PORT={port:?} is not a port: {e}"))?,
        Err(_) => 8095,
    };
    let config = create_config().cors(Cors::Enabled).listen(port).build();
    let routing = events_routing();
    let document = |version| {
        strata::openapi::Documentation::new(&routing, &config)
            .openapi_version(version)
            .title("Countdown")
            .build()
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, file] if flag == "--client" => {
            return Ok(events_client(&routing, &config)?.write_file(file)?);
        }
        [flag, file] if flag == "--openapi" => {
            return Ok(document(OpenApiVersion::V3_2)?.write_file(file)?);
        }
        [flag, file] if flag == "--openapi-3.1" => {
            return Ok(document(OpenApiVersion::V3_1)?.write_file(file)?);
        }
        _ => {}
    }
    let doc = document(OpenApiVersion::V3_2)?;
    let routing = routing.route("openapi.json", strata::openapi::openapi_endpoint(&doc));
    println!("curl -N 'http://localhost:{port}/countdown?from=5'");
    create_server(&config, &routing).await?.run().await;
    Ok(())
}
