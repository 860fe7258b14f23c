//! How Strata checks values, for every stage that checks them: [`Decoder`] reads a merged
//! input into a type and runs its garde rules (the validate stage for the endpoint's input, the
//! middleware stage for each middleware's), and checks a value's rules with the names clients
//! use (the output stage and event streams check what they send with it).
//!
//! Decoding runs without path tracking; only when it fails is the input walked against the
//! type's JSON Schema to name every problem with its wire path, in JSON's words (`explain`),
//! text values read as leniently as the deserializer reads them. serde stays the judge: the walk
//! only explains.
//!
//! ```
//! use garde::Validate;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use strata_decode::Decoder;
//! use strata_input::Input;
//!
//! #[derive(Debug, Deserialize, Validate, JsonSchema)]
//! struct Paging {
//!     #[garde(range(min = 1, max = 100))]
//!     limit: u32,
//! }
//!
//! let decoder = Decoder::<Paging>::new();
//! let mut input = Input::new();
//! input.insert("limit", "20".into()); // text, e.g. from the query string
//! assert_eq!(decoder.decode(&input).unwrap().limit, 20);
//!
//! let mut input = Input::new();
//! input.insert("limit", "500".into());
//! assert_eq!(decoder.decode(&input).unwrap_err().message(), "limit: greater than 100");
//! ```

pub mod coerce;
mod confirm;
mod decode;
mod explain;

pub use decode::{Decoder, not_null};
