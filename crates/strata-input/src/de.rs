//! `serde::Deserializer` over the merged [`Input`]: JSON values strictly, text values leniently.

use std::fmt;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};
use serde::forward_to_deserialize_any;

use crate::file::{FILE_TOKEN, UploadedFile, hand_over};
use crate::input::{Input, InputValue, LazySource, TextValue};

/// The error of deserializing an [`Input`]: serde's message text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DeError(String);

impl DeError {
    /// The message.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError(msg.to_string())
    }
}

/// `serde_json`'s message, without the position it adds when reading bytes: messages name the
/// field instead (the same whether the input came as bytes or as values).
fn from_json(error: &serde_json::Error) -> DeError {
    let mut message = error.to_string();
    if error.line() > 0 {
        let position = format!(" at line {} column {}", error.line(), error.column());
        if message.ends_with(&position) {
            message.truncate(message.len() - position.len());
        }
    }
    DeError(message)
}

/// Deserializes one whole JSON text with `visitor`.
fn from_json_text<'de, R, V>(
    json: &mut serde_json::Deserializer<R>,
    visitor: V,
) -> Result<V::Value, DeError>
where
    R: serde_json::de::Read<'de>,
    V: Visitor<'de>,
{
    let value =
        serde::Deserializer::deserialize_any(&mut *json, visitor).map_err(|e| from_json(&e))?;
    json.end().map_err(|e| from_json(&e))?;
    Ok(value)
}

/// What every deserializer here does alike: an `Option` around a value that is present is
/// `Some` (absence is the map's to tell), and a value ignored is read as nothing.
macro_rules! option_as_present_and_ignored_as_unit {
    () => {
        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            visitor.visit_some(self)
        }

        fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            visitor.visit_unit()
        }
    };
}

/// A newtype struct reads what it wraps from the same value.
macro_rules! newtype_as_itself {
    () => {
        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, DeError> {
            visitor.visit_newtype_struct(self)
        }
    };
}

impl<'de> Deserializer<'de> for &'de Input {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.lazy_source() {
            // A JSON object body alone: straight from its bytes, as strictly as from values;
            // from its text, UTF-8 checked in one pass over the whole body.
            Some(LazySource::Json(object)) => match object.as_text() {
                // Its check deferred: checked as it is read (an error wherever the result could
                // differ from a checked object's; see `JsonObject::deferred`).
                Some(text) if !object.is_checked() => {
                    crate::strict::read(text, visitor).map_err(|e| from_json(&e))
                }
                Some(text) => {
                    from_json_text(&mut serde_json::Deserializer::from_str(text), visitor)
                }
                // Not UTF-8: never well-formed JSON.
                None if !object.is_checked() => {
                    Err(de::Error::custom("the JSON body is not UTF-8"))
                }
                None => from_json_text(
                    &mut serde_json::Deserializer::from_slice(object.as_bytes()),
                    visitor,
                ),
            },
            // A plain query alone: its pairs are read in place, as the text values they are.
            Some(LazySource::Query(query)) => visitor.visit_map(Entries {
                iter: query.pairs(),
                value: None,
            }),
            None => visitor.visit_map(Entries {
                iter: self.iter(),
                value: None,
            }),
        }
    }

    option_as_present_and_ignored_as_unit!();

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    newtype_as_itself!();

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        seq tuple tuple_struct map struct enum identifier
    }
}

/// The entries of a map, as `(key, value)` pairs whose values deserialize by reference.
struct Entries<V, I> {
    iter: I,
    value: Option<V>,
}

impl<'de, V, I> MapAccess<'de> for Entries<V, I>
where
    I: Iterator<Item = (&'de str, V)>,
    V: IntoDeserializer<'de>,
{
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        match self.iter.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(BorrowedStrDeserializer::new(key))
                    .map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, DeError> {
        let value = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("value without a key"))?;
        seed.deserialize(value.into_deserializer())
    }

    fn size_hint(&self) -> Option<usize> {
        self.iter.size_hint().1
    }
}

/// A value of [`Entries`]: an input value, or the text of a plain query's pair.
trait IntoDeserializer<'de> {
    type Deserializer: Deserializer<'de, Error = DeError>;

    fn into_deserializer(self) -> Self::Deserializer;
}

impl<'de> IntoDeserializer<'de> for &'de InputValue {
    type Deserializer = ValueDeserializer<'de>;

    fn into_deserializer(self) -> ValueDeserializer<'de> {
        ValueDeserializer(self)
    }
}

impl<'de> IntoDeserializer<'de> for &'de str {
    type Deserializer = Text<'de>;

    fn into_deserializer(self) -> Text<'de> {
        Text(self)
    }
}

/// Deserializes one [`InputValue`].
pub(crate) struct ValueDeserializer<'a>(pub(crate) &'a InputValue);

macro_rules! dispatch {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            match self.0 {
                InputValue::Json(value) => value.$method(visitor).map_err(|e| from_json(&e)),
                InputValue::Text(TextValue::One(text)) => Text(text).$method(visitor),
                InputValue::Text(TextValue::Many(list)) => TextList(list).$method(visitor),
                InputValue::Files(files) => FileList(files).$method(visitor),
            }
        }
    )*};
}

/// A JSON value read by `serde_json`; any other value as `$other` says.
macro_rules! json_or {
    ($self:ident.$method:ident($($arg:expr),*) else $other:expr) => {
        match $self.0 {
            InputValue::Json(value) => value.$method($($arg),*).map_err(|e| from_json(&e)),
            _ => $other,
        }
    };
}

impl<'de> Deserializer<'de> for ValueDeserializer<'de> {
    type Error = DeError;

    dispatch! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        json_or!(self.deserialize_unit_struct(name, visitor) else self.deserialize_unit(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.0 {
            InputValue::Json(value) => value
                .deserialize_newtype_struct(name, visitor)
                .map_err(|e| from_json(&e)),
            InputValue::Files(files) => FileList(files).deserialize_newtype_struct(name, visitor),
            InputValue::Text(_) => visitor.visit_newtype_struct(self),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        json_or!(self.deserialize_tuple(len, visitor) else self.deserialize_seq(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        json_or!(self.deserialize_tuple_struct(name, len, visitor) else self.deserialize_seq(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        json_or!(self.deserialize_struct(name, fields, visitor) else self.deserialize_map(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.0 {
            InputValue::Json(value) => value
                .deserialize_enum(name, variants, visitor)
                .map_err(|e| from_json(&e)),
            InputValue::Text(TextValue::One(text)) => {
                Text(text).deserialize_enum(name, variants, visitor)
            }
            InputValue::Text(TextValue::Many(_)) => {
                Err(de::Error::invalid_type(Unexpected::Seq, &visitor))
            }
            InputValue::Files(_) => Err(de::Error::invalid_type(FILE, &visitor)),
        }
    }
}

/// Forwards to [`ValueDeserializer`].
macro_rules! forward_to_value {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, DeError> {
            ValueDeserializer(self).$method($($arg,)* visitor)
        }
    )*};
}

/// One value, read as the [`Input`] it belongs to reads it: JSON strictly, text leniently,
/// files as files. For reading an input's entries one by one, in an order of one's own.
///
/// ```
/// use serde::Deserialize;
/// use strata_input::InputValue;
///
/// assert_eq!(u32::deserialize(&InputValue::from("5")).unwrap(), 5);
/// assert!(u32::deserialize(&InputValue::Json(serde_json::json!("5"))).is_err());
/// ```
impl<'de> Deserializer<'de> for &'de InputValue {
    type Error = DeError;

    forward_to_value! {
        deserialize_any(); deserialize_bool(); deserialize_i8(); deserialize_i16();
        deserialize_i32(); deserialize_i64(); deserialize_i128(); deserialize_u8();
        deserialize_u16(); deserialize_u32(); deserialize_u64(); deserialize_u128();
        deserialize_f32(); deserialize_f64(); deserialize_char(); deserialize_str();
        deserialize_string(); deserialize_bytes(); deserialize_byte_buf(); deserialize_option();
        deserialize_unit(); deserialize_seq(); deserialize_map(); deserialize_identifier();
        deserialize_ignored_any();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
    }
}

/// Tuples of text or files are read as their lists.
macro_rules! tuples_as_seq {
    () => {
        fn deserialize_tuple<V: Visitor<'de>>(
            self,
            _len: usize,
            visitor: V,
        ) -> Result<V::Value, DeError> {
            self.deserialize_seq(visitor)
        }

        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _len: usize,
            visitor: V,
        ) -> Result<V::Value, DeError> {
            self.deserialize_seq(visitor)
        }
    };
}

/// One text value, read leniently.
struct Text<'a>(&'a str);

macro_rules! parse_number {
    ($($method:ident => $ty:ty, $visit:ident;)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            match self.0.parse::<$ty>() {
                Ok(number) => visitor.$visit(number),
                Err(_) => Err(de::Error::invalid_type(Unexpected::Str(self.0), &visitor)),
            }
        }
    )*};
}

impl<'de> Deserializer<'de> for Text<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            other => Err(de::Error::invalid_type(Unexpected::Str(other), &visitor)),
        }
    }

    parse_number! {
        deserialize_i8 => i8, visit_i8;
        deserialize_i16 => i16, visit_i16;
        deserialize_i32 => i32, visit_i32;
        deserialize_i64 => i64, visit_i64;
        deserialize_i128 => i128, visit_i128;
        deserialize_u8 => u8, visit_u8;
        deserialize_u16 => u16, visit_u16;
        deserialize_u32 => u32, visit_u32;
        deserialize_u64 => u64, visit_u64;
        deserialize_u128 => u128, visit_u128;
        deserialize_f32 => f32, visit_f32;
        deserialize_f64 => f64, visit_f64;
        deserialize_char => char, visit_char;
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_borrowed_bytes(self.0.as_bytes())
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_bytes(visitor)
    }

    option_as_present_and_ignored_as_unit!();

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        Err(de::Error::invalid_type(Unexpected::Str(self.0), &visitor))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_unit(visitor)
    }

    newtype_as_itself!();

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_seq(TextSeq {
            iter: std::iter::once(self.0),
        })
    }

    tuples_as_seq!();

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        Err(de::Error::invalid_type(Unexpected::Str(self.0), &visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_enum(BorrowedStrDeserializer::new(self.0))
    }

    forward_to_deserialize_any! { str string identifier }
}

/// Several text values of one key, read as a list.
struct TextList<'a>(&'a [String]);

impl<'de> Deserializer<'de> for TextList<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_seq(TextSeq {
            iter: self.0.iter().map(String::as_str),
        })
    }

    option_as_present_and_ignored_as_unit!();

    newtype_as_itself!();

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_any(visitor)
    }

    tuples_as_seq!();

    // Several values where one is expected: a clear type error rather than picking one silently.
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        Err(de::Error::invalid_type(Unexpected::Seq, &visitor))
    }

    forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct map struct enum identifier
    }
}

/// How a file is named in type errors.
const FILE: Unexpected<'static> = Unexpected::Other("an uploaded file");

macro_rules! not_a_file {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            Err(de::Error::invalid_type(FILE, &visitor))
        }
    )*};
}

/// The files of one field: a list, or one file where one is expected.
struct FileList<'a>(&'a [UploadedFile]);

impl<'de> Deserializer<'de> for FileList<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            [file] => OneFile(file).deserialize_any(visitor),
            files => visitor.visit_seq(FileSeq(files.iter())),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.0 {
            [file] => OneFile(file).deserialize_newtype_struct(name, visitor),
            _ if name == FILE_TOKEN => Err(de::Error::invalid_length(self.0.len(), &"one file")),
            _ => visitor.visit_newtype_struct(self),
        }
    }

    option_as_present_and_ignored_as_unit!();

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_seq(FileSeq(self.0.iter()))
    }

    tuples_as_seq!();

    not_a_file! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_unit
        deserialize_map deserialize_identifier
    }

    forward_to_deserialize_any! { unit_struct struct enum }
}

/// One uploaded file.
struct OneFile<'a>(&'a UploadedFile);

impl<'de> Deserializer<'de> for OneFile<'de> {
    type Error = DeError;

    /// Read as a plain value (`serde_json::Value`, a log), a file shows its metadata.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let file = self.0;
        serde_json::json!({"name": file.name(), "mimetype": file.mimetype(), "size": file.size()})
            .deserialize_any(visitor)
            .map_err(|e| from_json(&e))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        if name == FILE_TOKEN {
            hand_over(self.0, visitor)
        } else {
            visitor.visit_newtype_struct(self)
        }
    }

    option_as_present_and_ignored_as_unit!();

    not_a_file! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_unit
        deserialize_identifier deserialize_seq
    }

    forward_to_deserialize_any! { unit_struct tuple tuple_struct map struct enum }
}

struct FileSeq<I>(I);

impl<'de, I> SeqAccess<'de> for FileSeq<I>
where
    I: Iterator<Item = &'de UploadedFile>,
{
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.0.next() {
            Some(file) => seed.deserialize(OneFile(file)).map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint().1
    }
}

struct TextSeq<I> {
    iter: I,
}

impl<'de, I> SeqAccess<'de> for TextSeq<I>
where
    I: Iterator<Item = &'de str>,
{
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.iter.next() {
            Some(text) => seed.deserialize(Text(text)).map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.iter.size_hint().1
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Role {
        Admin,
        User,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Query {
        id: u32,
        flag: bool,
        ratio: f64,
        tags: Vec<String>,
        one: Vec<u8>,
        name: Option<String>,
        missing: Option<String>,
        role: Role,
    }

    fn text(s: &str) -> InputValue {
        s.into()
    }

    #[test]
    fn text_is_lenient() {
        let input: Input = [
            ("id".to_owned(), text("5")),
            ("flag".to_owned(), text("true")),
            ("ratio".to_owned(), text("0.5")),
            (
                "tags".to_owned(),
                TextValue::Many(vec!["a".into(), "b".into()]).into(),
            ),
            ("one".to_owned(), text("7")),
            ("name".to_owned(), text("x")),
            ("role".to_owned(), text("admin")),
        ]
        .into_iter()
        .collect();
        let query = Query::deserialize(&input).unwrap();
        assert_eq!(
            query,
            Query {
                id: 5,
                flag: true,
                ratio: 0.5,
                tags: vec!["a".into(), "b".into()],
                one: vec![7],
                name: Some("x".into()),
                missing: None,
                role: Role::Admin,
            }
        );
    }

    #[test]
    fn json_is_strict() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Body {
            id: u32,
        }
        let input: Input = [("id".to_owned(), InputValue::Json(json!("5")))]
            .into_iter()
            .collect();
        let err = Body::deserialize(&input).unwrap_err();
        assert_eq!(err.message(), "invalid type: string \"5\", expected u32");
        let input: Input = [("id".to_owned(), InputValue::Json(json!(5)))]
            .into_iter()
            .collect();
        assert_eq!(Body::deserialize(&input).unwrap().id, 5);
    }

    #[test]
    fn bad_text_numbers_and_lists_are_type_errors() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct One {
            id: u8,
        }
        let input: Input = [("id".to_owned(), text("300"))].into_iter().collect();
        assert_eq!(
            One::deserialize(&input).unwrap_err().message(),
            "invalid type: string \"300\", expected u8"
        );
        let input: Input = [(
            "id".to_owned(),
            TextValue::Many(vec!["1".into(), "2".into()]).into(),
        )]
        .into_iter()
        .collect();
        assert!(
            One::deserialize(&input)
                .unwrap_err()
                .message()
                .starts_with("invalid type: sequence")
        );
        let role: Result<Role, _> = Role::deserialize(Text("nobody"));
        assert!(
            role.unwrap_err()
                .message()
                .contains("unknown variant `nobody`")
        );
        let _ = Role::User;
    }

    #[test]
    fn borrows_strings() {
        #[derive(Deserialize)]
        struct Borrowed<'a> {
            name: &'a str,
        }
        let input: Input = [("name".to_owned(), text("zero-copy"))]
            .into_iter()
            .collect();
        assert_eq!(Borrowed::deserialize(&input).unwrap().name, "zero-copy");
    }

    #[test]
    fn one_value_reads_as_its_input_reads_it() {
        assert_eq!(u32::deserialize(&text("5")).unwrap(), 5);
        assert_eq!(Option::<u8>::deserialize(&text("7")).unwrap(), Some(7));
        assert_eq!(Role::deserialize(&text("admin")).unwrap(), Role::Admin);
        let many: InputValue = TextValue::Many(vec!["a".into(), "b".into()]).into();
        assert_eq!(Vec::<String>::deserialize(&many).unwrap(), ["a", "b"]);
        assert_eq!(Vec::<u8>::deserialize(&text("3")).unwrap(), [3]);
        assert_eq!(
            u32::deserialize(&InputValue::Json(json!("5")))
                .unwrap_err()
                .message(),
            "invalid type: string \"5\", expected u32"
        );
        assert_eq!(
            bool::deserialize(&many).unwrap_err().message(),
            "invalid type: sequence, expected a boolean"
        );
    }

    #[test]
    fn unit_accepts_any_input() {
        let input: Input = [("x".to_owned(), text("1"))].into_iter().collect();
        <()>::deserialize(&input).unwrap();
    }
}
