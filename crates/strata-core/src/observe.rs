//! [`Observer`]: what a part of Strata decides, told to whoever watches the server (its
//! metrics), for what a response alone does not show.
//!
//! The server puts an `Observer` in each request's extensions when it keeps metrics; a stage or
//! a middleware that decides something an operator wants to count (the rate limiter: allowed,
//! limited, its store failing) looks for one there and tells it. Without one, nothing is told
//! and nothing is spent but the lookup.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use strata_core::observe::{Observe, Observer, RateLimitOutcome};
//!
//! #[derive(Default)]
//! struct Limited(AtomicUsize);
//!
//! impl Observe for Limited {
//!     fn rate_limit(&self, outcome: RateLimitOutcome, _store: &'static str) {
//!         if outcome == RateLimitOutcome::Limited {
//!             self.0.fetch_add(1, Ordering::Relaxed);
//!         }
//!     }
//! }
//!
//! let limited = Arc::new(Limited::default());
//! let mut request = http::Request::new(());
//! request.extensions_mut().insert(Observer::new(limited.clone()));
//! // ... a rate limiter, later:
//! if let Some(observer) = request.extensions().get::<Observer>() {
//!     observer.rate_limit(RateLimitOutcome::Limited, "memory");
//! }
//! assert_eq!(limited.0.load(Ordering::Relaxed), 1);
//! ```

use std::fmt;
use std::sync::Arc;

/// What a rate limiter decided for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateLimitOutcome {
    /// Within the budget.
    Allowed,
    /// Over it: a 429.
    Limited,
    /// The store could not answer and the policy lets requests through (fail open).
    StoreFailedOpen,
    /// The store could not answer and the policy refuses them (fail closed: a 503).
    StoreFailedClosed,
}

impl RateLimitOutcome {
    /// The outcome as a metric label: `allowed`, `limited`, `store_failed_open`,
    /// `store_failed_closed`.
    pub fn label(self) -> &'static str {
        match self {
            RateLimitOutcome::Allowed => "allowed",
            RateLimitOutcome::Limited => "limited",
            RateLimitOutcome::StoreFailedOpen => "store_failed_open",
            RateLimitOutcome::StoreFailedClosed => "store_failed_closed",
        }
    }

    /// Whether the store failed.
    pub fn store_failed(self) -> bool {
        matches!(
            self,
            RateLimitOutcome::StoreFailedOpen | RateLimitOutcome::StoreFailedClosed
        )
    }
}

/// What is told to an [`Observer`]; every method does nothing unless implemented.
pub trait Observe: Send + Sync + 'static {
    /// A rate limiter decided `outcome` for a request, with a store of kind `store` (`memory`,
    /// `redis`, ...).
    fn rate_limit(&self, outcome: RateLimitOutcome, store: &'static str) {
        let _ = (outcome, store);
    }
}

/// A shared [`Observe`], as request extensions carry it.
#[derive(Clone)]
pub struct Observer(Arc<dyn Observe>);

impl Observer {
    /// An observer telling `observe`.
    pub fn new(observe: Arc<dyn Observe>) -> Self {
        Self(observe)
    }

    /// See [`Observe::rate_limit`].
    pub fn rate_limit(&self, outcome: RateLimitOutcome, store: &'static str) {
        self.0.rate_limit(outcome, store);
    }
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer").finish_non_exhaustive()
    }
}
