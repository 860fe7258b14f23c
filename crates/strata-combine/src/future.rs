/// Response future of [`CombineService`](crate::CombineService): the inner service's future, or
/// the 400 for a header that is not UTF-8 when headers are a source.
pub type ResponseFuture<F> = strata_core::future::ShortCircuit<F>;
