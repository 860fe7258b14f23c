//! The merged input of a Strata request, and what it is made of.
//!
//! Stages 1 to 4 speak of it: the parse stage finds a request's query, body, path parameters
//! and files ([`Parsed`]); the combine stage merges the [`InputSources`] of the method into one
//! [`Input`] ([`Staged`]); middleware and the validate stage read it into typed values through
//! its lenient [`serde::Deserializer`] (`&Input` is one: JSON values strictly, text values as
//! their target type asks). This crate holds
//!
//! - the model: [`Input`], [`InputValue`], [`TextValue`], [`JsonObject`], [`UploadedFile`] and
//!   [`RawBody`];
//! - where input comes from: [`InputSource`], [`InputSources`]; the request's cookies
//!   ([`cookies`]: read within limits, signed ones verified);
//! - the strict decoding of urlencoded text ([`text`]): queries, forms, path segments;
//! - the deserializer ([`DeError`]);
//! - writing `multipart/form-data` part headers and boundaries that a Strata server reads back
//!   as sent ([`multipart_writer`]: the typed client's and `MultipartForm`'s);
//! - the payloads of stages 1 to 3: [`Parsed`], [`ParsedBody`], [`Query`], [`Staged`].
//!
//! Turning an input into a validated value, with messages that name every problem, is the
//! validate stage's (`strata_decode::Decoder`).
//!
//! ```
//! use serde::Deserialize;
//! use strata_input::{Input, InputValue};
//!
//! #[derive(Deserialize)]
//! struct Page {
//!     limit: u32,
//!     tags: Vec<String>,
//! }
//!
//! let mut input = Input::new();
//! input.insert("limit", "20".into()); // text, as from a query string
//! input.insert("tags", InputValue::Json(serde_json::json!(["a", "b"])));
//! let page = Page::deserialize(&input).unwrap();
//! assert_eq!((page.limit, page.tags.len()), (20, 2));
//! ```

pub mod cookies;
mod de;
mod file;
pub mod input;
pub mod multipart_writer;
pub mod payload;
pub mod raw;
mod sources;
pub mod stream;
mod strict;
pub mod text;

pub use de::DeError;
pub use file::{FILE_PLACEHOLDER, UploadedFile, capture_files};
pub use input::{Input, InputValue, JsonObject, JsonObjectError, TextValue};
pub use payload::{Parsed, ParsedBody, Query, Staged};
pub use raw::RawBody;
pub use sources::{InputSource, InputSources, WELL_KNOWN_HEADERS, looks_like_header};
pub use stream::StreamedFile;

/// Implements `JsonSchema` for a type whose values travel as binary data: an inline
/// `{"type": "string", "format": "binary"}`, with the `key => value` keywords given. For the
/// types of files and streams (`UploadedFile`, `RawBody`, the output stage's `Binary`).
#[doc(hidden)]
#[macro_export]
macro_rules! binary_json_schema {
    ($type:ty, $name:literal $(, $key:expr => $value:expr)* $(,)?) => {
        impl $crate::__private::schemars::JsonSchema for $type {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                $name.into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(
                _: &mut $crate::__private::schemars::SchemaGenerator,
            ) -> $crate::__private::schemars::Schema {
                #[allow(unused_mut)]
                let mut schema = $crate::__private::schemars::json_schema!({
                    "type": "string",
                    "format": "binary",
                });
                $(schema.insert($key.into(), $value.into());)*
                schema
            }
        }
    };
}

#[doc(hidden)]
pub mod __private {
    pub use schemars;
}
