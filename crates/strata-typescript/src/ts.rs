//! A small TypeScript type syntax tree and its printer: what the generator emits, formatted
//! the way prettier would (two-space indents, `;` after members, long unions one per line).

use std::fmt::Write as _;

/// A TypeScript type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ts {
    /// A keyword (`string`, `unknown`, …) or a named type (`Book`, `Blob`).
    Name(String),
    /// A literal type, written as JSON (`"success"`, `3`, `true`).
    Literal(String),
    Array(Box<Ts>),
    /// `[A, B]`, with a rest element when `Some` (`[A, ...B[]]`).
    Tuple(Vec<Ts>, Option<Box<Ts>>),
    Object(Object),
    Union(Vec<Ts>),
    Intersection(Vec<Ts>),
}

/// An object type: its properties, and an index signature for other keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Object {
    pub(crate) properties: Vec<Property>,
    /// `[key: string]: T` (printed `Record<string, T>` when there are no properties).
    pub(crate) index: Option<Box<Ts>>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Property {
    pub(crate) name: String,
    pub(crate) ty: Ts,
    pub(crate) optional: bool,
    pub(crate) doc: Doc,
}

/// A documentation comment (`/** … */`): text and `@deprecated`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Doc {
    pub(crate) text: Option<String>,
    pub(crate) deprecated: bool,
}

/// Binding strength, for parentheses: a union inside an array needs them, a name does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Precedence {
    Union,
    Intersection,
    Postfix,
}

/// Lines longer than this break a union into one member per line.
const WIDTH: usize = 100;

/// `members`, each spread into its own members by `spread` (a union's into a union), without
/// repeats, in first-seen order.
fn flatten(members: impl IntoIterator<Item = Ts>, spread: fn(Ts) -> Vec<Ts>) -> Vec<Ts> {
    let mut flat: Vec<Ts> = Vec::new();
    for ty in members.into_iter().flat_map(spread) {
        if !flat.contains(&ty) {
            flat.push(ty);
        }
    }
    flat
}

impl Ts {
    pub(crate) fn name(name: &str) -> Self {
        Self::Name(name.to_owned())
    }

    pub(crate) fn unknown() -> Self {
        Self::name("unknown")
    }

    /// A union, flattened and without repeats; `unknown` absorbs the others, `never` vanishes.
    pub(crate) fn union(members: impl IntoIterator<Item = Ts>) -> Self {
        let mut flat = flatten(members, |member| match member {
            Self::Union(inner) => inner,
            other => vec![other],
        });
        if flat.contains(&Self::unknown()) {
            return Self::unknown();
        }
        flat.retain(|ty| *ty != Self::name("never"));
        match flat.len() {
            0 => Self::name("never"),
            1 => flat.remove(0),
            _ => Self::Union(flat),
        }
    }

    /// An intersection, flattened and without repeats; `unknown` vanishes.
    pub(crate) fn intersection(members: impl IntoIterator<Item = Ts>) -> Self {
        let mut flat = flatten(members, |member| match member {
            Self::Intersection(inner) => inner,
            other => vec![other],
        });
        flat.retain(|ty| *ty != Self::unknown());
        match flat.len() {
            0 => Self::unknown(),
            1 => flat.remove(0),
            _ => Self::Intersection(flat),
        }
    }

    fn precedence(&self) -> Precedence {
        match self {
            Self::Union(_) => Precedence::Union,
            Self::Intersection(_) => Precedence::Intersection,
            _ => Precedence::Postfix,
        }
    }

    /// The type printed at `indent` spaces (the indentation of its first line's context).
    pub(crate) fn print(&self, indent: usize) -> String {
        let mut out = String::new();
        self.write(&mut out, indent, Precedence::Union);
        out
    }

    fn write(&self, out: &mut String, indent: usize, context: Precedence) {
        let parens = self.precedence() < context;
        if parens {
            out.push('(');
        }
        match self {
            Self::Name(name) => out.push_str(name),
            Self::Literal(json) => out.push_str(json),
            Self::Array(item) => {
                item.write(out, indent, Precedence::Postfix);
                out.push_str("[]");
            }
            Self::Tuple(items, rest) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out, indent, Precedence::Union);
                }
                if let Some(rest) = rest {
                    if !items.is_empty() {
                        out.push_str(", ");
                    }
                    out.push_str("...");
                    rest.write(out, indent, Precedence::Postfix);
                    out.push_str("[]");
                }
                out.push(']');
            }
            Self::Object(object) => object.write(out, indent),
            Self::Union(members) => join(out, members, " | ", indent, Precedence::Intersection),
            Self::Intersection(members) => join(out, members, " & ", indent, Precedence::Postfix),
        }
        if parens {
            out.push(')');
        }
    }

    /// `export type <name> = <type>;`, with a long union one member per line.
    pub(crate) fn alias(&self, name: &str, doc: &Doc) -> String {
        let mut out = doc.print(0);
        let head = format!("export type {name} =");
        let one_line = self.print(0);
        if let Self::Union(members) = self
            && (head.len() + one_line.len() + 2 > WIDTH || one_line.contains('\n'))
        {
            out.push_str(&head);
            for member in members {
                // A multi-line member (an object) is indented past the `| `.
                let _ = write!(out, "\n  | {}", member.print(4));
            }
            out.push_str(";\n");
        } else {
            let _ = writeln!(out, "{head} {one_line};");
        }
        out
    }
}

fn join(out: &mut String, members: &[Ts], separator: &str, indent: usize, context: Precedence) {
    for (i, member) in members.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        member.write(out, indent, context);
    }
}

impl Object {
    fn write(&self, out: &mut String, indent: usize) {
        if self.properties.is_empty() {
            out.push_str("Record<string, ");
            match &self.index {
                Some(index) => index.write(out, indent, Precedence::Union),
                None => out.push_str("never"),
            }
            out.push('>');
            return;
        }
        out.push_str("{\n");
        let inner = indent + 2;
        for property in &self.properties {
            out.push_str(&property.doc.print(inner));
            let _ = write!(
                out,
                "{:inner$}{}{}: ",
                "",
                property_name(&property.name),
                if property.optional { "?" } else { "" }
            );
            property.ty.write(out, inner, Precedence::Union);
            out.push_str(";\n");
        }
        if let Some(index) = &self.index {
            let _ = write!(out, "{:inner$}[key: string]: ", "");
            index.write(out, inner, Precedence::Union);
            out.push_str(";\n");
        }
        let _ = write!(out, "{:indent$}}}", "");
    }
}

impl Doc {
    pub(crate) fn text(text: Option<String>) -> Self {
        Self {
            text,
            deprecated: false,
        }
    }

    /// The comment at `indent` spaces, ending with a newline; empty without text.
    pub(crate) fn print(&self, indent: usize) -> String {
        let mut lines: Vec<String> = self
            .text
            .iter()
            .flat_map(|text| text.trim().lines())
            // `*/` would end the comment early.
            .map(|line| line.trim_end().replace("*/", "*\\/"))
            .collect();
        if self.deprecated {
            lines.push("@deprecated".to_owned());
        }
        match lines.as_slice() {
            [] => String::new(),
            [line] => format!("{:indent$}/** {line} */\n", ""),
            lines => {
                let mut out = format!("{:indent$}/**\n", "");
                for line in lines {
                    if line.is_empty() {
                        let _ = writeln!(out, "{:indent$} *", "");
                    } else {
                        let _ = writeln!(out, "{:indent$} * {line}", "");
                    }
                }
                let _ = writeln!(out, "{:indent$} */", "");
                out
            }
        }
    }
}

/// Whether `name` can be written without quotes (an identifier).
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A property name: bare when an identifier, a string literal otherwise.
pub(crate) fn property_name(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        string_literal(name)
    }
}

/// A TypeScript string literal (JSON's escaping is valid TypeScript).
pub(crate) fn string_literal(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(properties: Vec<(&str, Ts, bool)>) -> Ts {
        Ts::Object(Object {
            properties: properties
                .into_iter()
                .map(|(name, ty, optional)| Property {
                    name: name.to_owned(),
                    ty,
                    optional,
                    doc: Doc::default(),
                })
                .collect(),
            index: None,
        })
    }

    #[test]
    fn unions_flatten_drop_repeats_and_parenthesize_where_needed() {
        let union = Ts::union([
            Ts::name("string"),
            Ts::union([Ts::name("null"), Ts::name("string")]),
            Ts::name("never"),
        ]);
        assert_eq!(union.print(0), "string | null");
        assert_eq!(
            Ts::Array(Box::new(union.clone())).print(0),
            "(string | null)[]"
        );
        assert_eq!(
            Ts::intersection([union.clone(), Ts::name("A")]).print(0),
            "(string | null) & A"
        );
        assert_eq!(
            Ts::union([Ts::name("A"), Ts::unknown()]).print(0),
            "unknown"
        );
        assert_eq!(Ts::union([]).print(0), "never");
        assert_eq!(Ts::intersection([Ts::unknown()]).print(0), "unknown");
        assert_eq!(
            Ts::Tuple(vec![Ts::name("number")], Some(Box::new(union))).print(0),
            "[number, ...(string | null)[]]"
        );
    }

    #[test]
    fn objects_print_one_property_per_line_with_quotes_where_needed() {
        let ty = object(vec![
            ("id", Ts::name("number"), false),
            ("x-token", Ts::name("string"), true),
            (
                "inner",
                object(vec![("a", Ts::Literal("\"b\"".into()), false)]),
                false,
            ),
        ]);
        assert_eq!(
            ty.print(0),
            "{\n  id: number;\n  \"x-token\"?: string;\n  inner: {\n    a: \"b\";\n  };\n}"
        );
        assert_eq!(object(vec![]).print(0), "Record<string, never>");
        let record = Ts::Object(Object {
            properties: Vec::new(),
            index: Some(Box::new(Ts::unknown())),
        });
        assert_eq!(record.print(0), "Record<string, unknown>");
    }

    #[test]
    fn long_unions_break_into_lines_and_docs_escape_comment_ends() {
        let short = Ts::union([Ts::name("A"), Ts::name("B")]);
        assert_eq!(
            short.alias("X", &Doc::default()),
            "export type X = A | B;\n"
        );
        let long = Ts::union((0..12).map(|i| Ts::Literal(format!("\"get /v1/route{i}\""))));
        let printed = long.alias("Request", &Doc::default());
        assert!(printed.starts_with("export type Request =\n  | \"get /v1/route0\"\n"));
        assert!(printed.ends_with("  | \"get /v1/route11\";\n"));
        let with_object = Ts::union([
            object(vec![("a", Ts::name("number"), false)]),
            Ts::name("B"),
        ]);
        assert_eq!(
            with_object.alias("Y", &Doc::default()),
            "export type Y =\n  | {\n      a: number;\n    }\n  | B;\n"
        );
        let doc = Doc {
            text: Some("Ends */ early\n\nsecond".into()),
            deprecated: true,
        };
        assert_eq!(
            doc.print(2),
            "  /**\n   * Ends *\\/ early\n   *\n   * second\n   * @deprecated\n   */\n"
        );
        assert_eq!(Doc::text(Some("One".into())).print(0), "/** One */\n");
    }

    #[test]
    fn identifiers_and_string_literals() {
        assert!(is_identifier("userName") && is_identifier("_a1") && is_identifier("$x"));
        assert!(!is_identifier("x-token") && !is_identifier("1a") && !is_identifier(""));
        assert_eq!(property_name("a b"), "\"a b\"");
        assert_eq!(string_literal("quote\"\n"), "\"quote\\\"\\n\"");
    }
}
