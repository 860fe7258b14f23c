//! Probes for tests that wait on the server (included with `#[path = "common/probe.rs"] mod
//! probe;`): instead of sleeping "long enough", a test waits for what it needs to be true.
//! Each test binary uses what it needs of them.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Counts the requests that reached a handler; a test waits until a count is reached.
#[derive(Clone, Default)]
pub(crate) struct Started(Arc<Count>);

#[derive(Default)]
struct Count {
    value: AtomicUsize,
    changed: Notify,
}

impl Started {
    /// One more request reached its handler.
    pub(crate) fn mark(&self) {
        self.0.value.fetch_add(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }

    /// Waits until `count` requests reached their handler (at most 10 s, then panics).
    pub(crate) async fn reached(&self, count: usize) {
        let waited = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                // Registered before the check: a `mark` in between still wakes it.
                let changed = self.0.changed.notified();
                if self.0.value.load(Ordering::SeqCst) >= count {
                    return;
                }
                changed.await;
            }
        })
        .await;
        assert!(waited.is_ok(), "{count} requests never reached a handler");
    }
}

/// Waits until `condition` holds, looking every millisecond (at most 10 s, then panics): for
/// state the server keeps but does not announce, like the body budget in use.
pub(crate) async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "never true: {what}");
}
