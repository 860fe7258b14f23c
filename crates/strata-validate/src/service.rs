use std::task::{Context, Poll};

use derive_where::derive_where;

use garde::Validate;
use http::Request;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use strata_core::future::ShortCircuit;
use strata_core::{ApiError, BoxError, Validated};
use strata_input::Staged;

use strata_decode::Decoder;
use tower_service::Service;

use crate::ResponseFuture;
use crate::layer::ValidateLayer;

/// Decodes and validates the merged input; see the [crate docs](crate).
#[derive_where(Clone, Debug; S)]
pub struct ValidateService<S, I> {
    inner: S,
    decoder: Decoder<I>,
}

impl<S, I> ValidateService<S, I> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Self::from_decoder(inner, Decoder::new())
    }

    pub(crate) fn from_decoder(inner: S, decoder: Decoder<I>) -> Self {
        Self { inner, decoder }
    }

    /// A [`ValidateLayer`] for `I`.
    pub fn layer() -> ValidateLayer<I> {
        ValidateLayer::new()
    }

    strata_core::inner_service_accessors!();
}

impl<S, I, C> Service<Request<Staged<C>>> for ValidateService<S, I>
where
    S: Service<Request<Validated<I, C>>>,
    S::Error: Into<BoxError> + 'static,
    I: DeserializeOwned + JsonSchema + Validate,
    I::Context: Default,
{
    type Response = S::Response;
    type Error = ApiError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ApiError::from_inner)
    }

    fn call(&mut self, request: Request<Staged<C>>) -> Self::Future {
        let (parts, staged) = request.into_parts();
        match self.decoder.decode(&staged.input) {
            Ok(input) => {
                let validated = Validated {
                    input,
                    ctx: staged.ctx,
                };
                ShortCircuit::inner(self.inner.call(Request::from_parts(parts, validated)))
            }
            Err(error) => ShortCircuit::error(error),
        }
    }
}
