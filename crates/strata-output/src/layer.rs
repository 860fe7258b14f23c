use derive_where::derive_where;

use strata_decode::Decoder;
use tower_layer::Layer;

use crate::service::OutputService;

/// Applies [`OutputService`]: checks and serializes outputs of type `O`.
// Whatever `O` is: the layer only names it.
#[derive_where(Clone, Debug, Default)]
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

impl<S, O> Layer<S> for OutputLayer<O> {
    type Service = OutputService<S, O>;

    fn layer(&self, inner: S) -> Self::Service {
        OutputService::from_checker(inner, self.checker.clone())
    }
}
