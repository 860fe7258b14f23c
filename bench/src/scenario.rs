//! The scenarios: one request each, sent over and over.

use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;

use http::{Method, StatusCode};

use crate::model::{CATALOG_COUNT, TOKEN, bulk_order, invalid_order, sample_order};

/// A benchmark scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Scenario {
    /// `GET /v1/hello?name=World`.
    Hello,
    /// `POST /v1/orders` with a valid ~1 KiB JSON body.
    ValidatedPost,
    /// `GET /v1/users/42` behind a middleware checking the `token` header.
    AuthParam,
    /// `POST /v1/orders` with three violations: 400 listing them.
    Invalid,
    /// `GET` of an unknown path: 404.
    NotFound,
    /// `DELETE /v1/hello`: 405 with `Allow`.
    WrongMethod,
    /// `hello` against a routing of 10,000 more endpoints.
    Routes10k,
    /// `POST /v1/bulk-orders` with a valid ~100 KiB JSON body (1,200 lines): a small summary.
    LargeInput,
    /// `GET /v1/products?count=5000`: ~1 MiB of JSON (5,000 products, built per request).
    LargeOutput,
}

/// One request of a scenario.
#[derive(Debug, Clone)]
pub(crate) struct RequestSpec {
    pub(crate) method: Method,
    pub(crate) path_and_query: String,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
}

impl RequestSpec {
    /// The request as HTTP/1.1 bytes, ready to write on a keep-alive connection.
    pub(crate) fn to_http1(&self) -> Vec<u8> {
        let mut out = format!(
            "{} {} HTTP/1.1\r\nhost: 127.0.0.1\r\n",
            self.method, self.path_and_query
        );
        for (name, value) in &self.headers {
            out.push_str(name);
            out.push_str(": ");
            out.push_str(value);
            out.push_str("\r\n");
        }
        if !self.body.is_empty() || self.method == Method::POST {
            let _ = write!(out, "content-length: {}\r\n", self.body.len());
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

impl Scenario {
    /// Every scenario, in report order.
    pub(crate) const ALL: [Scenario; 9] = [
        Scenario::Hello,
        Scenario::ValidatedPost,
        Scenario::AuthParam,
        Scenario::Invalid,
        Scenario::NotFound,
        Scenario::WrongMethod,
        Scenario::Routes10k,
        Scenario::LargeInput,
        Scenario::LargeOutput,
    ];

    /// The scenario's name on the command line and in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scenario::Hello => "hello",
            Scenario::ValidatedPost => "validated-post",
            Scenario::AuthParam => "auth-param",
            Scenario::Invalid => "invalid",
            Scenario::NotFound => "not-found",
            Scenario::WrongMethod => "wrong-method",
            Scenario::Routes10k => "routes-10k",
            Scenario::LargeInput => "large-input",
            Scenario::LargeOutput => "large-output",
        }
    }

    /// Whether the servers carry the 10,000 generated routes.
    pub(crate) fn many_routes(self) -> bool {
        self == Scenario::Routes10k
    }

    /// The status every server must answer.
    pub(crate) fn expected_status(self) -> StatusCode {
        match self {
            Scenario::Hello
            | Scenario::ValidatedPost
            | Scenario::AuthParam
            | Scenario::Routes10k
            | Scenario::LargeInput
            | Scenario::LargeOutput => StatusCode::OK,
            Scenario::Invalid => StatusCode::BAD_REQUEST,
            Scenario::NotFound => StatusCode::NOT_FOUND,
            Scenario::WrongMethod => StatusCode::METHOD_NOT_ALLOWED,
        }
    }

    /// The request sent.
    pub(crate) fn request(self) -> RequestSpec {
        fn json(order: &impl serde::Serialize) -> (Vec<(&'static str, String)>, Vec<u8>) {
            (
                vec![("content-type", "application/json".to_owned())],
                serde_json::to_vec(order).unwrap_or_default(),
            )
        }
        let catalog = format!("/v1/products?count={CATALOG_COUNT}");
        let (method, path, (headers, body)) = match self {
            Scenario::Hello | Scenario::Routes10k => {
                (Method::GET, "/v1/hello?name=World", (vec![], vec![]))
            }
            Scenario::ValidatedPost => (Method::POST, "/v1/orders", json(&sample_order())),
            Scenario::Invalid => (Method::POST, "/v1/orders", json(&invalid_order())),
            Scenario::AuthParam => (
                Method::GET,
                "/v1/users/42",
                (vec![("token", TOKEN.to_owned())], vec![]),
            ),
            Scenario::NotFound => (Method::GET, "/v1/nothing/here", (vec![], vec![])),
            Scenario::WrongMethod => (Method::DELETE, "/v1/hello", (vec![], vec![])),
            Scenario::LargeInput => (Method::POST, "/v1/bulk-orders", json(&bulk_order())),
            Scenario::LargeOutput => (Method::GET, catalog.as_str(), (vec![], vec![])),
        };
        RequestSpec {
            method,
            path_and_query: path.to_owned(),
            headers,
            body,
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl FromStr for Scenario {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Scenario::ALL
            .into_iter()
            .find(|scenario| scenario.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Scenario::ALL.iter().map(|s| s.name()).collect();
                format!("unknown scenario {s:?} (one of {})", names.join(", "))
            })
    }
}

/// A server under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum ServerKind {
    /// hyper-util with a hand-written `service_fn`.
    Hyper,
    /// axum 0.8 with its extractors.
    Axum,
    /// Strata through `create_server`.
    Strata,
    /// The real express-zod-api (Node), from `bench/ezapi`.
    ExpressZodApi,
    /// The project's `examples/quick_start.rs` binary as shipped (its own configuration).
    QuickStart,
}

impl ServerKind {
    /// Every server, in round order.
    pub(crate) const ALL: [ServerKind; 5] = [
        ServerKind::Hyper,
        ServerKind::Axum,
        ServerKind::Strata,
        ServerKind::ExpressZodApi,
        ServerKind::QuickStart,
    ];

    /// The servers this binary runs itself (`strata-bench serve <server> <scenario>`).
    pub(crate) const IN_PROCESS: [ServerKind; 3] =
        [ServerKind::Hyper, ServerKind::Axum, ServerKind::Strata];

    /// The name in reports (and on the command line).
    pub(crate) fn name(self) -> &'static str {
        match self {
            ServerKind::Hyper => "hyper",
            ServerKind::Axum => "axum",
            ServerKind::Strata => "strata",
            ServerKind::ExpressZodApi => "express-zod-api",
            ServerKind::QuickStart => "quick-start",
        }
    }

    /// Whether this binary serves it in a child of its own (`serve`), rather than running
    /// another program.
    pub(crate) fn in_process(self) -> bool {
        Self::IN_PROCESS.contains(&self)
    }

    /// Whether the server answers `scenario`: the quick start serves only `/v1/hello`, so it
    /// takes part where that is enough to answer like the others; express-zod-api serves all
    /// but the large ones.
    pub(crate) fn serves(self, scenario: Scenario) -> bool {
        match self {
            ServerKind::QuickStart => matches!(
                scenario,
                Scenario::Hello | Scenario::NotFound | Scenario::WrongMethod
            ),
            _ => true,
        }
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for ServerKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl FromStr for ServerKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "ezapi" {
            return Ok(ServerKind::ExpressZodApi);
        }
        ServerKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown server {s:?} (hyper, axum, strata, express-zod-api or ezapi, \
                     quick-start)"
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for scenario in Scenario::ALL {
            assert_eq!(scenario.name().parse::<Scenario>(), Ok(scenario));
        }
        for kind in ServerKind::ALL {
            assert_eq!(kind.name().parse::<ServerKind>(), Ok(kind));
        }
        assert!("hullo".parse::<Scenario>().is_err());
        assert_eq!("ezapi".parse(), Ok(ServerKind::ExpressZodApi));
        assert!("node".parse::<ServerKind>().is_err());
    }

    #[test]
    fn the_quick_start_takes_part_where_hello_is_enough() {
        let served: Vec<_> = Scenario::ALL
            .into_iter()
            .filter(|s| ServerKind::QuickStart.serves(*s))
            .collect();
        assert_eq!(
            served,
            [Scenario::Hello, Scenario::NotFound, Scenario::WrongMethod]
        );
        // express-zod-api's twin serves every scenario (its answers are checked by
        // scripts/ezapi-check.sh in CI).
        for kind in ServerKind::IN_PROCESS
            .into_iter()
            .chain([ServerKind::ExpressZodApi])
        {
            assert!(Scenario::ALL.iter().all(|s| kind.serves(*s)), "{kind}");
        }
        assert!(ServerKind::Strata.in_process() && !ServerKind::QuickStart.in_process());
    }

    #[test]
    fn post_requests_carry_their_length() {
        let request = Scenario::ValidatedPost.request();
        let bytes = String::from_utf8(request.to_http1()).unwrap_or_default();
        assert!(bytes.starts_with("POST /v1/orders HTTP/1.1\r\n"));
        assert!(bytes.contains(&format!("content-length: {}\r\n", request.body.len())));
        assert!(bytes.ends_with('}'));
    }

    #[test]
    fn the_large_scenarios_send_and_ask_for_large_bodies() {
        let input = Scenario::LargeInput.request();
        assert_eq!(
            (input.method, input.path_and_query.as_str()),
            (Method::POST, "/v1/bulk-orders")
        );
        assert!(
            (95 * 1024..=110 * 1024).contains(&input.body.len()),
            "{} bytes",
            input.body.len()
        );
        let output = Scenario::LargeOutput.request();
        assert_eq!(
            (output.method, output.path_and_query.as_str()),
            (Method::GET, "/v1/products?count=5000")
        );
        assert!(output.body.is_empty());
        assert!(!Scenario::LargeInput.many_routes() && !Scenario::LargeOutput.many_routes());
    }
}
