//! Lookup cost against the number of routes, and startup time of a large tree.
//!
//! `cargo bench -p strata-routing`

#![allow(missing_docs, clippy::unwrap_used)]

use std::convert::Infallible;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use http::{Request, Response};
use strata_core::Body;
use strata_cors::Cors;
use strata_endpoint::{Endpoint, EndpointMeta};
use strata_routing::{Router, Routing, RoutingSettings};
use tower::util::BoxCloneSyncService;
use tower_service::Service;

fn main() {
    divan::main();
}

/// An endpoint that answers at once, so the router's own work is what is measured.
fn endpoint() -> Endpoint {
    let mut meta = EndpointMeta::default();
    meta.input_fields = vec!["id".to_owned()];
    Endpoint::from_parts(meta, |_config| {
        BoxCloneSyncService::new(tower::service_fn(|_: Request<_>| async {
            Ok::<_, Infallible>(Response::new(Body::from("{}")))
        }))
    })
}

/// `n` routes: `/v1/r<i>/items/:id` plus the probe `/v1/hello`.
fn tree(n: usize) -> Routing {
    let shared = endpoint();
    let mut v1 = Routing::new().route("hello", shared.clone());
    for i in 0..n {
        v1 = v1.route(
            format!("r{i}"),
            Routing::new().route("items", Routing::new().route(":id", shared.clone())),
        );
    }
    Routing::new().route("v1", v1)
}

fn config() -> RoutingSettings {
    RoutingSettings::new(Cors::Enabled)
}

fn answer(router: &mut Router, uri: &str) -> u16 {
    let future = router.call(Request::get(uri).body(String::new()).unwrap());
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(Ok(response)) => response.status().as_u16(),
        Poll::Ready(Err(never)) => match never {},
        Poll::Pending => unreachable!("the endpoint answers at once"),
    }
}

#[divan::bench(args = [1, 100, 10_000])]
fn lookup_static(bencher: divan::Bencher, route_count: usize) {
    let mut router = Router::new(&tree(route_count), &config()).unwrap();
    bencher.bench_local(|| answer(&mut router, divan::black_box("/v1/hello")));
}

#[divan::bench(args = [1, 100, 10_000])]
fn lookup_param(bencher: divan::Bencher, route_count: usize) {
    let mut router = Router::new(&tree(route_count), &config()).unwrap();
    bencher.bench_local(|| answer(&mut router, divan::black_box("/v1/r0/items/42")));
}

#[divan::bench(args = [1, 10_000])]
fn not_found(bencher: divan::Bencher, route_count: usize) {
    let mut router = Router::new(&tree(route_count), &config()).unwrap();
    bencher.bench_local(|| answer(&mut router, divan::black_box("/v1/nothing/here")));
}

#[divan::bench(sample_count = 10)]
fn startup_10k(bencher: divan::Bencher) {
    let tree = tree(10_000);
    let config = config();
    bencher.bench_local(|| Router::new(&tree, &config).unwrap());
}
