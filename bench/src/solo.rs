//! The child side of a server in a binary of its own (`strata-bench-hyper`, `-axum`,
//! `-strata`): `<binary> <scenario> [--workers N]` prints `listening <addr>` and serves until
//! its standard input closes, like `strata-bench serve`.
//!
//! A production server is a binary of its own; in the harness's binary the three servers' code
//! is interleaved, which costs whichever server's code ends up spread thinnest (instruction
//! cache, page faults, RSS). So the harness runs each server from its own binary when they are
//! built, and from its own binary otherwise.

use std::future::Future;
use std::net::SocketAddr;
use std::process::ExitCode;

/// Runs `start` (given whether the scenario carries the 10,000 generated routes; it binds and
/// returns the address and a future that stops the server) on a runtime of the requested
/// workers, announces the address, and serves until standard input closes.
pub(crate) fn main<S, F, Stop>(name: &str, start: S) -> ExitCode
where
    S: FnOnce(bool) -> F,
    F: Future<Output = std::io::Result<(SocketAddr, Stop)>>,
    Stop: Future<Output = ()>,
{
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (scenario, workers) = match args.as_slice() {
        [scenario] => (scenario.as_str(), 1),
        [scenario, flag, n] if flag == "--workers" => match n.parse::<usize>() {
            Ok(n) if n > 0 => (scenario.as_str(), n),
            _ => return usage(name),
        },
        _ => return usage(name),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{name}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let (addr, stop) = match runtime.block_on(start(scenario == "routes-10k")) {
        Ok(started) => started,
        Err(error) => {
            eprintln!("{name}: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("listening {addr}");
    // Block until the parent closes our standard input (or goes away).
    let mut sink = String::new();
    while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {
        sink.clear();
    }
    runtime.block_on(stop);
    ExitCode::SUCCESS
}

fn usage(name: &str) -> ExitCode {
    eprintln!("usage: {name} <scenario> [--workers N]");
    ExitCode::from(2)
}
