use std::sync::Arc;

use derive_where::derive_where;

use tower_layer::Layer;

use crate::middleware::Middleware;
use crate::service::MiddlewareService;

/// Applies [`MiddlewareService`] for one [`Middleware`].
// Without bounds: the middleware is shared.
#[derive_where(Clone, Debug)]
pub struct MiddlewareLayer<I, H> {
    middleware: Arc<Middleware<I, H>>,
}

impl<I, H> MiddlewareLayer<I, H> {
    /// A layer running `middleware`.
    pub fn new(middleware: Middleware<I, H>) -> Self {
        Self {
            middleware: Arc::new(middleware),
        }
    }

    /// The middleware.
    pub fn middleware(&self) -> &Middleware<I, H> {
        &self.middleware
    }
}

impl<S, I, H> Layer<S> for MiddlewareLayer<I, H> {
    type Service = MiddlewareService<S, I, H>;

    fn layer(&self, inner: S) -> Self::Service {
        MiddlewareService::from_shared(inner, Arc::clone(&self.middleware))
    }
}
