//! Reading a [deferred](crate::JsonObject::deferred) JSON object body in one pass: the typed
//! value is read straight from the text, as strictly as the check of `JsonObject::new`
//! followed by that read would be.
//!
//! `serde_json` reads strictly what it hands to the typed value; it is lenient only in what it
//! skips (numbers not range-checked, `\u` escapes not paired), in bytes and in raw values, and
//! it does not look for repeated keys (a checked object with one is read from its members,
//! where the last value wins). So each value `serde_json` would skip is checked here as the
//! check does, each object's keys are compared, and after a lenient read, or a key that is not
//! plain text, the whole check runs: the read fails wherever its result could differ from the
//! two passes' (whose caller then checks the body and reads it the long way).

use std::cell::Cell;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

use crate::input::{CheckVisitor, Keys, check_object};

/// `serde_json`'s name for its raw value (`serde_json::value::RawValue`), read without a check.
const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// Reads `text`, a JSON object's, with `visitor`; see the [module](self).
pub(crate) fn read<'de, V: Visitor<'de>>(
    text: &'de str,
    visitor: V,
) -> Result<V::Value, serde_json::Error> {
    let unsure = Cell::new(false);
    let mut json = serde_json::Deserializer::from_str(text);
    let value = Strict::new(&mut json, &unsure).deserialize_any(visitor)?;
    json.end()?;
    if unsure.get() && check_object(&mut serde_json::Deserializer::from_str(text))? {
        return Err(de::Error::custom(REPEATED));
    }
    Ok(value)
}

/// The error of a read stopped by a repeated key (read again from the object's members).
const REPEATED: &str = "a key repeats";

/// A deserializer read strictly.
struct Strict<'a, 'de, D> {
    de: D,
    /// Set when the read took what `serde_json` does not check, or a key it could not compare:
    /// the whole check runs after it.
    unsure: &'a Cell<bool>,
    /// While an object's key is read: where its text goes.
    key: Option<&'a Cell<Option<&'de str>>>,
}

impl<'a, 'de, D> Strict<'a, 'de, D> {
    fn new(de: D, unsure: &'a Cell<bool>) -> Self {
        Self {
            de,
            unsure,
            key: None,
        }
    }

    fn wrap<V>(&self, visitor: V) -> Wrap<'a, 'de, V> {
        Wrap {
            inner: visitor,
            unsure: self.unsure,
            key: self.key,
        }
    }
}

/// The visitors, seeds and accesses of a strict read: each hands on what it is given, wrapped.
struct Wrap<'a, 'de, T> {
    inner: T,
    unsure: &'a Cell<bool>,
    key: Option<&'a Cell<Option<&'de str>>>,
}

impl<'a, 'de, T> Wrap<'a, 'de, T> {
    fn new(inner: T, unsure: &'a Cell<bool>) -> Self {
        Self {
            inner,
            unsure,
            key: None,
        }
    }

    fn strict<D>(&self, de: D) -> Strict<'a, 'de, D> {
        Strict {
            de,
            unsure: self.unsure,
            key: self.key,
        }
    }
}

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*))*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            let visitor = self.wrap(visitor);
            self.de.$method($($arg,)* visitor)
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<'_, 'de, D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any() deserialize_bool() deserialize_i8() deserialize_i16() deserialize_i32()
        deserialize_i64() deserialize_i128() deserialize_u8() deserialize_u16()
        deserialize_u32() deserialize_u64() deserialize_u128() deserialize_f32()
        deserialize_f64() deserialize_char() deserialize_str() deserialize_string()
        deserialize_option() deserialize_unit() deserialize_seq() deserialize_map()
        deserialize_identifier()
        deserialize_unit_struct(name: &'static str)
        deserialize_tuple(len: usize)
        deserialize_tuple_struct(name: &'static str, len: usize)
        deserialize_struct(name: &'static str, fields: &'static [&'static str])
        deserialize_enum(name: &'static str, variants: &'static [&'static str])
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        // Strings read as bytes are not checked (escapes, control characters).
        self.unsure.set(true);
        let visitor = self.wrap(visitor);
        self.de.deserialize_bytes(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.unsure.set(true);
        let visitor = self.wrap(visitor);
        self.de.deserialize_byte_buf(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        if name == RAW_VALUE {
            self.unsure.set(true);
        }
        let visitor = self.wrap(visitor);
        self.de.deserialize_newtype_struct(name, visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        // What serde_json would skip unchecked is checked, as serde_json skips it: read and
        // dropped, then the unit (a repeat inside it sends the object the long way too).
        if self.de.deserialize_any(CheckVisitor)? {
            self.unsure.set(true);
        }
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty))*) => {$(
        fn $method<E: de::Error>(self, value: $ty) -> Result<Self::Value, E> {
            self.inner.$method(value)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, 'de, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64)
        visit_i128(i128) visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64)
        visit_u128(u128) visit_f32(f32) visit_f64(f64) visit_char(char) visit_str(&str)
        visit_string(String) visit_bytes(&[u8]) visit_borrowed_bytes(&'de [u8])
        visit_byte_buf(Vec<u8>)
    }

    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<V::Value, E> {
        // A key without escapes: compared with the object's others (see `Map`).
        if let Some(key) = self.key {
            key.set(Some(value));
        }
        self.inner.visit_borrowed_str(value)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        let deserializer = self.strict(deserializer);
        self.inner.visit_some(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<V::Value, D::Error> {
        let deserializer = self.strict(deserializer);
        self.inner.visit_newtype_struct(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(Wrap::new(seq, self.unsure))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(Map {
            inner: map,
            unsure: self.unsure,
            key: Cell::new(None),
            keys: Keys::new(),
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(Wrap::new(data, self.unsure))
    }
}

impl<'de, T: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<'_, 'de, T> {
    type Value = T::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T::Value, D::Error> {
        let deserializer = self.strict(deserializer);
        self.inner.deserialize(deserializer)
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<'_, 'de, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.inner.next_element_seed(Wrap::new(seed, self.unsure))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// An object read strictly: its keys are compared as they come.
struct Map<'a, 'de, A> {
    inner: A,
    unsure: &'a Cell<bool>,
    /// The text of the key being read, when it is borrowed from the body.
    key: Cell<Option<&'de str>>,
    keys: Keys<&'de str>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<'_, 'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let seed = Wrap {
            inner: seed,
            unsure: self.unsure,
            key: Some(&self.key),
        };
        let key = self.inner.next_key_seed(seed)?;
        if key.is_some() {
            match self.key.take() {
                Some(text) if self.keys.repeats(text) => return Err(de::Error::custom(REPEATED)),
                Some(_) => {}
                // A key with escapes, or read as a number, a boolean...: not compared here.
                None => self.unsure.set(true),
            }
        }
        Ok(key)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.next_value_seed(Wrap::new(seed, self.unsure))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'a, 'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<'a, 'de, A> {
    type Error = A::Error;
    type Variant = Wrap<'a, 'de, A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), A::Error> {
        let (value, variant) = self.inner.variant_seed(Wrap::new(seed, self.unsure))?;
        Ok((value, Wrap::new(variant, self.unsure)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<'_, 'de, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.inner
            .newtype_variant_seed(Wrap::new(seed, self.unsure))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.inner
            .tuple_variant(len, Wrap::new(visitor, self.unsure))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.inner
            .struct_variant(fields, Wrap::new(visitor, self.unsure))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};
    use std::fmt::Debug;

    use serde::Deserialize;
    use serde::de::DeserializeOwned;

    use crate::{Input, JsonObject};

    #[derive(Debug, PartialEq, Deserialize)]
    struct Line {
        sku: String,
        quantity: u32,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    enum Kind {
        Plain,
        Gift { note: String },
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Order {
        customer: String,
        lines: Vec<Line>,
        note: Option<String>,
        kind: Kind,
        extra: BTreeMap<String, serde_json::Value>,
    }

    #[derive(Debug, Deserialize)]
    struct Raw {
        #[allow(dead_code)] // read to be checked
        raw: Box<serde_json::value::RawValue>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Extra {
        extra: HashMap<String, u32>,
    }

    /// `body` read in one pass (deferred) and read after its check: the one pass's value when
    /// it gives one, else `None`; the checked read's result, if the body is well-formed.
    fn read<T: DeserializeOwned + PartialEq + Debug>(
        body: &str,
    ) -> (Option<T>, Option<Result<T, crate::DeError>>) {
        let deferred = Input::from(JsonObject::deferred(body.to_owned()).unwrap());
        let one_pass = T::deserialize(&deferred).ok();
        let checked = JsonObject::new(body.to_owned())
            .ok()
            .map(|object| T::deserialize(&Input::from(object)));
        if let Some(value) = &one_pass {
            // What one pass gives is what the two passes give.
            assert_eq!(
                Some(value),
                checked.as_ref().and_then(|c| c.as_ref().ok()),
                "{body}"
            );
        }
        (one_pass, checked)
    }

    #[test]
    fn a_well_formed_body_is_read_in_one_pass_as_it_is_read_checked() {
        let body = r#" {"customer": "Ada", "lines": [{"sku": "A-1", "quantity": 2},
            {"sku": "B\"2", "quantity": 1, "unknown": [1, {"x": null}]}], "note": null,
            "kind": {"Gift": {"note": "ribbon"}}, "extra": {"a": 1.5, "b": [true]},
            "ignored": {"deep": {"deeper": "\u00e9"}}} "#;
        let (one_pass, _) = read::<Order>(body);
        let order = one_pass.unwrap();
        assert_eq!(order.lines[1].sku, "B\"2");
        assert_eq!(
            order.kind,
            Kind::Gift {
                note: "ribbon".into()
            }
        );
        // A key with an escape cannot be compared where it is read: the check runs after.
        let (one_pass, _) = read::<Line>(r#"{"s\u006bu": "A", "quantity": 1}"#);
        assert_eq!(one_pass.unwrap().sku, "A");
    }

    #[test]
    fn what_serde_json_would_skip_unchecked_is_checked() {
        for body in [
            r#"{"sku": "A", "quantity": 1, "skipped": 1e400}"#,
            r#"{"sku": "A", "quantity": 1, "skipped": "\ud800"}"#,
            r#"{"sku": "A", "quantity": 1, "skipped": ["\x"]}"#,
            "{\"sku\": \"A\", \"quantity\": 1, \"skipped\": \"\u{1}\"}",
        ] {
            let (one_pass, checked) = read::<Line>(body);
            assert!(one_pass.is_none() && checked.is_none(), "{body}");
        }
        // A raw value is read unchecked by serde_json: the whole check runs after it.
        let input = |body: &str| Input::from(JsonObject::deferred(body.to_owned()).unwrap());
        assert!(Raw::deserialize(&input(r#"{"raw": [1e400]}"#)).is_err());
        assert!(Raw::deserialize(&input(r#"{"raw": [1e300]}"#)).is_ok());
    }

    #[test]
    fn a_repeated_key_is_read_the_long_way() {
        // The struct refuses it; a checked object is read from its members: the last wins.
        let (one_pass, checked) = read::<Line>(r#"{"sku": "A", "quantity": 1, "sku": "B"}"#);
        assert!(one_pass.is_none());
        assert_eq!(checked.unwrap().unwrap().sku, "B");
        // A map would take both: refused too, whatever holds it.
        let (one_pass, checked) = read::<HashMap<String, u32>>(r#"{"a": 1, "b": 2, "a": 3}"#);
        assert!(one_pass.is_none());
        assert_eq!(checked.unwrap().unwrap()["a"], 3);
        let many = format!(
            "{{\"extra\": {{{}, \"k3\": 0}}}}",
            (0..20)
                .map(|i| format!("\"k{i}\": {i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let (one_pass, checked) = read::<Extra>(&many);
        assert!(one_pass.is_none());
        assert_eq!(checked.unwrap().unwrap().extra["k3"], 0);
        // In a skipped value as well (a checked object with it is read from its members).
        let (one_pass, checked) =
            read::<Line>(r#"{"sku": "A", "quantity": 1, "skipped": {"x": 1, "x": 2}}"#);
        assert!(one_pass.is_none());
        assert_eq!(checked.unwrap().unwrap().sku, "A");
        // The same key in two objects is no repeat.
        let (one_pass, _) = read::<Order>(
            r#"{"customer": "A", "lines": [{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 2}],
                "note": "x", "kind": "Plain", "extra": {"customer": 1}}"#,
        );
        assert_eq!(one_pass.unwrap().lines.len(), 2);
    }

    #[test]
    fn a_malformed_body_fails_the_one_pass() {
        for body in [
            r#"{"sku": "A", "quantity": 1,}"#,
            r#"{"sku": "A", "quantity": 1} x"#,
            r#"{"sku": "A", "quantity": 1"#,
            // A type error first, the syntax error after it: the check finds the latter.
            r#"{"sku": 5, "quantity": }"#,
        ] {
            let (one_pass, checked) = read::<Line>(body);
            assert!(one_pass.is_none() && checked.is_none(), "{body}");
        }
        let bytes = b"{\"sku\": \"\xff\", \"quantity\": 1}".to_vec();
        let input = Input::from(JsonObject::deferred(bytes).unwrap());
        assert!(Line::deserialize(&input).is_err());
    }
}
