use std::fmt;

use strata_decode::Decoder;
use tower_layer::Layer;

use crate::service::ValidateService;

/// Applies [`ValidateService`]: decodes and validates the merged input into `I`.
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

impl<I> Default for ValidateLayer<I> {
    fn default() -> Self {
        Self::new()
    }
}

impl<I> Clone for ValidateLayer<I> {
    fn clone(&self) -> Self {
        Self {
            decoder: self.decoder.clone(),
        }
    }
}

impl<I> fmt::Debug for ValidateLayer<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValidateLayer")
            .field("decoder", &self.decoder)
            .finish()
    }
}

impl<S, I> Layer<S> for ValidateLayer<I> {
    type Service = ValidateService<S, I>;

    fn layer(&self, inner: S) -> Self::Service {
        ValidateService::from_decoder(inner, self.decoder.clone())
    }
}
