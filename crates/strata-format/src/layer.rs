use strata_core::Mode;
use tower_layer::Layer;

use crate::service::FormatService;

/// Applies [`FormatService`] with a [`ResultHandler`](crate::ResultHandler).
#[derive(Debug, Clone)]
pub struct FormatLayer<R> {
    result_handler: R,
    mode: Mode,
}

impl<R> FormatLayer<R> {
    /// A layer formatting with `result_handler`, in production mode (internal messages
    /// hidden; see [`mode`](Self::mode)).
    pub fn new(result_handler: R) -> Self {
        Self {
            result_handler,
            mode: Mode::Production,
        }
    }

    /// Sets development or production mode.
    #[must_use]
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }
}

impl<S, R: Clone> Layer<S> for FormatLayer<R> {
    type Service = FormatService<S, R>;

    fn layer(&self, inner: S) -> Self::Service {
        FormatService::from_parts(inner, self.result_handler.clone(), self.mode)
    }
}
