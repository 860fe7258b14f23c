//! The merged input object and its sources.

use std::collections::HashMap;

use serde_json::Value;

use crate::upload::UploadedFile;

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
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

/// The merged input of a request: the entries of every configured source, later sources
/// overwriting earlier ones key by key.
///
/// Stored as a small vector (inputs have few keys; a linear scan beats hashing there). Decode it
/// into a typed value with [`Decoder`](crate::Decoder), or deserialize it directly: `&Input`
/// implements [`serde::Deserializer`].
///
/// ```
/// use strata_core::Input;
///
/// let mut input = Input::new();
/// input.insert("id", "from query".into());
/// input.insert("id", "from params".into());
/// assert_eq!(input.len(), 1);
/// assert_eq!(input.get("id"), Some(&"from params".into()));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Input {
    entries: Vec<(String, InputValue)>,
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
        }
    }

    /// Sets `key`, replacing an earlier value of the same key.
    pub fn insert(&mut self, key: impl Into<String> + AsRef<str>, value: InputValue) {
        if let Some(slot) = self.entries.iter_mut().find(|(k, _)| k == key.as_ref()) {
            slot.1 = value;
        } else {
            self.entries.push((key.into(), value));
        }
    }

    /// Adds the entries of one source. Keys repeated inside `entries` are assumed unique (every
    /// source is already a map); they replace values of earlier sources.
    pub fn merge(&mut self, entries: impl IntoIterator<Item = (String, InputValue)>) {
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
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Removes and returns the value of `key`.
    pub fn remove(&mut self, key: &str) -> Option<InputValue> {
        let index = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(index).1)
    }

    /// The entries in insertion order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &InputValue)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
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

/// A place a request's input comes from (spec table 2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputSource {
    /// The parsed query string.
    Query,
    /// The parsed body (JSON or urlencoded form).
    Body,
    /// The path parameters found by routing.
    Params,
    /// Uploaded files (multipart; only when uploads are enabled).
    Files,
    /// Request headers, with lower-case names.
    Headers,
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
