use strata_input::InputSources;
use tower_layer::Layer;

use crate::service::CombineService;

/// Applies [`CombineService`]: merges the input sources of each request.
#[derive(Debug, Clone, Default)]
pub struct CombineLayer {
    sources: InputSources,
}

impl CombineLayer {
    /// A layer with the default sources (spec table 2.2).
    pub fn new() -> Self {
        Self::default()
    }

    /// A layer with the given sources (a clone of [`InputSources`] shares its table: every
    /// endpoint of a routing holds the same one).
    pub fn with_sources(sources: InputSources) -> Self {
        Self { sources }
    }
}

impl<S> Layer<S> for CombineLayer {
    type Service = CombineService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CombineService::from_sources(inner, self.sources.clone())
    }
}
