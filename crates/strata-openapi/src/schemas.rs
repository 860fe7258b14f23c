//! One schema generator per contract for a whole document, and the merge of their definitions
//! into `components/schemas`.
//!
//! Inputs are described as serde reads them (a field with a default is optional) and outputs as
//! serde writes them (a field skipped when empty is optional), so one type may have two schemas.
//! schemars keeps one contract per generator: inputs and outputs each get one generator, and
//! their definitions are merged here. A name whose two schemas are the same (references
//! included) is one component; otherwise the output's gets a suffix. Names are then made valid
//! component names. Both steps are deterministic, so the document is stable.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

const PREFIX: &str = "#/components/schemas/";

pub(crate) struct Generators {
    pub(crate) input: SchemaGenerator,
    pub(crate) output: SchemaGenerator,
    /// Error envelopes, shared by every error response that uses them.
    errors: Vec<Value>,
}

impl Generators {
    pub(crate) fn new() -> Self {
        let settings = || {
            SchemaSettings::draft2020_12()
                .with(|settings| {
                    settings.definitions_path = "/components/schemas".into();
                    settings.meta_schema = None;
                })
                .with_transform(schemars::transform::RecursiveTransform(integer_bounds))
        };
        Self {
            input: settings().for_deserialize().into_generator(),
            output: settings().for_serialize().into_generator(),
            errors: Vec::new(),
        }
    }

    /// A reference to `schema`, an error envelope, kept once under `components/schemas`.
    pub(crate) fn error_envelope(&mut self, schema: &Value) -> Value {
        let index = self
            .errors
            .iter()
            .position(|known| known == schema)
            .unwrap_or_else(|| {
                self.errors.push(schema.clone());
                self.errors.len() - 1
            });
        serde_json::json!({ "$ref": format!("{PREFIX}{}", placeholder(index)) })
    }

    /// The reference [`error_envelope`](Self::error_envelope) gave `schema`, if it gave one:
    /// an error body that is one of the envelopes, shared rather than repeated.
    pub(crate) fn known_error_envelope(&self, schema: &Value) -> Option<Value> {
        let index = self.errors.iter().position(|known| known == schema)?;
        Some(serde_json::json!({ "$ref": format!("{PREFIX}{}", placeholder(index)) }))
    }

    /// Merges both generators' definitions; returns the components and the name maps of each
    /// side (a reference target as written → its component name).
    pub(crate) fn finish(mut self) -> Merged {
        let input = self.input.take_definitions(true);
        let mut output = self.output.take_definitions(true);
        let mut placeholders = Vec::new();
        for (index, schema) in self.errors.into_iter().enumerate() {
            let mut name = "ErrorResponse".to_owned();
            let mut n = 1;
            while input.contains_key(&name) || output.contains_key(&name) {
                n += 1;
                name = format!("ErrorResponse{n}");
            }
            output.insert(name.clone(), schema);
            placeholders.push((placeholder(index), name));
        }
        let mut merged = merge(input, output);
        for (placeholder, name) in placeholders {
            if let Some(component) = merged.output_names.get(&target_of(&name)).cloned() {
                merged.output_names.insert(placeholder, component);
            }
        }
        merged
    }
}

pub(crate) struct Merged {
    pub(crate) schemas: BTreeMap<String, Value>,
    pub(crate) input_names: HashMap<String, String>,
    pub(crate) output_names: HashMap<String, String>,
}

/// The reference target of the `index`th error envelope until names are chosen.
fn placeholder(index: usize) -> String {
    format!("strata-error-envelope-{index}")
}

/// The reference targets (`#/components/schemas/<target>`) inside `value`.
fn targets(value: &Value, into: &mut BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object {
                if key == "$ref"
                    && let Some(target) = inner.as_str().and_then(|r| r.strip_prefix(PREFIX))
                {
                    into.insert(target.to_owned());
                } else {
                    targets(inner, into);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| targets(item, into)),
        _ => {}
    }
}

/// Replaces reference targets by `names` (targets as written → component names).
pub(crate) fn rewrite_refs(value: &mut Value, names: &HashMap<String, String>) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object.iter_mut() {
                if key == "$ref"
                    && let Value::String(reference) = inner
                    && let Some(name) = reference.strip_prefix(PREFIX).and_then(|t| names.get(t))
                {
                    *reference = format!("{PREFIX}{name}");
                } else {
                    rewrite_refs(inner, names);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rewrite_refs(item, names)),
        _ => {}
    }
}

/// A valid component name (`^[a-zA-Z0-9._-]+$`) for a schemars name.
fn component_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "Schema".to_owned()
    } else {
        cleaned
    }
}

/// The reference target schemars writes for `name`: a JSON pointer token, percent-encoded
/// where a URI fragment needs it (as schemars encodes it).
fn target_of(name: &str) -> String {
    let mut target = String::with_capacity(name.len());
    for byte in name.bytes() {
        match byte {
            b'~' => target.push_str("~0"),
            b'/' => target.push_str("~1"),
            b'!' | b'$' | b'&'..=b';' | b'=' | b'?'..=b'Z' | b'_' | b'a'..=b'z' => {
                target.push(char::from(byte));
            }
            other => {
                let _ = write!(target, "%{other:02X}");
            }
        }
    }
    target
}

fn unique(base: &str, used: &mut BTreeSet<String>) -> String {
    let mut candidate = base.to_owned();
    let mut n = 1;
    while !used.insert(candidate.clone()) {
        n += 1;
        candidate = format!("{base}{n}");
    }
    candidate
}

fn merge(input: Map<String, Value>, output: Map<String, Value>) -> Merged {
    // Names whose schemas differ between the contracts, then every name referring to one of
    // them (its schema differs once references are resolved).
    let mut differing: BTreeSet<String> = output
        .iter()
        .filter(|(name, schema)| input.get(*name).is_some_and(|other| other != *schema))
        .map(|(name, _)| name.clone())
        .collect();
    let refs_of = |defs: &Map<String, Value>| -> BTreeMap<String, BTreeSet<String>> {
        defs.iter()
            .map(|(name, schema)| {
                let mut found = BTreeSet::new();
                targets(schema, &mut found);
                (name.clone(), found)
            })
            .collect()
    };
    let (input_refs, output_refs) = (refs_of(&input), refs_of(&output));
    loop {
        let grown: Vec<String> = output
            .keys()
            .filter(|name| input.contains_key(*name) && !differing.contains(*name))
            .filter(|name| {
                let refers = |refs: &BTreeMap<String, BTreeSet<String>>| {
                    refs.get(*name).is_some_and(|targets| {
                        targets
                            .iter()
                            .any(|t| differing.iter().any(|d| target_of(d) == *t || d == t))
                    })
                };
                refers(&input_refs) || refers(&output_refs)
            })
            .cloned()
            .collect();
        if grown.is_empty() {
            break;
        }
        differing.extend(grown);
    }

    let mut used = BTreeSet::new();
    let mut schemas = BTreeMap::new();
    let mut input_names = HashMap::new();
    let mut output_names = HashMap::new();
    let mut input_final = BTreeMap::new();
    for name in input.keys() {
        let component = unique(&component_name(name), &mut used);
        input_names.insert(target_of(name), component.clone());
        input_final.insert(name.clone(), component);
    }
    let mut output_final = BTreeMap::new();
    for name in output.keys() {
        let component = match input_final.get(name) {
            Some(shared) if !differing.contains(name) => shared.clone(),
            Some(_) => unique(&format!("{}Output", component_name(name)), &mut used),
            None => unique(&component_name(name), &mut used),
        };
        output_names.insert(target_of(name), component.clone());
        output_final.insert(name.clone(), component);
    }
    for (name, mut schema) in input {
        rewrite_refs(&mut schema, &input_names);
        schemas.insert(input_final[&name].clone(), schema);
    }
    for (name, mut schema) in output {
        rewrite_refs(&mut schema, &output_names);
        schemas.entry(output_final[&name].clone()).or_insert(schema);
    }
    Merged {
        schemas,
        input_names,
        output_names,
    }
}

/// The fields of an input object: (wire name, schema, required), in schema order.
pub(crate) type Fields = Vec<(String, Value, bool)>;

/// The fields of `schema`, an object (possibly through `$ref` or `allOf`); `Err` with what the
/// schema is instead. `null` (the unit type) has no fields.
pub(crate) fn object_fields(
    schema: &Schema,
    definitions: &Map<String, Value>,
) -> Result<Fields, String> {
    let mut fields = Fields::new();
    collect_fields(schema.as_value(), definitions, &mut fields, 0)?;
    Ok(fields)
}

fn collect_fields(
    value: &Value,
    definitions: &Map<String, Value>,
    fields: &mut Fields,
    depth: usize,
) -> Result<(), String> {
    let Some(object) = value.as_object() else {
        return match value {
            Value::Bool(true) => Ok(()),
            other => Err(other.to_string()),
        };
    };
    if depth > 16 {
        return Err("a reference cycle".to_owned());
    }
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        let target = reference.strip_prefix(PREFIX).unwrap_or(reference);
        let resolved = definitions
            .iter()
            .find(|(name, _)| target_of(name) == target)
            .map(|(_, schema)| schema)
            .ok_or_else(|| format!("an unresolved reference {reference}"))?;
        return collect_fields(resolved, definitions, fields, depth + 1);
    }
    if let Some(parts) = object.get("allOf").and_then(Value::as_array) {
        for part in parts {
            collect_fields(part, definitions, fields, depth + 1)?;
        }
    }
    for key in ["oneOf", "anyOf"] {
        if object.contains_key(key) {
            return Err(format!("a choice ({key})"));
        }
    }
    match object.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(kind)) if kind == "object" || kind == "null" => {}
        Some(other) => return Err(format!("of type {other}")),
    }
    let required: BTreeSet<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        for (name, schema) in properties {
            let required = required.contains(name.as_str());
            if let Some(existing) = fields.iter_mut().find(|(n, _, _)| n == name) {
                existing.2 |= required;
            } else {
                fields.push((name.clone(), schema.clone(), required));
            }
        }
    }
    Ok(())
}

/// Whether `schema` is a file (`format: binary`), or an array or optional of files.
pub(crate) fn is_file(schema: &Value) -> bool {
    let Some(object) = schema.as_object() else {
        return false;
    };
    if object.get("format").and_then(Value::as_str) == Some("binary") {
        return true;
    }
    if let Some(items) = object.get("items") {
        return is_file(items);
    }
    ["anyOf", "oneOf"].iter().any(|key| {
        object
            .get(*key)
            .and_then(Value::as_array)
            .is_some_and(|choices| choices.iter().any(is_file))
    })
}

/// A file schema as multipart bodies describe it in OpenAPI 3.1 (`contentMediaType`), keeping
/// `format: binary` for viewers that still read it.
pub(crate) fn multipart_file(schema: &mut Value) {
    if let Some(object) = schema.as_object_mut() {
        if object.get("format").and_then(Value::as_str) == Some("binary") {
            object
                .entry("contentMediaType")
                .or_insert_with(|| "application/octet-stream".into());
        }
        for key in ["items"] {
            if let Some(inner) = object.get_mut(key) {
                multipart_file(inner);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(choices)) = object.get_mut(key) {
                choices.iter_mut().for_each(multipart_file);
            }
        }
    }
}

/// Gives a sized integer (`format` `uint32`, `int8`, ...) the bounds of its type where its
/// schema states none: schemars says `{"format": "uint32", "minimum": 0}` for a `u32`, so a
/// larger integer was valid by the document and refused by the server.
pub(crate) fn integer_bounds(schema: &mut schemars::Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let Some(format) = object.get("format").and_then(Value::as_str) else {
        return;
    };
    let (minimum, maximum): (Value, Value) = match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0.into(), u8::MAX.into()),
        "uint16" => (0.into(), u16::MAX.into()),
        "uint32" => (0.into(), u32::MAX.into()),
        "uint64" | "uint" => (0.into(), u64::MAX.into()),
        _ => return,
    };
    if !object.contains_key("minimum") && !object.contains_key("exclusiveMinimum") {
        object.insert("minimum".to_owned(), minimum);
    }
    if !object.contains_key("maximum") && !object.contains_key("exclusiveMaximum") {
        object.insert("maximum".to_owned(), maximum);
    }
}

/// [`integer_bounds`] over `schema` and everything in it (an input field's schema, taken from
/// the input type's own, which the generator's transforms have not seen).
pub(crate) fn with_integer_bounds(schema: &mut Value) {
    use schemars::transform::Transform;
    if let Ok(mut typed) = schemars::Schema::try_from(std::mem::take(schema)) {
        schemars::transform::RecursiveTransform(integer_bounds).transform(&mut typed);
        *schema = typed.to_value();
    }
}

/// `schema` as a value that cannot be `null` (a path, query or header parameter, a multipart
/// field: text, where `null` cannot travel): `null` taken out of `type` lists, `anyOf`/`oneOf`
/// choices and `enum`s, a single remaining choice put in place of the `anyOf`, and a `default`
/// of `null` dropped.
pub(crate) fn without_null(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|kind| kind != "null");
        if let [single] = types.as_slice() {
            let single = single.clone();
            object.insert("type".to_owned(), single);
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(choices)) = object.get_mut(key) else {
            continue;
        };
        choices.retain(|choice| !is_null_schema(choice));
        if let [single] = choices.as_slice() {
            let single = single.clone();
            object.remove(key);
            if let Value::Object(fields) = single {
                for (name, value) in fields {
                    object.entry(name).or_insert(value);
                }
            }
        }
    }
    drop_null_default(schema);
}

/// Whether `schema` admits only `null`.
fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
}

/// Drops a `default` of `null` from `schema` when its `type` does not admit `null` (a field read
/// with `strata::decode::not_null`, whose absence is `None` but whose `null` is refused): a document
/// never states a default its schema refuses.
pub(crate) fn drop_null_default(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if !object.get("default").is_some_and(Value::is_null) {
        return;
    }
    let admits_null = match object.get("type") {
        Some(Value::String(kind)) => kind == "null",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
        // No type, a reference, choices: not known here; leave it.
        _ => true,
    };
    if !admits_null {
        object.remove("default");
    }
}

/// Whether a value of `schema` can be written as text (a query or form value, or a list of
/// them): not an object. References are followed; a schema that says nothing counts as text.
pub(crate) fn is_text(schema: &Value, definitions: &Map<String, Value>) -> bool {
    text_like(schema, definitions, 0, true)
}

fn text_like(schema: &Value, definitions: &Map<String, Value>, depth: usize, top: bool) -> bool {
    let Some(object) = schema.as_object() else {
        return true;
    };
    if depth > 16 {
        return true;
    }
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(PREFIX))
        && let Some((_, resolved)) = definitions
            .iter()
            .find(|(name, _)| target_of(name) == target)
    {
        return text_like(resolved, definitions, depth + 1, top);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(choices) = object.get(key).and_then(Value::as_array)
            && !choices
                .iter()
                .all(|c| text_like(c, definitions, depth + 1, top))
        {
            return false;
        }
    }
    let kinds: Vec<&str> = match object.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if kinds.contains(&"object") {
        return false;
    }
    // One level of list: repeated keys. A list of lists has no text form.
    if kinds.contains(&"array") {
        return top
            && object
                .get("items")
                .is_none_or(|items| text_like(items, definitions, depth + 1, false));
    }
    true
}

/// Whether `schema` is an array (or an optional array).
pub(crate) fn is_array(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(kind)) => kind == "array",
        Some(Value::Array(kinds)) => kinds.iter().any(|k| k == "array"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn defs(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn identical_definitions_are_one_component_and_different_ones_two() {
        let input = defs(json!({
            "Same": { "type": "string" },
            "User": { "type": "object", "properties": { "a": { "type": "integer" } } },
            "Holder": { "type": "object", "properties": { "u": { "$ref": "#/components/schemas/User" } } },
        }));
        let output = defs(json!({
            "Same": { "type": "string" },
            "User": { "type": "object", "properties": { "a": { "type": "integer" } }, "required": ["a"] },
            "Holder": { "type": "object", "properties": { "u": { "$ref": "#/components/schemas/User" } } },
            "Page<User>": { "type": "array", "items": { "$ref": "#/components/schemas/User" } },
        }));
        let merged = merge(input, output);
        let names: Vec<&str> = merged.schemas.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "Holder",
                "HolderOutput",
                "Page_User_",
                "Same",
                "User",
                "UserOutput"
            ]
        );
        assert_eq!(
            merged.schemas["HolderOutput"]["properties"]["u"]["$ref"],
            "#/components/schemas/UserOutput"
        );
        assert_eq!(
            merged.schemas["Page_User_"]["items"]["$ref"],
            "#/components/schemas/UserOutput"
        );
        assert_eq!(merged.output_names["Same"], "Same");
        assert_eq!(merged.input_names["User"], "User");
    }

    #[test]
    fn fields_come_through_references_and_all_of() {
        let definitions = defs(json!({
            "Base": { "type": "object", "properties": { "a": { "type": "string" } }, "required": ["a"] },
        }));
        let schema = Schema::try_from(json!({
            "allOf": [{ "$ref": "#/components/schemas/Base" }],
            "properties": { "b": { "type": "integer" } },
        }))
        .unwrap();
        let fields = object_fields(&schema, &definitions).unwrap();
        assert_eq!(fields.len(), 2);
        assert!(fields[0].2 && !fields[1].2);
        let choice = Schema::try_from(json!({ "oneOf": [{ "type": "string" }] })).unwrap();
        assert!(
            object_fields(&choice, &definitions)
                .unwrap_err()
                .contains("oneOf")
        );
        let number = Schema::try_from(json!({ "type": "integer" })).unwrap();
        assert_eq!(
            object_fields(&number, &definitions).unwrap_err(),
            r#"of type "integer""#
        );
        let unit = Schema::try_from(json!({ "type": "null" })).unwrap();
        assert!(object_fields(&unit, &definitions).unwrap().is_empty());
    }

    #[test]
    fn files_and_arrays_are_recognized() {
        assert!(is_file(&json!({ "type": "string", "format": "binary" })));
        assert!(is_file(
            &json!({ "type": "array", "items": { "type": "string", "format": "binary" } })
        ));
        assert!(!is_file(&json!({ "type": "string" })));
        assert!(is_array(&json!({ "type": ["array", "null"] })));
        let mut file =
            json!({ "type": "array", "items": { "type": "string", "format": "binary" } });
        multipart_file(&mut file);
        assert_eq!(
            file["items"]["contentMediaType"],
            "application/octet-stream"
        );
    }

    #[test]
    fn null_is_taken_out_where_text_cannot_carry_it() {
        let mut listed = json!({ "type": ["integer", "null"], "default": null, "minimum": 1 });
        without_null(&mut listed);
        assert_eq!(listed, json!({ "type": "integer", "minimum": 1 }));
        let mut chosen = json!({
            "anyOf": [{ "$ref": "#/components/schemas/Genre" }, { "type": "null" }],
            "description": "A genre."
        });
        without_null(&mut chosen);
        assert_eq!(
            chosen,
            json!({ "$ref": "#/components/schemas/Genre", "description": "A genre." })
        );
        let mut named = json!({ "enum": ["a", "b", null], "type": ["string", "null"] });
        without_null(&mut named);
        assert_eq!(named, json!({ "enum": ["a", "b"], "type": "string" }));
        // A default of null stays where null is admitted, and goes where it is not.
        let mut nullable = json!({ "type": ["string", "null"], "default": null });
        drop_null_default(&mut nullable);
        assert!(nullable.get("default").is_some());
        let mut refused = json!({ "type": "string", "default": null });
        drop_null_default(&mut refused);
        assert_eq!(refused, json!({ "type": "string" }));
    }
}
