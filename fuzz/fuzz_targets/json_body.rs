//! The JSON body check: `strata_input::JsonObject::new`, and the `Input` it becomes.
//!
//! Input: the body bytes, as they arrive.
//!
//! Invariants (each a panic when broken):
//! - `JsonObject::new` accepts exactly what `serde_json::from_slice::<Map<String, Value>>`
//!   accepts (one object, trailing whitespace only, same recursion limit, same number range and
//!   string rules); for an object-looking body the error message is serde_json's own.
//! - A refusal is `NotAnObject(kind)` exactly when the bytes are well-formed JSON that is not an
//!   object, and `kind` names the value's type; otherwise it is `Syntax`, with serde_json's message
//!   for the same bytes.
//! - Accepted: `as_bytes` is the body; `to_map` equals serde_json's map (last repeated key wins).
//! - `Input::from(object)` keeps the bytes (fast path) exactly when no object at any depth repeats
//!   a key (checked by a plain `HashSet` visitor here, keys compared after unescaping); either
//!   way its entries are the map's, and deserializing a `serde_json::Value` from the input gives
//!   the map back.
//! - Read in one pass (`JsonObject::deferred`, the check folded into the typed read): a value
//!   the one pass gives is the value the checked object gives, for a `Value` and for a struct
//!   that skips unknown members (the skipped values are what the one pass must check itself);
//!   a body that is not well-formed gives none.
#![no_main]

use std::collections::HashSet;
use std::fmt;

use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use strata_input::{Input, InputValue, JsonObject, JsonObjectError};

/// Whether any object in a JSON value repeats a key: the reference for the fast-path decision.
struct Repeats;

impl<'de> DeserializeSeed<'de> for Repeats {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Repeats {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON")
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
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut any = false;
        while let Some(inner) = seq.next_element_seed(Repeats)? {
            any |= inner;
        }
        Ok(any)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut seen = HashSet::new();
        let mut any = false;
        while let Some(key) = map.next_key::<String>()? {
            any |= !seen.insert(key);
            any |= map.next_value_seed(Repeats)?;
        }
        Ok(any)
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
        Value::Number(_) => "a number",
        Value::Object(_) => unreachable!("objects are accepted"),
    }
}

/// Two members read, the rest skipped unread by serde: the one pass checks them itself.
#[derive(Debug, PartialEq, Deserialize)]
struct Probe {
    #[serde(default)]
    a: Option<Value>,
    #[serde(default)]
    b: Option<u8>,
}

/// What one pass gives for `data`, for `T`, is what the checked object gives (when the one pass
/// gives a value at all: else the decoder checks and reads again).
fn one_pass_agrees<T: for<'de> Deserialize<'de> + PartialEq + fmt::Debug>(
    data: &[u8],
    checked: Option<&JsonObject>,
) {
    let Ok(deferred) = JsonObject::deferred(data.to_vec()) else {
        return;
    };
    let Ok(value) = T::deserialize(&Input::from(deferred)) else {
        return;
    };
    let checked = checked.expect("one pass read a body the check refuses");
    let read = T::deserialize(&Input::from(checked.clone())).expect("checked read fails");
    assert_eq!(value, read, "one pass and checked read differ");
}

fuzz_target!(|data: &[u8]| {
    let checked = JsonObject::new(data.to_vec());
    one_pass_agrees::<Value>(data, checked.as_ref().ok());
    one_pass_agrees::<Probe>(data, checked.as_ref().ok());
    let as_map = serde_json::from_slice::<Map<String, Value>>(data);
    let as_value = serde_json::from_slice::<Value>(data);
    let object = match (checked, &as_map) {
        (Ok(object), Ok(map)) => {
            assert_eq!(object.as_bytes(), data);
            assert_eq!(&object.to_map(), map, "to_map");
            object
        }
        (Err(JsonObjectError::NotAnObject(kind)), Err(_)) => {
            let value = as_value.expect("NotAnObject for bytes serde_json refuses");
            assert_eq!(kind, kind_of(&value));
            return;
        }
        (Err(JsonObjectError::Syntax(error)), Err(map_error)) => {
            match as_value {
                Ok(value) => panic!("Syntax error {error} for well-formed {}", kind_of(&value)),
                Err(value_error) => {
                    let first = data.iter().find(|b| !b.is_ascii_whitespace());
                    let reference = if first == Some(&b'{') {
                        map_error
                    } else {
                        &value_error
                    };
                    assert_eq!(error.to_string(), reference.to_string(), "error message");
                }
            }
            return;
        }
        (Ok(_), Err(error)) => panic!("accepted what serde_json refuses: {error}"),
        (Err(error), Ok(_)) => panic!("refused a well-formed object: {error}"),
    };
    let map = as_map.expect("accepted");

    let repeats = Repeats
        .deserialize(&mut serde_json::Deserializer::from_slice(data))
        .expect("well-formed");
    let input = Input::from(object.clone());
    assert_eq!(
        input.as_json_object().is_some(),
        !repeats,
        "fast path taken with repeated keys, or refused without"
    );
    let entries: Vec<(&str, &InputValue)> = input.iter().collect();
    let expected: Vec<(String, InputValue)> = map
        .iter()
        .map(|(k, v)| (k.clone(), InputValue::Json(v.clone())))
        .collect();
    assert_eq!(entries.len(), expected.len());
    for ((key, value), (want_key, want_value)) in entries.iter().zip(&expected) {
        assert_eq!(key, want_key);
        assert_eq!(*value, want_value);
    }
    // `get` scans: look up at most ~32 keys, spread over the map, to keep runs fast.
    let step = map.len() / 32 + 1;
    for (key, value) in map.iter().step_by(step) {
        assert_eq!(input.get(key), Some(&InputValue::Json(value.clone())));
    }
    let read_back = Value::deserialize(&input).expect("an accepted object deserializes");
    assert_eq!(read_back, Value::Object(map), "Value read from the input");
});
