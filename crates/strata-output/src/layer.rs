use std::fmt;

use strata_decode::Decoder;
use tower_layer::Layer;

use crate::service::OutputService;

/// Applies [`OutputService`]: checks and serializes outputs of type `O`.
pub struct OutputLayer<O> {
    checker: Decoder<O>,
}

impl<O> OutputLayer<O> {
    /// A layer for output type `O`.
    pub fn new() -> Self {
        Self {
            checker: Decoder::new(),
        }
    }
}

impl<O> Default for OutputLayer<O> {
    fn default() -> Self {
        Self::new()
    }
}

impl<O> Clone for OutputLayer<O> {
    fn clone(&self) -> Self {
        Self {
            checker: self.checker.clone(),
        }
    }
}

impl<O> fmt::Debug for OutputLayer<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputLayer")
            .field("checker", &self.checker)
            .finish()
    }
}

impl<S, O> Layer<S> for OutputLayer<O> {
    type Service = OutputService<S, O>;

    fn layer(&self, inner: S) -> Self::Service {
        OutputService::from_checker(inner, self.checker.clone())
    }
}
