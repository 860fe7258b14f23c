//! API descriptions for Strata: an [OpenAPI 3.2](https://spec.openapis.org/oas/v3.2.0) document
//! (or [3.1](https://spec.openapis.org/oas/v3.1.0), [`Documentation::openapi_version`]) from a
//! routing, routes that serve it, and a page that renders it.
//!
//! [`Documentation`] walks the compiled routing (the router's own walk, so the document cannot
//! drift from what the server serves) and describes each operation:
//!
//! - every (method, path) the router serves, paths as `{id}`; each GET also as `head` (no body);
//!   OPTIONS is the router's and is not listed;
//! - inputs where the configuration reads them for the method: path parameters (required),
//!   query parameters (GET, DELETE; arrays `style: form, explode: true`), header parameters when
//!   the method's sources include headers, a JSON and urlencoded body (POST, PUT, PATCH), or a
//!   `multipart/form-data` body when the input takes files; middleware inputs alike; QUERY
//!   routes as 3.2's `query` operations with their body (a 3.1 document leaves them out and
//!   names them under `x-omitted-operations`);
//! - the result handler's success responses (with the statuses an endpoint declares) and an
//!   error response for every status the pipeline can answer with: 400, the statuses declared by
//!   middleware and endpoints, 404 for routes with parameters, 413 and 415 when a body is read,
//!   500;
//! - middleware security as `apiKey` schemes, one requirement per operation;
//! - named types once under `components/schemas`, referenced everywhere;
//! - event streams (`text/event-stream`) by their events: 3.2's `itemSchema` (3.1: `schema`),
//!   one object per event name whose `data` is JSON text (`contentMediaType`,
//!   `contentSchema`), as an `EventSource` receives it.
//!
//! A 405 is not listed: it answers methods that have no operation on the path, and an
//! operation is one method. Static mounts ([`Router::static_mounts`](strata_routing::Router))
//! are files, not operations, and are left out. Statuses hyper answers before any route is
//! known (431 for oversized headers, 414 for an oversized URI) are not listed either.
//!
//! What the document cannot say truthfully is a [`DocumentationError`] naming the route: a
//! path parameter that is not an input field, two operations with one id, an input that is not
//! an object, file fields without uploads or on a method that takes no files, an object where
//! only text can be sent (query, header, path), a required field no source of the method
//! provides, and parameters of one path shape named differently by two routes.
//!
//! # Example
//!
//! ```
//! use http::Method;
//! use strata_endpoint::{Endpoint, EndpointMeta};
//! use strata_openapi::{Documentation, openapi_endpoint};
//! use strata_routing::routing;
//!
//! # let endpoint = || {
//! #     let mut meta = EndpointMeta::default();
//! #     meta.methods = vec![Method::GET];
//! #     Endpoint::from_parts(meta, |_| tower::util::BoxCloneSyncService::new(tower::service_fn(|_| async {
//! #         Ok::<_, std::convert::Infallible>(http::Response::new(strata_core::Body::empty()))
//! #     })))
//! # };
//! let api = routing! { "v1" => { "hello" => endpoint() } };
//! let config = strata_routing::RoutingSettings::new(strata_cors::Cors::Enabled);
//! let doc = Documentation::new(&api, &config)
//!     .title("Example API")
//!     .version("1.2.0")
//!     .build()
//!     .expect("a describable routing");
//! let json = doc.to_value();
//! assert_eq!(json["openapi"], "3.2.0");
//! assert_eq!(json["paths"]["/v1/hello"]["get"]["operationId"], "getV1Hello");
//! assert_eq!(json["paths"]["/v1/hello"]["head"]["operationId"], "headV1Hello");
//!
//! // Serve it next to the API.
//! let served = routing! { "openapi.json" => openapi_endpoint(&doc) };
//! # let _ = served;
//! ```

mod build;
mod document;
mod error;
mod schemas;
mod serve;

pub use build::Documentation;
pub use document::{
    Components, Header, Info, MediaType, OPENAPI_VERSION, OpenApi, OpenApiVersion, Operation,
    Parameter, ParameterLocation, PathItem, RequestBody, Response, SecurityScheme, Server, Tag,
};
pub use error::DocumentationError;
pub use serve::{
    DocsPage, SWAGGER_UI_SCRIPT, SWAGGER_UI_SCRIPT_INTEGRITY, SWAGGER_UI_STYLESHEET,
    SWAGGER_UI_STYLESHEET_INTEGRITY, SWAGGER_UI_VERSION, docs_page, openapi_endpoint,
    openapi_yaml_endpoint,
};
