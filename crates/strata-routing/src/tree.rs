use strata_endpoint::Endpoint;
use strata_static::ServeStatic;

/// A routing tree: keys mapped to endpoints, nested trees and static file directories
/// (spec section 4.2).
///
/// | key | meaning |
/// |---|---|
/// | `"v1"` | one path segment; its value's routes are under `/v1` |
/// | `"/v1/flat/path"` | several segments at once (relative to the parent) |
/// | `":id"` | a path parameter, a field of the endpoint's input |
/// | `"get"`, `"post"`, … | with an endpoint: that method on the parent path |
/// | `"post /v1/things"` | that method on that path (relative to the parent) |
///
/// Write it with the builder or with the [`routing!`](crate::routing!) macro.
#[derive(Debug, Clone, Default)]
pub struct Routing {
    pub(crate) entries: Vec<(String, Route)>,
}

impl Routing {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `key` → `route`.
    #[must_use]
    pub fn route(mut self, key: impl Into<String>, route: impl Into<Route>) -> Self {
        self.entries.push((key.into(), route.into()));
        self
    }

    /// Mounts an endpoint that implements an [`Operation`](strata_core::Operation) where the
    /// operation says (the key `"get /v1/books/:id"`): the path is written once, in the
    /// declaration, which is the whole path, so call this on the routing's root. An endpoint
    /// that implements none is an [`InvalidKey`](crate::RoutingError::InvalidKey) error when the
    /// routing is compiled.
    #[must_use]
    pub fn operation(self, endpoint: Endpoint) -> Self {
        let key = endpoint
            .meta()
            .declared
            .as_ref()
            .map_or_else(String::new, |declared| {
                format!(
                    "{} {}",
                    declared.method.as_str().to_ascii_lowercase(),
                    declared.path
                )
            });
        self.route(key, endpoint)
    }
}

/// What a routing key holds.
#[derive(Debug, Clone)]
pub enum Route {
    /// An endpoint.
    Endpoint(Endpoint),
    /// A nested tree.
    Routing(Routing),
    /// An endpoint at this path with children beneath it ([`Nest::nest`]).
    Nested(Endpoint, Routing),
    /// Static files.
    Static(ServeStatic),
}

strata_core::from_variants!(Route { Endpoint(Endpoint), Routing(Routing), Static(ServeStatic) });

/// `endpoint.nest(children)`: the endpoint at its own path and the children beneath it.
pub trait Nest {
    /// The endpoint at its path, `children` under it.
    fn nest(self, children: Routing) -> Route;
}

impl Nest for Endpoint {
    fn nest(self, children: Routing) -> Route {
        Route::Nested(self, children)
    }
}

/// Writes a [`Routing`] as nested braces, like the spec's routing objects.
///
/// A value in braces is a nested tree; any other value is an expression converting into a
/// [`Route`] (an endpoint, `endpoint.nest(routing! {..})`, a `ServeStatic`, a `Routing`).
///
/// ```
/// use strata_routing::{Routing, routing};
///
/// # use strata_endpoint::Endpoint;
/// # fn demo(hello: Endpoint, list: Endpoint, create: Endpoint) {
/// let tree: Routing = routing! {
///     "v1" => {
///         "hello" => hello,
///         "users" => {
///             "get" => list,
///             "post" => create,
///         },
///     },
/// };
/// # }
/// ```
#[macro_export]
macro_rules! routing {
    // The entries are read by a procedural macro (any number of keys); it is given this
    // crate's path so that the expansion finds `Routing` from wherever `routing!` was reached.
    ($($body:tt)*) => {
        $crate::__routing_impl!($crate; $($body)*)
    };
}
