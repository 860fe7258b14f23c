//! Testing Strata endpoints and middleware without a server (spec section 4.6).
//!
//! [`test_endpoint`] runs an endpoint's whole pipeline on a request you describe (method, path,
//! query, an already parsed JSON body, path parameters, headers, extensions) with a test
//! configuration (development mode, your overrides), and returns a [`ResponseMock`]
//! and a [`LoggerMock`] with everything that was logged. [`test_middleware`] runs one middleware
//! the same way, with the context earlier middleware would have provided, and returns what it
//! added to the context (absent when it denied).
//!
//! ```
//! use garde::Validate;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use strata::prelude::*;
//! use strata_testing::{TestArgs, TestRequest, test_endpoint};
//!
//! #[derive(Deserialize, Validate, JsonSchema)]
//! struct In {
//!     #[garde(length(chars, min = 1))]
//!     name: String,
//! }
//!
//! #[derive(Serialize, Validate, JsonSchema)]
//! struct Out {
//!     #[garde(skip)]
//!     greetings: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let hello = default_endpoints_factory().get().handler(async |input: In, logger: Logger| {
//!     logger.info("greeting");
//!     Ok(Out { greetings: format!("Hello, {}", input.name) })
//! });
//!
//! let outcome = test_endpoint(&hello, TestArgs::new(TestRequest::get().query("name", "Ada"))).await;
//! assert_eq!(outcome.response.status_code(), 200);
//! assert_eq!(outcome.response.json_data().unwrap()["data"]["greetings"], "Hello, Ada");
//! assert_eq!(outcome.logger.logs().info[0].message, "greeting");
//!
//! let outcome = test_endpoint(&hello, TestArgs::new(TestRequest::get())).await;
//! assert_eq!(outcome.response.status_code(), 400);
//! # }
//! ```
//!
//! # The second way: `oneshot` on the routing
//!
//! Every endpoint, and the whole routing, is a tower service; a test may call it directly with
//! `tower::ServiceExt::oneshot`, through routing (paths, methods, CORS) exactly as a server
//! would, putting a capturing logger into the request extensions if it wants the logs:
//!
//! ```
//! use http::Request;
//! use strata::Router;
//! use strata::prelude::*;
//! use strata_testing::LoggerMock;
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let ping = default_endpoints_factory().get().handler_without_input(async |logger: Logger| {
//!     logger.debug("ping");
//!     Ok(Reply::new(()))
//! });
//! let router = Router::new(&routing! { "ping" => ping }, &create_config().cors(Cors::Disabled).build()).unwrap();
//! let logs = LoggerMock::default();
//! let mut request = Request::get("/ping").body(String::new()).unwrap();
//! request.extensions_mut().insert(Logger::with_sink(std::sync::Arc::new(logs.clone())));
//! let response = router.oneshot(request).await.unwrap();
//! assert_eq!(response.status(), 200);
//! assert_eq!(logs.logs().debug[0].message, "ping");
//! # }
//! ```

mod mocks;
mod run;

pub use mocks::{LogEntry, LoggerMock, Logs, ResponseMock};
pub use run::{
    MiddlewareOutcome, TestArgs, TestOutcome, TestRequest, test_config, test_endpoint,
    test_middleware,
};
