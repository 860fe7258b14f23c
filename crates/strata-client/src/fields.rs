//! An input taken apart into its fields, in the order it writes them: what [`place`] spreads
//! over the path, the query string, headers and the body.
//!
//! A list of `(name, value)` rather than a `serde_json::Map`: the map is a B-tree that sorts
//! the names (so a form's parts and a query's keys came out alphabetically, not as declared)
//! and costs a node and a copy of each name per call; a struct's names are `&'static str`.
//!
//! [`place`]: crate::request::place

use std::borrow::Cow;

use serde::ser::{self, Error as _, Impossible, Serialize, SerializeMap, SerializeStruct};
use serde_json::{Error, Value};

/// A field's name and value.
pub(crate) type Field = (Cow<'static, str>, Value);

/// An input's fields, in its order.
pub(crate) type Fields = Vec<Field>;

/// The fields of `input`: a struct's, a map's (string keys), none for `()` or `None`; any
/// other input is an error naming what it is ("an input is an object of fields, not a number").
pub(crate) fn fields_of<I: Serialize + ?Sized>(input: &I) -> Result<Fields, Error> {
    input.serialize(FieldsSerializer)
}

/// Removes the field `name` and gives its value.
pub(crate) fn take(fields: &mut Fields, name: &str) -> Option<Value> {
    let index = fields.iter().position(|(field, _)| field == name)?;
    Some(fields.remove(index).1)
}

/// The fields as a JSON object, in their order.
pub(crate) struct AsObject<'f>(pub(crate) &'f Fields);

impl Serialize for AsObject<'_> {
    fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

fn not_an_object(kind: &str) -> Error {
    Error::custom(format!("an input is an object of fields, not {kind}"))
}

/// Serializes an input into its [`Fields`], each value as a `serde_json::Value`.
struct FieldsSerializer;

/// A struct's or a map's fields as they are written.
struct Collect {
    fields: Fields,
    /// The key of a map entry whose value comes next.
    key: Option<String>,
}

impl SerializeStruct for Collect {
    type Ok = Fields;
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.fields
            .push((Cow::Borrowed(name), serde_json::to_value(value)?));
        Ok(())
    }

    fn end(self) -> Result<Fields, Error> {
        Ok(self.fields)
    }
}

impl SerializeMap for Collect {
    type Ok = Fields;
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        // Keys as JSON writes them: strings, and numbers and booleans as their text.
        self.key = Some(match serde_json::to_value(key)? {
            Value::String(key) => key,
            key @ (Value::Number(_) | Value::Bool(_)) => key.to_string(),
            _ => return Err(Error::custom("an input's field names are text")),
        });
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| Error::custom("a map's value came before its key"))?;
        let value = serde_json::to_value(value)?;
        // A later entry of the same name wins, as in a JSON object read back.
        match self.fields.iter_mut().find(|(name, _)| *name == key) {
            Some((_, previous)) => *previous = value,
            None => self.fields.push((Cow::Owned(key), value)),
        }
        Ok(())
    }

    fn end(self) -> Result<Fields, Error> {
        Ok(self.fields)
    }
}

impl ser::Serializer for FieldsSerializer {
    type Ok = Fields;
    type Error = Error;
    type SerializeSeq = Impossible<Fields, Error>;
    type SerializeTuple = Impossible<Fields, Error>;
    type SerializeTupleStruct = Impossible<Fields, Error>;
    type SerializeTupleVariant = Impossible<Fields, Error>;
    type SerializeMap = Collect;
    type SerializeStruct = Collect;
    type SerializeStructVariant = Impossible<Fields, Error>;

    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Collect, Error> {
        Ok(Collect {
            fields: Vec::with_capacity(len),
            key: None,
        })
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Collect, Error> {
        Ok(Collect {
            fields: Vec::with_capacity(len.unwrap_or(0)),
            key: None,
        })
    }

    // No fields: `()`, a unit struct, `None`.
    fn serialize_unit(self) -> Result<Fields, Error> {
        Ok(Fields::new())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<Fields, Error> {
        Ok(Fields::new())
    }

    fn serialize_none(self) -> Result<Fields, Error> {
        Ok(Fields::new())
    }

    // What wraps an input is the input.
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Fields, Error> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Fields, Error> {
        value.serialize(self)
    }

    fn serialize_bool(self, _: bool) -> Result<Fields, Error> {
        Err(not_an_object("a boolean"))
    }

    fn serialize_i64(self, _: i64) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_i128(self, _: i128) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_u64(self, _: u64) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_u128(self, _: u128) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_i8(self, _: i8) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_i16(self, _: i16) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_i32(self, _: i32) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_u8(self, _: u8) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_u16(self, _: u16) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_u32(self, _: u32) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_f32(self, _: f32) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_f64(self, _: f64) -> Result<Fields, Error> {
        Err(not_an_object("a number"))
    }

    fn serialize_char(self, _: char) -> Result<Fields, Error> {
        Err(not_an_object("a string"))
    }

    fn serialize_str(self, _: &str) -> Result<Fields, Error> {
        Err(not_an_object("a string"))
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<Fields, Error> {
        Err(not_an_object("a string"))
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<Fields, Error> {
        Err(not_an_object("a list"))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(not_an_object("a list"))
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(not_an_object("a list"))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(not_an_object("a list"))
    }

    // An enum's data variant is an object of one field, its name: not an input's fields.
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Fields, Error> {
        Err(not_an_object("an enum variant"))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(not_an_object("an enum variant"))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(not_an_object("an enum variant"))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_struct_s_fields_keep_its_order() {
        #[derive(serde::Serialize)]
        struct Input {
            zeta: u8,
            #[serde(skip_serializing_if = "Option::is_none")]
            skipped: Option<u8>,
            alpha: Option<&'static str>,
        }
        let fields = fields_of(&Input {
            zeta: 1,
            skipped: None,
            alpha: None,
        })
        .unwrap();
        assert_eq!(
            fields,
            [("zeta".into(), json!(1)), ("alpha".into(), Value::Null)]
        );
        assert_eq!(
            serde_json::to_string(&AsObject(&fields)).unwrap(),
            r#"{"zeta":1,"alpha":null}"#
        );
    }

    #[test]
    fn maps_wrappers_and_nothing_are_inputs_too() {
        let mut map = std::collections::BTreeMap::new();
        map.insert(2, "two");
        assert_eq!(fields_of(&map).unwrap(), [("2".into(), json!("two"))]);
        assert_eq!(
            fields_of(&Some(json!({"a": [1]}))).unwrap(),
            [("a".into(), json!([1]))]
        );
        assert!(fields_of(&()).unwrap().is_empty());
        assert!(fields_of(&Option::<()>::None).unwrap().is_empty());
        let mut fields = fields_of(&json!({"a": 1, "b": 2})).unwrap();
        assert_eq!(take(&mut fields, "a"), Some(json!(1)));
        assert_eq!(take(&mut fields, "a"), None);
        assert_eq!(fields, [("b".into(), json!(2))]);
    }

    #[test]
    fn other_inputs_are_named() {
        for (input, kind) in [
            (json!(5), "a number"),
            (json!(true), "a boolean"),
            (json!("x"), "a string"),
            (json!([1]), "a list"),
        ] {
            let error = fields_of(&input).unwrap_err().to_string();
            assert_eq!(
                error,
                format!("an input is an object of fields, not {kind}")
            );
        }
    }
}
