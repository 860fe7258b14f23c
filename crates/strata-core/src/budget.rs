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

use crate::error::ApiError;

/// The default budget: 256 MiB.
pub const DEFAULT_BODY_BUDGET: usize = 256 * 1024 * 1024;

/// Bytes of request bodies the server may hold at once, shared by every endpoint built from one
/// [`Config`](crate::Config).
#[derive(Debug)]
pub struct BodyBudget {
    capacity: usize,
    used: AtomicUsize,
}

impl BodyBudget {
    /// A budget of `capacity` bytes.
    pub fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            capacity,
            used: AtomicUsize::new(0),
        })
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The bytes reserved now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Reserves `bytes` until the reservation is dropped; `None` when they do not fit.
    pub fn try_reserve(self: &Arc<Self>, bytes: usize) -> Option<BodyReservation> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let wanted = used.checked_add(bytes)?;
            if wanted > self.capacity {
                return None;
            }
            match self
                .used
                .compare_exchange_weak(used, wanted, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Some(BodyReservation {
                        budget: Arc::clone(self),
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
    budget: Arc<BodyBudget>,
    bytes: usize,
}

impl Drop for BodyReservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
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
