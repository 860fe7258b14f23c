use derive_where::derive_where;

use strata_decode::Decoder;
use tower_layer::Layer;

use crate::service::ValidateService;

/// Applies [`ValidateService`]: decodes and validates the merged input into `I`.
// Whatever `I` is: the layer only names it.
#[derive_where(Clone, Debug, Default)]
pub struct ValidateLayer<I> {
    decoder: Decoder<I>,
}

impl<I> ValidateLayer<I> {
    /// A layer for input type `I`.
    pub fn new() -> Self {
        Self {
            decoder: Decoder::new(),
        }
    }
}

impl<S, I> Layer<S> for ValidateLayer<I> {
    type Service = ValidateService<S, I>;

    fn layer(&self, inner: S) -> Self::Service {
        ValidateService::from_decoder(inner, self.decoder.clone())
    }
}
