//! Why an input does not decode, every reason at once, in JSON's words.
//!
//! serde stops at the first problem and names Rust types (`expected i64`). When decoding fails,
//! the input is walked once more against the type's JSON Schema (what schemars emits, garde's
//! rules included), and every problem found is reported with its wire path: each missing
//! required field, each value of the wrong JSON type, each rule a present value breaks.
//!
//! serde stays the judge of what is valid: this only explains a failure it found. So the walk
//! covers the keywords schemars writes for serde types and garde rules (`type`, `properties`,
//! `required`, `additionalProperties`, `items`, `prefixItems`, `enum`, `const`, `anyOf`,
//! `oneOf`, `allOf`, `$ref`, the length, range and pattern keywords, the `email` and IP
//! formats); a keyword it does not know never invents a problem, and when it finds nothing the
//! caller falls back to serde's message, reworded. Text values (query, path, headers, forms)
//! are read as leniently as the deserializer reads them: `"5"` is an integer where one is
//! wanted.
//!
//! The schema is not the deserializer: a field's `deserialize_with` may read what its schema
//! refuses. Each problem says in which of the input's entries it is and whether it is one of
//! decoding ([`Cause`]); the caller keeps an entry's decoding problems only where serde refuses
//! that entry too (`crate::confirm`).

use std::collections::HashMap;
use std::fmt::Write as _;

use regex::Regex;
use serde_json::{Map, Number, Value};

use strata_input::{InputValue, TextValue, UploadedFile};

/// One problem: where (wire path, empty for the whole input) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Issue {
    pub(crate) path: String,
    pub(crate) message: String,
    /// The input's entry it is in (its index), `None` for the whole input (a missing field).
    pub(crate) entry: Option<usize>,
    /// What the schema says about the value: one serde would not decode, or one garde's rules
    /// would refuse once decoded.
    pub(crate) cause: Cause,
}

/// Why a value is a problem, by the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// It does not decode: a wrong type, a value out of an enum or of its Rust type's range, an
    /// unknown or missing field. The schema may say so of a value a field's own deserializer
    /// reads (`deserialize_with`): serde has the last word.
    Decoding,
    /// It breaks a rule (length, range, pattern, format), which garde checks too.
    Rule,
}

/// At most this many issues are listed; the rest are counted.
pub(crate) const MAX_ISSUES: usize = 100;

/// Values shown in messages are cut to this many characters.
const MAX_SHOWN_CHARS: usize = 40;

/// Bound on nesting (`$ref` chains, deep values), against cyclic schemas. A JSON body nests at
/// most 128 levels (`serde_json`'s limit) and the walk takes a few steps per level.
const MAX_DEPTH: usize = 384;

/// A value being explained: JSON, or text read leniently, or files.
#[derive(Clone, Copy)]
enum Node<'a> {
    Json(&'a Value),
    Text(&'a str),
    TextList(&'a [String]),
    Files(&'a [UploadedFile]),
    /// The merged input: its entries by wire name.
    Entries(&'a [(String, InputValue)]),
}

impl<'a> Node<'a> {
    fn of(value: &'a InputValue) -> Self {
        match value {
            InputValue::Json(value) => Node::Json(value),
            InputValue::Text(TextValue::One(text)) => Node::Text(text),
            InputValue::Text(TextValue::Many(texts)) => Node::TextList(texts),
            InputValue::Files(files) => Node::Files(files),
        }
    }

    /// How the value is named after `received`.
    fn received(self) -> String {
        match self {
            Node::Json(Value::Null) => "null".to_owned(),
            Node::Json(Value::Bool(b)) => format!("boolean {b}"),
            Node::Json(Value::Number(n)) => format!("number {n}"),
            Node::Json(Value::String(s)) => format!("string {}", shown(s)),
            Node::Text(s) => format!("string {}", shown(s)),
            Node::Json(Value::Array(_)) | Node::TextList(_) => "array".to_owned(),
            Node::Json(Value::Object(_)) | Node::Entries(_) => "object".to_owned(),
            Node::Files(files) if files.len() > 1 => "files".to_owned(),
            Node::Files(_) => "a file".to_owned(),
        }
    }
}

/// `"abc"`, cut to a readable length.
fn shown(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(MAX_SHOWN_CHARS).collect();
    let quoted = Value::from(head).to_string();
    if chars.next().is_some() {
        format!("{}…\"", &quoted[..quoted.len() - 1])
    } else {
        quoted
    }
}

/// What the walk found: the first problems (sorted by path, indices by number) and how many
/// there were in all. When its visit budget ran out, only what it had found.
pub(crate) struct Explained {
    pub(crate) issues: Vec<Issue>,
    pub(crate) total: usize,
    /// Of the problems counted and not kept, the decoding ones in each entry (by index).
    pub(crate) unkept: HashMap<usize, usize>,
    /// Schema nodes visited (the budget is [`MAX_VISITS`]).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) visits: usize,
}

/// At most this many schema nodes are visited per explanation: choices (`anyOf`, tagged enums)
/// walk every member, which nested choices could make exponential on a small hostile input.
const MAX_VISITS: usize = 50_000;

/// Problems kept for sorting; the rest are only counted.
const MAX_KEPT: usize = 1_000;

/// Every problem of `entries` (a merged input) against `schema`, a root schema with its
/// `$defs`.
pub(crate) fn explain(schema: &Value, entries: &[(String, InputValue)]) -> Explained {
    let mut walker = Walker {
        root: schema,
        issues: Vec::new(),
        counted: 0,
        unkept: HashMap::new(),
        entry: None,
        visits: 0,
        patterns: HashMap::new(),
    };
    let mut path = String::new();
    walker.check(Node::Entries(entries), schema, &mut path, 0);
    let mut issues = walker.issues;
    // Stable: problems of one place keep the order they were found in.
    issues.sort_by(|a, b| natural_order(&a.path, &b.path));
    issues.dedup();
    Explained {
        total: walker.counted + issues.len(),
        unkept: walker.unkept,
        visits: walker.visits,
        issues,
    }
}

/// Paths in reading order: `ids[2]` before `ids[10]`.
pub(crate) fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
                let (da, db) = (digits(a), digits(b));
                let (na, nb) = (&a[..da], &b[..db]);
                // Without leading zeros, a longer number is larger.
                let order = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
                if order != std::cmp::Ordering::Equal {
                    return order;
                }
                (a, b) = (&a[da..], &b[db..]);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                (a, b) = (&a[1..], &b[1..]);
            }
        }
    }
}

/// `path: message; path: message`, at most [`MAX_ISSUES`] of them, then `… and N more` for the
/// rest of `total`; with where each problem ends in the text (for
/// [`ApiError::with_problems`](strata_core::ApiError::with_problems)).
pub(crate) fn render(
    issues: impl Iterator<Item = (String, String)>,
    total: usize,
) -> (String, Vec<usize>) {
    let mut out = String::new();
    let mut ends = Vec::new();
    for (path, message) in issues.take(MAX_ISSUES) {
        if !out.is_empty() {
            out.push_str("; ");
        }
        if !path.is_empty() {
            out.push_str(&path);
            out.push_str(": ");
        }
        out.push_str(&message);
        ends.push(out.len());
    }
    if total > MAX_ISSUES {
        let _ = write!(out, "; … and {} more", total - MAX_ISSUES);
        ends.push(out.len());
    }
    (out, ends)
}

struct Walker<'s> {
    root: &'s Value,
    issues: Vec<Issue>,
    /// Problems found beyond [`MAX_KEPT`].
    counted: usize,
    /// Of those, the decoding ones in each entry.
    unkept: HashMap<usize, usize>,
    /// The entry of the input being walked.
    entry: Option<usize>,
    /// Schema nodes visited, against [`MAX_VISITS`].
    visits: usize,
    /// Compiled `pattern`s (`None` for a pattern the regex crate cannot compile).
    patterns: HashMap<&'s str, Option<Regex>>,
}

/// Keywords that say nothing about a value (beside a `$ref`).
const ANNOTATIONS: [&str; 10] = [
    "$ref",
    "$comment",
    "description",
    "title",
    "default",
    "examples",
    "example",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// JSON's type names, in the order a text value is tried against them.
const TEXT_ORDER: [&str; 5] = ["string", "integer", "number", "boolean", "array"];

impl<'s> Walker<'s> {
    /// A value that does not decode.
    fn push(&mut self, path: &str, message: String) {
        self.push_as(Cause::Decoding, path, message);
    }

    /// A value that breaks a rule.
    fn rule(&mut self, path: &str, message: String) {
        self.push_as(Cause::Rule, path, message);
    }

    fn push_as(&mut self, cause: Cause, path: &str, message: String) {
        if self.issues.len() >= MAX_KEPT {
            self.counted += 1;
            if let (Cause::Decoding, Some(entry)) = (cause, self.entry) {
                *self.unkept.entry(entry).or_default() += 1;
            }
            return;
        }
        self.issues.push(Issue {
            path: path.to_owned(),
            message,
            entry: self.entry,
            cause,
        });
    }

    /// Follows `$ref`s to the root's `$defs`.
    fn resolve(&self, mut schema: &'s Value) -> &'s Value {
        for _ in 0..MAX_DEPTH {
            let Some(target) = schema.get("$ref").and_then(Value::as_str) else {
                return schema;
            };
            let found = target
                .strip_prefix("#/$defs/")
                .and_then(|name| self.root.get("$defs")?.get(name))
                .or_else(|| (target == "#").then_some(self.root));
            match found {
                Some(next) => schema = next,
                // A reference the walk cannot follow says nothing it can check.
                None => return &Value::Bool(true),
            }
        }
        &Value::Bool(true)
    }

    fn check(&mut self, node: Node<'_>, schema: &'s Value, path: &mut String, depth: usize) {
        self.visits += 1;
        if depth > MAX_DEPTH || self.visits > MAX_VISITS {
            return;
        }
        let Some(object) = schema.as_object() else {
            return self.boolean_schema(schema, path);
        };
        if object.contains_key("$ref") {
            // The target, then any keyword beside the reference (schemars puts an internally
            // tagged variant's tag there).
            let target = self.resolve(schema);
            if !std::ptr::eq(target, schema) {
                self.check(node, target, path, depth + 1);
            }
            if object.keys().all(|key| ANNOTATIONS.contains(&key.as_str())) {
                return;
            }
        }
        if let Node::Files(files) = node
            && files.len() > 1
            && is_file(object)
        {
            self.push(path, format!("expected one file, received {}", files.len()));
            return;
        }
        if let Some(Value::Array(members)) = object.get("allOf") {
            for member in members {
                self.check(node, member, path, depth + 1);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = object.get(key) {
                self.choice(node, members, path, depth);
            }
        }
        if let Some(expected) = object.get("const") {
            if !matches_literal(node, expected) {
                let message = format!("expected {expected}, received {}", node.received());
                self.push(path, message);
            }
            return;
        }
        if let Some(Value::Array(options)) = object.get("enum") {
            if !options.iter().any(|option| matches_literal(node, option)) {
                let message = format!(
                    "expected one of {}, received {}",
                    one_of(options),
                    node.received()
                );
                self.push(path, message);
            }
            return;
        }
        let kinds = kinds_of(object);
        let Some(kind) = Self::kind(node, object, &kinds) else {
            // A text value is never null: offering it would confuse.
            let text = matches!(node, Node::Text(_) | Node::TextList(_));
            let expected: Vec<&str> = kinds
                .iter()
                .copied()
                .filter(|kind| !text || *kind != "null")
                .collect();
            let expected = if expected.is_empty() {
                "null".to_owned()
            } else {
                expected.join(" or ")
            };
            let message = format!("expected {expected}, received {}", node.received());
            self.push(path, message);
            return;
        };
        match (kind, node) {
            (Kind::Object, Node::Json(Value::Object(members))) => {
                let entries: Vec<(&str, Node<'_>)> = members
                    .iter()
                    .map(|(k, v)| (k.as_str(), Node::Json(v)))
                    .collect();
                self.object(&entries, object, path, depth, false);
            }
            (Kind::Object, Node::Entries(entries)) => {
                let entries: Vec<(&str, Node<'_>)> = entries
                    .iter()
                    .map(|(k, v)| (k.as_str(), Node::of(v)))
                    .collect();
                self.object(&entries, object, path, depth, true);
            }
            (Kind::Array, Node::Json(Value::Array(items))) => {
                let items: Vec<Node<'_>> = items.iter().map(Node::Json).collect();
                self.array(&items, object, path, depth);
            }
            (Kind::Array, Node::TextList(texts)) => {
                let items: Vec<Node<'_>> = texts.iter().map(|t| Node::Text(t)).collect();
                self.array(&items, object, path, depth);
            }
            // One text value where a list is wanted: a list of one.
            (Kind::Array, Node::Text(_)) => self.array(&[node], object, path, depth),
            (Kind::String, Node::Json(Value::String(text))) => self.string(text, object, path),
            (Kind::String, Node::Text(text)) => self.string(text, object, path),
            (Kind::Number(number), _) => self.number(&number, object, path),
            (Kind::BeyondRange { negative }, _) => self.beyond_range(negative, object, path),
            _ => {}
        }
    }

    /// The JSON type `node` is read as under `kinds` (every type when empty), `None` when it
    /// fits none of them.
    fn kind(node: Node<'_>, schema: &Map<String, Value>, kinds: &[&str]) -> Option<Kind> {
        let allows = |kind: &str| kinds.is_empty() || kinds.contains(&kind);
        match node {
            Node::Json(value) => {
                let kind = match value {
                    Value::Null => "null",
                    Value::Bool(_) => "boolean",
                    // Integers are what serde reads as integers: `1.0` is not one.
                    Value::Number(n) if n.is_f64() => "number",
                    Value::Number(_) => {
                        if allows("integer") {
                            "integer"
                        } else {
                            "number"
                        }
                    }
                    Value::String(_) => "string",
                    Value::Array(_) => "array",
                    Value::Object(_) => "object",
                };
                if !allows(kind) {
                    return None;
                }
                Some(match value {
                    Value::Number(n) => Kind::Number(n.clone()),
                    Value::Array(_) => Kind::Array,
                    Value::Object(_) => Kind::Object,
                    Value::String(_) => Kind::String,
                    _ => Kind::Other,
                })
            }
            Node::Text(text) => TEXT_ORDER
                .iter()
                .filter(|kind| kinds.contains(kind))
                .find_map(|kind| match *kind {
                    "string" => Some(Kind::String),
                    // Rust's unsigned parsers refuse any sign but `+`: `-0` is no `u32`.
                    "integer" => match integer(text) {
                        Some(n) if !(text.starts_with("-0") && is_unsigned(schema)) => {
                            Some(Kind::Number(n))
                        }
                        Some(_) => None,
                        // Beyond 64 bits: out of a 64-bit (or smaller) type's range; only a
                        // 128-bit type takes it, and there is nothing to check.
                        None => (text.parse::<i128>().is_ok() || text.parse::<u128>().is_ok())
                            .then(|| match integer_format_range(schema) {
                                Some(_) => Kind::BeyondRange {
                                    negative: text.starts_with('-'),
                                },
                                None => Kind::Other,
                            }),
                    },
                    // `NaN`, `inf`, `1e400` are `f64`s to Rust, not JSON numbers: accepted,
                    // nothing to check.
                    "number" => text
                        .parse::<f64>()
                        .ok()
                        .map(|f| Number::from_f64(f).map_or(Kind::Other, Kind::Number)),
                    "boolean" => matches!(text, "true" | "false").then_some(Kind::Other),
                    _ => Some(Kind::Array),
                })
                .or_else(|| kinds.is_empty().then_some(Kind::String)),
            Node::TextList(_) => allows("array").then_some(Kind::Array),
            // One file where a file is wanted, or files where a list is (of files, as the
            // schema of `Vec<UploadedFile>` says).
            Node::Files(files) => {
                ((is_file(schema) && files.len() == 1) || allows("array") || kinds.is_empty())
                    .then_some(Kind::Other)
            }
            Node::Entries(_) => allows("object").then_some(Kind::Object),
        }
    }

    /// `anyOf` / `oneOf`: fine when one member fits. An optional value (`T` or `null`) is
    /// explained as `T`; otherwise the member that fits best is.
    fn choice(&mut self, node: Node<'_>, members: &'s [Value], path: &mut String, depth: usize) {
        let is_null = |m: &Value| self.resolve(m).get("type") == Some(&Value::from("null"));
        if matches!(node, Node::Json(Value::Null)) && members.iter().any(is_null) {
            return;
        }
        let candidates: Vec<&'s Value> = members.iter().filter(|m| !is_null(m)).collect();
        if let [only] = candidates.as_slice()
            && candidates.len() < members.len()
        {
            let before = self.issues.len();
            self.check(node, only, path, depth + 1);
            // `T` refused a null it was never offered: say `null` is fine too.
            if matches!(node, Node::Json(_)) && self.issues.len() > before {
                for issue in &mut self.issues[before..] {
                    if issue.path == *path && issue.message.starts_with("expected ") {
                        issue.message =
                            issue
                                .message
                                .replacen(", received", " or null, received", 1);
                    }
                }
            }
            return;
        }
        // A tagged choice: only the members whose tag the input names are candidates.
        let tagged: Vec<&'s Value> = members
            .iter()
            .filter(|member| self.tag_fits(node, member) == Some(true))
            .collect();
        let walked: Vec<&'s Value> = if tagged.is_empty() {
            members.iter().collect()
        } else {
            tagged
        };
        // The best member is one whose type fits (its problems are deeper inside), then the
        // one with the fewest problems.
        let mut best: Option<((bool, usize), Vec<Issue>)> = None;
        for member in walked {
            let saved = std::mem::take(&mut self.issues);
            self.check(node, member, path, depth + 1);
            let found = std::mem::replace(&mut self.issues, saved);
            if found.is_empty() {
                return;
            }
            let rank = (found.iter().any(|i| i.path == *path), found.len());
            if best.as_ref().is_none_or(|(known, _)| rank < *known) {
                best = Some((rank, found));
            }
        }
        let best = best.map(|(_, issues)| issues);
        // A choice of literals (a documented enum): one message naming them all.
        let literals: Option<Vec<&Value>> = members
            .iter()
            .map(|m| self.resolve(m).get("const"))
            .collect();
        match literals {
            Some(literals) if !literals.is_empty() => {
                let options: Vec<Value> = literals.into_iter().cloned().collect();
                let message = format!(
                    "expected one of {}, received {}",
                    one_of(&options),
                    node.received()
                );
                self.push(path, message);
            }
            _ => {
                let mut issues = best.unwrap_or_default();
                // A value or its text (`#[strata(coerce)]`: the type, or a string matching a
                // pattern): text that does not match is told both forms, not only the type.
                if let Node::Json(Value::String(_)) = node
                    && let Some(pattern) = members.iter().find_map(|member| {
                        let member = self.resolve(member);
                        (member.get("type") == Some(&Value::from("string")))
                            .then(|| member.get("pattern").and_then(Value::as_str))
                            .flatten()
                    })
                {
                    for issue in &mut issues {
                        if issue.path == *path && issue.message.starts_with("expected ") {
                            issue.message = issue.message.replacen(
                                ", received",
                                &format!(" or text matching /{pattern}/, received"),
                                1,
                            );
                        }
                    }
                }
                self.issues.extend(issues);
            }
        }
    }

    /// Whether `node` names the tag of `member` (a property with a `const`, as tagged enums
    /// have): `None` when the member has no tag or the node is not an object.
    fn tag_fits(&self, node: Node<'_>, member: &'s Value) -> Option<bool> {
        let properties = self.resolve(member).get("properties")?.as_object()?;
        let mut tagged = None;
        for (name, property) in properties {
            let Some(expected) = self.resolve(property).get("const") else {
                continue;
            };
            let given = match node {
                Node::Json(Value::Object(members)) => members.get(name).map(Node::Json),
                Node::Entries(entries) => entries
                    .iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| Node::of(value)),
                _ => return None,
            };
            let fits = given.is_some_and(|given| matches_literal(given, expected));
            tagged = Some(tagged.unwrap_or(true) && fits);
        }
        tagged
    }

    /// The members of an object; `top` for the input's own entries, whose problems say in
    /// which entry they are.
    fn object(
        &mut self,
        entries: &[(&str, Node<'_>)],
        schema: &'s Map<String, Value>,
        path: &mut String,
        depth: usize,
        top: bool,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !entries.iter().any(|(key, _)| *key == name) {
                    let at = joined(path, name);
                    self.push(&at, "required".to_owned());
                }
            }
        }
        let extra = schema.get("additionalProperties");
        let patterned = schema.get("patternProperties").and_then(Value::as_object);
        for (index, (key, value)) in entries.iter().enumerate() {
            if top {
                self.entry = Some(index);
            }
            let known = properties.and_then(|p| p.get(*key));
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&short_key(key));
            // Keys a pattern describes (maps with non-string keys) are not additional.
            let mut matched = false;
            if known.is_none() {
                for (pattern, property) in patterned.into_iter().flatten() {
                    if self.pattern(pattern).is_some_and(|re| re.is_match(key)) {
                        matched = true;
                        self.check(*value, property, path, depth + 1);
                    }
                }
            }
            match (known, extra) {
                (Some(property), _) => self.check(*value, property, path, depth + 1),
                _ if matched => {}
                (None, Some(Value::Bool(false))) => self.push(path, "unknown field".to_owned()),
                (None, Some(extra)) => self.check(*value, extra, path, depth + 1),
                (None, None) => {}
            }
            path.truncate(len);
        }
        if top {
            self.entry = None;
        }
    }

    fn array(
        &mut self,
        items: &[Node<'_>],
        schema: &'s Map<String, Value>,
        path: &mut String,
        depth: usize,
    ) {
        self.length(items.len(), schema, "minItems", "maxItems", path);
        let prefix = schema.get("prefixItems").and_then(Value::as_array);
        for (index, item) in items.iter().enumerate() {
            let item_schema = prefix
                .and_then(|p| p.get(index))
                .or_else(|| schema.get("items"));
            if let Some(item_schema) = item_schema {
                let len = path.len();
                let _ = write!(path, "[{index}]");
                self.check(*item, item_schema, path, depth + 1);
                path.truncate(len);
            }
        }
        // `uniqueItems` (sets) is not checked: serde merges repeats into a set.
    }

    fn length(
        &mut self,
        len: usize,
        schema: &Map<String, Value>,
        min: &str,
        max: &str,
        path: &str,
    ) {
        let bound = |key: &str| schema.get(key).and_then(Value::as_u64);
        let len = len as u64;
        if let Some(min) = bound(min)
            && len < min
        {
            self.rule(path, format!("length is lower than {min}"));
        }
        if let Some(max) = bound(max)
            && len > max
        {
            self.rule(path, format!("length is greater than {max}"));
        }
    }

    fn pattern(&mut self, pattern: &'s str) -> Option<&Regex> {
        self.patterns
            .entry(pattern)
            .or_insert_with(|| Regex::new(pattern).ok())
            .as_ref()
    }

    fn string(&mut self, text: &str, schema: &'s Map<String, Value>, path: &str) {
        // garde counts bytes unless told `chars`, and schemars writes the same keyword for
        // both: a length too short in bytes is too short in characters too, and one too long
        // in characters too long in bytes, so neither check refuses what garde accepts.
        let bound = |key: &str| schema.get(key).and_then(Value::as_u64);
        if let Some(min) = bound("minLength")
            && (text.len() as u64) < min
        {
            self.rule(path, format!("length is lower than {min}"));
        }
        if let Some(max) = bound("maxLength")
            && text.chars().count() as u64 > max
        {
            self.rule(path, format!("length is greater than {max}"));
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
            && self.pattern(pattern).is_some_and(|re| !re.is_match(text))
        {
            self.rule(path, format!("does not match pattern /{pattern}/"));
        }
        let invalid = match schema.get("format").and_then(Value::as_str) {
            Some("email") => garde::rules::email::parse_email(text)
                .err()
                .map(|e| format!("not a valid email: {e}")),
            Some("ipv4") => text
                .parse::<std::net::Ipv4Addr>()
                .is_err()
                .then(|| "not a valid IPv4 address".to_owned()),
            Some("ipv6") => text
                .parse::<std::net::Ipv6Addr>()
                .is_err()
                .then(|| "not a valid IPv6 address".to_owned()),
            _ => None,
        };
        if let Some(message) = invalid {
            self.rule(path, message);
        }
    }

    /// `false` admits nothing; `true` everything.
    fn boolean_schema(&mut self, schema: &Value, path: &str) {
        if *schema == Value::Bool(false) {
            self.push(path, "not allowed".to_owned());
        }
    }

    /// An integer beyond 64 bits where the type has 64 or fewer: out of range, by the schema's
    /// bound when it states one, else by the type's.
    fn beyond_range(&mut self, negative: bool, schema: &Map<String, Value>, path: &str) {
        let range = integer_format_range(schema).unwrap_or_default();
        let (key, words, limit) = if negative {
            ("minimum", "lower than", range.0)
        } else {
            ("maximum", "greater than", range.1)
        };
        let bound = schema
            .get(key)
            .filter(|b| b.is_number())
            .map_or_else(|| limit.to_string(), ToString::to_string);
        self.push(path, format!("{words} {bound}"));
    }

    fn number(&mut self, number: &Number, schema: &Map<String, Value>, path: &str) {
        // The integer's Rust type, by the `format` schemars writes: its range is a rule too
        // (schemars writes `minimum: 0` for unsigned types, not always the maximum). A value
        // out of it does not decode, whichever bound says so.
        let range = schema
            .get("format")
            .and_then(Value::as_str)
            .and_then(integer_range);
        let whole = number
            .as_i64()
            .map(i128::from)
            .or_else(|| number.as_u64().map(i128::from));
        let (above, below) = match (range, whole) {
            (Some((min, max)), Some(whole)) => (whole > max, whole < min),
            _ => (false, false),
        };
        let cause = |out: bool| if out { Cause::Decoding } else { Cause::Rule };
        if let Some((min, max)) = range {
            if above && schema.get("maximum").is_none() {
                self.push(path, format!("greater than {max}"));
            }
            if below && schema.get("minimum").is_none() {
                self.push(path, format!("lower than {min}"));
            }
        }
        let value = number.as_f64().unwrap_or(f64::NAN);
        let bound = |key: &str| schema.get(key).filter(|b| b.is_number());
        if let Some(min) = bound("minimum")
            && value < min.as_f64().unwrap_or(f64::NEG_INFINITY)
        {
            self.push_as(cause(below), path, format!("lower than {min}"));
        }
        if let Some(max) = bound("maximum")
            && value > max.as_f64().unwrap_or(f64::INFINITY)
        {
            self.push_as(cause(above), path, format!("greater than {max}"));
        }
        if let Some(min) = bound("exclusiveMinimum")
            && value <= min.as_f64().unwrap_or(f64::NEG_INFINITY)
        {
            self.rule(path, format!("not greater than {min}"));
        }
        if let Some(max) = bound("exclusiveMaximum")
            && value >= max.as_f64().unwrap_or(f64::INFINITY)
        {
            self.rule(path, format!("not lower than {max}"));
        }
        if let Some(step) = bound("multipleOf").and_then(Value::as_f64)
            && step > 0.0
            && (value / step).fract().abs() > f64::EPSILON
        {
            self.rule(path, format!("not a multiple of {step}"));
        }
    }
}

/// What a value was read as, with what the checks after the type need.
enum Kind {
    Object,
    Array,
    String,
    Number(Number),
    /// An integer in text beyond 64 bits, where the schema's type is 64 bits or fewer.
    BeyondRange {
        negative: bool,
    },
    /// A boolean, a null, files: nothing more to check.
    Other,
}

/// The schema's `type`s (none: any type).
fn kinds_of(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The range of an integer `format` as schemars writes them for Rust's integer types.
/// The range of the integer type the schema's `format` names.
fn integer_format_range(schema: &Map<String, Value>) -> Option<(i128, i128)> {
    schema
        .get("format")
        .and_then(Value::as_str)
        .and_then(integer_range)
}

fn integer_range(format: &str) -> Option<(i128, i128)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        // `isize` (`int`) is 64 bits on the targets Strata serves from.
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        // `usize` (`uint`) likewise.
        "uint64" | "uint" => (0, u64::MAX.into()),
        _ => return None,
    })
}

/// Whether the schema is of an unsigned Rust integer (`format: uint32`, ...).
fn is_unsigned(schema: &Map<String, Value>) -> bool {
    schema
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| format.starts_with("uint"))
}

/// A file schema: `{"type": "string", "format": "binary"}`.
fn is_file(schema: &Map<String, Value>) -> bool {
    schema.get("format").and_then(Value::as_str) == Some("binary")
}

/// `text` as an integer, as the deserializer parses it for an integer type.
fn integer(text: &str) -> Option<Number> {
    text.parse::<i64>()
        .map(Number::from)
        .or_else(|_| text.parse::<u64>().map(Number::from))
        .ok()
}

/// Whether `node` is the literal `expected` (a text value by its text, or as a number).
fn matches_literal(node: Node<'_>, expected: &Value) -> bool {
    match (node, expected) {
        (Node::Json(value), _) => value == expected,
        (Node::Text(text), Value::String(s)) => text == s,
        (Node::Text(text), Value::Number(n)) => {
            integer(text).is_some_and(|i| i == *n) || text.parse::<f64>().ok() == n.as_f64()
        }
        (Node::Text(text), Value::Bool(b)) => text == if *b { "true" } else { "false" },
        _ => false,
    }
}

/// `"a" | "b" | 3`.
fn one_of(options: &[Value]) -> String {
    options
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A key as shown in a path: cut like values (a client may send a long one).
fn short_key(key: &str) -> std::borrow::Cow<'_, str> {
    match key.char_indices().nth(MAX_SHOWN_CHARS) {
        None => key.into(),
        Some((end, _)) => format!("{}…", &key[..end]).into(),
    }
}

pub(crate) fn joined(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// serde's message in JSON's words, for the failures the schema does not explain:
/// `invalid type: string "abc", expected i64` → `expected integer, received string "abc"`;
/// with the field it names, when it names one (``missing field `age` `` → `age`, `required`).
pub(crate) fn plain_words(message: &str) -> (Option<String>, String) {
    // serde_json appends where in the text the problem is; the path says it better.
    let message = strip_position(message);
    if let Some(rest) = message.strip_prefix("missing field `")
        && rest.ends_with('`')
    {
        let field = short_key(&rest[..rest.len() - 1]).into_owned();
        return (Some(field), "required".to_owned());
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some((received, expected)) = rest.rsplit_once(", expected ")
        {
            let text = format!(
                "expected {}, received {}",
                json_expected(expected),
                json_received(received)
            );
            return (None, text);
        }
    }
    if let Some(rest) = message.strip_prefix("unknown variant ")
        && let Some((variant, expected)) = rest.rsplit_once(", expected ")
    {
        let options = expected
            .trim_start_matches("one of ")
            .replace('`', "\"")
            .replace(", ", " | ")
            .replace(" or ", " | ");
        let text = format!(
            "expected one of {options}, received string {}",
            shown(variant.trim_matches('`'))
        );
        return (None, text);
    }
    if let Some(rest) = message.strip_prefix("unknown field `")
        && let Some((field, _)) = rest.split_once('`')
    {
        return (
            Some(short_key(field).into_owned()),
            "unknown field".to_owned(),
        );
    }
    (None, message.to_owned())
}

/// `message` without `serde_json`'s trailing ` at line N column M`.
fn strip_position(message: &str) -> &str {
    let Some(at) = message.rfind(" at line ") else {
        return message;
    };
    let tail = &message[at + " at line ".len()..];
    let numbers: Vec<&str> = tail.split(" column ").collect();
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if numbers.len() == 2 && numbers.iter().all(|n| all_digits(n)) {
        &message[..at]
    } else {
        message
    }
}

/// serde's `expected` phrase as a JSON type.
fn json_expected(expected: &str) -> String {
    let bare = expected.trim_start_matches("a ").trim_start_matches("an ");
    let kind = match bare {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128"
        | "usize" | "integer" => "integer",
        "f32" | "f64" | "number" | "floating point number" => "number",
        "string" | "borrowed string" | "char" | "character" | "str" => "string",
        "boolean" | "bool" => "boolean",
        "sequence" | "seq" | "vec" | "list" => "array",
        "map" | "object" => "object",
        "unit" | "null" => "null",
        other if other.starts_with("struct ") || other.starts_with("map ") => "object",
        other if other.starts_with("tuple") || other.starts_with("array") => "array",
        other => return other.to_owned(),
    };
    kind.to_owned()
}

/// serde's `Unexpected` as JSON's words: ``integer `5` `` → `number 5`.
fn json_received(received: &str) -> String {
    let value = |rest: &str| rest.trim_matches('`').to_owned();
    if let Some(rest) = received
        .strip_prefix("integer ")
        .or_else(|| received.strip_prefix("floating point "))
    {
        return format!("number {}", value(rest));
    }
    if let Some(rest) = received.strip_prefix("boolean ") {
        return format!("boolean {}", value(rest));
    }
    if let Some(rest) = received.strip_prefix("string ") {
        let text: String = serde_json::from_str(rest).unwrap_or_else(|_| rest.to_owned());
        return format!("string {}", shown(&text));
    }
    match received {
        "sequence" => "array".to_owned(),
        "map" => "object".to_owned(),
        "unit value" | "null" => "null".to_owned(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entries(value: Value) -> Vec<(String, InputValue)> {
        match value {
            Value::Object(map) => map
                .into_iter()
                .map(|(k, v)| (k, InputValue::Json(v)))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn messages(schema: &Value, input: &[(String, InputValue)]) -> String {
        let explained = explain(schema, input);
        render(
            explained.issues.into_iter().map(|i| (i.path, i.message)),
            explained.total,
        )
        .0
    }

    fn user_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "minLength": 1 },
                "age": { "type": "integer", "format": "int64", "minimum": 0 },
                "role": { "$ref": "#/$defs/Role" },
                "nick": { "type": ["string", "null"], "maxLength": 3 },
                "tags": { "type": "array", "items": { "type": "string", "pattern": "^[a-z]+$" }, "maxItems": 2 },
                "email": { "type": "string", "format": "email" }
            },
            "required": ["name", "age"],
            "$defs": { "Role": { "type": "string", "enum": ["admin", "reader"] } }
        })
    }

    #[test]
    fn every_problem_of_a_json_input_with_its_path() {
        let schema = user_schema();
        assert_eq!(
            messages(&schema, &entries(json!({ "name": "Dan" }))),
            "age: required"
        );
        assert_eq!(
            messages(&schema, &entries(json!({}))),
            "age: required; name: required"
        );
        assert_eq!(
            messages(&schema, &entries(json!({ "name": "", "age": -1.5 }))),
            "age: expected integer, received number -1.5; name: length is lower than 1"
        );
        assert_eq!(
            messages(
                &schema,
                &entries(json!({
                    "name": 5, "age": 1.0, "role": "owner", "nick": "toolong",
                    "tags": ["ok", "NO", "x"], "email": "nope"
                }))
            ),
            "age: expected integer, received number 1.0; \
             email: not a valid email: value is missing `@`; \
             name: expected string, received number 5; \
             nick: length is greater than 3; \
             role: expected one of \"admin\" | \"reader\", received string \"owner\"; \
             tags: length is greater than 2; \
             tags[1]: does not match pattern /^[a-z]+$/"
        );
        assert_eq!(
            messages(
                &schema,
                &entries(json!({ "name": null, "age": [1], "nick": 3 }))
            ),
            "age: expected integer, received array; \
             name: expected string, received null; \
             nick: expected string or null, received number 3"
        );
    }

    #[test]
    fn each_problem_says_its_entry_and_whether_it_is_one_of_decoding() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "minLength": 1 },
                "tags": { "type": "array", "items": { "type": "string" } },
                "small": { "type": "integer", "format": "uint8", "minimum": 0 },
                "capped": { "type": "integer", "format": "uint8", "minimum": 0, "maximum": 10 }
            },
            "required": ["id"]
        });
        let input: Vec<(String, InputValue)> = [
            ("name", json!("")),
            ("tags", json!(["ok", 5])),
            ("small", json!(-1)),
            ("capped", json!(11)),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), InputValue::Json(value)))
        .collect();
        let found: Vec<(String, Option<usize>, Cause)> = explain(&schema, &input)
            .issues
            .into_iter()
            .map(|issue| (issue.path, issue.entry, issue.cause))
            .collect();
        let expected = [
            ("capped", Some(3), Cause::Rule),
            ("id", None, Cause::Decoding),
            ("name", Some(0), Cause::Rule),
            // Below `u8`'s range: no rule, the type refuses it.
            ("small", Some(2), Cause::Decoding),
            ("tags[1]", Some(1), Cause::Decoding),
        ];
        let expected: Vec<(String, Option<usize>, Cause)> = expected
            .into_iter()
            .map(|(path, entry, cause)| (path.to_owned(), entry, cause))
            .collect();
        assert_eq!(found, expected);
        // `id: required` is kept first: 201 of the tags' problems are only counted, by entry.
        let explained = explain(&schema, &many_bad_tags());
        assert_eq!(explained.unkept.get(&0), Some(&201));
        assert_eq!(explained.total, MAX_KEPT + 201);
    }

    /// One entry, `tags`, with more problems than are kept.
    fn many_bad_tags() -> Vec<(String, InputValue)> {
        let tags: Vec<Value> = (0..MAX_KEPT + 200).map(|i| json!(i)).collect();
        vec![("tags".to_owned(), InputValue::Json(Value::Array(tags)))]
    }

    #[test]
    fn text_values_are_read_as_leniently_as_the_deserializer_reads_them() {
        let schema = user_schema();
        let text = |pairs: &[(&str, &str)]| -> Vec<(String, InputValue)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), InputValue::from(*v)))
                .collect()
        };
        assert_eq!(
            messages(&schema, &text(&[("name", "Dan"), ("age", "42")])),
            ""
        );
        assert_eq!(
            messages(
                &schema,
                &text(&[("name", "Dan"), ("age", "abc"), ("tags", "UP")])
            ),
            "age: expected integer, received string \"abc\"; tags[0]: does not match pattern /^[a-z]+$/"
        );
        let mut many = text(&[("name", "Dan")]);
        many.push((
            "age".into(),
            InputValue::Text(TextValue::Many(vec!["1".into(), "2".into()])),
        ));
        assert_eq!(
            messages(&schema, &many),
            "age: expected integer, received array"
        );
    }

    #[test]
    fn choices_unknown_fields_and_long_values() {
        let schema = json!({
            "type": "object",
            "properties": {
                "kind": { "oneOf": [{ "const": "a", "description": "A" }, { "const": "b" }] },
                "inner": { "anyOf": [{ "$ref": "#/$defs/Inner" }, { "type": "null" }] },
                "either": { "anyOf": [{ "type": "integer" }, { "type": "array", "items": { "type": "integer" } }] }
            },
            "additionalProperties": false,
            "$defs": { "Inner": { "type": "object", "properties": { "x": { "type": "integer", "maximum": 9 } }, "required": ["x"] } }
        });
        let long = "y".repeat(100);
        assert_eq!(
            messages(
                &schema,
                &entries(
                    json!({ "kind": long, "inner": { "x": 10 }, "either": ["z"], "other": 1 })
                )
            ),
            format!(
                "either[0]: expected integer, received string \"z\"; inner.x: greater than 9; \
                 kind: expected one of \"a\" | \"b\", received string \"{}…\"; other: unknown field",
                "y".repeat(40)
            )
        );
        assert_eq!(
            messages(&schema, &entries(json!({ "inner": null, "either": 3 }))),
            ""
        );
        assert_eq!(
            messages(&schema, &entries(json!({ "inner": {} }))),
            "inner.x: required"
        );
    }

    #[test]
    fn integers_out_of_their_rust_type_s_range() {
        let schema = json!({
            "type": "object",
            "properties": {
                "small": { "type": "integer", "format": "uint32", "minimum": 0 },
                "signed": { "type": "integer", "format": "int8" },
                "capped": { "type": "integer", "format": "uint32", "minimum": 0, "maximum": 9 }
            }
        });
        assert_eq!(
            messages(
                &schema,
                &entries(json!({ "small": 4_294_967_296_u64, "signed": -129, "capped": 10 }))
            ),
            "capped: greater than 9; signed: lower than -128; small: greater than 4294967295"
        );
        assert_eq!(
            messages(
                &schema,
                &entries(json!({ "small": 4_294_967_295_u64, "signed": -128 }))
            ),
            ""
        );
        // In text (a query string), beyond 64 bits: the bound, not "expected integer".
        let text = |value: &str| InputValue::Text(TextValue::One(value.to_owned()));
        assert_eq!(
            messages(
                &schema,
                &[
                    ("small".to_owned(), text("18446744073709551616")),
                    ("signed".to_owned(), text("-99999999999999999999")),
                    ("capped".to_owned(), text("99999999999999999999")),
                ]
            ),
            "capped: greater than 9; signed: lower than -128; small: greater than 4294967295"
        );
    }

    #[test]
    fn what_serde_accepts_is_not_reported() {
        let schema = json!({
            "type": "object",
            "properties": {
                "set": { "type": "array", "items": { "type": "string" }, "uniqueItems": true },
                "by_id": {
                    "type": "object",
                    "additionalProperties": false,
                    "patternProperties": { "^\\d+$": { "type": "integer" } }
                },
                "word": { "type": "string", "minLength": 4, "maxLength": 4 },
                "ratio": { "type": "number" },
                "huge": { "type": "integer", "format": "int128" },
                "unit": { "type": "null" }
            }
        });
        let input = entries(json!({ "set": ["a", "a"], "by_id": { "1": 5 }, "word": "éé" }));
        assert_eq!(messages(&schema, &input), "");
        let mut text = Vec::new();
        for (key, value) in [
            ("ratio", "NaN"),
            ("huge", "170141183460469231731687303715884105727"),
        ] {
            text.push((key.to_owned(), InputValue::from(value)));
        }
        assert_eq!(messages(&schema, &text), "");
        // The map's values are checked, its other keys refused.
        let input = entries(json!({ "by_id": { "1": "x", "a": 1 } }));
        assert_eq!(
            messages(&schema, &input),
            "by_id.1: expected integer, received string \"x\"; by_id.a: unknown field"
        );
        let unit = vec![("unit".to_owned(), InputValue::from("x"))];
        assert_eq!(
            messages(&schema, &unit),
            "unit: expected null, received string \"x\""
        );
    }

    /// `#[serde(tag = "kind")] enum Shape { Circle { r: f64 }, Rect { w: f64, h: f64 } }`, and a
    /// recursive one.
    fn shapes_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "shape": { "oneOf": [
                    { "type": "object", "properties": { "kind": { "const": "Circle" }, "r": { "type": "number" } }, "required": ["kind", "r"] },
                    { "type": "object", "properties": { "kind": { "const": "Rect" }, "w": { "type": "number" }, "h": { "type": "number" } }, "required": ["kind", "w", "h"] }
                ] },
                "expr": { "$ref": "#/$defs/Expr" }
            },
            "$defs": { "Expr": { "oneOf": [
                { "type": "object", "properties": { "op": { "const": "add" }, "l": { "$ref": "#/$defs/Expr" }, "r": { "$ref": "#/$defs/Expr" } }, "required": ["op", "l", "r"] },
                { "type": "object", "properties": { "op": { "const": "mul" }, "l": { "$ref": "#/$defs/Expr" }, "r": { "$ref": "#/$defs/Expr" } }, "required": ["op", "l", "r"] },
                { "type": "object", "properties": { "op": { "const": "lit" }, "v": { "type": "number" } }, "required": ["op", "v"] }
            ] } }
        })
    }

    #[test]
    fn a_tagged_choice_is_explained_by_the_member_its_tag_names() {
        let schema = shapes_schema();
        let input = entries(json!({ "shape": { "kind": "Rect", "w": "a", "h": "b" } }));
        assert_eq!(
            messages(&schema, &input),
            "shape.h: expected number, received string \"b\"; \
             shape.w: expected number, received string \"a\""
        );
    }

    #[test]
    fn nested_choices_stay_bounded() {
        // 40 levels of `add` (a naive walk of both untagged branches would be 2^40 visits).
        let mut expr = json!({ "op": "lit", "v": "x" });
        for _ in 0..40 {
            expr = json!({ "op": "add", "l": expr, "r": { "op": "lit", "v": 1 } });
        }
        let schema = shapes_schema();
        let input = entries(json!({ "expr": expr }));
        let message = messages(&schema, &input);
        assert!(
            message.ends_with(".v: expected number, received string \"x\""),
            "{message}"
        );
        // Untagged (the tags removed), the visit budget ends the walk.
        let mut untagged = json!({ "v": "x" });
        for _ in 0..40 {
            untagged = json!({ "l": untagged, "r": { "v": 1 } });
        }
        let explained = explain(&schema, &entries(json!({ "expr": untagged })));
        assert!(explained.visits > MAX_VISITS, "the budget ended it");
        assert!(explained.visits < 2 * MAX_VISITS, "{}", explained.visits);
    }

    #[test]
    fn long_keys_are_cut_and_paths_sort_by_index() {
        let schema = json!({ "type": "object", "additionalProperties": false, "properties": {
            "ids": { "type": "array", "items": { "type": "integer" } } } });
        let key = "k".repeat(200);
        let input = entries(json!({ key.clone(): 1 }));
        assert_eq!(
            messages(&schema, &input),
            format!("{}…: unknown field", "k".repeat(40))
        );
        let ids: Vec<Value> = (0..12).map(|_| json!("x")).collect();
        let message = messages(&schema, &entries(json!({ "ids": ids })));
        let order: Vec<&str> = message
            .split("; ")
            .map(|p| p.split(':').next().unwrap())
            .collect();
        assert_eq!(order[..3], ["ids[0]", "ids[1]", "ids[2]"]);
        assert_eq!(order[11], "ids[11]");
    }

    #[test]
    fn the_message_lists_at_most_a_hundred_issues() {
        let schema = json!({ "type": "object", "properties": { "items": { "type": "array", "items": { "type": "integer" } } } });
        let items: Vec<Value> = (0..250).map(|i| json!(format!("v{i}"))).collect();
        let message = messages(&schema, &entries(json!({ "items": items })));
        assert_eq!(message.matches("expected integer").count(), 100);
        assert!(message.ends_with("; … and 150 more"), "{message}");
        assert!(message.len() < 6_000);
    }

    #[test]
    fn serde_messages_in_json_words() {
        for (serde, plain) in [
            (
                "invalid type: string \"abc\", expected i64",
                "expected integer, received string \"abc\"",
            ),
            (
                "invalid type: floating point `1.0`, expected u8 at line 1 column 9",
                "expected integer, received number 1.0",
            ),
            (
                "invalid type: sequence, expected a string",
                "expected string, received array",
            ),
            (
                "invalid type: map, expected struct Inner",
                "expected object, received object",
            ),
            ("missing field `age`", "age: required"),
            (
                "unknown variant `c`, expected `a` or `b`",
                "expected one of \"a\" | \"b\", received string \"c\"",
            ),
            ("unknown field `x`, expected `a`", "x: unknown field"),
            ("something else", "something else"),
        ] {
            let (field, text) = plain_words(serde);
            let got = match field {
                Some(field) => format!("{field}: {text}"),
                None => text,
            };
            assert_eq!(got, plain, "{serde}");
        }
    }
}
