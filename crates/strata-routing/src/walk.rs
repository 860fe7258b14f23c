//! The public walk over a compiled [`Router`]: every (method, path, endpoint) it serves and every
//! static mount, for API descriptions and client generators.
//!
//! What the walk shows is what the router dispatches on, so a description built from it cannot
//! drift from the server: the same flattening, the same checks, the same method per path.
//!
//! ```
//! use http::Method;
//! use strata_endpoint::{Endpoint, EndpointMeta};
//! use strata_cors::Cors;
//! use strata_routing::{Router, RoutingSettings, routing};
//! use strata_static::ServeStatic;
//!
//! # let endpoint = || Endpoint::from_parts(EndpointMeta::default(), |_| {
//! #     tower::util::BoxCloneSyncService::new(tower::service_fn(|_| async {
//! #         Ok::<_, std::convert::Infallible>(http::Response::new(strata_core::Body::empty()))
//! #     }))
//! # });
//! let tree = routing! {
//!     "v1" => { "hello" => endpoint(), "post /hello" => endpoint() },
//!     "public" => ServeStatic::dir("assets"),
//! };
//! let router = Router::new(&tree, &RoutingSettings::new(Cors::Disabled)).unwrap();
//! let routes: Vec<(Method, &str)> =
//!     router.routes().map(|route| (route.method().clone(), route.path())).collect();
//! assert_eq!(routes, [(Method::GET, "/v1/hello"), (Method::POST, "/v1/hello")]);
//! assert_eq!(router.static_mounts().next().unwrap().path(), "/public");
//! ```

use std::path::Path;
use std::sync::Arc;

use http::Method;
use strata_endpoint::Endpoint;

use crate::router::Router;
use strata_static::{ServeStatic, StaticOptions};

/// One operation a router serves: a method on a path, answered by an endpoint.
///
/// HEAD (answered by every GET) and OPTIONS (answered when CORS is on) are not listed: they are
/// the router's, not an endpoint's.
#[derive(Debug, Clone, Copy)]
pub struct RouteInfo<'a> {
    method: &'a Method,
    path: &'a str,
    params: &'a [Arc<str>],
    endpoint: &'a Endpoint,
}

impl<'a> RouteInfo<'a> {
    /// The method.
    pub fn method(&self) -> &'a Method {
        self.method
    }

    /// The path as routed, with parameters as `:name` (`/v1/users/:id`).
    pub fn path(&self) -> &'a str {
        self.path
    }

    /// The names of the path parameters, in path order.
    pub fn params(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        self.params.iter().map(|name| &**name)
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &'a Endpoint {
        self.endpoint
    }
}

/// A static directory and the path it is served under (GET and HEAD of any file beneath).
#[derive(Debug, Clone, Copy)]
pub struct StaticMount<'a> {
    path: &'a str,
    serve: &'a ServeStatic,
}

impl<'a> StaticMount<'a> {
    /// The path files are served under (`/public`, or `/` for the root).
    pub fn path(&self) -> &'a str {
        self.path
    }

    /// The directory.
    pub fn directory(&self) -> &'a Path {
        self.serve.directory()
    }

    /// The options.
    pub fn options(&self) -> &StaticOptions {
        self.serve.options()
    }
}

impl Router {
    /// Every operation the router serves, in the order of the routing tree (paths in the order
    /// they were first seen, methods in declaration order).
    pub fn routes(&self) -> impl Iterator<Item = RouteInfo<'_>> {
        self.compiled().tables.iter().flat_map(|table| {
            table.methods.iter().filter_map(|(method, target)| {
                Some(RouteInfo {
                    method,
                    path: &target.path,
                    params: &target.params,
                    endpoint: target.endpoint.as_ref()?,
                })
            })
        })
    }

    /// Every static directory, in the order of the routing tree.
    pub fn static_mounts(&self) -> impl Iterator<Item = StaticMount<'_>> {
        self.compiled()
            .mounts
            .iter()
            .map(|(path, serve)| StaticMount { path, serve })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::RoutingSettings;
    use strata_endpoint::EndpointMeta;

    use super::*;
    use crate::{Nest, routing};

    /// An endpoint of `methods` whose input has `fields`, answering an empty 200 (for tests of
    /// routing's compile and walk).
    pub(crate) fn endpoint(methods: &[Method], fields: &[&str]) -> Endpoint {
        let mut meta = EndpointMeta::default();
        meta.methods = methods.to_vec();
        meta.input_fields = fields.iter().map(|f| (*f).to_owned()).collect();
        Endpoint::from_parts(meta, |_| {
            tower::util::BoxCloneSyncService::new(tower::service_fn(|_| async {
                Ok::<_, std::convert::Infallible>(http::Response::new(strata_core::Body::empty()))
            }))
        })
    }

    #[test]
    fn the_walk_lists_what_the_router_dispatches() {
        let one = endpoint(&[Method::GET, Method::PATCH], &["id"]);
        let tree = routing! {
            "v1" => {
                "users" => endpoint(&[], &[]).nest(routing! { ":id" => one }),
                "delete /users/:slug" => endpoint(&[Method::DELETE], &["slug"]),
                "post" => endpoint(&[Method::POST], &[]),
            },
            "files" => strata_static::ServeStatic::dir("."),
        };
        let router = Router::new(&tree, &RoutingSettings::new(strata_cors::Cors::Enabled)).unwrap();
        let walked: Vec<(String, &str, Vec<&str>)> = router
            .routes()
            .map(|r| (r.method().to_string(), r.path(), r.params().collect()))
            .collect();
        assert_eq!(
            walked,
            [
                ("GET".to_owned(), "/v1/users", vec![]),
                ("GET".to_owned(), "/v1/users/:id", vec!["id"]),
                ("PATCH".to_owned(), "/v1/users/:id", vec!["id"]),
                ("DELETE".to_owned(), "/v1/users/:slug", vec!["slug"]),
                ("POST".to_owned(), "/v1", vec![]),
            ]
        );
        let mounts: Vec<_> = router.static_mounts().map(|m| m.path()).collect();
        assert_eq!(mounts, ["/files"]);
        assert_eq!(
            router.static_mounts().next().unwrap().directory(),
            Path::new(".")
        );
    }
}
