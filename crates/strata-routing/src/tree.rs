use http::HeaderValue;
use std::path::PathBuf;

use crate::Endpoint;

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

impl From<Endpoint> for Route {
    fn from(endpoint: Endpoint) -> Self {
        Route::Endpoint(endpoint)
    }
}

impl From<Routing> for Route {
    fn from(routing: Routing) -> Self {
        Route::Routing(routing)
    }
}

impl From<ServeStatic> for Route {
    fn from(serve: ServeStatic) -> Self {
        Route::Static(serve)
    }
}

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

/// What to do with files whose name starts with a dot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dotfiles {
    /// Serve them like other files.
    Allow,
    /// Refuse them (a 404, so their existence is not revealed).
    Deny,
    /// Act as if they did not exist (a 404; the default).
    #[default]
    Ignore,
}

/// Options of [`ServeStatic`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticOptions {
    /// Dotfile handling (default: ignore).
    pub dotfiles: Dotfiles,
    /// Serve `index.html` for a directory (default: true).
    pub index: bool,
    /// Redirect a directory without a trailing slash to the path with one (default: true).
    pub redirect: bool,
    /// The `Cache-Control` of files, redirects and 304s (default `public, max-age=0`, as
    /// express's static files: caches keep them but revalidate through `ETag` and
    /// `Last-Modified`); `None` sends none.
    pub cache_control: Option<HeaderValue>,
}

impl Default for StaticOptions {
    fn default() -> Self {
        Self {
            dotfiles: Dotfiles::default(),
            index: true,
            redirect: true,
            cache_control: Some(HeaderValue::from_static(DEFAULT_CACHE_CONTROL)),
        }
    }
}

/// The default `Cache-Control` of static files.
pub const DEFAULT_CACHE_CONTROL: &str = "public, max-age=0";

/// The files of a directory, served under the key's path (GET and HEAD), with ranges, `ETag`
/// and `Last-Modified` and content types, by tower-http's `ServeDir`. Missing files, refused
/// dotfiles and any path escaping the directory are the JSON 404.
#[derive(Debug, Clone)]
pub struct ServeStatic {
    pub(crate) dir: PathBuf,
    pub(crate) options: StaticOptions,
}

impl ServeStatic {
    /// Serves `dir` with `options`.
    pub fn new(dir: impl Into<PathBuf>, options: StaticOptions) -> Self {
        Self {
            dir: dir.into(),
            options,
        }
    }

    /// Serves `dir` with the default options.
    pub fn dir(dir: impl Into<PathBuf>) -> Self {
        Self::new(dir, StaticOptions::default())
    }

    /// The directory served.
    pub fn directory(&self) -> &std::path::Path {
        &self.dir
    }

    /// The options.
    pub fn options(&self) -> &StaticOptions {
        &self.options
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
/// # fn demo(hello: strata_routing::Endpoint, list: strata_routing::Endpoint, create: strata_routing::Endpoint) {
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
