//! One spare header map and one spare extension map per thread: a request's, emptied once its
//! handler no longer needs them, serve the next response's headers and the next request's
//! extensions.
//!
//! A response's headers need a map of their own (an allocation for its entries, another for
//! its index, and their frees), and so do a request's extensions (the map's box and its
//! table), while the request's maps, as large, are dropped at about the same time. The handler
//! stage gives them here when the handler does not take the request's parts: the result handler
//! and `strata_core::Output::headers_mut` take the header map for the
//! response, the server's connection the extension map for its next request. Over HTTP/1.1
//! hyper keeps each response's header map for the next request of its connection, so the same
//! blocks then serve every request of a connection: grown once, never allocated again.
//!
//! A map is emptied before it is kept (no header or extension of one request reaches another
//! request or response: the values are dropped where the request's would have been), and one
//! larger than [`MAX_SPARE_ENTRIES`] is dropped, so a thread keeps at most two maps of a few
//! kilobytes. Where no map is spare (another thread's handler, an error before the handler, a
//! handler that takes the parts) a map is allocated as before.
//!
//! ```
//! use http::{Extensions, HeaderMap, HeaderValue};
//! use strata_spare as spare;
//!
//! let mut request_headers = HeaderMap::new();
//! request_headers.insert("authorization", HeaderValue::from_static("Bearer secret"));
//! let capacity = request_headers.capacity();
//! spare::give_headers(request_headers);
//! let response_headers = spare::take_headers();
//! assert!(response_headers.is_empty());
//! assert_eq!(response_headers.capacity(), capacity);
//! // Taken: the next response allocates its own.
//! assert_eq!(spare::take_headers().capacity(), 0);
//!
//! let mut extensions = Extensions::new();
//! extensions.insert(7_u32);
//! spare::give_extensions(extensions);
//! assert!(spare::take_extensions().is_empty());
//! ```

use std::cell::Cell;

use http::{Extensions, HeaderMap};

/// The largest map kept, in entries: a response with room for twelve headers (what
/// `strata_core::Output::headers_mut` sizes for) grows to 24 only with more;
/// a request of a hundred headers leaves a map of kilobytes that no response here needs. A
/// request's extensions are a few (the logger, the client's address, path parameters).
pub const MAX_SPARE_ENTRIES: usize = 24;

thread_local! {
    static HEADERS: Cell<Option<HeaderMap>> = const { Cell::new(None) };
    static EXTENSIONS: Cell<Option<Extensions>> = const { Cell::new(None) };
}

/// A slot of this thread's.
type Slot<T> = std::thread::LocalKey<Cell<Option<T>>>;

/// Puts `value` in `slot` (dropping what was there). `try_with`: a thread being torn down has
/// no slot left, and the value is simply dropped.
fn keep<T: 'static>(slot: &'static Slot<T>, value: T) {
    let _ = slot.try_with(|spare| spare.set(Some(value)));
}

/// What `slot` holds, or a new value.
fn take<T: Default + 'static>(slot: &'static Slot<T>) -> T {
    slot.try_with(Cell::take).ok().flatten().unwrap_or_default()
}

/// Keeps `headers`, emptied, for this thread's next response (unless it has no allocation to
/// reuse or is larger than [`MAX_SPARE_ENTRIES`], in names or in values: the values of a
/// repeated name are kept apart, and clearing the map keeps their room too).
pub fn give_headers(mut headers: HeaderMap) {
    let capacity = headers.capacity();
    if capacity == 0 || capacity > MAX_SPARE_ENTRIES || headers.len() > MAX_SPARE_ENTRIES {
        return;
    }
    headers.clear();
    keep(&HEADERS, headers);
}

/// This thread's spare header map, empty, or a new one (no allocation until its first insert).
pub fn take_headers() -> HeaderMap {
    take(&HEADERS)
}

/// `headers` when it has room of its own, else this thread's spare map: where a response is
/// built on headers that may be an empty, never-allocated map.
pub fn headers_or_spare(headers: HeaderMap) -> HeaderMap {
    if headers.capacity() == 0 {
        take_headers()
    } else {
        headers
    }
}

/// Keeps `extensions`, emptied, for this thread's next request (unless there are none, so
/// nothing allocated, or more than [`MAX_SPARE_ENTRIES`]).
pub fn give_extensions(mut extensions: Extensions) {
    let entries = extensions.len();
    if entries == 0 || entries > MAX_SPARE_ENTRIES {
        return;
    }
    extensions.clear();
    keep(&EXTENSIONS, extensions);
}

/// This thread's spare extension map, empty, or a new one (no allocation until its first
/// insert).
pub fn take_extensions() -> Extensions {
    take(&EXTENSIONS)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use http::header::{ACCEPT, CONTENT_TYPE};

    use super::*;

    #[test]
    fn a_header_map_is_kept_empty_once_and_only_when_worth_keeping() {
        // Nothing to reuse in a map without an allocation.
        give_headers(HeaderMap::new());
        assert_eq!(take_headers().capacity(), 0);

        let mut small = HeaderMap::new();
        small.insert(ACCEPT, HeaderValue::from_static("*/*"));
        let capacity = small.capacity();
        give_headers(small);
        let taken = take_headers();
        assert!(taken.is_empty(), "no request header reaches a response");
        assert_eq!(taken.capacity(), capacity);
        assert_eq!(take_headers().capacity(), 0, "taken once");

        // A map with room of its own is kept; an empty one is replaced by the spare.
        let mut own = HeaderMap::with_capacity(1);
        own.insert(ACCEPT, HeaderValue::from_static("*/*"));
        assert_eq!(headers_or_spare(own).len(), 1);
        let mut given = HeaderMap::new();
        given.insert(ACCEPT, HeaderValue::from_static("*/*"));
        let capacity = given.capacity();
        give_headers(given);
        assert_eq!(headers_or_spare(HeaderMap::new()).capacity(), capacity);

        let large = HeaderMap::with_capacity(MAX_SPARE_ENTRIES + 1);
        assert!(large.capacity() > MAX_SPARE_ENTRIES);
        give_headers(large);
        assert_eq!(take_headers().capacity(), 0, "too large to keep");

        // Many values of one name: few entries, but a large list of extra values.
        let mut repeated = HeaderMap::new();
        for _ in 0..=MAX_SPARE_ENTRIES {
            repeated.append(ACCEPT, HeaderValue::from_static("*/*"));
        }
        assert!(repeated.capacity() <= MAX_SPARE_ENTRIES);
        give_headers(repeated);
        assert_eq!(take_headers().capacity(), 0, "too many values to keep");
    }

    #[test]
    fn an_extension_map_is_kept_empty_and_its_values_dropped() {
        let value = std::sync::Arc::new(());
        let mut extensions = Extensions::new();
        extensions.insert(std::sync::Arc::clone(&value));
        give_extensions(extensions);
        assert_eq!(
            std::sync::Arc::strong_count(&value),
            1,
            "dropped when given"
        );
        let mut taken = take_extensions();
        assert!(taken.is_empty());
        assert!(taken.get::<std::sync::Arc<()>>().is_none());
        taken.insert(1_u8);
        assert_eq!(taken.get::<u8>(), Some(&1));
        // Taken once; an empty map (nothing allocated) is not kept.
        give_extensions(Extensions::new());
        assert!(take_extensions().is_empty());
    }

    #[test]
    fn each_thread_has_its_own() {
        let mut map = HeaderMap::new();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        give_headers(map);
        let elsewhere = std::thread::spawn(|| take_headers().capacity())
            .join()
            .unwrap();
        assert_eq!(elsewhere, 0);
        assert!(take_headers().capacity() > 0);
    }
}
