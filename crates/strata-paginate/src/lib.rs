//! Pagination for Strata endpoints (spec section 2.4): offset and cursor styles.
//!
//! Declare a configuration with [`pagination!`] (items property name, `max_limit`,
//! `default_limit`; reserved names and inconsistent limits do not compile), then use its input
//! type, with the endpoint's own filter fields if any, and its output type:
//!
//! | style | input | output |
//! |---|---|---|
//! | offset | [`OffsetInput<P, F>`]: `limit`, `offset`, filters `F` | [`OffsetPage<P, T>`]: `<items>`, `total`, `limit`, `offset` |
//! | cursor | [`CursorInput<P, F>`]: `cursor`, `limit`, filters `F` | [`CursorPage<P, T>`]: `<items>`, `nextCursor`, `limit` |
//!
//! Both outputs are one type, [`Page<P, T, M>`], whose metadata `M` ([`Offset`], [`Cursor`])
//! follows the style.
//!
//! A `limit` outside `1..=max_limit` or not a number, or a negative `offset`, is a 400 naming
//! the field (rejected, like express-zod-api, not clamped). The filters are read from the same
//! input, validated together with the page fields, and appear in the input's JSON Schema.
//!
//! For clients the other way round: inputs serialize as the server reads them (start with
//! [`OffsetInput::first`] or [`CursorInput::first`]) and pages deserialize from what the server
//! writes, so that `strata-client` follows the pages of an operation (`Client::pages`).
//!
//! # Example
//!
//! ```
//! use garde::Validate;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use strata::prelude::*;
//! use strata_paginate::{OffsetInput, OffsetPage, pagination};
//! use strata_testing::{TestArgs, TestRequest, test_endpoint};
//!
//! pagination! { pub UserPages: offset { items_name: "users", max_limit: 50, default_limit: 2 } }
//!
//! #[derive(Serialize, Validate, JsonSchema)]
//! struct User {
//!     #[garde(skip)]
//!     id: u32,
//! }
//!
//! #[derive(Deserialize, Validate, JsonSchema)]
//! struct Filters {
//!     #[garde(length(min = 1))]
//!     role: Option<String>,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let list = default_endpoints_factory().get().handler(
//!     async |input: OffsetInput<UserPages, Filters>| {
//!         let all: Vec<u32> = (1..=5).collect();
//!         let start = usize::try_from(input.offset).unwrap_or(usize::MAX).min(all.len());
//!         let end = start.saturating_add(input.limit as usize).min(all.len());
//!         let users = all[start..end].iter().map(|&id| User { id }).collect();
//!         Ok(OffsetPage::new(users, all.len() as u64, &input))
//!     },
//! );
//! let outcome = test_endpoint(&list, TestArgs::new(TestRequest::get().query("offset", "2"))).await;
//! assert_eq!(
//!     outcome.response.json_data().unwrap()["data"],
//!     serde_json::json!({"users": [{"id": 3}, {"id": 4}], "total": 5, "limit": 2, "offset": 2})
//! );
//! let outcome = test_endpoint(&list, TestArgs::new(TestRequest::get().query("limit", "51"))).await;
//! assert_eq!(outcome.response.json_data().unwrap()["error"]["message"], "limit: greater than 50");
//! # }
//! ```

pub mod config;
mod cursor;
mod input;
mod output;

pub use config::{CursorConfig, OffsetConfig, PageConfig};
pub use cursor::{MIN_CURSOR_LENGTH, decode_cursor, encode_cursor};
pub use input::{CursorInput, NoFilters, OffsetInput};
pub use output::{Cursor, CursorPage, Offset, OffsetPage, Page, PageMeta};

#[cfg(test)]
mod tests;
