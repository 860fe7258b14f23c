//! Page configurations: the items property name and the limits, checked at compile time.

/// A pagination's constants. Declare one with [`pagination!`](crate::pagination!).
pub trait PageConfig: Send + Sync + 'static {
    /// The property of the output holding the page's items (default `items`).
    const ITEMS_NAME: &'static str;
    /// The largest `limit` accepted (default 100).
    const MAX_LIMIT: u32;
    /// The `limit` when none is given (default 20).
    const DEFAULT_LIMIT: u32;
}

/// A configuration for offset pagination (`limit`, `offset`; output `total`, `limit`, `offset`).
pub trait OffsetConfig: PageConfig {}

/// A configuration for cursor pagination (`cursor`, `limit`; output `nextCursor`, `limit`).
pub trait CursorConfig: PageConfig {
    /// Whether the API's cursors are [`encode_cursor`](crate::encode_cursor)'s (the default,
    /// and what [`pagination!`](crate::pagination!) declares): the input's `cursor` is then
    /// documented as what that codec writes, unpadded base64url of at least
    /// [`MIN_CURSOR_LENGTH`](crate::MIN_CURSOR_LENGTH) characters, refused with 400 when this
    /// API did not write it. An API with cursors of its own making (a database's page tokens)
    /// implements the traits by hand with `false`: `cursor` is then documented as any string.
    const ENCODED_CURSORS: bool = true;
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `name` is one of `reserved`.
const fn is_one_of(name: &str, reserved: &[&str]) -> bool {
    let mut i = 0;
    while i < reserved.len() {
        if same(name, reserved[i]) {
            return true;
        }
        i += 1;
    }
    false
}

/// The checks of every pagination: a usable items name outside the style's own fields (their
/// names and the message saying so), and consistent limits.
const fn check(
    items_name: &str,
    reserved: &[&str],
    reserved_message: &str,
    max_limit: u32,
    default_limit: u32,
) {
    assert!(
        !items_name.is_empty(),
        "pagination: items_name must not be empty"
    );
    assert!(!is_one_of(items_name, reserved), "{}", reserved_message);
    assert!(max_limit > 0, "pagination: max_limit must be positive");
    assert!(
        default_limit > 0,
        "pagination: default_limit must be positive"
    );
    assert!(
        default_limit <= max_limit,
        "pagination: default_limit must not exceed max_limit"
    );
}

/// Compile-time checks of an offset pagination (used by [`pagination!`](crate::pagination!)).
#[doc(hidden)]
pub const fn check_offset(items_name: &str, max_limit: u32, default_limit: u32) {
    check(
        items_name,
        &["total", "limit", "offset"],
        "pagination: with offset style, items_name must not be `total`, `limit` or `offset`",
        max_limit,
        default_limit,
    );
}

/// Compile-time checks of a cursor pagination (used by [`pagination!`](crate::pagination!)).
#[doc(hidden)]
pub const fn check_cursor(items_name: &str, max_limit: u32, default_limit: u32) {
    check(
        items_name,
        &["nextCursor", "limit"],
        "pagination: with cursor style, items_name must not be `nextCursor` or `limit`",
        max_limit,
        default_limit,
    );
}

/// Declares a pagination configuration (the spec's `ez.paginated({...})`): a type naming the
/// style, the items property and the limits. A reserved items name or inconsistent limits fail
/// to compile.
///
/// ```
/// strata_paginate::pagination! {
///     /// Users, by offset.
///     pub UserPages: offset { items_name: "users", max_limit: 50, default_limit: 10 }
/// }
/// strata_paginate::pagination! {
///     /// Events, by cursor, default limits.
///     pub EventPages: cursor { items_name: "events" }
/// }
/// use strata_paginate::PageConfig;
/// assert_eq!((UserPages::ITEMS_NAME, UserPages::MAX_LIMIT, UserPages::DEFAULT_LIMIT), ("users", 50, 10));
/// assert_eq!((EventPages::MAX_LIMIT, EventPages::DEFAULT_LIMIT), (100, 20));
/// ```
///
/// ```compile_fail
/// strata_paginate::pagination! { Bad: offset { items_name: "total" } }
/// ```
///
/// ```compile_fail
/// strata_paginate::pagination! { Bad: offset { items_name: "limit" } }
/// ```
///
/// ```compile_fail
/// strata_paginate::pagination! { Bad: offset { items_name: "offset" } }
/// ```
///
/// ```compile_fail
/// strata_paginate::pagination! { Bad: cursor { items_name: "nextCursor" } }
/// ```
///
/// ```compile_fail
/// strata_paginate::pagination! { Bad: cursor { items_name: "limit" } }
/// ```
///
/// ```compile_fail
/// strata_paginate::pagination! { Bad: cursor { items_name: "items", max_limit: 10, default_limit: 20 } }
/// ```
///
/// ```compile_fail
/// strata_paginate::pagination! { Bad: offset { items_name: "items", max_limit: 0, default_limit: 0 } }
/// ```
///
/// The names reserved by the other style are fine:
///
/// ```
/// strata_paginate::pagination! { Fine: cursor { items_name: "total" } }
/// ```
#[macro_export]
macro_rules! pagination {
    ($(#[$meta:meta])* $vis:vis $name:ident : $style:ident { items_name: $items:literal $(,)? }) => {
        $crate::pagination! { $(#[$meta])* $vis $name: $style { items_name: $items, max_limit: 100, default_limit: 20 } }
    };
    ($(#[$meta:meta])* $vis:vis $name:ident : offset { items_name: $items:literal, max_limit: $max:expr, default_limit: $default:expr $(,)? }) => {
        $crate::pagination!(@config $(#[$meta])* $vis $name, $items, $max, $default);
        impl $crate::OffsetConfig for $name {}
        const _: () = $crate::config::check_offset($items, $max, $default);
    };
    ($(#[$meta:meta])* $vis:vis $name:ident : cursor { items_name: $items:literal, max_limit: $max:expr, default_limit: $default:expr $(,)? }) => {
        $crate::pagination!(@config $(#[$meta])* $vis $name, $items, $max, $default);
        impl $crate::CursorConfig for $name {}
        const _: () = $crate::config::check_cursor($items, $max, $default);
    };
    (@config $(#[$meta:meta])* $vis:vis $name:ident, $items:literal, $max:expr, $default:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default)]
        $vis struct $name;
        impl $crate::PageConfig for $name {
            const ITEMS_NAME: &'static str = $items;
            const MAX_LIMIT: u32 = $max;
            const DEFAULT_LIMIT: u32 = $default;
        }
    };
}
