//! Turning the merged [`Input`] into a typed, validated value, and checking outputs.

use std::fmt::Write as _;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use derive_where::derive_where;
use garde::Validate;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use strata_core::{ApiError, ErrorKind};
use strata_input::{Input, InputValue, JsonObjectError};

use crate::confirm::{readable, reads_fields};
use crate::explain::{
    Cause, Explained, Issue, MAX_ISSUES, explain, joined, natural_order, plain_words, render,
};

/// Maps the Rust field names in garde's paths to the names used on the wire (as serde reads and
/// writes them), by walking the type's JSON Schema along the path.
///
/// garde ignores serde renames; clients must see `userName`, not `user_name`. The schema is
/// generated on the first validation failure and kept.
#[derive(Debug)]
struct WireNames {
    schema: Value,
}

/// Bound on `$ref` chains, against cyclic schemas.
const MAX_REF_DEPTH: usize = 32;

impl WireNames {
    fn of<T: JsonSchema>() -> Self {
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
        WireNames {
            schema: schema.to_value(),
        }
    }

    /// Follows `$ref`s to local definitions.
    fn resolve<'a>(&'a self, mut node: &'a Value) -> &'a Value {
        for _ in 0..MAX_REF_DEPTH {
            let Some(target) = node.get("$ref").and_then(Value::as_str) else {
                break;
            };
            let Some(name) = target.strip_prefix("#/$defs/") else {
                break;
            };
            match self.schema.get("$defs").and_then(|defs| defs.get(name)) {
                Some(next) => node = next,
                None => break,
            }
        }
        node
    }

    /// The wire name of Rust field `rust` in the object schema `node`, and the field's schema.
    fn property<'a>(
        &'a self,
        node: &'a Value,
        rust: &str,
        depth: usize,
    ) -> Option<(&'a str, &'a Value)> {
        let node = self.resolve(node);
        if let Some(Value::Object(properties)) = node.get("properties") {
            let exact = properties.iter().find(|(wire, _)| *wire == rust);
            let renamed = || {
                properties
                    .iter()
                    .find(|(wire, _)| to_snake_case(wire) == rust)
            };
            if let Some((wire, schema)) = exact.or_else(renamed) {
                return Some((wire.as_str(), schema));
            }
        }
        if depth < MAX_REF_DEPTH {
            for combinator in ["allOf", "anyOf", "oneOf"] {
                if let Some(Value::Array(members)) = node.get(combinator)
                    && let Some(found) = members
                        .iter()
                        .find_map(|m| self.property(m, rust, depth + 1))
                {
                    return Some(found);
                }
            }
        }
        None
    }

    /// The schema of the elements (or map values) of `node`.
    fn element<'a>(&'a self, node: &'a Value, depth: usize) -> Option<&'a Value> {
        let node = self.resolve(node);
        if let Some(items) = node
            .get("items")
            .or_else(|| node.get("additionalProperties"))
        {
            return items.is_object().then_some(items);
        }
        if depth < MAX_REF_DEPTH {
            for combinator in ["allOf", "anyOf", "oneOf"] {
                if let Some(Value::Array(members)) = node.get(combinator)
                    && let Some(found) = members.iter().find_map(|m| self.element(m, depth + 1))
                {
                    return Some(found);
                }
            }
        }
        None
    }

    /// Writes `path` with wire names; a component the schema does not explain keeps its Rust
    /// name (a map key, or a field renamed to something unrelated).
    fn write_path(
        &self,
        path: &garde::error::Path,
        out: &mut String,
        mut wrote_path: bool,
    ) -> bool {
        let mut node = Some(&self.schema);
        // `__iter` yields leaf first; it is garde's only way to see path components.
        for (kind, component) in path.__iter().rev() {
            match kind {
                garde::error::Kind::Key => {
                    if wrote_path {
                        out.push('.');
                    }
                    if let Some((wire, schema)) = node.and_then(|n| self.property(n, component, 0))
                    {
                        out.push_str(wire);
                        node = Some(schema);
                    } else {
                        out.push_str(component);
                        // A map key: what follows is described by the map's values.
                        node = node.and_then(|n| self.resolve(n).get("additionalProperties"));
                    }
                }
                garde::error::Kind::Index => {
                    let _ = write!(out, "[{component}]");
                    node = node.and_then(|n| self.element(n, 0));
                }
                garde::error::Kind::None => continue,
            }
            wrote_path = true;
        }
        wrote_path
    }
}

/// Reads an optional field that may be left out but not sent as `null`.
///
/// serde (and so Strata) reads `null` as `None` for an `Option<T>` field, which is what most
/// JSON clients mean. For a field where `null` must be refused (zod's `optional()`), pair this
/// with `#[serde(default)]` and tell schemars the field's type, so the document and the error
/// say `null` is not allowed:
///
/// ```
/// use garde::Validate;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use strata_input::{Input, InputValue};
/// use strata_decode::Decoder;
///
/// #[derive(Debug, Deserialize, Validate, JsonSchema)]
/// struct Patch {
///     #[garde(skip)]
///     #[serde(default, deserialize_with = "strata_decode::not_null")]
///     #[schemars(with = "String")]
///     nickname: Option<String>,
/// }
///
/// let decoder = Decoder::<Patch>::new();
/// assert_eq!(decoder.decode(&Input::new()).unwrap().nickname, None);
/// let mut input = Input::new();
/// input.insert("nickname", InputValue::Json(serde_json::Value::Null));
/// let err = decoder.decode(&input).unwrap_err();
/// assert_eq!(err.message(), "nickname: expected string, received null");
/// ```
pub fn not_null<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// `userName`, `UserName`, `user-name`, `USER_NAME` → `user_name`.
fn to_snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev_lower_or_digit = false;
    for c in name.chars() {
        if c == '-' {
            out.push('_');
            prev_lower_or_digit = false;
        } else if c.is_uppercase() {
            if prev_lower_or_digit {
                out.push('_');
            }
            out.extend(c.to_lowercase());
            prev_lower_or_digit = false;
        } else {
            out.push(c);
            prev_lower_or_digit = c.is_lowercase() || c.is_ascii_digit();
        }
    }
    out
}

/// The 400 of an input that fails: its problems joined, each one kept apart too.
fn invalid(message: String, ends: Vec<usize>) -> ApiError {
    ApiError::bad_request(ErrorKind::InputValidation, "").with_problems(message, ends)
}

/// Renders a garde report as `path: message; path: message` (at most [`MAX_ISSUES`], then
/// `… and N more`), with wire names and an optional path prefix (`output`); with where each
/// problem ends in the text.
fn describe_report(
    report: &garde::Report,
    names: &WireNames,
    prefix: Option<&str>,
) -> (String, Vec<usize>) {
    let mut out = String::new();
    let mut ends = Vec::new();
    let mut count = 0;
    // Written in place: an invalid input is a common answer, not a rare one.
    for (path, error) in report.iter() {
        count += 1;
        if count > MAX_ISSUES {
            continue;
        }
        if !out.is_empty() {
            out.push_str("; ");
        }
        if let Some(prefix) = prefix {
            out.push_str(prefix);
        }
        if names.write_path(path, &mut out, prefix.is_some()) {
            out.push_str(": ");
        }
        out.push_str(error.message());
        ends.push(out.len());
    }
    if count > MAX_ISSUES {
        let _ = write!(out, "; … and {} more", count - MAX_ISSUES);
        ends.push(out.len());
    }
    (out, ends)
}

/// Decodes the merged [`Input`] into `T` (serde, lenient for text values) and runs `T`'s garde
/// rules; every failure is a 400 [`ApiError`] whose message lists the problems as
/// `path: message; ...`, at most 100 of them (then `… and N more`).
///
/// When decoding fails, the input is checked against `T`'s JSON Schema to name every problem
/// at once in JSON's words: each missing required field (`age: required`), each value of the
/// wrong type (`id: expected integer, received string "abc"`), each rule a present value breaks.
///
/// Cloning is cheap; clones share the lazily built map of wire names.
///
/// ```
/// use garde::Validate;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use strata_input::Input;
/// use strata_decode::Decoder;
///
/// #[derive(Debug, Deserialize, Validate, JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// struct Person {
///     #[garde(length(chars, min = 1))]
///     user_name: String,
///     #[garde(range(max = 150))]
///     age: u8,
/// }
///
/// let decoder = Decoder::<Person>::new();
/// let mut input = Input::new();
/// input.insert("userName", "".into());
/// input.insert("age", "151".into());
/// let err = decoder.decode(&input).unwrap_err();
/// assert_eq!(err.status(), 400);
/// assert_eq!(err.message(), "age: greater than 150; userName: length is lower than 1");
/// ```
// Whatever `T` is: a decoder only names it. Debug shows it (the marker prints its type).
#[derive_where(Clone, Debug, Default)]
pub struct Decoder<T> {
    // A cache, filled on the first failure.
    #[derive_where(skip)]
    names: Arc<OnceLock<WireNames>>,
    _type: PhantomData<fn() -> T>,
}

impl<T> Decoder<T> {
    /// A decoder for `T`.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<T> Decoder<T>
where
    T: JsonSchema + Validate,
    T::Context: Default,
{
    fn names(&self) -> &WireNames {
        self.names.get_or_init(WireNames::of::<T>)
    }

    /// Runs `value`'s garde rules; on failure, the message lists every violation, each path
    /// prefixed with `prefix` when given (e.g. `output.items[0].name: ...`).
    pub fn check(&self, value: &T, prefix: Option<&str>) -> Result<(), String> {
        self.problems(value, prefix).map_err(|(text, _)| text)
    }

    /// [`check`](Self::check), with where each problem ends in the text.
    fn problems(&self, value: &T, prefix: Option<&str>) -> Result<(), (String, Vec<usize>)> {
        value
            .validate()
            .map_err(|report| describe_report(&report, self.names(), prefix))
    }
}

impl<T> Decoder<T>
where
    T: DeserializeOwned + JsonSchema + Validate,
    T::Context: Default,
{
    /// The problems the schema finds in `entries` that serde agrees with: a value the schema
    /// says does not decode is not a problem when `T`'s deserializer reads it (a lenient
    /// `deserialize_with` reads what its schema refuses), so an entry's decoding problems are
    /// dropped when its value decodes. Its rule problems stay (garde checks them once decoded),
    /// as do missing fields and, in an entry that does not decode, every problem inside it.
    fn agreed(
        &self,
        entries: &[(String, InputValue)],
        explained: Explained,
    ) -> (Vec<Issue>, usize) {
        let Explained {
            mut issues,
            mut total,
            unkept,
            ..
        } = explained;
        let mut suspects: Vec<usize> = issues
            .iter()
            .filter(|issue| issue.cause == Cause::Decoding)
            .filter_map(|issue| issue.entry)
            .chain(unkept.keys().copied())
            .collect();
        suspects.sort_unstable();
        suspects.dedup();
        // At most one deserialization per suspect entry (see `readable`).
        let decoding = if suspects.is_empty() || !reads_fields(&self.names().schema) {
            Vec::new()
        } else {
            readable::<T>(entries, &suspects)
        };
        let decodes =
            |entry: Option<usize>| entry.is_some_and(|e| decoding.binary_search(&e).is_ok());
        let before = issues.len();
        issues.retain(|issue| issue.cause != Cause::Decoding || !decodes(issue.entry));
        let unlisted: usize = decoding.iter().filter_map(|e| unkept.get(e)).sum();
        // Two entries whose long keys are cut to the same path may have said the same thing.
        issues.dedup_by(|a, b| a.path == b.path && a.message == b.message);
        total -= before - issues.len() + unlisted;
        (issues, total)
    }

    /// Every problem of `input`, which `T` failed to decode from with serde's message `plain`:
    /// the schema's explanation where serde agrees, and serde's own problem when no explained
    /// one is at its place (what a schema cannot show: a custom deserializer, a `flatten`, a
    /// file sent as text).
    fn explain(&self, input: &Input, plain: &str) -> (String, Vec<usize>) {
        let entries = input.entries();
        let explained = explain(&self.names().schema, entries);
        let (mut issues, mut total) = self.agreed(entries, explained);
        let (path, message) = match serde_path_to_error::deserialize::<_, T>(input) {
            Err(tracked) => {
                let path = if tracked.path().iter().next().is_some() {
                    tracked.path().to_string()
                } else {
                    String::new()
                };
                (path, tracked.inner().to_string())
            }
            Ok(_) => (String::new(), plain.to_owned()),
        };
        let (field, message) = plain_words(&message);
        let path = match field {
            Some(field) => joined(&path, &field),
            None => path,
        };
        let at_or_under = |outer: &str, inner: &str| {
            inner == outer
                || (inner.starts_with(outer)
                    && (outer.is_empty() || matches!(inner.as_bytes()[outer.len()], b'.' | b'[')))
        };
        let covered = issues
            .iter()
            .any(|issue| at_or_under(&path, &issue.path) || at_or_under(&issue.path, &path));
        if !covered || issues.is_empty() {
            issues.insert(
                0,
                Issue {
                    path,
                    message,
                    entry: None,
                    cause: Cause::Decoding,
                },
            );
            total += 1;
            issues.sort_by(|a, b| natural_order(&a.path, &b.path));
        }
        render(
            issues.into_iter().map(|issue| (issue.path, issue.message)),
            total,
        )
    }

    /// Decodes and validates.
    pub fn decode(&self, input: &Input) -> Result<T, ApiError> {
        // The fast path deserializes without tracking paths; only a failure pays for a second,
        // path-tracking pass that says where the problem is.
        let value = match T::deserialize(input) {
            Ok(value) => value,
            Err(plain) => {
                // A JSON body whose check was deferred to this read (`JsonObject::deferred`):
                // the check tells a body that is not JSON, refused with the parse stage's 400,
                // from a value of the wrong type (or a repeated key), read again the long way.
                if let Some(object) = input.as_json_object().filter(|o| !o.is_checked()) {
                    let mut object = object.clone();
                    object.check().map_err(JsonObjectError::into_api_error)?;
                    return self.decode(&Input::from(object));
                }
                let (message, ends) = self.explain(input, &plain.to_string());
                return Err(invalid(message, ends));
            }
        };
        self.problems(&value, None)
            .map_err(|(message, ends)| invalid(message, ends))?;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use super::*;
    use strata_input::InputValue;

    #[derive(Debug, Deserialize, Serialize, Validate, JsonSchema)]
    struct Item {
        #[garde(length(chars, min = 1))]
        name: String,
    }

    #[derive(Debug, Deserialize, Serialize, Validate, JsonSchema)]
    struct Order {
        #[garde(dive)]
        items: Vec<Item>,
        #[garde(range(min = 1))]
        count: u32,
    }

    #[test]
    fn reports_all_rule_violations_with_paths() {
        let mut input = Input::new();
        input.insert(
            "items",
            InputValue::Json(json!([{"name": "ok"}, {"name": ""}])),
        );
        input.insert("count", InputValue::Json(json!(0)));
        let err = Decoder::<Order>::new().decode(&input).unwrap_err();
        assert_eq!(
            err.message(),
            "count: lower than 1; items[1].name: length is lower than 1"
        );
        assert_eq!(err.kind(), ErrorKind::InputValidation);
    }

    #[test]
    fn reports_type_error_path() {
        let mut input = Input::new();
        input.insert("items", InputValue::Json(json!([{"name": 5}])));
        input.insert("count", InputValue::Json(json!(1)));
        let err = Decoder::<Order>::new().decode(&input).unwrap_err();
        assert_eq!(
            err.message(),
            "items[0].name: expected string, received number 5"
        );
    }

    #[test]
    fn rule_violations_are_capped_too() {
        let mut input = Input::new();
        let items: Vec<serde_json::Value> = (0..150).map(|_| json!({"name": ""})).collect();
        input.insert("items", InputValue::Json(json!(items)));
        input.insert("count", InputValue::Json(json!(1)));
        let message = Decoder::<Order>::new()
            .decode(&input)
            .unwrap_err()
            .message()
            .to_owned();
        assert_eq!(message.matches("length is lower than 1").count(), 100);
        assert!(message.starts_with("items[0].name: length is lower than 1; items[1].name"));
        assert!(message.ends_with("; … and 50 more"), "{message}");
    }

    #[test]
    fn missing_field_is_named() {
        let input = Input::new();
        let err = Decoder::<Order>::new().decode(&input).unwrap_err();
        assert_eq!(err.message(), "count: required; items: required");
    }

    #[test]
    fn check_prefixes_output_paths() {
        let order = Order {
            items: vec![Item {
                name: String::new(),
            }],
            count: 1,
        };
        let message = Decoder::<Order>::new()
            .check(&order, Some("output"))
            .unwrap_err();
        assert_eq!(message, "output.items[0].name: length is lower than 1");
    }

    #[derive(Debug, Deserialize, Serialize, Validate, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct Outer {
        #[garde(length(min = 1))]
        user_name: String,
        #[garde(dive)]
        inner: Inner,
        #[garde(dive)]
        maybe: Option<Inner>,
        #[garde(dive)]
        by_key: std::collections::BTreeMap<String, Inner>,
        #[garde(length(min = 1))]
        #[serde(rename = "label")]
        title: String,
    }

    #[derive(Debug, Deserialize, Serialize, Validate, JsonSchema)]
    struct Inner {
        #[garde(length(min = 1))]
        user_name: String,
    }

    #[test]
    fn wire_names_follow_each_nested_type() {
        let outer = Outer {
            user_name: String::new(),
            inner: Inner {
                user_name: String::new(),
            },
            maybe: Some(Inner {
                user_name: String::new(),
            }),
            by_key: [(
                "some_key".to_owned(),
                Inner {
                    user_name: String::new(),
                },
            )]
            .into(),
            title: String::new(),
        };
        let message = Decoder::<Outer>::new().check(&outer, None).unwrap_err();
        assert_eq!(
            message,
            "byKey.some_key.user_name: length is lower than 1; \
             inner.user_name: length is lower than 1; \
             maybe.user_name: length is lower than 1; \
             title: length is lower than 1; \
             userName: length is lower than 1"
        );
    }

    #[test]
    fn snake_case_conversion() {
        assert_eq!(to_snake_case("userName"), "user_name");
        assert_eq!(to_snake_case("UserName"), "user_name");
        assert_eq!(to_snake_case("user-name"), "user_name");
        assert_eq!(to_snake_case("USER_NAME"), "user_name");
        assert_eq!(to_snake_case("item2Id"), "item2_id");
    }

    #[derive(Debug, PartialEq, Deserialize, Validate, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct Search {
        #[garde(length(chars, min = 2))]
        term: String,
        #[garde(range(max = 50))]
        page_size: Option<u32>,
        #[garde(skip)]
        tags: Vec<String>,
        #[garde(skip)]
        exact: Option<bool>,
    }

    /// A plain query read in place decodes (and fails) exactly as its pairs merged as entries.
    #[test]
    fn a_plain_query_decodes_as_its_entries_do() {
        let decoder = Decoder::<Search>::new();
        for query in [
            "term=rust&pageSize=20&tags=a&exact=true",
            "term=rust&flag&pageSize=",
            "pageSize=20",
            "term=r&pageSize=99",
            "term=rust&pageSize=many",
            "term=rust&exact=maybe&tags=x",
            "term=rust&unknown=1",
        ] {
            let uri: http::Uri = format!("/s?{query}").parse().unwrap();
            let plain = strata_input::text::PlainQuery::check(&uri, 100)
                .unwrap()
                .unwrap();
            let mut entries = Input::new();
            entries.merge(
                plain
                    .to_pairs()
                    .into_iter()
                    .map(|(k, v)| (k, InputValue::Text(v))),
            );
            let in_place = Input::from(plain);
            assert!(in_place.as_plain_query().is_some() && in_place.as_json_object().is_none());
            assert_eq!(in_place, entries, "{query}");
            let (a, b) = (decoder.decode(&in_place), decoder.decode(&entries));
            match (a, b) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{query}"),
                (Err(a), Err(b)) => assert_eq!(a.message(), b.message(), "{query}"),
                (a, b) => panic!("{query}: {a:?} against {b:?}"),
            }
        }
        let uri: http::Uri = "/s?term=rust&pageSize=20&tags=a".parse().unwrap();
        let plain = strata_input::text::PlainQuery::check(&uri, 100)
            .unwrap()
            .unwrap();
        assert_eq!(
            decoder.decode(&Input::from(plain)).unwrap(),
            Search {
                term: "rust".into(),
                page_size: Some(20),
                tags: vec!["a".into()],
                exact: None,
            }
        );
    }
}

/// The explanation agrees with the fields' own deserializers.
#[cfg(test)]
mod lenient_tests {
    use serde::Deserialize;

    use super::*;
    use strata_input::{InputValue, TextValue};

    /// An empty text is `None` (a form's or a query's empty field), any other a number.
    fn empty_as_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        let text = String::deserialize(d)?;
        if text.is_empty() {
            return Ok(None);
        }
        text.parse().map(Some).map_err(serde::de::Error::custom)
    }

    /// An even number.
    fn even<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
        let number = u32::deserialize(d)?;
        if number % 2 == 1 {
            return Err(serde::de::Error::custom("not even"));
        }
        Ok(Some(number))
    }

    /// Empty texts are left out.
    fn skip_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        Vec::<String>::deserialize(d)?
            .into_iter()
            .filter(|text| !text.is_empty())
            .map(|text| text.parse().map_err(serde::de::Error::custom))
            .collect()
    }

    #[derive(Debug, Deserialize, Validate, JsonSchema)]
    #[allow(dead_code)] // what decodes matters, not the values
    struct Lenient {
        #[garde(skip)]
        #[serde(default, deserialize_with = "empty_as_none")]
        #[schemars(with = "Option<f64>")]
        num: Option<f64>,
        #[garde(skip)]
        int: Option<i64>,
        #[garde(skip)]
        #[serde(rename = "bool")]
        flag: Option<bool>,
        #[garde(length(chars, min = 2))]
        name: Option<String>,
        #[garde(skip)]
        #[serde(default, deserialize_with = "skip_empty")]
        #[schemars(with = "Vec<u32>")]
        ids: Vec<u32>,
        #[garde(skip)]
        #[serde(default, deserialize_with = "even")]
        #[schemars(with = "Option<u32>")]
        even: Option<u32>,
    }

    fn input(pairs: &[(&str, &str)]) -> Input {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), InputValue::from(*value)))
            .collect()
    }

    fn message(input: &Input) -> String {
        Decoder::<Lenient>::new()
            .decode(input)
            .unwrap_err()
            .message()
            .to_owned()
    }

    #[test]
    fn a_value_its_deserializer_reads_is_not_listed() {
        let bad = "bool: expected boolean, received string \"yes\"; \
                   int: expected integer, received string \"1.5\"";
        // Wherever it comes: before, between or after the values that do not decode.
        for pairs in [
            [("num", ""), ("int", "1.5"), ("bool", "yes")],
            [("int", "1.5"), ("num", ""), ("bool", "yes")],
            [("int", "1.5"), ("bool", "yes"), ("num", "")],
        ] {
            assert_eq!(message(&input(&pairs)), bad, "{pairs:?}");
        }
        let decoded = Decoder::<Lenient>::new()
            .decode(&input(&[("num", "")]))
            .unwrap();
        assert_eq!(decoded.num, None);
    }

    #[test]
    fn a_value_its_deserializer_refuses_is_listed() {
        assert_eq!(
            message(&input(&[("num", "abc"), ("int", "2")])),
            "num: expected number, received string \"abc\""
        );
        // Runs of values that decode, between values that do not.
        let mut mixed = input(&[("num", ""), ("int", "x"), ("name", "a"), ("bool", "")]);
        mixed.insert(
            "ids",
            InputValue::Text(TextValue::Many(vec![String::new(), "7".into()])),
        );
        assert_eq!(
            message(&mixed),
            "bool: expected boolean, received string \"\"; \
             int: expected integer, received string \"x\"; \
             name: length is lower than 2"
        );
        let mut wrong = input(&[("num", "")]);
        wrong.insert(
            "ids",
            InputValue::Text(TextValue::Many(vec![String::new(), "x".into()])),
        );
        assert_eq!(
            message(&wrong),
            "ids[0]: expected integer, received string \"\"; \
             ids[1]: expected integer, received string \"x\""
        );
    }

    #[test]
    fn serde_s_problem_is_named_when_the_schema_s_are_not_problems() {
        // The schema's only problem is in a value that decodes; serde refuses one the schema
        // cannot judge.
        assert_eq!(
            message(&input(&[("num", ""), ("even", "3")])),
            "even: not even"
        );
        assert_eq!(
            message(&input(&[("num", ""), ("even", "3"), ("int", "x")])),
            "even: not even; int: expected integer, received string \"x\""
        );
    }

    #[test]
    fn a_json_body_is_asked_too() {
        let body = strata_input::JsonObject::new(r#"{"num": "", "int": 1.5}"#).unwrap();
        assert_eq!(
            message(&Input::from(body)),
            "int: expected integer or null, received number 1.5"
        );
    }

    #[derive(Debug, Deserialize, Validate, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // what decodes matters, not the values
    struct Strict {
        #[garde(skip)]
        #[serde(alias = "nick")]
        nickname: Option<String>,
        #[garde(skip)]
        age: Option<u8>,
    }

    #[test]
    fn an_alias_is_no_unknown_field() {
        let decoder = Decoder::<Strict>::new();
        let err = decoder
            .decode(&input(&[("nick", "Dan"), ("age", "x"), ("other", "1")]))
            .unwrap_err();
        assert_eq!(
            err.message(),
            "age: expected integer, received string \"x\"; other: unknown field"
        );
    }

    #[test]
    fn problems_beyond_the_kept_ones_are_not_counted_for_a_value_that_decodes() {
        let mut input = input(&[("int", "1.5")]);
        input.insert(
            "ids",
            InputValue::Text(TextValue::Many(vec![String::new(); 1_500])),
        );
        assert_eq!(
            message(&input),
            "int: expected integer, received string \"1.5\""
        );
    }
}

/// Where serde cannot be asked about one entry at a time, the schema's explanation stands.
#[cfg(test)]
mod buffered_tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use strata_input::InputValue;

    #[derive(Debug, Deserialize, Validate, JsonSchema)]
    #[allow(dead_code)] // what decodes matters, not the values
    struct Paged {
        #[serde(flatten)]
        #[garde(dive)]
        page: Page,
        #[garde(skip)]
        q: Option<String>,
    }

    #[derive(Debug, Deserialize, Validate, JsonSchema)]
    #[allow(dead_code)] // what decodes matters, not the values
    struct Page {
        #[garde(skip)]
        limit: Option<u32>,
    }

    #[derive(Debug, Deserialize, Validate, JsonSchema)]
    #[serde(tag = "kind", content = "data")]
    #[allow(dead_code)] // what decodes matters, not the values
    enum Command {
        Move {
            #[garde(skip)]
            steps: u32,
            #[garde(skip)]
            speed: u32,
        },
        Stop,
    }

    #[test]
    fn a_flattened_field_is_still_named() {
        let mut input = Input::new();
        input.insert("limit", InputValue::Json(json!("x")));
        input.insert("q", InputValue::Json(json!(5)));
        let err = Decoder::<Paged>::new().decode(&input).unwrap_err();
        assert_eq!(
            err.message(),
            "limit: expected integer or null, received string \"x\"; \
             q: expected string or null, received number 5"
        );
    }

    #[test]
    fn content_beside_its_tag_is_still_named() {
        let mut input = Input::new();
        input.insert("kind", "Move".into());
        input.insert(
            "data",
            InputValue::Json(json!({ "steps": "x", "speed": "y" })),
        );
        let err = Decoder::<Command>::new().decode(&input).unwrap_err();
        assert_eq!(
            err.message(),
            "data.speed: expected integer, received string \"y\"; \
             data.steps: expected integer, received string \"x\""
        );
    }
}
