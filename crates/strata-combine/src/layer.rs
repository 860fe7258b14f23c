use strata_input::InputSources;
use strata_input::cookies::CookieKeys;
use tower_layer::Layer;

use crate::service::CombineService;

/// Applies [`CombineService`]: merges the input sources of each request.
#[derive(Debug, Clone, Default)]
pub struct CombineLayer {
    sources: InputSources,
    cookie_keys: Option<CookieKeys>,
}

impl CombineLayer {
    /// A layer with the default sources (spec table 2.2).
    pub fn new() -> Self {
        Self::default()
    }

    /// A layer with the given sources (a clone of [`InputSources`] shares its table: every
    /// endpoint of a routing holds the same one).
    pub fn with_sources(sources: InputSources) -> Self {
        Self {
            sources,
            cookie_keys: None,
        }
    }

    /// Verifies signed cookies ([`InputSource::SignedCookies`](strata_input::InputSource))
    /// with `keys`; without keys no signed cookie is read.
    #[must_use]
    pub fn cookie_keys(mut self, keys: CookieKeys) -> Self {
        self.cookie_keys = Some(keys);
        self
    }
}

impl<S> Layer<S> for CombineLayer {
    type Service = CombineService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CombineService::from_sources(inner, self.sources.clone(), self.cookie_keys.clone())
    }
}
