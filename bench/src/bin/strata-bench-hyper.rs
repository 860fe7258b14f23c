//! The hand-written hyper reference of `strata-bench`, in a binary of its own (see `solo.rs`).

#[allow(dead_code, unreachable_pub)]
#[path = "../servers/hyper_ref.rs"]
mod hyper_ref;
#[allow(dead_code, unreachable_pub)]
#[path = "../model.rs"]
mod model;
#[path = "../solo.rs"]
mod solo;

fn main() -> std::process::ExitCode {
    solo::main("strata-bench-hyper", |many_routes| async move {
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let (addr, task) = hyper_ref::spawn(loopback, many_routes).await?;
        Ok((addr, async move { task.abort() }))
    })
}
