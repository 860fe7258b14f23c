use std::fmt;
use std::sync::Arc;

use tower_layer::Layer;

use crate::middleware::Middleware;
use crate::service::MiddlewareService;

/// Applies [`MiddlewareService`] for one [`Middleware`].
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

impl<I, H> Clone for MiddlewareLayer<I, H> {
    fn clone(&self) -> Self {
        Self {
            middleware: Arc::clone(&self.middleware),
        }
    }
}

impl<I, H> fmt::Debug for MiddlewareLayer<I, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiddlewareLayer")
            .field("middleware", &self.middleware)
            .finish()
    }
}

impl<S, I, H> Layer<S> for MiddlewareLayer<I, H> {
    type Service = MiddlewareService<S, I, H>;

    fn layer(&self, inner: S) -> Self::Service {
        MiddlewareService::from_shared(inner, Arc::clone(&self.middleware))
    }
}
