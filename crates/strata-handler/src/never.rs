//! The output of a handler that only fails.

use std::borrow::Cow;

use garde::{Path, Report, Validate};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};

/// The output of a handler that returns an [`ApiError`](strata_core::ApiError) alone: it has no
/// value, and its schema (`false`) says that no success body exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Never {}

impl Serialize for Never {
    fn serialize<S: Serializer>(&self, _serializer: S) -> Result<S::Ok, S::Error> {
        match *self {}
    }
}

impl Validate for Never {
    type Context = ();

    fn validate_into(&self, (): &(), _parent: &mut dyn FnMut() -> Path, _report: &mut Report) {
        match *self {}
    }
}

impl JsonSchema for Never {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Never")
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        Schema::from(false)
    }
}
