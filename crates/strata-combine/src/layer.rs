use std::sync::Arc;

use strata_core::{Config, InputSources};
use tower_layer::Layer;

use crate::service::CombineService;

/// Applies [`CombineService`]: merges the input sources of each request.
#[derive(Debug, Clone, Default)]
pub struct CombineLayer {
    sources: Arc<InputSources>,
}

impl CombineLayer {
    /// A layer with the default sources (spec table 2.2).
    pub fn new() -> Self {
        Self::default()
    }

    /// A layer with the given sources.
    pub fn with_sources(sources: InputSources) -> Self {
        Self {
            sources: Arc::new(sources),
        }
    }

    /// A layer with the sources of `config` (shared with it, not copied: every endpoint of a
    /// routing holds the same ones).
    pub fn from_config(config: &Config) -> Self {
        Self {
            sources: Arc::clone(config.shared_input_sources()),
        }
    }
}

impl<S> Layer<S> for CombineLayer {
    type Service = CombineService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CombineService::from_sources(inner, Arc::clone(&self.sources))
    }
}
