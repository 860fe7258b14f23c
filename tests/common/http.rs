//! A server on a free loopback port and a one-request HTTP/1.1 client, for the integration
//! tests that go through real sockets (included with `#[path = "common/http.rs"] mod http;`).

use std::net::SocketAddr;
use strata::Routing;

use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use strata::Server;
use strata::prelude::*;
use strata::server::LocalAddr;
use tokio::net::TcpStream;

/// Starts `routing` on a free loopback port.
pub(crate) async fn serve(
    routing: &Routing,
    config: strata::ConfigBuilder,
) -> (Server, SocketAddr) {
    let config = config.listen(SocketAddr::from(([127, 0, 0, 1], 0))).build();
    let server = create_server(&config, routing).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("a TCP listener")
    };
    (server, addr)
}

/// One HTTP/1.1 request on a new connection; the status, headers and whole body.
pub(crate) async fn send(
    addr: SocketAddr,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> (StatusCode, HeaderMap, Bytes) {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).unwrap())
        .uri(uri)
        .header("host", "localhost");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = sender
        .send_request(request.body(Full::new(body.into())).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (parts.status, parts.headers, bytes)
}
