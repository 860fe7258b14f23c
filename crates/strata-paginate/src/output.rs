//! Page outputs: the items under the configured name, with the page's metadata.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use garde::Validate;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::config::{CursorConfig, OffsetConfig, PageConfig};
use crate::input::{CursorInput, OffsetInput, limit_schema};

/// The schema of a page: the items under `P::ITEMS_NAME`, then `fields`, all required.
fn page_schema<P: PageConfig, T: JsonSchema>(
    generator: &mut SchemaGenerator,
    fields: &[(&str, serde_json::Value)],
) -> Schema {
    let items = generator.subschema_for::<T>();
    let mut properties = serde_json::Map::new();
    properties.insert(
        P::ITEMS_NAME.into(),
        serde_json::json!({ "type": "array", "items": items }),
    );
    let mut required = vec![P::ITEMS_NAME];
    for (name, schema) in fields {
        properties.insert((*name).into(), schema.clone());
        required.push(name);
    }
    json_schema!({ "type": "object", "properties": properties, "required": required })
}

fn validate_items<T: Validate>(
    name: &'static str,
    items: &[T],
    ctx: &T::Context,
    parent: &mut dyn FnMut() -> garde::Path,
    report: &mut garde::Report,
) {
    for (index, item) in items.iter().enumerate() {
        item.validate_into(ctx, &mut || parent().join(name).join(index), report);
    }
}

/// One page of an offset pagination: `<items_name>`, `total`, `limit`, `offset`.
pub struct OffsetPage<P, T> {
    /// The page's items.
    pub items: Vec<T>,
    /// How many items there are in all.
    pub total: u64,
    /// The page size used.
    pub limit: u32,
    /// The offset used.
    pub offset: u64,
    pub(crate) config: PhantomData<fn() -> P>,
}

impl<P: OffsetConfig, T> OffsetPage<P, T> {
    /// The page of `items` answering `input`, out of `total`.
    pub fn new<F>(items: Vec<T>, total: u64, input: &OffsetInput<P, F>) -> Self {
        Self {
            items,
            total,
            limit: input.limit,
            offset: input.offset,
            config: PhantomData,
        }
    }

    /// Whether pages follow: `offset + limit < total` (the rule generated clients use).
    pub fn has_more(&self) -> bool {
        self.offset.saturating_add(u64::from(self.limit)) < self.total
    }
}

impl<P, T: fmt::Debug> fmt::Debug for OffsetPage<P, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OffsetPage")
            .field("items", &self.items)
            .field("total", &self.total)
            .field("limit", &self.limit)
            .field("offset", &self.offset)
            .finish()
    }
}

impl<P: OffsetConfig, T: Serialize> Serialize for OffsetPage<P, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry(P::ITEMS_NAME, &self.items)?;
        map.serialize_entry("total", &self.total)?;
        map.serialize_entry("limit", &self.limit)?;
        map.serialize_entry("offset", &self.offset)?;
        map.end()
    }
}

impl<P: OffsetConfig, T: Validate> Validate for OffsetPage<P, T> {
    type Context = T::Context;

    fn validate_into(
        &self,
        ctx: &T::Context,
        parent: &mut dyn FnMut() -> garde::Path,
        report: &mut garde::Report,
    ) {
        validate_items(P::ITEMS_NAME, &self.items, ctx, parent, report);
    }
}

impl<P: OffsetConfig, T: JsonSchema> JsonSchema for OffsetPage<P, T> {
    fn schema_name() -> Cow<'static, str> {
        format!("OffsetPage_{}_{}", P::ITEMS_NAME, T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        page_schema::<P, T>(
            generator,
            &[
                (
                    "total",
                    serde_json::json!({ "type": "integer", "minimum": 0 }),
                ),
                ("limit", limit_schema::<P>()),
                (
                    "offset",
                    serde_json::json!({ "type": "integer", "minimum": 0 }),
                ),
            ],
        )
    }
}

/// One page of a cursor pagination: `<items_name>`, `nextCursor` (null on the last page),
/// `limit`.
pub struct CursorPage<P, T> {
    /// The page's items.
    pub items: Vec<T>,
    /// Where the next page starts; `None` when this is the last.
    pub next_cursor: Option<String>,
    /// The page size used.
    pub limit: u32,
    pub(crate) config: PhantomData<fn() -> P>,
}

impl<P: CursorConfig, T> CursorPage<P, T> {
    /// The page of `items` answering `input`, continued at `next_cursor`.
    pub fn new<F>(items: Vec<T>, next_cursor: Option<String>, input: &CursorInput<P, F>) -> Self {
        Self {
            items,
            next_cursor,
            limit: input.limit,
            config: PhantomData,
        }
    }

    /// Whether pages follow: `nextCursor` is not null (the rule generated clients use).
    pub fn has_more(&self) -> bool {
        self.next_cursor.is_some()
    }
}

impl<P, T: fmt::Debug> fmt::Debug for CursorPage<P, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CursorPage")
            .field("items", &self.items)
            .field("next_cursor", &self.next_cursor)
            .field("limit", &self.limit)
            .finish()
    }
}

impl<P: CursorConfig, T: Serialize> Serialize for CursorPage<P, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry(P::ITEMS_NAME, &self.items)?;
        map.serialize_entry("nextCursor", &self.next_cursor)?;
        map.serialize_entry("limit", &self.limit)?;
        map.end()
    }
}

impl<P: CursorConfig, T: Validate> Validate for CursorPage<P, T> {
    type Context = T::Context;

    fn validate_into(
        &self,
        ctx: &T::Context,
        parent: &mut dyn FnMut() -> garde::Path,
        report: &mut garde::Report,
    ) {
        validate_items(P::ITEMS_NAME, &self.items, ctx, parent, report);
    }
}

impl<P: CursorConfig, T: JsonSchema> JsonSchema for CursorPage<P, T> {
    fn schema_name() -> Cow<'static, str> {
        format!("CursorPage_{}_{}", P::ITEMS_NAME, T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        page_schema::<P, T>(
            generator,
            &[
                (
                    "nextCursor",
                    serde_json::json!({ "type": ["string", "null"] }),
                ),
                ("limit", limit_schema::<P>()),
            ],
        )
    }
}
