//! The pre-flight check: every server answers a scenario's request with the same status and
//! the same JSON body before anything is measured.

use std::net::SocketAddr;

use bytes::Bytes;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW, CONTENT_TYPE};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::scenario::{Scenario, ServerKind};

/// What a server answered.
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    pub(crate) status: StatusCode,
    pub(crate) allow: Option<String>,
    pub(crate) allow_origin: Option<String>,
    pub(crate) content_type: Option<String>,
    pub(crate) body: Bytes,
}

/// Sends `scenario`'s request to `addr` with a full HTTP/1.1 client.
pub(crate) async fn observe(addr: SocketAddr, scenario: Scenario) -> Result<Observed, String> {
    let spec = scenario.request();
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(spec.method.clone())
        .uri(&spec.path_and_query)
        .header("host", "127.0.0.1");
    for (name, value) in &spec.headers {
        request = request.header(*name, value);
    }
    let request = request
        .body(Full::new(Bytes::from(spec.body)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("request: {e}"))?;
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &http::HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    let (status, allow, allow_origin, content_type) = (
        response.status(),
        header(ALLOW),
        header(ACCESS_CONTROL_ALLOW_ORIGIN),
        header(CONTENT_TYPE),
    );
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    Ok(Observed {
        status,
        allow,
        allow_origin,
        content_type,
        body,
    })
}

/// Checks the answers of every server to `scenario`: the expected status, a JSON body in the
/// envelope, the same parsed body everywhere, CORS headers, and `Allow` on a 405. Returns the
/// success or error body every server agreed on.
pub(crate) fn compare(
    scenario: Scenario,
    answers: &[(ServerKind, Observed)],
) -> Result<serde_json::Value, String> {
    let mut agreed: Option<(ServerKind, serde_json::Value)> = None;
    for (kind, observed) in answers {
        let body = String::from_utf8_lossy(&observed.body);
        let fail = |what: String| Err(format!("{scenario}: {kind} {what}; body: {body}"));
        if observed.status != scenario.expected_status() {
            return fail(format!(
                "answered {}, expected {}",
                observed.status,
                scenario.expected_status()
            ));
        }
        if !observed
            .content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("application/json"))
        {
            return fail(format!("sent content-type {:?}", observed.content_type));
        }
        if observed.allow_origin.as_deref() != Some("*") {
            return fail("sent no `access-control-allow-origin: *`".to_owned());
        }
        if scenario.expected_status() == StatusCode::METHOD_NOT_ALLOWED
            && !observed.allow.as_deref().is_some_and(|a| a.contains("GET"))
        {
            return fail(format!("sent Allow {:?}", observed.allow));
        }
        let json: serde_json::Value = match serde_json::from_slice(&observed.body) {
            Ok(json) => json,
            Err(e) => return fail(format!("sent a body that is not JSON ({e})")),
        };
        let expected_status = if observed.status.is_success() {
            "success"
        } else {
            "error"
        };
        if json["status"] != expected_status {
            return fail(format!("sent no {expected_status:?} envelope"));
        }
        match &agreed {
            None => agreed = Some((*kind, json)),
            Some((first, value)) if *value != json => {
                return fail(format!("disagrees with {first}: {value} vs {json}"));
            }
            Some(_) => {}
        }
    }
    agreed
        .map(|(_, value)| value)
        .ok_or_else(|| format!("{scenario}: no answers"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers;

    /// Every scenario against all three servers, in this process: the check that runs before
    /// every measurement must pass, and must catch a server that answers differently.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn all_three_servers_answer_every_scenario_alike() {
        for many_routes in [false, true] {
            let mut running = Vec::new();
            for kind in ServerKind::ALL {
                let server = servers::start(kind, many_routes).await;
                running.push((kind, server.unwrap_or_else(|e| panic!("{kind}: {e}"))));
            }
            for scenario in Scenario::ALL
                .into_iter()
                .filter(|s| s.many_routes() == many_routes)
            {
                let mut answers = Vec::new();
                for (kind, server) in &running {
                    let observed = observe(server.addr, scenario).await;
                    answers.push((*kind, observed.unwrap_or_else(|e| panic!("{kind}: {e}"))));
                }
                let agreed = compare(scenario, &answers).unwrap_or_else(|e| panic!("{e}"));
                match scenario {
                    Scenario::Hello | Scenario::Routes10k => assert_eq!(
                        agreed,
                        serde_json::json!({"status": "success", "data": {"greetings": "Hello, World"}})
                    ),
                    Scenario::Invalid => {
                        let message = agreed["error"]["message"].as_str().unwrap_or_default();
                        assert_eq!(message.split("; ").count(), 3, "{message}");
                    }
                    Scenario::AuthParam => {
                        assert_eq!(
                            agreed["data"],
                            serde_json::json!({"id": "42", "name": "Jane"})
                        );
                    }
                    _ => {}
                }
                // A server answering differently is caught.
                let mut tampered = answers.clone();
                tampered[2].1.body = Bytes::from_static(br#"{"status":"success","data":{}}"#);
                assert!(compare(scenario, &tampered).is_err(), "{scenario}");
                let mut tampered = answers.clone();
                tampered[1].1.status = StatusCode::IM_A_TEAPOT;
                assert!(compare(scenario, &tampered).is_err(), "{scenario}");
            }
            for (_, server) in running {
                server.stop().await;
            }
        }
    }
}
