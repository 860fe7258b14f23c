//! A budget for request bodies held in memory across all requests.
//!
//! Each request may buffer up to the body limit (or the multipart limit); many slow or stalled
//! requests together could hold far more than the machine has. The budget caps the sum: a
//! request whose body would go over it is refused with a 503 and `Retry-After` before any of it
//! is read, and its share is given back when the request is answered.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};

use strata_core::ApiError;

/// The default budget: 256 MiB.
pub const DEFAULT_BODY_BUDGET: usize = 256 * 1024 * 1024;

/// Bytes of request bodies the server may hold at once. A handle: its clones share one count,
/// so every endpoint built from one pipeline configuration (and every [`ParseLayer`] given a
/// clone) draws from the same budget.
///
/// [`ParseLayer`]: crate::ParseLayer
///
/// ```
/// use strata_parse::BodyBudget;
///
/// let budget = BodyBudget::new(100);
/// let shared = budget.clone();
/// let held = budget.try_reserve(60).unwrap();
/// assert!(shared.try_reserve(41).is_none(), "the clone sees the same count");
/// drop(held);
/// assert_eq!(shared.used(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct BodyBudget(Arc<Count>);

#[derive(Debug)]
struct Count {
    capacity: usize,
    used: AtomicUsize,
}

impl BodyBudget {
    /// A budget of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self(Arc::new(Count {
            capacity,
            used: AtomicUsize::new(0),
        }))
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.0.capacity
    }

    /// The bytes reserved now.
    pub fn used(&self) -> usize {
        self.0.used.load(Ordering::Relaxed)
    }

    /// Reserves `bytes` until the reservation is dropped; `None` when they do not fit.
    pub fn try_reserve(&self, bytes: usize) -> Option<BodyReservation> {
        let count = &self.0;
        let mut used = count.used.load(Ordering::Relaxed);
        loop {
            let wanted = used.checked_add(bytes)?;
            if wanted > count.capacity {
                return None;
            }
            match count.used.compare_exchange_weak(
                used,
                wanted,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(BodyReservation {
                        budget: self.clone(),
                        bytes,
                    });
                }
                Err(now) => used = now,
            }
        }
    }

    /// The error of a request that does not fit: a 503 with `Retry-After: 1`.
    pub fn exhausted() -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "The server holds too many request bodies right now; retry shortly",
        )
        .with_header(RETRY_AFTER, HeaderValue::from_static("1"))
    }
}

/// A share of a [`BodyBudget`], given back when dropped.
#[derive(Debug)]
pub struct BodyReservation {
    budget: BodyBudget,
    bytes: usize,
}

impl Drop for BodyReservation {
    fn drop(&mut self) {
        self.budget.0.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_fit_the_capacity_and_are_given_back() {
        let budget = BodyBudget::new(100);
        let a = budget.try_reserve(60).unwrap();
        assert!(budget.try_reserve(41).is_none());
        let b = budget.try_reserve(40).unwrap();
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        assert!(budget.try_reserve(usize::MAX).is_none());
        drop(b);
        assert_eq!(budget.used(), 0);
        assert_eq!(BodyBudget::exhausted().status(), 503);
    }
}
