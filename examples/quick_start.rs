//! The quick start of the specification: GET `/v1/hello` with an optional `name`, answering
//! `{"status":"success","data":{"greetings":"Hello, <name or World>"}}`, CORS on, on port 8090
//! or `PORT`.
//!
//! ```sh
//! cargo run --example quick_start
//! curl 'http://localhost:8090/v1/hello?name=Strata'
//! ```
//!
//! It runs in production mode, the default: 5xx messages are the status's reason phrase.
//! `STRATA_MODE=development cargo run --example quick_start` shows every message.

use strata::prelude::*;
use strata::{Level, Mode, Routing};

#[strata::model(input)]
struct HelloInput {
    #[garde(length(chars, min = 1))]
    name: Option<String>,
}

#[strata::model(output)]
struct HelloOutput {
    greetings: String,
}

/// The quick start's routing.
pub(crate) fn quick_start_routing() -> Routing {
    let hello = default_endpoints_factory()
        .get()
        .tag("greetings")
        .short_description("Says hello")
        .handler(async |input: HelloInput, logger: Logger| {
            let name = input.name.as_deref().unwrap_or("World");
            logger.debug(format_args!("greeting {name}"));
            Ok(HelloOutput {
                greetings: format!("Hello, {name}"),
            })
        });
    routing! { "v1" => { "hello" => hello } }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = match std::env::var("PORT") {
        Ok(port) => port
            .parse::<u16>()
            .map_err(|e| format!("PORT={port:?} is not a port: {e}"))?,
        Err(_) => 8090,
    };
    let config = create_config()
        .cors(Cors::Enabled)
        .listen(port)
        .logger(Level::Info)
        // Production unless `STRATA_MODE` says otherwise.
        .mode(Mode::from_env().unwrap_or_default())
        .build();
    let server = create_server(&config, &quick_start_routing()).await?;
    for listening in server.servers() {
        println!("Listening on {:?}", listening.local_addr);
    }
    println!(
        "Mode: {:?} ({}=development shows internal error messages to clients)",
        config.pipeline.mode,
        strata::core::MODE_VARIABLE
    );
    server.run().await;
    Ok(())
}
