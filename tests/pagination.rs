//! Pagination over a real socket: a client walks every page of an offset and a cursor listing.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use garde::Validate;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use strata::Routing;
use strata::paginate::{
    CursorInput, CursorPage, OffsetInput, OffsetPage, decode_cursor, encode_cursor,
};
use strata::prelude::*;

strata::paginate::pagination! { Numbers: offset { items_name: "numbers", max_limit: 4, default_limit: 3 } }
strata::paginate::pagination! { Stream: cursor { items_name: "numbers", max_limit: 4, default_limit: 3 } }

#[derive(Serialize, Validate, JsonSchema)]
struct Number {
    #[garde(skip)]
    n: u32,
}

const COUNT: u32 = 10;

fn routing() -> Routing {
    let by_offset =
        default_endpoints_factory()
            .get()
            .handler(async |input: OffsetInput<Numbers>| {
                let start = u32::try_from(input.offset).unwrap_or(u32::MAX);
                let numbers = (start..COUNT)
                    .take(input.limit as usize)
                    .map(|n| Number { n })
                    .collect();
                Ok(OffsetPage::new(numbers, u64::from(COUNT), &input))
            });
    let by_cursor =
        default_endpoints_factory()
            .get()
            .handler(async |input: CursorInput<Stream>| {
                let start: u32 = input
                    .cursor
                    .as_deref()
                    .map(decode_cursor)
                    .transpose()?
                    .unwrap_or(0);
                let end = start.saturating_add(input.limit).min(COUNT);
                let numbers = (start..end).map(|n| Number { n }).collect();
                let next = (end < COUNT).then(|| encode_cursor(&end));
                Ok(CursorPage::new(numbers, next, &input))
            });
    routing! { "numbers" => { "offset" => by_offset, "cursor" => by_cursor } }
}

async fn fetch(addr: std::net::SocketAddr, path: &str) -> Value {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = http::Request::get(path)
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&body).unwrap()
}

fn numbers(page: &Value) -> Vec<u64> {
    page["data"]["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["n"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn a_client_walks_every_page() {
    let config = create_config()
        .cors(Cors::Enabled)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = create_server(&config, &routing()).await.unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };

    let mut seen = Vec::new();
    let mut offset = 0;
    loop {
        let page = fetch(addr, &format!("/numbers/offset?offset={offset}")).await;
        seen.extend(numbers(&page));
        let data = &page["data"];
        offset = data["offset"].as_u64().unwrap() + data["limit"].as_u64().unwrap();
        if offset >= data["total"].as_u64().unwrap() {
            break;
        }
    }
    assert_eq!(seen, (0..10).collect::<Vec<_>>());

    let mut seen = Vec::new();
    let mut path = "/numbers/cursor?limit=4".to_owned();
    loop {
        let page = fetch(addr, &path).await;
        seen.extend(numbers(&page));
        match page["data"]["nextCursor"].as_str() {
            Some(cursor) => path = format!("/numbers/cursor?limit=4&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(seen, (0..10).collect::<Vec<_>>());

    let page = fetch(addr, "/numbers/offset?limit=5").await;
    assert_eq!(page["error"]["message"], "limit: greater than 4");
    // A cursor of the documented shape that this API did not write: refused.
    let page = fetch(addr, "/numbers/cursor?cursor=AAAAAAAA").await;
    assert_eq!(page["error"]["message"], "cursor: damaged or altered");
    server.shutdown().await;
}
