//! JSON Schema (2020-12, as schemars and the OpenAPI document write it) to TypeScript types.
//!
//! Types are what a value may be, so keywords that only narrow a value (`minimum`,
//! `maxLength`, `pattern`, `format` except `binary`) are left to the server; keywords that
//! change the shape in ways TypeScript cannot say (`not`, `if`/`then`/`else`, …) are a
//! [`Problem`], never a silent `any`. `patternProperties` (schemars writes them for maps with
//! non-string keys) join the index signature: TypeScript keys are strings.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::ts::{Doc, Object, Property, Ts};

const PREFIX: &str = "#/components/schemas/";

/// Keywords that shape a value in a way no TypeScript type expresses.
const UNSUPPORTED: [&str; 8] = [
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "$dynamicRef",
    "$recursiveRef",
    "unevaluatedItems",
];

/// Why a schema has no TypeScript type, and where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// A JSON pointer into the schema (`/properties/when`), or a component reference.
    pub(crate) at: String,
    pub(crate) problem: String,
}

/// Turns schemas into types; references become the names of the components' types, and the
/// components reached are remembered so that each is emitted once.
pub(crate) struct Converter<'a> {
    components: &'a BTreeMap<String, Value>,
    /// Component name → type name.
    names: &'a BTreeMap<String, String>,
    /// The components referenced so far.
    pub(crate) reached: BTreeSet<String>,
}

impl<'a> Converter<'a> {
    pub(crate) fn new(
        components: &'a BTreeMap<String, Value>,
        names: &'a BTreeMap<String, String>,
    ) -> Self {
        Self {
            components,
            names,
            reached: BTreeSet::new(),
        }
    }

    /// The type of `schema`.
    pub(crate) fn convert(&mut self, schema: &Value) -> Result<Ts, Problem> {
        let mut at = String::new();
        self.value(schema, &mut at)
    }

    /// The schema a reference points at, or the schema itself.
    pub(crate) fn resolve<'s>(&self, schema: &'s Value) -> Option<&'s Map<String, Value>>
    where
        'a: 's,
    {
        let mut current = schema;
        // A chain of references longer than the components cannot be anything but a cycle.
        for _ in 0..=self.components.len() {
            let object = current.as_object()?;
            match object.get("$ref").and_then(Value::as_str) {
                Some(reference) => {
                    current = self.components.get(reference.strip_prefix(PREFIX)?)?;
                }
                None => return Some(object),
            }
        }
        None
    }

    fn value(&mut self, schema: &Value, at: &mut String) -> Result<Ts, Problem> {
        match schema {
            Value::Bool(true) => Ok(Ts::unknown()),
            Value::Bool(false) => Ok(Ts::name("never")),
            Value::Object(object) => self.object(object, at),
            other => Err(problem(at, format!("{other} is not a schema"))),
        }
    }

    /// `f` with `segment` appended to the pointer `at` while it runs.
    /// The types of a list of schemas, each at its index under `at`.
    fn values(&mut self, list: &[Value], at: &mut String) -> Result<Vec<Ts>, Problem> {
        list.iter()
            .enumerate()
            .map(|(i, item)| self.at(at, &i.to_string(), |this, at| this.value(item, at)))
            .collect()
    }

    fn at<T>(
        &mut self,
        at: &mut String,
        segment: &str,
        f: impl FnOnce(&mut Self, &mut String) -> T,
    ) -> T {
        let len = at.len();
        at.push('/');
        at.push_str(&segment.replace('~', "~0").replace('/', "~1"));
        let result = f(self, at);
        at.truncate(len);
        result
    }

    fn object(&mut self, schema: &Map<String, Value>, at: &mut String) -> Result<Ts, Problem> {
        if let Some(keyword) = UNSUPPORTED.iter().find(|k| schema.contains_key(**k)) {
            return Err(problem(
                at,
                format!("`{keyword}` narrows the value in a way no TypeScript type can say"),
            ));
        }
        if let Some(other) = schema.get("unevaluatedProperties")
            && *other != Value::Bool(false)
        {
            return Err(problem(
                at,
                "`unevaluatedProperties` with a schema has no TypeScript type".to_owned(),
            ));
        }
        let mut parts = Vec::new();
        if let Some(reference) = schema.get("$ref") {
            parts.push(self.reference(reference, at)?);
        }
        // One choice, from the most to the least precise keyword.
        let mut choice = if let Some(value) = schema.get("const") {
            Some(Ts::Literal(value.to_string()))
        } else if let Some(values) = schema.get("enum") {
            let Value::Array(values) = values else {
                return Err(problem(at, "`enum` is not a list".to_owned()));
            };
            // Values the schema's `type` rules out can never be sent.
            let kinds = kinds_of(schema);
            Some(Ts::union(
                values
                    .iter()
                    .filter(|value| {
                        let kind = json_kind(value);
                        kinds.is_empty()
                            || kinds.contains(&kind)
                            || (kind == "integer" && kinds.contains(&"number"))
                    })
                    .map(|value| Ts::Literal(value.to_string())),
            ))
        } else {
            self.by_type(schema, at)?
        };
        let mut composed = Vec::new();
        for key in ["anyOf", "oneOf"] {
            if let Some(members) = schema.get(key) {
                let Value::Array(members) = members else {
                    return Err(problem(at, format!("`{key}` is not a list")));
                };
                let union = self.at(at, key, |this, at| this.values(members, at))?;
                composed.push(Ts::union(union));
            }
        }
        if let Some(members) = schema.get("allOf") {
            let Value::Array(members) = members else {
                return Err(problem(at, "`allOf` is not a list".to_owned()));
            };
            for (i, member) in members.iter().enumerate() {
                let part = self.at(at, "allOf", |this, at| {
                    this.at(at, &i.to_string(), |t, at| t.value(member, at))
                })?;
                composed.push(part);
            }
        }
        // A bare `type: object` or a primitive beside choices only repeats what they say
        // (schemars writes `{"type": "string", "oneOf": [{"const": ..}, ..]}` for documented
        // enums): leave it out for readability.
        if let Some(base) = &choice
            && !composed.is_empty()
            && !composed.contains(&Ts::unknown())
            && is_vague(base)
        {
            choice = None;
        }
        parts.extend(choice);
        parts.extend(composed);
        let ty = Ts::intersection(parts);
        // OpenAPI 3.0's `nullable`, wherever the type came from.
        Ok(if schema.get("nullable") == Some(&Value::Bool(true)) {
            Ts::union([ty, Ts::name("null")])
        } else {
            ty
        })
    }

    fn reference(&mut self, reference: &Value, at: &str) -> Result<Ts, Problem> {
        let text = reference.as_str().unwrap_or_default();
        let Some(target) = text.strip_prefix(PREFIX) else {
            return Err(problem(
                at,
                format!("the reference {reference} is not to the document's components"),
            ));
        };
        let Some(name) = self.names.get(target) else {
            return Err(problem(
                at,
                format!("the reference {reference} names no component"),
            ));
        };
        self.reached.insert(target.to_owned());
        Ok(Ts::Name(name.clone()))
    }

    /// The type from `type` (or from the keywords that imply one), `None` when nothing says.
    fn by_type(
        &mut self,
        schema: &Map<String, Value>,
        at: &mut String,
    ) -> Result<Option<Ts>, Problem> {
        let kinds: Vec<&str> = match schema.get("type") {
            Some(Value::String(kind)) => vec![kind.as_str()],
            Some(Value::Array(kinds)) => kinds
                .iter()
                .map(|kind| {
                    kind.as_str()
                        .ok_or_else(|| problem(at, format!("`type` lists {kind}")))
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(problem(at, format!("`type` is {other}"))),
            None if schema.contains_key("properties")
                || schema.contains_key("additionalProperties")
                || schema.contains_key("patternProperties") =>
            {
                vec!["object"]
            }
            None if schema.contains_key("items") || schema.contains_key("prefixItems") => {
                vec!["array"]
            }
            None => return Ok(None),
        };
        let mut members = Vec::with_capacity(kinds.len());
        for kind in kinds {
            members.push(match kind {
                "string" if schema.get("format").and_then(Value::as_str) == Some("binary") => {
                    Ts::name("Blob")
                }
                "string" => Ts::name("string"),
                "integer" | "number" => Ts::name("number"),
                "boolean" => Ts::name("boolean"),
                "null" => Ts::name("null"),
                "array" => self.array(schema, at)?,
                "object" => self.properties(schema, at)?,
                other => return Err(problem(at, format!("the type {other:?} is not JSON's"))),
            });
        }
        Ok(Some(Ts::union(members)))
    }

    fn array(&mut self, schema: &Map<String, Value>, at: &mut String) -> Result<Ts, Problem> {
        let items = match schema.get("items") {
            Some(items) => Some(self.at(at, "items", |this, at| this.value(items, at))?),
            None => None,
        };
        match schema.get("prefixItems") {
            Some(Value::Array(prefix)) => {
                let fixed = self.at(at, "prefixItems", |this, at| this.values(prefix, at))?;
                // `items: false` closes the tuple; otherwise more items may follow.
                let rest = match items {
                    Some(ty) if ty == Ts::name("never") => None,
                    Some(ty) => Some(Box::new(ty)),
                    None => Some(Box::new(Ts::unknown())),
                };
                Ok(Ts::Tuple(fixed, rest))
            }
            Some(_) => Err(problem(at, "`prefixItems` is not a list".to_owned())),
            None => Ok(Ts::Array(Box::new(items.unwrap_or_else(Ts::unknown)))),
        }
    }

    fn properties(&mut self, schema: &Map<String, Value>, at: &mut String) -> Result<Ts, Problem> {
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut properties = Vec::new();
        if let Some(defined) = schema.get("properties") {
            let Value::Object(defined) = defined else {
                return Err(problem(at, "`properties` is not an object".to_owned()));
            };
            for (name, property) in defined {
                let ty = self.at(at, "properties", |this, at| {
                    this.at(at, name, |t, at| t.value(property, at))
                })?;
                properties.push(Property {
                    name: name.clone(),
                    ty,
                    optional: !required.contains(name.as_str()),
                    doc: doc_of(property),
                });
            }
        }
        // Keys matching a pattern (schemars' maps with non-string keys, `HashMap<u32, V>`):
        // TypeScript keys are strings, so they join the index signature.
        let mut patterned = Vec::new();
        if let Some(patterns) = schema.get("patternProperties") {
            let Value::Object(patterns) = patterns else {
                return Err(problem(
                    at,
                    "`patternProperties` is not an object".to_owned(),
                ));
            };
            for (pattern, value) in patterns {
                patterned.push(self.at(at, "patternProperties", |this, at| {
                    this.at(at, pattern, |t, at| t.value(value, at))
                })?);
            }
        }
        let index = match schema.get("additionalProperties") {
            Some(Value::Bool(false)) if !patterned.is_empty() => {
                Some(Box::new(Ts::union(patterned.clone())))
            }
            Some(Value::Bool(false)) => None,
            Some(other) => Some(Box::new(self.at(
                at,
                "additionalProperties",
                |this, at| this.value(other, at),
            )?)),
            // An object that says nothing about its keys may have any.
            None if properties.is_empty()
                && schema.get("unevaluatedProperties") != Some(&Value::Bool(false)) =>
            {
                Some(Box::new(Ts::unknown()))
            }
            None if !patterned.is_empty() => Some(Box::new(Ts::union(patterned.clone()))),
            None => None,
        };
        // A schema beside the patterns: either may type a key.
        let index = match (index, patterned.is_empty()) {
            (Some(index), false) => Some(Box::new(Ts::union(
                std::iter::once(*index).chain(patterned),
            ))),
            (index, _) => index,
        };
        // Every property must fit the index signature too: widen it to them all.
        let index = index.map(|index| {
            if properties.is_empty() {
                return index;
            }
            let mut members = vec![*index];
            for property in &properties {
                members.push(property.ty.clone());
                if property.optional {
                    members.push(Ts::name("undefined"));
                }
            }
            Box::new(Ts::union(members))
        });
        Ok(Ts::Object(Object { properties, index }))
    }
}

/// The schema's `type`s (none: any).
fn kinds_of(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The JSON Schema type of a value (`integer` for whole numbers).
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The documentation of a property or a named schema.
pub(crate) fn doc_of(schema: &Value) -> Doc {
    let text = ["description", "title"]
        .iter()
        .find_map(|key| schema.get(*key).and_then(Value::as_str))
        .map(str::to_owned);
    Doc {
        text,
        deprecated: schema.get("deprecated") == Some(&Value::Bool(true)),
    }
}

/// A type that says less than the choices beside it: a primitive keyword or an object of any
/// keys.
fn is_vague(ty: &Ts) -> bool {
    match ty {
        Ts::Name(name) => ["string", "number", "boolean"].contains(&name.as_str()),
        Ts::Object(object) => object.properties.is_empty() && object.index.is_some(),
        _ => false,
    }
}

fn problem(at: &str, problem: String) -> Problem {
    Problem {
        at: if at.is_empty() {
            "/".to_owned()
        } else {
            at.to_owned()
        },
        problem,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn convert(schema: &Value) -> Result<String, Problem> {
        let components = BTreeMap::from([
            ("User".to_owned(), json!({ "type": "object" })),
            (
                "Page_User_".to_owned(),
                json!({ "$ref": "#/components/schemas/User" }),
            ),
        ]);
        let names = BTreeMap::from([
            ("User".to_owned(), "User".to_owned()),
            ("Page_User_".to_owned(), "Page_User_".to_owned()),
        ]);
        let mut converter = Converter::new(&components, &names);
        converter.convert(schema).map(|ty| ty.print(0))
    }

    #[test]
    fn primitives_formats_and_nullable() {
        for (schema, expected) in [
            (json!({ "type": "string" }), "string"),
            (json!({ "type": "string", "format": "date-time" }), "string"),
            (json!({ "type": "string", "format": "binary" }), "Blob"),
            (
                json!({ "type": "integer", "format": "int64", "minimum": 0 }),
                "number",
            ),
            (json!({ "type": "number" }), "number"),
            (json!({ "type": "boolean" }), "boolean"),
            (json!({ "type": "null" }), "null"),
            (json!({ "type": ["string", "null"] }), "string | null"),
            (
                json!({ "type": "string", "nullable": true }),
                "string | null",
            ),
            (json!({}), "unknown"),
            (json!(true), "unknown"),
            (json!(false), "never"),
        ] {
            assert_eq!(convert(&schema).unwrap(), expected, "{schema}");
        }
    }

    #[test]
    fn literals_enums_and_choices() {
        for (schema, expected) in [
            (json!({ "const": "success" }), "\"success\""),
            (
                json!({ "type": "string", "enum": ["a", "b"] }),
                "\"a\" | \"b\"",
            ),
            (json!({ "enum": [1, null, true] }), "1 | null | true"),
            (
                json!({ "type": "string", "oneOf": [{ "const": "a", "description": "A" }, { "const": "b" }] }),
                "\"a\" | \"b\"",
            ),
            (
                json!({ "anyOf": [{ "$ref": "#/components/schemas/User" }, { "type": "null" }] }),
                "User | null",
            ),
            (
                json!({ "allOf": [{ "$ref": "#/components/schemas/User" }, { "properties": { "a": { "type": "string" } } }] }),
                "User & {\n  a?: string;\n}",
            ),
            (
                json!({ "type": "object", "oneOf": [{ "properties": { "kind": { "const": "a" } }, "required": ["kind"] }] }),
                "{\n  kind: \"a\";\n}",
            ),
            // Choices that say nothing keep the base type.
            (
                json!({ "type": "string", "anyOf": [{ "format": "date" }, { "format": "date-time" }] }),
                "string",
            ),
            (
                json!({ "allOf": [{ "$ref": "#/components/schemas/User" }], "nullable": true }),
                "User | null",
            ),
            (json!({ "type": "string", "enum": ["a", 1, null] }), "\"a\""),
            (
                json!({ "type": "number", "enum": [1, 1.5, "x"] }),
                "1 | 1.5",
            ),
        ] {
            assert_eq!(convert(&schema).unwrap(), expected, "{schema}");
        }
    }

    #[test]
    fn arrays_tuples_maps_and_objects() {
        for (schema, expected) in [
            (
                json!({ "type": "array", "items": { "type": "integer" } }),
                "number[]",
            ),
            (json!({ "type": "array" }), "unknown[]"),
            (
                json!({ "type": ["array", "null"], "items": { "type": ["string", "null"] } }),
                "(string | null)[] | null",
            ),
            (
                json!({ "type": "array", "prefixItems": [{ "type": "string" }, { "type": "integer" }], "items": false }),
                "[string, number]",
            ),
            (
                json!({ "type": "array", "prefixItems": [{ "type": "string" }] }),
                "[string, ...unknown[]]",
            ),
            (
                json!({ "type": "object", "additionalProperties": { "type": "integer" } }),
                "Record<string, number>",
            ),
            (json!({ "type": "object" }), "Record<string, unknown>"),
            // `HashMap<u32, String>`: keys by pattern.
            (
                json!({ "type": "object", "additionalProperties": false, "patternProperties": { "^\\d+$": { "type": "string" } } }),
                "Record<string, string>",
            ),
            (
                json!({ "type": "object", "additionalProperties": false }),
                "Record<string, never>",
            ),
            (
                json!({
                    "type": "object",
                    "properties": {
                        "id": { "type": "integer", "description": "The id" },
                        "x-tag": { "type": "string", "deprecated": true },
                        "extra": { "$ref": "#/components/schemas/Page_User_" }
                    },
                    "required": ["id"],
                    "additionalProperties": { "type": "string" }
                }),
                "{\n  extra?: Page_User_;\n  /** The id */\n  id: number;\n  /** @deprecated */\n  \"x-tag\"?: string;\n  [key: string]: string | Page_User_ | undefined | number;\n}",
            ),
        ] {
            assert_eq!(convert(&schema).unwrap(), expected, "{schema}");
        }
    }

    #[test]
    fn what_has_no_type_is_a_problem_with_its_place() {
        let err = convert(&json!({
            "type": "object",
            "properties": { "when": { "type": "string", "not": { "const": "" } } }
        }))
        .unwrap_err();
        assert_eq!(err.at, "/properties/when");
        assert!(err.problem.contains("`not`"), "{}", err.problem);
        let err = convert(&json!({ "$ref": "#/$defs/Inner" })).unwrap_err();
        assert!(err.problem.contains("not to the document's components"));
        let err =
            convert(&json!({ "anyOf": [{ "$ref": "#/components/schemas/Nope" }] })).unwrap_err();
        assert_eq!(err.at, "/anyOf/0");
        assert!(err.problem.contains("names no component"));
        assert!(convert(&json!({ "type": "date" })).is_err());
        assert!(convert(&json!(3)).is_err());
        assert!(convert(&json!({ "patternProperties": [] })).is_err());
        assert!(convert(&json!({ "unevaluatedProperties": { "type": "string" } })).is_err());
    }

    #[test]
    fn references_resolve_through_chains_and_are_remembered() {
        let components = BTreeMap::from([
            ("A".to_owned(), json!({ "$ref": "#/components/schemas/B" })),
            (
                "B".to_owned(),
                json!({ "type": "object", "properties": {} }),
            ),
            (
                "Loop".to_owned(),
                json!({ "$ref": "#/components/schemas/Loop" }),
            ),
        ]);
        let names = components.keys().map(|k| (k.clone(), k.clone())).collect();
        let mut converter = Converter::new(&components, &names);
        let schema = json!({ "$ref": "#/components/schemas/A" });
        assert!(
            converter
                .resolve(&schema)
                .is_some_and(|o| o.contains_key("properties"))
        );
        assert!(
            converter
                .resolve(&json!({ "$ref": "#/components/schemas/Loop" }))
                .is_none()
        );
        converter.convert(&schema).unwrap();
        assert_eq!(converter.reached, BTreeSet::from(["A".to_owned()]));
    }
}
