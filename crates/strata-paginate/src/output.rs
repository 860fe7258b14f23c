//! Page outputs: one [`Page`] type, the items under the configured name with the metadata of
//! its style ([`Offset`] or [`Cursor`]).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use derive_where::derive_where;
use garde::Validate;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

use crate::config::{CursorConfig, OffsetConfig, PageConfig};
use crate::input::{CursorInput, OffsetInput, limit_schema};

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Offset {}
    impl Sealed for super::Cursor {}
}

/// The metadata of one pagination style: what a page says besides its items. Implemented by
/// [`Offset`] (for [`OffsetConfig`]s) and [`Cursor`] (for [`CursorConfig`]s) only (sealed:
/// the generated clients know these two).
pub trait PageMeta<P: PageConfig>: sealed::Sealed + fmt::Debug {
    /// The prefix of the page's schema name (`OffsetPage`, `CursorPage`).
    const SCHEMA_PREFIX: &'static str;
    /// The metadata's properties, in serialization order (each required when a page is read).
    const NAMES: &'static [&'static str];
    /// How many properties the metadata adds.
    const LEN: usize = Self::NAMES.len();

    /// Writes the metadata's properties after the items.
    ///
    /// # Errors
    /// The serializer's.
    fn serialize_into<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error>;

    /// The metadata's properties with their schemas, in serialization order.
    fn schemas() -> Vec<(&'static str, Value)>;

    /// Whether pages follow (the rule generated clients use).
    fn has_more(&self) -> bool;
}

/// The metadata of an offset page: `total`, `limit`, `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offset {
    /// How many items there are in all.
    pub total: u64,
    /// The page size used.
    pub limit: u32,
    /// The offset used.
    pub offset: u64,
}

impl<P: OffsetConfig> PageMeta<P> for Offset {
    const SCHEMA_PREFIX: &'static str = "OffsetPage";
    const NAMES: &'static [&'static str] = &["total", "limit", "offset"];

    fn serialize_into<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_entry("total", &self.total)?;
        map.serialize_entry("limit", &self.limit)?;
        map.serialize_entry("offset", &self.offset)
    }

    fn schemas() -> Vec<(&'static str, Value)> {
        vec![
            ("total", json!({ "type": "integer", "minimum": 0 })),
            ("limit", limit_schema::<P>()),
            ("offset", json!({ "type": "integer", "minimum": 0 })),
        ]
    }

    /// `offset + limit < total`.
    fn has_more(&self) -> bool {
        self.offset.saturating_add(u64::from(self.limit)) < self.total
    }
}

/// The metadata of a cursor page: `nextCursor` (null on the last page), `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// Where the next page starts; `None` when this is the last.
    pub next_cursor: Option<String>,
    /// The page size used.
    pub limit: u32,
}

impl<P: CursorConfig> PageMeta<P> for Cursor {
    const SCHEMA_PREFIX: &'static str = "CursorPage";
    const NAMES: &'static [&'static str] = &["nextCursor", "limit"];

    fn serialize_into<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_entry("nextCursor", &self.next_cursor)?;
        map.serialize_entry("limit", &self.limit)
    }

    fn schemas() -> Vec<(&'static str, Value)> {
        vec![
            ("nextCursor", json!({ "type": ["string", "null"] })),
            ("limit", limit_schema::<P>()),
        ]
    }

    /// `nextCursor` is not null.
    fn has_more(&self) -> bool {
        self.next_cursor.is_some()
    }
}

/// One page of a pagination `P`: `<items_name>` then the metadata `M` of its style. Written
/// [`OffsetPage<P, T>`] or [`CursorPage<P, T>`].
// Bounds on the items and metadata, whatever `P` is.
#[derive_where(Clone, PartialEq, Debug; T, M)]
pub struct Page<P, T, M> {
    /// The page's items.
    pub items: Vec<T>,
    /// What the page says besides its items.
    pub meta: M,
    config: PhantomData<fn() -> P>,
}

/// One page of an offset pagination: `<items_name>`, `total`, `limit`, `offset`.
pub type OffsetPage<P, T> = Page<P, T, Offset>;

/// One page of a cursor pagination: `<items_name>`, `nextCursor` (null on the last page),
/// `limit`.
pub type CursorPage<P, T> = Page<P, T, Cursor>;

impl<P: PageConfig, T, M: PageMeta<P>> Page<P, T, M> {
    /// A page of `items` with the metadata `meta`.
    pub fn from_parts(items: Vec<T>, meta: M) -> Self {
        Self {
            items,
            meta,
            config: PhantomData,
        }
    }

    /// Whether pages follow (the rule generated clients use): for offsets
    /// `offset + limit < total`, for cursors a `nextCursor` that is not null.
    pub fn has_more(&self) -> bool {
        self.meta.has_more()
    }
}

impl<P: OffsetConfig, T> Page<P, T, Offset> {
    /// The page of `items` answering `input`, out of `total`.
    pub fn new<F>(items: Vec<T>, total: u64, input: &OffsetInput<P, F>) -> Self {
        let meta = Offset {
            total,
            limit: input.limit,
            offset: input.offset,
        };
        Self::from_parts(items, meta)
    }
}

impl<P: CursorConfig, T> Page<P, T, Cursor> {
    /// The page of `items` answering `input`, continued at `next_cursor`.
    pub fn new<F>(items: Vec<T>, next_cursor: Option<String>, input: &CursorInput<P, F>) -> Self {
        let meta = Cursor {
            next_cursor,
            limit: input.limit,
        };
        Self::from_parts(items, meta)
    }
}

impl<P: PageConfig, T: Serialize, M: PageMeta<P>> Serialize for Page<P, T, M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1 + M::LEN))?;
        map.serialize_entry(P::ITEMS_NAME, &self.items)?;
        self.meta.serialize_into(&mut map)?;
        map.end()
    }
}

/// The metadata properties of a page as read, before its style checks that it has its own.
#[derive(Default)]
struct MetaValues {
    /// The properties read, in order.
    seen: Vec<&'static str>,
    total: u64,
    limit: u32,
    offset: u64,
    next_cursor: Option<String>,
}

/// Reads a page written by [`Page`]'s `Serialize`: the items under `P::ITEMS_NAME`, the style's
/// metadata properties [`M::NAMES`](PageMeta::NAMES) (each required; another style's are
/// ignored, like any other property), then `build` makes the metadata of those read.
fn read_page<'de, D, P, T, M>(
    deserializer: D,
    build: fn(MetaValues) -> M,
) -> Result<Page<P, T, M>, D::Error>
where
    D: Deserializer<'de>,
    P: PageConfig,
    T: Deserialize<'de>,
    M: PageMeta<P>,
{
    struct PageVisitor<P, T, M> {
        keys: &'static [&'static str],
        build: fn(MetaValues) -> M,
        types: PhantomData<fn() -> (P, T)>,
    }

    impl<'de, P: PageConfig, T: Deserialize<'de>, M> Visitor<'de> for PageVisitor<P, T, M> {
        type Value = Page<P, T, M>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a page of `{}`", P::ITEMS_NAME)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut items = None;
            let mut meta = MetaValues::default();
            while let Some(key) = map.next_key::<String>()? {
                // The items first: a style's names are free for the other's items.
                if key == P::ITEMS_NAME {
                    if items.is_some() {
                        return Err(de::Error::duplicate_field(P::ITEMS_NAME));
                    }
                    items = Some(map.next_value::<Vec<T>>()?);
                    continue;
                }
                let Some(&name) = self.keys.iter().find(|k| **k == key) else {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                };
                if meta.seen.contains(&name) {
                    return Err(de::Error::duplicate_field(name));
                }
                meta.seen.push(name);
                match name {
                    "total" => meta.total = map.next_value()?,
                    "limit" => meta.limit = map.next_value()?,
                    "offset" => meta.offset = map.next_value()?,
                    _ => meta.next_cursor = map.next_value()?,
                }
            }
            let items = items.ok_or_else(|| de::Error::missing_field(P::ITEMS_NAME))?;
            if let Some(missing) = self.keys.iter().find(|k| !meta.seen.contains(k)) {
                return Err(de::Error::missing_field(missing));
            }
            let meta = (self.build)(meta);
            Ok(Page {
                items,
                meta,
                config: PhantomData,
            })
        }
    }

    deserializer.deserialize_map(PageVisitor {
        keys: M::NAMES,
        build,
        types: PhantomData,
    })
}

/// Reads what `Serialize` writes: `<items_name>`, `total`, `limit`, `offset`, all required;
/// other properties are ignored.
impl<'de, P: OffsetConfig, T: Deserialize<'de>> Deserialize<'de> for Page<P, T, Offset> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_page(deserializer, |meta| Offset {
            total: meta.total,
            limit: meta.limit,
            offset: meta.offset,
        })
    }
}

/// Reads what `Serialize` writes: `<items_name>`, `nextCursor` (a string, or null on the last
/// page), `limit`, all required; other properties are ignored.
impl<'de, P: CursorConfig, T: Deserialize<'de>> Deserialize<'de> for Page<P, T, Cursor> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_page(deserializer, |meta| Cursor {
            next_cursor: meta.next_cursor,
            limit: meta.limit,
        })
    }
}

impl<P: PageConfig, T: Validate, M: PageMeta<P>> Validate for Page<P, T, M> {
    type Context = T::Context;

    fn validate_into(
        &self,
        ctx: &T::Context,
        parent: &mut dyn FnMut() -> garde::Path,
        report: &mut garde::Report,
    ) {
        for (index, item) in self.items.iter().enumerate() {
            item.validate_into(
                ctx,
                &mut || parent().join(P::ITEMS_NAME).join(index),
                report,
            );
        }
    }
}

impl<P: PageConfig, T: JsonSchema, M: PageMeta<P>> JsonSchema for Page<P, T, M> {
    fn schema_name() -> Cow<'static, str> {
        format!(
            "{}_{}_{}",
            M::SCHEMA_PREFIX,
            P::ITEMS_NAME,
            T::schema_name()
        )
        .into()
    }

    // The items under `P::ITEMS_NAME`, then the metadata's properties, all required.
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let items = generator.subschema_for::<T>();
        let mut properties = serde_json::Map::new();
        properties.insert(
            P::ITEMS_NAME.into(),
            json!({ "type": "array", "items": items }),
        );
        let mut required = vec![P::ITEMS_NAME];
        for (name, schema) in M::schemas() {
            properties.insert(name.into(), schema);
            required.push(name);
        }
        json_schema!({ "type": "object", "properties": properties, "required": required })
    }
}
