//! Strata as `strata-bench` measures it, in a binary of its own (see `solo.rs`).

#[allow(dead_code, unreachable_pub)]
#[path = "../model.rs"]
mod model;
#[path = "../solo.rs"]
mod solo;
#[allow(dead_code, unreachable_pub)]
#[path = "../servers/strata_app.rs"]
mod strata_app;

fn main() -> std::process::ExitCode {
    solo::main("strata-bench-strata", |many_routes| async move {
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let (addr, server) = strata_app::serve(
            &strata_app::config(loopback),
            &strata_app::routing(many_routes),
        )
        .await?;
        Ok((addr, server.shutdown()))
    })
}
