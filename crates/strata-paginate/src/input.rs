//! Page inputs: `limit` and `offset` or `cursor`, read from the merged input with the
//! endpoint's own filter fields, validated together.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use derive_where::derive_where;
use garde::Validate;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::value::{MapAccessDeserializer, StringDeserializer};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::config::{CursorConfig, OffsetConfig, PageConfig};

/// No filter fields: a page input alone (written as nothing: no field).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NoFilters;

impl<'de> Deserialize<'de> for NoFilters {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| NoFilters)
    }
}

impl Validate for NoFilters {
    type Context = ();

    fn validate_into(&self, (): &(), _: &mut dyn FnMut() -> garde::Path, _: &mut garde::Report) {}
}

impl JsonSchema for NoFilters {
    fn schema_name() -> Cow<'static, str> {
        "NoFilters".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "object" })
    }
}

/// The page keys taken out of the input before the filters see it.
#[derive(Default)]
struct PageValues {
    limit: Option<u32>,
    offset: Option<u64>,
    cursor: Option<String>,
}

/// Hands every entry but the page keys to the filters' deserializer; reads the page keys with
/// the same (lenient for text) value deserializers.
struct Intercept<'p, M> {
    map: M,
    page: &'p mut PageValues,
    keys: &'static [&'static str],
}

impl<'de, M: MapAccess<'de>> MapAccess<'de> for Intercept<'_, M> {
    type Error = M::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, M::Error> {
        loop {
            let Some(key) = self.map.next_key::<String>()? else {
                return Ok(None);
            };
            if !self.keys.contains(&key.as_str()) {
                return seed.deserialize(StringDeserializer::new(key)).map(Some);
            }
            match key.as_str() {
                "limit" => self.page.limit = self.map.next_value()?,
                "offset" => self.page.offset = self.map.next_value()?,
                _ => self.page.cursor = self.map.next_value()?,
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, M::Error> {
        self.map.next_value_seed(seed)
    }
}

fn read<'de, D, F>(
    deserializer: D,
    keys: &'static [&'static str],
) -> Result<(PageValues, F), D::Error>
where
    D: Deserializer<'de>,
    F: Deserialize<'de>,
{
    struct PageVisitor<F>(&'static [&'static str], PhantomData<F>);

    impl<'de, F: Deserialize<'de>> Visitor<'de> for PageVisitor<F> {
        type Value = (PageValues, F);

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Self::Value, M::Error> {
            let mut page = PageValues::default();
            let filters = F::deserialize(MapAccessDeserializer::new(Intercept {
                map,
                page: &mut page,
                keys: self.0,
            }))?;
            Ok((page, filters))
        }
    }

    deserializer.deserialize_map(PageVisitor(keys, PhantomData))
}

fn check_limit<P: PageConfig>(
    limit: u32,
    parent: &mut dyn FnMut() -> garde::Path,
    report: &mut garde::Report,
) {
    if limit < 1 {
        report.append(parent().join("limit"), garde::Error::new("lower than 1"));
    } else if limit > P::MAX_LIMIT {
        report.append(
            parent().join("limit"),
            garde::Error::new(format!("greater than {}", P::MAX_LIMIT)),
        );
    }
}

/// The schema of `limit` for the configuration `P`.
pub(crate) fn limit_schema<P: PageConfig>() -> Value {
    serde_json::json!({ "type": "integer", "minimum": 1, "maximum": P::MAX_LIMIT, "default": P::DEFAULT_LIMIT })
}

fn with_page_properties<F: JsonSchema>(generator: &mut SchemaGenerator, page: Value) -> Schema {
    let mut schema = F::json_schema(generator);
    if let Some(object) = schema.as_object_mut() {
        object.insert("type".into(), "object".into());
        let properties = object
            .entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let (Some(properties), Value::Object(page)) = (properties.as_object_mut(), page) {
            properties.extend(page);
        }
    }
    schema
}

/// The input of an offset-paginated endpoint: `limit` (1..=`MAX_LIMIT`, default
/// `DEFAULT_LIMIT`), `offset` (≥ 0, default 0), and the endpoint's filter fields `F`.
///
/// A `limit` out of bounds or not a number, or a negative `offset`, is a 400 naming the field:
/// rejected, not clamped.
// Bounds on the filters alone, whatever `P` is.
#[derive_where(Clone, Debug, PartialEq; F)]
pub struct OffsetInput<P, F = NoFilters> {
    /// The page size.
    pub limit: u32,
    /// How many items to skip.
    pub offset: u64,
    /// The endpoint's own fields.
    pub filters: F,
    config: PhantomData<fn() -> P>,
}

impl<P: OffsetConfig, F> OffsetInput<P, F> {
    /// The first page with `filters`: `DEFAULT_LIMIT` items from offset 0, as the server reads
    /// an input without `limit` and `offset`. A client starts a listing with it.
    pub fn first(filters: F) -> Self {
        Self::new(P::DEFAULT_LIMIT, 0, filters)
    }

    /// The page of `limit` items from `offset`, with `filters`. Not checked here: the server
    /// refuses a `limit` outside `1..=MAX_LIMIT` with 400.
    pub fn new(limit: u32, offset: u64, filters: F) -> Self {
        Self {
            limit,
            offset,
            filters,
            config: PhantomData,
        }
    }
}

/// The wire form of an offset input: `limit`, `offset`, and the filters' own fields beside them.
#[derive(Serialize)]
struct OffsetWire<'a, F> {
    limit: u32,
    offset: u64,
    #[serde(flatten)]
    filters: &'a F,
}

/// What the server reads: `limit`, `offset` and the filters' fields, in one object.
impl<P, F: Serialize> Serialize for OffsetInput<P, F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        OffsetWire {
            limit: self.limit,
            offset: self.offset,
            filters: &self.filters,
        }
        .serialize(serializer)
    }
}

/// The input of a cursor-paginated endpoint: `cursor` (absent for the first page), `limit`, and
/// the endpoint's filter fields `F`.
///
/// Its JSON Schema documents `cursor` as [`encode_cursor`](crate::encode_cursor) writes it
/// (base64url, at least [`MIN_CURSOR_LENGTH`](crate::MIN_CURSOR_LENGTH) characters), and says
/// that one this API did not write is refused with 400, as
/// [`decode_cursor`](crate::decode_cursor) does; see [`CursorConfig::ENCODED_CURSORS`] for
/// cursors of another making.
#[derive_where(Clone, Debug, PartialEq; F)]
pub struct CursorInput<P, F = NoFilters> {
    /// The page size.
    pub limit: u32,
    /// Where to continue; `None` for the first page.
    pub cursor: Option<String>,
    /// The endpoint's own fields.
    pub filters: F,
    config: PhantomData<fn() -> P>,
}

impl<P: CursorConfig, F> CursorInput<P, F> {
    /// The first page with `filters`: `DEFAULT_LIMIT` items, no cursor, as the server reads an
    /// input without `limit` and `cursor`. A client starts a listing with it.
    pub fn first(filters: F) -> Self {
        Self::new(P::DEFAULT_LIMIT, None, filters)
    }

    /// The page of `limit` items from `cursor` (`None`: the first), with `filters`. Not checked
    /// here: the server refuses a `limit` outside `1..=MAX_LIMIT`, or a cursor it did not
    /// write, with 400.
    pub fn new(limit: u32, cursor: Option<String>, filters: F) -> Self {
        Self {
            limit,
            cursor,
            filters,
            config: PhantomData,
        }
    }
}

/// The wire form of a cursor input: `limit`, `cursor` (left out for the first page), and the
/// filters' own fields beside them.
#[derive(Serialize)]
struct CursorWire<'a, F> {
    limit: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<&'a str>,
    #[serde(flatten)]
    filters: &'a F,
}

/// What the server reads: `limit`, `cursor` unless this is the first page, and the filters'
/// fields, in one object.
impl<P, F: Serialize> Serialize for CursorInput<P, F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CursorWire {
            limit: self.limit,
            cursor: self.cursor.as_deref(),
            filters: &self.filters,
        }
        .serialize(serializer)
    }
}

/// What the two page inputs do alike; they differ in their position (`offset`, `cursor`).
/// Each is read from the input's `limit`, its position and the filters' own fields; is valid
/// when its limit is within the configuration's and its filters are; has the filters' schema
/// with the page's properties.
macro_rules! page_inputs {
    ($(
        $input:ident: $config:ident, $key:literal => |$page:ident| $position:expr,
        $properties:ident;
    )*) => {$(
        impl<P, F> $input<P, F> {
            strata_core::setters! {
                /// The same input with pages of `limit` items.
                #[must_use]
                with_limit(limit: u32) => limit = limit;
            }
        }

        impl<'de, P: $config, F: Deserialize<'de>> Deserialize<'de> for $input<P, F> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let ($page, filters) = read(deserializer, &["limit", $key])?;
                let limit = $page.limit.unwrap_or(P::DEFAULT_LIMIT);
                Ok(Self::new(limit, $position, filters))
            }
        }

        impl<P: $config, F: Validate> Validate for $input<P, F> {
            type Context = F::Context;

            fn validate_into(
                &self,
                ctx: &F::Context,
                parent: &mut dyn FnMut() -> garde::Path,
                report: &mut garde::Report,
            ) {
                check_limit::<P>(self.limit, parent, report);
                self.filters.validate_into(ctx, parent, report);
            }
        }

        impl<P: $config, F: JsonSchema> JsonSchema for $input<P, F> {
            fn schema_name() -> Cow<'static, str> {
                format!(concat!(stringify!($input), "_{}"), F::schema_name()).into()
            }

            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                with_page_properties::<F>(generator, $properties::<P>())
            }
        }
    )*};
}

page_inputs! {
    OffsetInput: OffsetConfig, "offset" => |page| page.offset.unwrap_or(0), offset_properties;
    CursorInput: CursorConfig, "cursor" => |page| page.cursor, cursor_properties;
}

/// The page's properties in an offset input's schema.
fn offset_properties<P: OffsetConfig>() -> Value {
    serde_json::json!({
        "limit": limit_schema::<P>(),
        // A `u64`: its bounds, so that no larger integer is valid by the document.
        "offset": {
            "type": "integer",
            "format": "uint64",
            "minimum": 0,
            "maximum": u64::MAX,
            "default": 0,
        },
    })
}

/// The page's properties in a cursor input's schema.
fn cursor_properties<P: CursorConfig>() -> Value {
    serde_json::json!({
        "cursor": cursor_schema::<P>(),
        "limit": limit_schema::<P>(),
    })
}

/// The schema of `cursor` for the configuration `P`.
///
/// A cursor of [`encode_cursor`](crate::encode_cursor) is described as what it is (base64url
/// without padding, at least [`MIN_CURSOR_LENGTH`](crate::MIN_CURSOR_LENGTH) characters, no
/// upper bound: a position is any JSON value), so that a client or a test generating requests
/// from the document does not send what can never be one. That is not enough to make any such
/// string valid: the checksum, the version and the position inside are the server's to check,
/// and a cursor this API did not write (made up, altered, cut, or from an incompatible version)
/// is refused with 400 (`cursor: ...`), which the description says; the operation's 400 is in
/// the document already. A cursor is a request's input, not a resource: a 404 would say the
/// page is gone when the request is what is wrong.
fn cursor_schema<P: CursorConfig>() -> Value {
    if P::ENCODED_CURSORS {
        serde_json::json!({
            "type": "string",
            "pattern": crate::cursor::CURSOR_PATTERN,
            "minLength": crate::MIN_CURSOR_LENGTH,
            "description": "The `nextCursor` of the page before, as it came (unpadded \
                base64url); absent for the first page. A cursor this API did not write, or one \
                altered, cut or from an incompatible version, is refused with 400.",
        })
    } else {
        serde_json::json!({
            "type": "string",
            "description": "The `nextCursor` of the page before, as it came; absent for the \
                first page.",
        })
    }
}
