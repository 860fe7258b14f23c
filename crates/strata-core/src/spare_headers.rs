//! One spare header map per thread: a request's map, emptied once its handler no longer needs
//! it, becomes a response's.
//!
//! A response's headers need a map of their own (an allocation for its entries, another for
//! its index, and their frees), while the request's map, as large, is dropped at about the same
//! time. The handler stage gives the request's map here when the handler does not take the
//! request's parts; the result handler and [`Output::headers_mut`](crate::Output::headers_mut)
//! take it for the response. Over HTTP/1.1 hyper keeps each response's map for the next
//! request of its connection, so the same two blocks then serve every request of a connection:
//! grown once to a response's size, never allocated again.
//!
//! A map is emptied before it is kept (no header of one request reaches another response), and
//! one larger than [`MAX_SPARE_ENTRIES`] is dropped, so a thread keeps at most one map of a few
//! kilobytes. Where no map is spare (another thread's handler, an error before the handler, a
//! handler that takes the parts) a response allocates its map as before.
//!
//! ```
//! use http::{HeaderMap, HeaderValue};
//! use strata_core::spare_headers;
//!
//! let mut request_headers = HeaderMap::new();
//! request_headers.insert("authorization", HeaderValue::from_static("Bearer secret"));
//! let capacity = request_headers.capacity();
//! spare_headers::give(request_headers);
//! let response_headers = spare_headers::take();
//! assert!(response_headers.is_empty());
//! assert_eq!(response_headers.capacity(), capacity);
//! // Taken: the next response allocates its own.
//! assert_eq!(spare_headers::take().capacity(), 0);
//! ```

use std::cell::Cell;

use http::HeaderMap;

/// The largest map kept, in entries: a response with room for twelve headers (what
/// [`Output::headers_mut`](crate::Output::headers_mut) sizes for) grows to 24 only with more;
/// a request of a hundred headers leaves a map of kilobytes that no response here needs.
pub const MAX_SPARE_ENTRIES: usize = 24;

thread_local! {
    static SPARE: Cell<Option<HeaderMap>> = const { Cell::new(None) };
}

/// Keeps `headers`, emptied, for this thread's next response (unless it has no allocation to
/// reuse or is larger than [`MAX_SPARE_ENTRIES`]).
pub fn give(mut headers: HeaderMap) {
    let capacity = headers.capacity();
    if capacity == 0 || capacity > MAX_SPARE_ENTRIES {
        return;
    }
    headers.clear();
    // `try_with`: a thread being torn down has no slot left, and the map is simply dropped.
    let _ = SPARE.try_with(|spare| spare.set(Some(headers)));
}

/// This thread's spare map, empty, or a new one (no allocation until its first insert).
pub fn take() -> HeaderMap {
    SPARE
        .try_with(Cell::take)
        .ok()
        .flatten()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use http::header::{ACCEPT, CONTENT_TYPE};

    use super::*;

    #[test]
    fn a_map_is_kept_empty_once_and_only_when_worth_keeping() {
        // Nothing to reuse in a map without an allocation.
        give(HeaderMap::new());
        assert_eq!(take().capacity(), 0);

        let mut small = HeaderMap::new();
        small.insert(ACCEPT, HeaderValue::from_static("*/*"));
        let capacity = small.capacity();
        give(small);
        let taken = take();
        assert!(taken.is_empty(), "no request header reaches a response");
        assert_eq!(taken.capacity(), capacity);
        assert_eq!(take().capacity(), 0, "taken once");

        let large = HeaderMap::with_capacity(MAX_SPARE_ENTRIES + 1);
        assert!(large.capacity() > MAX_SPARE_ENTRIES);
        give(large);
        assert_eq!(take().capacity(), 0, "too large to keep");
    }

    #[test]
    fn each_thread_has_its_own() {
        let mut map = HeaderMap::new();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        give(map);
        let elsewhere = std::thread::spawn(|| take().capacity()).join().unwrap();
        assert_eq!(elsewhere, 0);
        assert!(take().capacity() > 0);
    }
}
