//! Asking serde which entries of an input decode, for the explanation of a failed decode.
//!
//! The schema walk ([`crate::explain`]) judges values by the type's JSON Schema, not by the
//! fields' own deserializers: a `deserialize_with` may read what its schema refuses (an empty
//! query value `num=` as `None` where the schema says `number`). An explanation must not name
//! such a field, so serde is asked: a struct's derived deserializer reads the entries of a map
//! in the order they come and stops at the first whose value (or key) it refuses. Offered the
//! suspect entries alone, in the input's order, it reads a run of values that decode and stops
//! at one that does not; asked again from the entry after that one, and so on, it says of each
//! suspect whether it decodes.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::Value;

use strata_input::{DeError, InputValue};

/// Whether the schema is of a type whose deserializer reads the input's entries as a struct's
/// fields, each value on its own: an object, not a choice. An enum tagged beside its content
/// (`#[serde(tag, content)]`) is read as a struct too, but keeps its content for later when the
/// tag comes after it: whether an entry decodes cannot be asked of it.
pub(crate) fn reads_fields(schema: &Value) -> bool {
    schema.get("type") == Some(&Value::from("object"))
        && schema.get("oneOf").is_none()
        && schema.get("anyOf").is_none()
}

/// Of `suspects` (indices into `entries`, in ascending order), those whose values `T`'s
/// deserializer reads: none when `T` does not read its input as a struct's fields one by one
/// (a `flatten` buffers values to read them later, a map or an enum reads them its own way).
///
/// Each question reads `T` from the suspects not yet judged and judges at least one of them
/// (the run it read, and the one it stopped at): at most `suspects.len()` deserializations of
/// `T`, of suspect entries only, that read each suspect's value once between them. Only a
/// failed decode asks.
pub(crate) fn readable<T: DeserializeOwned>(
    entries: &[(String, InputValue)],
    suspects: &[usize],
) -> Vec<usize> {
    let mut readable = Vec::new();
    let mut rest = suspects;
    while !rest.is_empty() {
        let mut reading = Reading::default();
        let probe = Probe {
            entries,
            order: rest,
            reading: &mut reading,
        };
        // What `T` makes of the run, or why it stops, does not matter: how far it read does.
        let _ = T::deserialize(probe);
        if !reading.as_fields {
            return Vec::new();
        }
        let read = reading.read.min(rest.len());
        readable.extend_from_slice(&rest[..read]);
        // The entry it stopped at did not decode (or something else stopped it there: the
        // entry is not shown to decode either).
        rest = rest.get(read + 1..).unwrap_or_default();
    }
    readable
}

/// How far a deserializer read the entries a [`Probe`] offered it.
#[derive(Default)]
struct Reading {
    /// It read them as a struct's fields.
    as_fields: bool,
    /// How many, from the first, it read (key and value) without an error.
    read: usize,
}

/// A deserializer of some entries of an input, in a given order, that tells how far it was
/// read.
struct Probe<'a, 'r> {
    entries: &'a [(String, InputValue)],
    order: &'a [usize],
    reading: &'r mut Reading,
}

impl<'de> Deserializer<'de> for Probe<'de, '_> {
    type Error = DeError;

    /// Anything but a struct (or a struct in an `Option` or a newtype): not asked.
    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, DeError> {
        Err(de::Error::custom("not read as a struct"))
    }

    // As the input's own deserializer does.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.reading.as_fields = true;
        visitor.visit_map(Fields {
            probe: self,
            next: 0,
            current: None,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// The entries of a [`Probe`], counting the ones read.
struct Fields<'a, 'r> {
    probe: Probe<'a, 'r>,
    /// Position (in the probe's order) of the next key.
    next: usize,
    /// Position of the entry whose key was read last, until its value is.
    current: Option<usize>,
}

impl<'de> MapAccess<'de> for Fields<'de, '_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(&index) = self.probe.order.get(self.next) else {
            return Ok(None);
        };
        self.current = Some(self.next);
        self.next += 1;
        let key = self.probe.entries[index].0.as_str();
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, DeError> {
        let position = self
            .current
            .take()
            .ok_or_else(|| de::Error::custom("value without a key"))?;
        let index = self.probe.order[position];
        let value = seed.deserialize(&self.probe.entries[index].1)?;
        // A run from the first entry: each value read right after the ones before it.
        if position == self.probe.reading.read {
            self.probe.reading.read += 1;
        }
        Ok(value)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.probe.order.len() - self.next)
    }
}
