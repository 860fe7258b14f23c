//! Numbers and booleans read from JSON values or from their text (zod's `z.coerce`, without
//! its surprises: `"yes"` is not `true`, `""` is not `0`): one definition of the deserializer
//! and of the schema, so that the document, the 400's explanation and what is accepted agree.
//! `#[strata::model]`'s `#[strata(coerce)]` points a field at these; by hand:
//!
//! ```
//! use garde::Validate;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, Validate, JsonSchema)]
//! struct Paging {
//!     #[garde(range(max = 100))]
//!     #[serde(deserialize_with = "strata_decode::coerce::value")]
//!     #[schemars(schema_with = "strata_decode::coerce::schema::<u32>")]
//!     limit: u32,
//! }
//!
//! let text: Paging = serde_json::from_str(r#"{"limit": "20"}"#).unwrap();
//! let number: Paging = serde_json::from_str(r#"{"limit": 20}"#).unwrap();
//! assert_eq!((text.limit, number.limit), (20, 20));
//! assert!(serde_json::from_str::<Paging>(r#"{"limit": "twenty"}"#).is_err());
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, IntoDeserializer, Visitor};

/// A type read from its JSON value or from its text: the numbers and `bool`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not read from text: #[strata(coerce)] reads numbers and booleans",
    note = "a field of another type takes its JSON value as it is"
)]
pub trait Coercible: FromStr + for<'de> serde::Deserialize<'de> + JsonSchema {
    /// The text the type is read from (a regular expression, as the document states it).
    const TEXT: &'static str;
}

macro_rules! coercible {
    ($text:expr => $($ty:ty),*) => {
        $(impl Coercible for $ty {
            const TEXT: &'static str = $text;
        })*
    };
}

coercible!("^[0-9]+$" => u8, u16, u32, u64, u128, usize);
coercible!("^-?[0-9]+$" => i8, i16, i32, i64, i128, isize);
coercible!("^-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?$" => f32, f64);
coercible!("^(true|false)$" => bool);

/// Reads `T` from its JSON value or its text (`deserialize_with`).
///
/// # Errors
/// Text that is not `T`'s (`T::TEXT`), or a value of another type.
pub fn value<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Coercible,
{
    deserializer.deserialize_any(CoerceVisitor(PhantomData))
}

/// [`value`] for an optional field (`#[serde(default)]`): absent or `null` is `None`.
///
/// # Errors
/// As [`value`].
pub fn optional<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Coercible,
{
    deserializer.deserialize_option(OptionVisitor(PhantomData))
}

/// [`value`] for a field that may be absent but not `null` (`#[serde(default)]`).
///
/// # Errors
/// As [`value`]; `null`.
pub fn not_null<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Coercible,
{
    value(deserializer).map(Some)
}

/// The schema of a coerced `T` (`schema_with`): `T`'s, or text matching `T::TEXT`.
pub fn schema<T: Coercible>(generator: &mut SchemaGenerator) -> Schema {
    let own = generator.subschema_for::<T>();
    json_schema!({
        "anyOf": [own, {"type": "string", "pattern": T::TEXT}]
    })
}

/// The schema of an optional coerced `T`: [`schema`], or `null`.
pub fn optional_schema<T: Coercible>(generator: &mut SchemaGenerator) -> Schema {
    let own = generator.subschema_for::<T>();
    json_schema!({
        "anyOf": [own, {"type": "string", "pattern": T::TEXT}, {"type": "null"}]
    })
}

struct CoerceVisitor<T>(PhantomData<T>);

impl<T: Coercible> CoerceVisitor<T> {
    fn forward<E: de::Error>(value: impl IntoDeserializer<'static, E>) -> Result<T, E> {
        T::deserialize(value.into_deserializer())
    }
}

/// Visits each value by deserializing `T` from it.
macro_rules! forward {
    ($($visit:ident($ty:ty))*) => {$(
        fn $visit<E: de::Error>(self, value: $ty) -> Result<T, E> {
            Self::forward(value)
        }
    )*};
}

impl<T: Coercible> Visitor<'_> for CoerceVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a value or text matching {}", T::TEXT)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        // FromStr is laxer than the pattern in places (`+1`, `inf`, `NaN`): the pattern is
        // what the document promises.
        if !matches_text::<T>(text) {
            return Err(E::invalid_value(de::Unexpected::Str(text), &self));
        }
        text.parse()
            .map_err(|_| E::invalid_value(de::Unexpected::Str(text), &self))
    }

    forward! {
        visit_bool(bool) visit_u64(u64) visit_i64(i64) visit_u128(u128) visit_i128(i128)
        visit_f64(f64)
    }
}

/// Whether `text` matches `T::TEXT`, checked by hand for the four patterns above (no regex
/// per value).
fn matches_text<T: Coercible>(text: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match T::TEXT {
        "^[0-9]+$" => digits(text),
        "^-?[0-9]+$" => digits(text.strip_prefix('-').unwrap_or(text)),
        "^(true|false)$" => text == "true" || text == "false",
        _ => {
            let unsigned = text.strip_prefix('-').unwrap_or(text);
            let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
                Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
                None => (unsigned, None),
            };
            let mantissa_ok = match mantissa.split_once('.') {
                Some((whole, fraction)) => digits(whole) && digits(fraction),
                None => digits(mantissa),
            };
            let exponent_ok = exponent.is_none_or(|exponent| {
                digits(exponent.strip_prefix(['-', '+']).unwrap_or(exponent))
            });
            mantissa_ok && exponent_ok
        }
    }
}

struct OptionVisitor<T>(PhantomData<T>);

impl<'de, T: Coercible> Visitor<'de> for OptionVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "null, a value or text matching {}", T::TEXT)
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        value(deserializer).map(Some)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[derive(serde::Deserialize)]
    struct Fields {
        #[serde(deserialize_with = "value")]
        count: u32,
        #[serde(deserialize_with = "value")]
        delta: i64,
        #[serde(deserialize_with = "value")]
        ratio: f64,
        #[serde(deserialize_with = "value")]
        on: bool,
        #[serde(default, deserialize_with = "optional")]
        maybe: Option<u8>,
        #[serde(default, deserialize_with = "not_null")]
        present: Option<u8>,
    }

    fn read(json: &str) -> Result<Fields, String> {
        serde_json::from_str(json).map_err(|error| error.to_string())
    }

    #[test]
    fn values_and_their_text_are_read_alike() {
        let text = read(
            r#"{"count":"7","delta":"-3","ratio":"2.5e1","on":"true","maybe":"4","present":"1"}"#,
        )
        .unwrap();
        let values =
            read(r#"{"count":7,"delta":-3,"ratio":25,"on":true,"maybe":4,"present":1}"#).unwrap();
        for fields in [text, values] {
            assert_eq!(
                (fields.count, fields.delta, fields.ratio, fields.on),
                (7, -3, 25.0, true)
            );
            assert_eq!((fields.maybe, fields.present), (Some(4), Some(1)));
        }
        let absent = read(r#"{"count":0,"delta":0,"ratio":0,"on":false,"maybe":null}"#).unwrap();
        assert_eq!((absent.maybe, absent.present), (None, None));
    }

    #[test]
    fn other_text_is_refused() {
        let base = r#""delta":0,"ratio":0,"on":false"#;
        for count in [
            r#""""#, r#""+1""#, r#""1.0""#, r#"" 1""#, r#""-1""#, "-1", "1.5",
        ] {
            assert!(
                read(&format!(r#"{{"count":{count},{base}}}"#)).is_err(),
                "{count}"
            );
        }
        for on in [r#""yes""#, r#""1""#, "1", r#""True""#] {
            let json = format!(r#"{{"count":0,"delta":0,"ratio":0,"on":{on}}}"#);
            assert!(read(&json).is_err(), "{on}");
        }
        for ratio in [r#""NaN""#, r#""inf""#, r#""1e""#, r#""1.""#, r#"".5""#] {
            let json = format!(r#"{{"count":0,"delta":0,"ratio":{ratio},"on":false}}"#);
            assert!(read(&json).is_err(), "{ratio}");
        }
        let null = r#"{"count":0,"delta":0,"ratio":0,"on":false,"present":null}"#;
        assert!(read(null).is_err());
        // Too large for u8, as text and as a value.
        for maybe in [r#""300""#, "300"] {
            let json = format!(r#"{{"count":0,"delta":0,"ratio":0,"on":false,"maybe":{maybe}}}"#);
            assert!(read(&json).is_err(), "{maybe}");
        }
    }

    #[test]
    fn the_schema_states_both() {
        let mut generator = SchemaGenerator::default();
        let schema = schema::<u32>(&mut generator).to_value();
        assert_eq!(schema["anyOf"][0]["type"], "integer");
        assert_eq!(schema["anyOf"][1]["pattern"], "^[0-9]+$");
        let optional = optional_schema::<bool>(&mut generator).to_value();
        assert_eq!(optional["anyOf"][2]["type"], "null");
    }
}
