//! The merged input object and its sources.

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::file::UploadedFile;
use crate::text::PlainQuery;

/// Up to this many earlier keys, merging scans linearly.
const LINEAR_MERGE_MAX: usize = 16;

/// A value that arrived as text (query string, path parameter, header, form field).
///
/// Repeated keys give [`TextValue::Many`]. Text values are read leniently when decoded: `"5"`
/// becomes a number, `"true"` a boolean, and one value a list of one, when the target type asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextValue {
    /// A single value.
    One(String),
    /// Several values for the same key, in arrival order.
    Many(Vec<String>),
}

impl TextValue {
    /// Adds another value for the same key.
    pub fn push(&mut self, value: String) {
        match self {
            TextValue::One(first) => {
                let first = std::mem::take(first);
                *self = TextValue::Many(vec![first, value]);
            }
            TextValue::Many(values) => values.push(value),
        }
    }
}

/// One value of the merged [`Input`], remembering whether it came as JSON (read strictly) or as
/// text (read leniently).
///
/// Exhaustive on purpose: the explanation of a failed decode (in `strata-validate`) names every
/// kind of value, and a new kind must not compile until it does.
#[derive(Debug, Clone, PartialEq)]
pub enum InputValue {
    /// A value of a JSON body.
    Json(Value),
    /// A value that came as text.
    Text(TextValue),
    /// The files uploaded under one field name (never empty), in arrival order.
    Files(Vec<UploadedFile>),
}

impl From<Value> for InputValue {
    fn from(value: Value) -> Self {
        InputValue::Json(value)
    }
}

impl From<&str> for InputValue {
    fn from(value: &str) -> Self {
        InputValue::Text(TextValue::One(value.to_owned()))
    }
}

impl From<String> for InputValue {
    fn from(value: String) -> Self {
        InputValue::Text(TextValue::One(value))
    }
}

impl From<TextValue> for InputValue {
    fn from(value: TextValue) -> Self {
        InputValue::Text(value)
    }
}

/// A JSON object body, checked (well-formed, an object) but not parsed into values: when it is
/// a request's only input, the typed input is deserialized straight from these bytes.
///
/// Its check may be deferred ([`JsonObject::deferred`]) to the reading of the typed input, which
/// then checks as it reads: the body is read once.
#[derive(Clone)]
pub struct JsonObject {
    bytes: Bytes,
    /// An object repeats a key (the last value wins, as with `JSON.parse`); `None` while the
    /// check is deferred.
    repeated_keys: Option<bool>,
}

impl PartialEq for JsonObject {
    /// Equal when the bytes are, checked or not.
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for JsonObject {}

impl fmt::Debug for JsonObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JsonObject")
            .field(&String::from_utf8_lossy(&self.bytes))
            .finish()
    }
}

/// Why a body is not a [`JsonObject`].
#[derive(Debug, thiserror::Error)]
pub enum JsonObjectError {
    /// The body is not well-formed JSON.
    #[error("Invalid JSON body: {0}")]
    Syntax(serde_json::Error),
    /// Well-formed JSON, but not an object: `"an array"`, `"a string"`, ...
    #[error("JSON body must be an object, got {0}")]
    NotAnObject(&'static str),
}

impl JsonObjectError {
    /// The 400 refusing the body, with this error's message (what the parse stage answers).
    pub fn into_api_error(self) -> strata_core::ApiError {
        strata_core::ApiError::bad_request(strata_core::ErrorKind::Parse, self.to_string())
    }
}

impl JsonObject {
    /// Checks that `bytes` hold one well-formed JSON object, as strictly as parsing it into a
    /// `serde_json::Value` would (numbers in range, valid strings and escapes), in a pass that
    /// builds nothing.
    ///
    /// ```
    /// use strata_input::JsonObject;
    ///
    /// assert!(JsonObject::new(r#"{"a": [1, 2]}"#).is_ok());
    /// assert_eq!(JsonObject::new("[1]").unwrap_err().to_string(), "JSON body must be an object, got an array");
    /// assert!(JsonObject::new("{").unwrap_err().to_string().starts_with("Invalid JSON body: EOF"));
    /// ```
    pub fn new(bytes: impl Into<Bytes>) -> Result<Self, JsonObjectError> {
        let mut object = Self::deferred(bytes)?;
        object.check()?;
        Ok(object)
    }

    /// A body that begins as an object (its first character past whitespace is `{`), the rest
    /// of its check deferred to its first reading; anything else is checked, and refused, as
    /// [`JsonObject::new`] does.
    ///
    /// Deserializing an [`Input`] that is such an object (`&Input` is a deserializer) checks
    /// the body as it reads the typed value, in the same pass, and fails where the result could
    /// differ from reading a checked object: the body is not well-formed, or a key repeats.
    /// `strata_decode::Decoder` then [checks](Self::check) the object and reads it again,
    /// refusing a malformed body with the 400 of [`JsonObjectError`]. Its members
    /// ([`to_map`](Self::to_map), [`Input::get`]) are empty while it is not well-formed: give
    /// such an object only to a stage that decodes it next.
    ///
    /// ```
    /// use strata_input::JsonObject;
    ///
    /// let mut object = JsonObject::deferred(r#"{"a": 1,}"#).unwrap();
    /// assert!(!object.is_checked());
    /// assert!(object.check().unwrap_err().to_string().starts_with("Invalid JSON body: trailing comma"));
    /// assert!(JsonObject::deferred("[1]").is_err());
    /// ```
    pub fn deferred(bytes: impl Into<Bytes>) -> Result<Self, JsonObjectError> {
        let bytes = bytes.into();
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
        if first == Some(b'{') {
            return Ok(Self {
                bytes,
                repeated_keys: None,
            });
        }
        serde_json::from_slice::<Checked>(&bytes).map_err(JsonObjectError::Syntax)?;
        match first {
            Some(b'[') => Err(JsonObjectError::NotAnObject("an array")),
            Some(b'"') => Err(JsonObjectError::NotAnObject("a string")),
            Some(b't' | b'f') => Err(JsonObjectError::NotAnObject("a boolean")),
            Some(b'n') => Err(JsonObjectError::NotAnObject("null")),
            _ => Err(JsonObjectError::NotAnObject("a number")),
        }
    }

    /// Whether the object is checked ([`JsonObject::new`]), or its check is still deferred
    /// ([`JsonObject::deferred`]).
    pub fn is_checked(&self) -> bool {
        self.repeated_keys.is_some()
    }

    /// Checks a [deferred](Self::deferred) object as [`JsonObject::new`] would have (once: a
    /// checked object is left as it is).
    ///
    /// # Errors
    ///
    /// [`JsonObjectError::Syntax`] when the body is not well-formed JSON.
    pub fn check(&mut self) -> Result<(), JsonObjectError> {
        if self.repeated_keys.is_some() {
            return Ok(());
        }
        // JSON text is UTF-8 (RFC 8259): checked for the whole body in one fast pass,
        // serde_json need not check each string on its own (a third of the work on a typical
        // body). A body that is not UTF-8 is read as bytes, for serde_json's own message and
        // position.
        let repeated_keys = match std::str::from_utf8(&self.bytes) {
            Ok(text) => check_object(&mut serde_json::Deserializer::from_str(text)),
            Err(_) => check_object(&mut serde_json::Deserializer::from_slice(&self.bytes)),
        }
        .map_err(JsonObjectError::Syntax)?;
        self.repeated_keys = Some(repeated_keys);
        Ok(())
    }

    /// The body's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The body as text: always, for an object that passed [`JsonObject::new`] (checked again
    /// here, in one pass over the bytes: cheaper than `serde_json` checking each string).
    pub(crate) fn as_text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }

    /// The object's members, parsed (none when a [deferred](Self::deferred) object is not
    /// well-formed).
    pub fn to_map(&self) -> Map<String, Value> {
        // Checked at construction (unless deferred): parsing cannot fail.
        serde_json::from_slice(&self.bytes).unwrap_or_default()
    }

    fn entries(&self) -> Vec<(String, InputValue)> {
        self.to_map()
            .into_iter()
            .map(|(k, v)| (k, InputValue::Json(v)))
            .collect()
    }
}

/// Checks one JSON object and the end of the text; returns whether a key repeats anywhere in it.
pub(crate) fn check_object<'de, R: serde_json::de::Read<'de>>(
    json: &mut serde_json::Deserializer<R>,
) -> Result<bool, serde_json::Error> {
    // Through a map visitor, for serde_json's map errors ("trailing comma", ...).
    let repeated = serde::Deserializer::deserialize_map(&mut *json, CheckVisitor)?;
    json.end()?;
    Ok(repeated)
}

/// An object key, borrowed from the body unless it has escapes (serde's `Cow` always copies).
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl<'de> serde::de::Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(key)))
            }

            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(key.to_owned())))
            }
        }

        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Up to this many keys per object, repeats are found by comparing on the stack; more are hashed.
const LINEAR_KEYS_MAX: usize = 16;

/// The keys of one object read so far, to find a repeat.
pub(crate) struct Keys<K> {
    first: [Option<K>; LINEAR_KEYS_MAX],
    count: usize,
    hashed: Option<std::collections::HashSet<K>>,
}

impl<K: Eq + std::hash::Hash> Keys<K> {
    pub(crate) fn new() -> Self {
        Self {
            first: [const { None }; LINEAR_KEYS_MAX],
            count: 0,
            hashed: None,
        }
    }

    /// Adds `key`: whether the object had it already.
    pub(crate) fn repeats(&mut self, key: K) -> bool {
        if let Some(set) = &mut self.hashed {
            return !set.insert(key);
        }
        if self.first[..self.count].iter().flatten().any(|k| *k == key) {
            return true;
        }
        if self.count == LINEAR_KEYS_MAX {
            let mut set: std::collections::HashSet<K> =
                self.first.iter_mut().filter_map(Option::take).collect();
            set.insert(key);
            self.hashed = Some(set);
        } else {
            self.first[self.count] = Some(key);
            self.count += 1;
        }
        false
    }
}

/// Checks one JSON value the way parsing it into a `serde_json::Value` would (numbers in range,
/// strings valid, escapes valid) without building it, and tells whether an object at any depth
/// repeats a key.
pub(crate) struct Checked(pub(crate) bool);

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckVisitor).map(Checked)
    }
}

pub(crate) struct CheckVisitor;

impl<'de> serde::de::Visitor<'de> for CheckVisitor {
    /// Whether a key repeats somewhere in the value.
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut repeated = false;
        while let Some(Checked(inner)) = seq.next_element()? {
            repeated |= inner;
        }
        Ok(repeated)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut keys = Keys::new();
        let mut repeated = false;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let Checked(inner) = map.next_value()?;
            repeated |= inner;
            if !repeated {
                repeated = keys.repeats(key);
            }
        }
        Ok(repeated)
    }
}

/// An input that is one source read as it arrived (a JSON object body, a plain query), and its
/// entries once someone asks for them by key.
#[derive(Debug, Clone)]
struct LazyInput {
    source: LazySource,
    entries: OnceLock<Vec<(String, InputValue)>>,
}

#[derive(Debug, Clone)]
pub(crate) enum LazySource {
    Json(JsonObject),
    Query(PlainQuery),
}

impl LazySource {
    fn entries(&self) -> Vec<(String, InputValue)> {
        match self {
            LazySource::Json(object) => object.entries(),
            LazySource::Query(query) => query
                .pairs()
                .map(|(k, v)| (k.to_owned(), InputValue::Text(TextValue::One(v.to_owned()))))
                .collect(),
        }
    }
}

/// The merged input of a request: the entries of every configured source, later sources
/// overwriting earlier ones key by key.
///
/// Stored as a small vector (inputs have few keys; a linear scan beats hashing there). Decode it
/// into a typed value with `strata_decode::Decoder`, or deserialize it directly: `&Input`
/// implements [`serde::Deserializer`].
///
/// ```
/// use strata_input::Input;
///
/// let mut input = Input::new();
/// input.insert("id", "from query".into());
/// input.insert("id", "from params".into());
/// assert_eq!(input.len(), 1);
/// assert_eq!(input.get("id"), Some(&"from params".into()));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Input {
    entries: Vec<(String, InputValue)>,
    /// Set when the whole input is one JSON object body or one plain query (then `entries` is
    /// empty): decoding reads it directly instead of building values first.
    /// Inline: a box would cost an allocation on every request with a body or a query.
    lazy: Option<LazyInput>,
}

impl PartialEq for Input {
    fn eq(&self, other: &Self) -> bool {
        self.entries() == other.entries()
    }
}

impl From<JsonObject> for Input {
    /// An input that is this object's members.
    fn from(object: JsonObject) -> Self {
        if object.repeated_keys == Some(true) {
            // Read from bytes, a struct would refuse a repeated field; as members, the last
            // value wins, as it always has for JSON bodies.
            return Self {
                entries: object.entries(),
                lazy: None,
            };
        }
        Self::lazy(LazySource::Json(object))
    }
}

impl From<PlainQuery> for Input {
    /// An input that is this query's parameters.
    fn from(query: PlainQuery) -> Self {
        Self::lazy(LazySource::Query(query))
    }
}

impl Input {
    /// An empty input.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty input with room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: Vec::with_capacity(capacity),
            lazy: None,
        }
    }

    fn lazy(source: LazySource) -> Self {
        Self {
            entries: Vec::new(),
            lazy: Some(LazyInput {
                source,
                entries: OnceLock::new(),
            }),
        }
    }

    /// The JSON object body this input is, when it is exactly that.
    pub fn as_json_object(&self) -> Option<&JsonObject> {
        match self.lazy.as_ref()?.source {
            LazySource::Json(ref object) => Some(object),
            LazySource::Query(_) => None,
        }
    }

    /// The plain query this input is, when it is exactly that (read in place when decoded).
    pub fn as_plain_query(&self) -> Option<&PlainQuery> {
        match self.lazy.as_ref()?.source {
            LazySource::Query(ref query) => Some(query),
            LazySource::Json(_) => None,
        }
    }

    /// The source this input is read from as it arrived, when it is exactly one.
    pub(crate) fn lazy_source(&self) -> Option<&LazySource> {
        self.lazy.as_ref().map(|lazy| &lazy.source)
    }

    /// The entries in insertion order (a lazy input's are read once, on the first call).
    pub fn entries(&self) -> &[(String, InputValue)] {
        match &self.lazy {
            Some(lazy) => lazy.entries.get_or_init(|| lazy.source.entries()),
            None => &self.entries,
        }
    }

    /// Turns a lazy input into entries, before a change.
    fn materialize(&mut self) {
        if let Some(lazy) = self.lazy.take() {
            let LazyInput { source, entries } = lazy;
            self.entries = entries.into_inner().unwrap_or_else(|| source.entries());
        }
    }

    /// Sets `key`, replacing an earlier value of the same key.
    pub fn insert(&mut self, key: impl Into<String> + AsRef<str>, value: InputValue) {
        self.materialize();
        if let Some(slot) = self.entries.iter_mut().find(|(k, _)| k == key.as_ref()) {
            slot.1 = value;
        } else {
            self.entries.push((key.into(), value));
        }
    }

    /// Adds the entries of one source. Keys repeated inside `entries` are assumed unique (every
    /// source is already a map); they replace values of earlier sources.
    pub fn merge(&mut self, entries: impl IntoIterator<Item = (String, InputValue)>) {
        self.materialize();
        let earlier = self.entries.len();
        if earlier == 0 {
            self.entries.extend(entries);
        } else if earlier <= LINEAR_MERGE_MAX {
            for (key, value) in entries {
                match self.entries[..earlier].iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = value,
                    None => self.entries.push((key, value)),
                }
            }
        } else {
            // Many earlier keys (a large query or body): index them, so merging stays linear.
            let index: HashMap<&str, usize> = self
                .entries
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.as_str(), i))
                .collect();
            let mut replaced = Vec::new();
            let mut added = Vec::new();
            for (key, value) in entries {
                match index.get(key.as_str()) {
                    Some(&position) => replaced.push((position, value)),
                    None => added.push((key, value)),
                }
            }
            drop(index);
            for (position, value) in replaced {
                self.entries[position].1 = value;
            }
            self.entries.extend(added);
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&InputValue> {
        self.entries()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Removes and returns the value of `key`.
    pub fn remove(&mut self, key: &str) -> Option<InputValue> {
        self.materialize();
        let index = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(index).1)
    }

    /// The entries in insertion order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &InputValue)> {
        self.entries().iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
}

impl FromIterator<(String, InputValue)> for Input {
    fn from_iter<T: IntoIterator<Item = (String, InputValue)>>(iter: T) -> Self {
        let mut input = Input::new();
        for (k, v) in iter {
            input.insert(k, v);
        }
        input
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_overwrites_earlier_sources_only() {
        let mut input = Input::new();
        input.merge([("a".to_owned(), "1".into()), ("b".to_owned(), "2".into())]);
        input.merge([("b".to_owned(), "3".into()), ("c".to_owned(), "4".into())]);
        let keys: Vec<_> = input.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(input.get("b"), Some(&"3".into()));
        assert_eq!(input.remove("a"), Some("1".into()));
        assert_eq!(input.len(), 2);
    }

    #[test]
    fn merge_over_many_keys_uses_the_index() {
        let mut input = Input::new();
        input.merge((0..100).map(|i| (format!("k{i}"), InputValue::from(i.to_string()))));
        input.merge([
            ("k5".to_owned(), "new".into()),
            ("extra".to_owned(), "x".into()),
        ]);
        assert_eq!(input.len(), 101);
        assert_eq!(input.get("k5"), Some(&"new".into()));
        assert_eq!(input.iter().last().map(|(k, _)| k), Some("extra"));
    }

    #[test]
    fn text_push_makes_lists() {
        let mut v = TextValue::One("1".into());
        v.push("2".into());
        v.push("3".into());
        assert_eq!(v, TextValue::Many(vec!["1".into(), "2".into(), "3".into()]));
    }
}

#[cfg(test)]
mod json_tests {
    use super::*;

    #[test]
    fn a_json_input_reads_like_entries_and_turns_into_them_on_change() {
        let object = JsonObject::new(r#" {"a": 1, "b": "x"} "#).unwrap();
        let mut input = Input::from(object.clone());
        assert_eq!(input.as_json_object(), Some(&object));
        assert_eq!(input.len(), 2);
        assert_eq!(input.get("b"), Some(&InputValue::Json(Value::from("x"))));
        let same: Input = [
            ("a".to_owned(), InputValue::Json(Value::from(1))),
            ("b".to_owned(), InputValue::Json(Value::from("x"))),
        ]
        .into_iter()
        .collect();
        assert_eq!(input, same);
        input.insert("c", "text".into());
        assert!(input.as_json_object().is_none());
        assert_eq!(
            input.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        #[derive(serde::Deserialize)]
        struct Body {
            a: u32,
        }
        let many = format!(
            "{{{}, \"a\": 1, \"a\": 2}}",
            (0..20)
                .map(|i| format!("\"k{i}\": {i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for body in [r#"{"a": 1, "a": 2}"#, many.as_str()] {
            let input = Input::from(JsonObject::new(body.to_owned()).unwrap());
            assert!(input.as_json_object().is_none());
            assert_eq!(
                <Body as serde::Deserialize>::deserialize(&input).unwrap().a,
                2
            );
        }
        let input = Input::from(JsonObject::new(r#"{"a": 1, "b": {"a": 1}}"#).unwrap());
        assert!(input.as_json_object().is_some());
        // A repeat inside a nested object takes the members path too.
        let input = Input::from(JsonObject::new(r#"{"b": [{"x": 1, "x": 2}]}"#).unwrap());
        assert!(input.as_json_object().is_none());
        // An escaped key is the same key.
        let input = Input::from(JsonObject::new(r#"{"a": 1, "\u0061": 2}"#).unwrap());
        assert_eq!(
            <Body as serde::Deserialize>::deserialize(&input).unwrap().a,
            2
        );
    }

    #[test]
    fn what_is_not_an_object_is_named() {
        for (body, what) in [
            ("[]", "an array"),
            ("\"s\"", "a string"),
            ("1", "a number"),
            ("true", "a boolean"),
            ("null", "null"),
        ] {
            match JsonObject::new(body) {
                Err(JsonObjectError::NotAnObject(got)) => assert_eq!(got, what),
                other => panic!("{body}: {other:?}"),
            }
        }
        assert!(matches!(
            JsonObject::new("{} x"),
            Err(JsonObjectError::Syntax(_))
        ));
        // What a value parse refuses, the check refuses: numbers out of range, bad strings.
        for body in [
            &br#"{"a": 1e400, "b": 1}"#[..],
            br#"{"a": "\ud800", "b": 1}"#,
            b"{\"a\": \"\xff\", \"b\": 1}",
            b"[1e400]",
        ] {
            assert!(
                matches!(
                    JsonObject::new(body.to_vec()),
                    Err(JsonObjectError::Syntax(_))
                ),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
