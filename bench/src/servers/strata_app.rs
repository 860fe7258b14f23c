//! Strata: the quick start's hello, a validated POST, a middleware adding a user, CORS on; a
//! ~100 KiB validated POST and a ~1 MiB answer.

use std::net::SocketAddr;
use strata::server::LogColor;
use strata::server::LoggerOptions;
use strata::{Config, Mode, Routing, Security};

use strata::Level;
use strata::prelude::*;

use crate::model::{
    BulkOrder, CatalogInput, GENERATED_ROUTES, HelloInput, HelloOutput, Order, Pong, User,
    UserInput, UserOutput, authenticate, catalog, generated_path, summarize, summarize_bulk,
};

/// The routing of every scenario, plus the generated routes when `many_routes`.
pub(crate) fn routing(many_routes: bool) -> Routing {
    let factory = default_endpoints_factory();
    // The quick start's endpoint, as written there.
    let hello = factory
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
    let orders = factory
        .post()
        .handler(async |order: Order| Ok(summarize(order)));
    // The ~100 KiB body is within the default body limit (1 MiB, kept by `config`), so this
    // route needs no limit of its own.
    let bulk_orders = factory
        .post()
        .handler(async |order: BulkOrder| Ok(summarize_bulk(order)));
    // The list goes out as any handler's output does: returned by value, checked against its
    // type's rules, serialized by the framework.
    let products = factory
        .get()
        .handler(async |input: CatalogInput| Ok(catalog(&input)));
    // A check that waits for nothing: decided in the middleware stage's call.
    let auth = Middleware::sync(|(): (), request, _logger| {
        let user = authenticate(
            request
                .headers
                .get("token")
                .map(http::HeaderValue::as_bytes),
        );
        user.ok_or_else(|| http_error!(401, "Invalid token"))
    })
    .security(Security::header("token"));
    let user = factory
        .add_middleware(auth)
        .get()
        .handler(async |input: UserInput, user: User| {
            Ok(UserOutput {
                id: input.id,
                name: user.name,
            })
        });
    let mut routing = routing! {
        "v1" => {
            "hello" => hello,
            "orders" => orders,
            "bulk-orders" => bulk_orders,
            "products" => products,
            "users" => { ":id" => user },
        },
    };
    if many_routes {
        let pong = factory
            .get()
            .handler_without_input(async || Ok(Pong { pong: true }));
        for i in 0..GENERATED_ROUTES {
            routing = routing.route(generated_path(i), pong.clone());
        }
    }
    routing
}

/// What a production user would write: CORS on, production mode, the default logger at `warn`.
pub(crate) fn config(addr: SocketAddr) -> Config {
    create_config()
        .cors(Cors::Enabled)
        .mode(Mode::Production)
        .logger(LoggerOptions::new(Level::Warn).color(LogColor::Never))
        .listen(addr)
        .build()
}

/// Starts Strata for `config` and `routing`: the server and the TCP address it listens on.
pub(crate) async fn serve(
    config: &Config,
    routing: &Routing,
) -> std::io::Result<(SocketAddr, strata::Server)> {
    let server = create_server(config, routing)
        .await
        .map_err(std::io::Error::other)?;
    let addr = server
        .servers()
        .iter()
        .find_map(|listening| match &listening.local_addr {
            strata::server::LocalAddr::Tcp(addr) => Some(*addr),
            strata::server::LocalAddr::Unix(_) => None,
        })
        .ok_or_else(|| std::io::Error::other("Strata listens on no TCP address"))?;
    Ok((addr, server))
}
