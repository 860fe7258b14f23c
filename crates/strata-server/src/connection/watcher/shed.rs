//! Making room at the connection cap: the idle connections by age, so that the accept loop
//! asks the one idle longest to close, one for each connection it accepts, instead of asking
//! every idle connection at once (which then all came back at once).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::{Duration, Instant};

/// Connections asked to make room that may be closing at once beyond the cap: each gives its
/// place under the cap back as soon as it is asked (the newcomer need not wait for its
/// goodbye), and closes within 10 ms; these places bound the descriptors that
/// costs (the default cap leaves 64 descriptors spare).
const CLOSING_BEYOND_THE_CAP: usize = 32;

/// The connections idle now, oldest first, each with the signal that asks it to close.
#[derive(Debug)]
pub(crate) struct IdleConnections {
    next_id: AtomicU64,
    by_age: Mutex<BTreeMap<(Instant, u64), Arc<Notify>>>,
    closing: Arc<Semaphore>,
}

impl Default for IdleConnections {
    fn default() -> Self {
        Self {
            next_id: AtomicU64::new(0),
            by_age: Mutex::default(),
            closing: Arc::new(Semaphore::new(CLOSING_BEYOND_THE_CAP)),
        }
    }
}

impl IdleConnections {
    /// A new connection's entry, not idle yet.
    pub(crate) fn entry(self: &Arc<Self>) -> IdleEntry {
        IdleEntry {
            connections: Arc::clone(self),
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            since: None,
            asked: Arc::new(Notify::new()),
        }
    }

    /// Asks the connection idle longest, if it has been idle for `at_least`, to close;
    /// whether one was asked. It is no longer listed (it lists itself again if it turns out
    /// busy).
    pub(crate) fn ask_oldest(&self, at_least: Duration) -> bool {
        let Some(cutoff) = Instant::now().checked_sub(at_least) else {
            return false;
        };
        let mut by_age = self.lock();
        let Some(oldest) = by_age.first_entry() else {
            return false;
        };
        if oldest.key().0 > cutoff {
            return false;
        }
        oldest.remove().notify_one();
        true
    }

    /// How many connections are listed idle.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// A place among the connections closing beyond the cap, if one is free.
    pub(crate) fn closing_place(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.closing).try_acquire_owned().ok()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(Instant, u64), Arc<Notify>>> {
        // The map is whole after every operation: a panic elsewhere leaves nothing half done.
        self.by_age.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One connection's place in [`IdleConnections`], kept by its watcher.
#[derive(Debug)]
pub(crate) struct IdleEntry {
    connections: Arc<IdleConnections>,
    id: u64,
    /// Since when it is listed idle.
    since: Option<Instant>,
    /// Told when the accept loop asks it to close.
    asked: Arc<Notify>,
}

impl IdleEntry {
    /// Lists the connection as idle since `since`, or not at all (`None`); takes the lock only
    /// when that changes.
    pub(crate) fn set(&mut self, since: Option<Instant>) {
        if self.since == since {
            return;
        }
        let mut by_age = self.connections.lock();
        if let Some(old) = self.since {
            by_age.remove(&(old, self.id));
        }
        if let Some(new) = since {
            by_age.insert((new, self.id), Arc::clone(&self.asked));
        }
        self.since = since;
    }

    /// The accept loop took the connection off the list when it asked; one that stays open
    /// (it turned out busy) is listed again at its next look.
    pub(crate) fn forget(&mut self) {
        self.set(None);
    }

    /// The signal of the accept loop's asking.
    pub(crate) fn asked(&self) -> Arc<Notify> {
        Arc::clone(&self.asked)
    }
}

impl Drop for IdleEntry {
    fn drop(&mut self) {
        self.set(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_connection_idle_longest_is_asked_first_and_alone() {
        let connections = Arc::new(IdleConnections::default());
        let start = Instant::now();
        let mut entries: Vec<IdleEntry> = (0..3).map(|_| connections.entry()).collect();
        // Idle since 0, 2 and 1 seconds after the start.
        for (entry, at) in entries.iter_mut().zip([0, 2, 1]) {
            entry.set(Some(start + Duration::from_secs(at)));
        }
        tokio::time::advance(Duration::from_secs(2)).await;
        let asked: Vec<Arc<Notify>> = entries.iter().map(IdleEntry::asked).collect();
        let was_asked = |i: usize| {
            let notified = asked[i].notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable()
        };
        assert!(connections.ask_oldest(Duration::from_secs(1)));
        assert_eq!(connections.len(), 2);
        assert!(was_asked(0), "the oldest");
        assert!(!was_asked(1) && !was_asked(2), "and only it");
        assert!(connections.ask_oldest(Duration::from_secs(1)));
        assert!(was_asked(2), "then the next oldest");
        // The last has been idle for less than a second.
        assert!(!connections.ask_oldest(Duration::from_secs(1)));
        entries[1].set(None);
        assert_eq!(connections.len(), 0);
        // Listed again, then gone with its connection.
        entries[0].forget();
        entries[0].set(Some(Instant::now()));
        assert_eq!(connections.len(), 1);
        drop(entries);
        assert_eq!(connections.len(), 0);
    }
}
