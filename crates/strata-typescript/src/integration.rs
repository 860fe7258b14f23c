//! [`Integration`]: a routing's OpenAPI description turned into one TypeScript file.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::path::Path;

use serde_json::Value;
use strata_endpoint::PipelineSettings;
use strata_input::raw::RAW_FIELD;
use strata_input::stream::STREAM_MARKER;
use strata_openapi::{Documentation, OpenApi, Operation, ParameterLocation};
use strata_routing::{RouterSettings, Routing};

use crate::error::IntegrationError;
use crate::runtime::{BodyKind, Placement, Styles, runtime};
use crate::schema::{Converter, Problem, doc_of};
use crate::ts::{Doc, Object, Property, Ts, is_identifier, string_literal};

/// What the generated file holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Variant {
    /// The types and a `Client` class with `provide` and `hasMore` (the default).
    #[default]
    Client,
    /// Only the types: for a project with its own HTTP code.
    Types,
}

/// Generates a typed TypeScript client for a routing, from the same description as its
/// OpenAPI document (so the two cannot disagree).
///
/// ```no_run
/// use strata_typescript::{Integration, Variant};
/// # fn demo(routing: strata_routing::Routing, config: strata_routing::RoutingSettings) -> Result<(), Box<dyn std::error::Error>> {
/// let ts = Integration::new(&routing, &config)
///     .server_url("http://localhost:8090")
///     .variant(Variant::Client)
///     .build()?
///     .to_string();
/// std::fs::write("client.ts", ts)?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Integration<'a> {
    documentation: Documentation<'a>,
    server_url: String,
    variant: Variant,
}

impl<'a> Integration<'a> {
    /// A client for `routing` as served with `config` (its input sources per method, uploads).
    pub fn new<C>(routing: &'a Routing, config: &C) -> Self
    where
        C: AsRef<RouterSettings> + AsRef<PipelineSettings>,
    {
        Self {
            documentation: Documentation::new(routing, config),
            server_url: String::new(),
            variant: Variant::Client,
        }
    }

    strata_core::setters! {
        /// The URL the default implementation sends to (default: none, so paths stay relative,
        /// which only browsers resolve).
        #[must_use]
        server_url(url: impl Into<String>) => server_url = url.into();
        /// The client (default) or only the types.
        #[must_use]
        variant(variant: Variant) => variant = variant;
    }

    /// Generates the file.
    pub fn build(self) -> Result<TypeScript, IntegrationError> {
        let document = self.documentation.build()?;
        generate(&document, &self.server_url, self.variant)
    }
}

/// A generated TypeScript file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeScript {
    code: String,
}

impl TypeScript {
    /// The code.
    pub fn as_str(&self) -> &str {
        &self.code
    }

    /// Writes the code to `path`.
    pub fn write_file(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, &self.code)
    }
}

impl fmt::Display for TypeScript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.code)
    }
}

/// Names the file declares itself, and names TypeScript and the DOM already use: a schema or
/// an operation by one of these names gets a suffix.
const RESERVED: &[&str] = &[
    // The file's own.
    "Client",
    "ClientOptions",
    "HeadersByStatus",
    "Implementation",
    "Input",
    "Method",
    "PaginatedRequest",
    "Placement",
    "PreparedRequest",
    "Request",
    "RequestOptions",
    "Response",
    "ResponseByStatus",
    "ResponseHeaders",
    "StatusImplementation",
    "StatusResponse",
    "TraceContext",
    // Globals a generated file uses or a reader expects.
    "AbortSignal",
    "Array",
    "Awaited",
    "BigInt",
    "Blob",
    "Boolean",
    "Date",
    "Error",
    "Exclude",
    "Extract",
    "File",
    "FormData",
    "Function",
    "Headers",
    "JSON",
    "Map",
    "Math",
    "NonNullable",
    "Number",
    "Object",
    "Omit",
    "Partial",
    "Pick",
    "Promise",
    "Readonly",
    "ReadonlyArray",
    "Record",
    "RegExp",
    "Required",
    "ReturnType",
    "Set",
    "String",
    "Symbol",
    "URL",
    "URLSearchParams",
    // Words that cannot name a type: JavaScript's reserved words (strict mode included) and
    // TypeScript's type keywords.
    "abstract",
    "any",
    "as",
    "asserts",
    "async",
    "await",
    "bigint",
    "boolean",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "declare",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "from",
    "function",
    "get",
    "global",
    "if",
    "implements",
    "import",
    "in",
    "infer",
    "instanceof",
    "interface",
    "is",
    "keyof",
    "let",
    "module",
    "namespace",
    "never",
    "new",
    "null",
    "number",
    "object",
    "of",
    "package",
    "private",
    "protected",
    "public",
    "readonly",
    "require",
    "return",
    "satisfies",
    "set",
    "static",
    "string",
    "super",
    "switch",
    "symbol",
    "this",
    "throw",
    "true",
    "try",
    "type",
    "typeof",
    "undefined",
    "unique",
    "unknown",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// One operation of the document, as the client sees it.
struct Request<'d> {
    /// `get /v1/books/:id`.
    key: String,
    /// `GetV1BooksId`: the prefix of its types.
    base: String,
    operation: &'d Operation,
}

/// A name for the types of `operation_id`: `listBooks` → `ListBooks`, `get-user` → `GetUser`.
fn pascal_case(id: &str) -> String {
    let mut name = String::new();
    for word in id.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            name.push(first.to_ascii_uppercase());
            name.push_str(chars.as_str());
        }
    }
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "Operation");
    }
    name
}

/// A type name for a component name (`^[a-zA-Z0-9._-]+$`).
fn type_name(component: &str) -> String {
    let name: String = component
        .chars()
        .map(|c| if is_identifier_char(c) { c } else { '_' })
        .collect();
    if is_identifier(&name) {
        name
    } else {
        format!("T{name}")
    }
}

fn is_identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// `name`, or `name2`, `name3`, … when taken; the result is taken.
fn unique(
    name: &str,
    used: &mut BTreeSet<String>,
    taken: impl Fn(&str, &BTreeSet<String>) -> bool,
) -> String {
    let mut candidate = name.to_owned();
    let mut n = 1;
    while taken(&candidate, used) {
        n += 1;
        candidate = format!("{name}{n}");
    }
    used.insert(candidate.clone());
    candidate
}

/// The operation's types' suffixes: a base is free when none of its names is taken.
const SUFFIXES: [&str; 6] = [
    "Input",
    "PositiveResponse",
    "NegativeResponse",
    "Response",
    "ResponseByStatus",
    "HeadersByStatus",
];

fn generate(
    document: &OpenApi,
    server_url: &str,
    variant: Variant,
) -> Result<TypeScript, IntegrationError> {
    let mut used: BTreeSet<String> = RESERVED.iter().map(|&s| s.to_owned()).collect();
    let requests = requests_of(document, &mut used);
    let components = &document.components.schemas;
    let names: BTreeMap<String, String> = components
        .keys()
        .map(|component| {
            let name = unique(&type_name(component), &mut used, |n, used| used.contains(n));
            (component.clone(), name)
        })
        .collect();
    let mut converter = Converter::new(components, &names);
    // Which request first reached a component, to name it in errors.
    let mut origin: BTreeMap<String, String> = BTreeMap::new();
    let mut described = Vec::with_capacity(requests.len());
    for request in &requests {
        described.push(describe(request, &mut converter)?);
        for component in &converter.reached {
            origin
                .entry(component.clone())
                .or_insert_with(|| request.key.clone());
        }
    }
    let aliases = component_types(&mut converter, components, &names, &mut origin)?;
    let mut styles = Styles::default();
    let mut paginated = Vec::new();
    for request in &requests {
        match pagination(request.operation, &converter) {
            Some(Style::Offset) => styles.offset = true,
            Some(Style::Cursor) => styles.cursor = true,
            None => continue,
        }
        paginated.push(request.key.as_str());
    }

    let mut out = String::new();
    out.push_str(match variant {
        Variant::Client => {
            "// A typed client for the API, generated by Strata from its routing.\n\
             // Do not edit: generate it again when the API changes.\n"
        }
        Variant::Types => {
            "// The types of the API's requests and responses, generated by Strata from its routing.\n\
             // Do not edit: generate it again when the API changes.\n"
        }
    });
    for (name, (ty, doc)) in &aliases {
        out.push('\n');
        out.push_str(&ty.alias(name, doc));
    }
    for (request, described) in requests.iter().zip(&described) {
        print_operation(&mut out, request, described);
    }
    print_maps(&mut out, &requests, &paginated);
    print_events(&mut out, &requests, &described);
    if variant == Variant::Client {
        out.push('\n');
        let placements: Vec<(String, Placement)> = requests
            .iter()
            .zip(&described)
            .map(|(request, described)| (request.key.clone(), described.placement.clone()))
            .collect();
        out.push_str(&runtime(server_url, &placements, styles));
    }
    Ok(TypeScript { code: out })
}

/// The operations a client calls (HEAD answers with no body: nothing to read from it), named.
fn requests_of<'d>(document: &'d OpenApi, used: &mut BTreeSet<String>) -> Vec<Request<'d>> {
    let mut requests = Vec::new();
    for (path, item) in &document.paths {
        let route = path
            .split('/')
            .map(
                |segment| match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) => format!(":{name}"),
                    None => segment.to_owned(),
                },
            )
            .collect::<Vec<_>>()
            .join("/");
        // The client's order; HEAD is left out.
        for method in ["get", "post", "put", "patch", "delete", "query"] {
            let Some(operation) = item.operation(method) else {
                continue;
            };
            let base = unique(&pascal_case(&operation.operation_id), used, |base, used| {
                used.contains(base)
                    || SUFFIXES
                        .iter()
                        .any(|suffix| used.contains(&format!("{base}{suffix}")))
            });
            for suffix in SUFFIXES {
                used.insert(format!("{base}{suffix}"));
            }
            requests.push(Request {
                key: format!("{method} {route}"),
                base,
                operation,
            });
        }
    }
    requests
}

/// The types of the components the requests reach, and of those they reach, by type name.
fn component_types(
    converter: &mut Converter<'_>,
    components: &BTreeMap<String, Value>,
    names: &BTreeMap<String, String>,
    origin: &mut BTreeMap<String, String>,
) -> Result<BTreeMap<String, (Ts, Doc)>, IntegrationError> {
    let mut aliases = BTreeMap::new();
    loop {
        let next: Vec<String> = converter
            .reached
            .iter()
            .filter(|c| !aliases.contains_key(&names[*c]))
            .cloned()
            .collect();
        if next.is_empty() {
            return Ok(aliases);
        }
        for component in next {
            let schema = &components[&component];
            let request = origin.get(&component).cloned().unwrap_or_default();
            let ty = converter.convert(schema).map_err(|problem| {
                schema_error(
                    &request,
                    &format!("#/components/schemas/{component}"),
                    problem,
                )
            })?;
            for reached in &converter.reached {
                origin
                    .entry(reached.clone())
                    .or_insert_with(|| request.clone());
            }
            aliases.insert(names[&component].clone(), (ty, doc_of(schema)));
        }
    }
}

/// The four types of an operation.
fn print_operation(out: &mut String, request: &Request<'_>, described: &Described) {
    let base = &request.base;
    let both = Ts::union([
        Ts::Name(format!("{base}PositiveResponse")),
        Ts::Name(format!("{base}NegativeResponse")),
    ]);
    for (ty, suffix, doc) in [
        (&described.input, "Input", operation_doc(request)),
        (&described.positive, "PositiveResponse", Doc::default()),
        (&described.negative, "NegativeResponse", Doc::default()),
        (&both, "Response", Doc::default()),
    ] {
        out.push('\n');
        out.push_str(&ty.alias(&format!("{base}{suffix}"), &doc));
    }
    out.push('\n');
    out.push_str(&status_map(
        &format!("{base}ResponseByStatus"),
        &described.statuses,
    ));
    out.push('\n');
    out.push_str(&status_map(
        &format!("{base}HeadersByStatus"),
        &described.headers,
    ));
    if let Some(events) = &described.events {
        out.push('\n');
        let doc = Doc::text(Some("Its events: name → data.".to_owned()));
        out.push_str(&events.alias(&format!("{base}Events"), &doc));
    }
}

/// `export type <name> = { 200: …; 404: … };`: status codes as numeric keys, so that `keyof`
/// gives number literals a `switch` on a response's status narrows by.
fn status_map(name: &str, statuses: &[(u16, Ts)]) -> String {
    if statuses.is_empty() {
        return format!("export type {name} = Record<never, never>;\n");
    }
    let mut out = format!("export type {name} = {{\n");
    for (status, ty) in statuses {
        let _ = writeln!(out, "  {status}: {};", ty.print(2));
    }
    out.push_str("};\n");
    out
}

/// `Events`: the events of each GET event-stream request, for `Subscription`.
fn print_events(out: &mut String, requests: &[Request<'_>], described: &[Described]) {
    let streams: Vec<&Request<'_>> = requests
        .iter()
        .zip(described)
        .filter(|(_, described)| described.events.is_some())
        .map(|(request, _)| request)
        .collect();
    print_map(
        out,
        "Events",
        "The events of each event-stream request (`Subscription`): name → data.",
        &streams,
        false,
    );
}

/// `export interface <map> { "<request>": <Base><map>; … }` over `requests`, with its doc
/// text; with `deprecations`, each entry says whether its operation is deprecated.
fn print_map(
    out: &mut String,
    map: &str,
    text: &str,
    requests: &[&Request<'_>],
    deprecations: bool,
) {
    out.push('\n');
    out.push_str(&Doc::text(Some(text.to_owned())).print(0));
    if requests.is_empty() {
        let _ = writeln!(out, "export interface {map} {{}}");
        return;
    }
    let _ = writeln!(out, "export interface {map} {{");
    for request in requests {
        if deprecations {
            let doc = Doc {
                text: None,
                deprecated: request.operation.deprecated,
            };
            out.push_str(&doc.print(2));
        }
        let _ = writeln!(
            out,
            "  {}: {}{map};",
            string_literal(&request.key),
            request.base
        );
    }
    out.push_str("}\n");
}

/// `ResponseHeaders`, and `StatusResponse<K>`: a response of `K` as its status code, headers
/// and body, a union over the statuses of `ResponseByStatus[K]`, the headers of each typed by
/// `HeadersByStatus[K]`.
const STATUS_RESPONSE: &str = "/**
 * A response's headers by lower-case name, each value as sent (a repeated header's values
 * joined by `, `); `undefined` for one it does not carry.
 */
export type ResponseHeaders = { readonly [name: string]: string | undefined };

/**
 * A response of `K` as its status code, headers and body, one member per status the document
 * gives: `switch (response.status)` narrows `body`, and `headers` to those the document
 * declares for that status (`Client.provideWithStatus`).
 */
export type StatusResponse<K extends Request> = {
  [S in keyof ResponseByStatus[K]]: {
    status: S;
    headers: ResponseHeaders &
      (S extends keyof HeadersByStatus[K] ? HeadersByStatus[K][S] : unknown);
    body: ResponseByStatus[K][S];
  };
}[keyof ResponseByStatus[K]];
";

/// `Request`, the maps keyed by it, `StatusResponse` and `PaginatedRequest`.
fn print_maps(out: &mut String, requests: &[Request<'_>], paginated: &[&str]) {
    out.push('\n');
    let keys = Ts::union(requests.iter().map(|r| Ts::Literal(string_literal(&r.key))));
    out.push_str(&keys.alias(
        "Request",
        &Doc::text(Some(
            "Every request of the API: `<method> <path>`.".to_owned(),
        )),
    ));
    for (map, text) in [
        ("Input", "The input of each request."),
        (
            "Response",
            "The response body of each request: `status` tells success from error.",
        ),
        (
            "ResponseByStatus",
            "The response body of each request by status code, as the document gives them.",
        ),
        (
            "HeadersByStatus",
            "The headers each request's responses declare, by status code (lower-case names).",
        ),
    ] {
        let all: Vec<&Request<'_>> = requests.iter().collect();
        print_map(out, map, text, &all, true);
    }
    out.push('\n');
    out.push_str(STATUS_RESPONSE);
    out.push('\n');
    let paginated = Ts::union(paginated.iter().map(|key| Ts::Literal(string_literal(key))));
    out.push_str(&paginated.alias(
        "PaginatedRequest",
        &Doc::text(Some(
            "The requests that answer with pages (see `Client.hasMore`).".to_owned(),
        )),
    ));
}

/// An operation's types and where its fields go.
struct Described {
    input: Ts,
    positive: Ts,
    negative: Ts,
    /// Each documented status code and its body type (`<base>ResponseByStatus`).
    statuses: Vec<(u16, Ts)>,
    /// Each documented status code with headers, and their type (`<base>HeadersByStatus`).
    headers: Vec<(u16, Ts)>,
    placement: Placement,
    /// The events of a GET event stream (`text/event-stream`): name → data.
    events: Option<Ts>,
}

fn schema_error(request: &str, schema: &str, problem: Problem) -> IntegrationError {
    IntegrationError::Schema {
        request: request.to_owned(),
        schema: schema.to_owned(),
        at: problem.at,
        problem: problem.problem,
    }
}

fn describe(
    request: &Request<'_>,
    converter: &mut Converter<'_>,
) -> Result<Described, IntegrationError> {
    let operation = request.operation;
    let mut properties = Vec::new();
    let mut headers = Vec::new();
    let mut cookies = Vec::new();
    for parameter in &operation.parameters {
        let ty = converter.convert(&parameter.schema).map_err(|problem| {
            schema_error(
                &request.key,
                &format!("the input field {}", string_literal(&parameter.name)),
                problem,
            )
        })?;
        match parameter.location {
            ParameterLocation::Header => headers.push(parameter.name.clone()),
            ParameterLocation::Cookie => cookies.push(parameter.name.clone()),
            _ => {}
        }
        let mut doc = doc_of(&parameter.schema);
        if parameter.description.is_some() {
            doc.text.clone_from(&parameter.description);
        }
        properties.push(Property {
            name: parameter.name.clone(),
            ty,
            optional: !parameter.required,
            doc,
        });
    }
    let (body, index) = body_fields(request, converter, &mut properties)?;
    let events = events_of(request, converter)?;
    let bodies = bodies_of(request, converter)?;
    let union_of = |success: bool| {
        Ts::union(
            bodies
                .iter()
                .filter(|(status, _)| status.starts_with('2') == success)
                .map(|(_, ty)| ty.clone()),
        )
    };
    let (positive, negative) = (union_of(true), union_of(false));
    let statuses = by_status(&request.base, &bodies, &positive, &negative);
    Ok(Described {
        input: Ts::Object(Object { properties, index }),
        positive,
        negative,
        statuses,
        headers: headers_of(request.operation),
        placement: Placement {
            headers,
            cookies,
            body,
            last: streamed_field(request),
        },
        events,
    })
}

/// The body type of each status the operation documents, in the document's order.
fn bodies_of(
    request: &Request<'_>,
    converter: &mut Converter<'_>,
) -> Result<Vec<(String, Ts)>, IntegrationError> {
    let mut bodies = Vec::new();
    for (status, response) in &request.operation.responses {
        let mut members = Vec::new();
        // No body (and none is read for these statuses, whatever a document says).
        let bodiless = matches!(status.as_str(), "204" | "205" | "304");
        if response.content.is_empty() || bodiless {
            members.push(Ts::name("undefined"));
        }
        for (mime, media) in response.content.iter().filter(|_| !bodiless) {
            members.push(if is_json(mime) {
                converter.convert(media.value_schema()).map_err(|problem| {
                    schema_error(
                        &request.key,
                        &format!("the response {status} ({mime})"),
                        problem,
                    )
                })?
            } else if mime.starts_with("text/") {
                // The default implementation reads text bodies as text.
                Ts::name("string")
            } else if mime.starts_with("*/") || mime.starts_with("application/*") {
                // Any type, known when it is sent (a file by its name): the default
                // implementation reads it as JSON, text or a Blob by its `Content-Type`.
                Ts::name("unknown")
            } else {
                Ts::name("Blob")
            });
        }
        bodies.push((status.clone(), Ts::union(members)));
    }
    Ok(bodies)
}

/// The status code a response's key names; `None` for a key that is none (a range `4XX`,
/// `default`), which a `switch` on a number cannot match.
fn status_code(key: &str) -> Option<u16> {
    key.parse::<u16>()
        .ok()
        .filter(|code| (100..=599).contains(code) && key.len() == 3)
}

/// The entries of `<base>HeadersByStatus`: each status code (as `by_status` keeps them) whose
/// response declares headers, with an object of them, each a `string` as sent, optional unless
/// the document says it is required.
fn headers_of(operation: &Operation) -> Vec<(u16, Ts)> {
    operation
        .responses
        .iter()
        .filter(|(_, response)| !response.headers.is_empty())
        .filter_map(|(status, response)| {
            let code = status_code(status)?;
            let properties = response
                .headers
                .iter()
                .map(|(name, header)| Property {
                    // What `fetch`'s `Headers` gives: lower-case names.
                    name: name.to_ascii_lowercase(),
                    ty: Ts::name("string"),
                    optional: !header.required,
                    doc: Doc::text(Some(header.description.clone()).filter(|t| !t.is_empty())),
                })
                .collect();
            Some((
                code,
                Ts::Object(Object {
                    properties,
                    index: None,
                }),
            ))
        })
        .collect()
}

/// The entries of `<base>ResponseByStatus`: each status code the document gives (a key that is
/// no status code, as a range `4XX` or `default`, cannot be matched by a `switch` on a number:
/// left out) with its body type, written as the operation's positive or negative response type
/// when it is all of it (one success status; errors that share one envelope).
fn by_status(base: &str, bodies: &[(String, Ts)], positive: &Ts, negative: &Ts) -> Vec<(u16, Ts)> {
    bodies
        .iter()
        .filter_map(|(status, ty)| {
            let code = status_code(status)?;
            let ty = if status.starts_with('2') && ty == positive {
                Ts::Name(format!("{base}PositiveResponse"))
            } else if !status.starts_with('2') && ty == negative {
                Ts::Name(format!("{base}NegativeResponse"))
            } else {
                ty.clone()
            };
            Some((code, ty))
        })
        .collect()
}

/// The events of a GET request answering `text/event-stream` (what an `EventSource` can
/// open): an object type of each event's name and data, from the document's frame schemas
/// (`oneOf` of `{event: {const: name}, data}`).
fn events_of(
    request: &Request<'_>,
    converter: &mut Converter<'_>,
) -> Result<Option<Ts>, IntegrationError> {
    if !request.key.starts_with("get ") {
        return Ok(None);
    }
    let Some(media) = request
        .operation
        .responses
        .iter()
        .filter(|(status, _)| status.starts_with('2'))
        .find_map(|(_, response)| response.content.get("text/event-stream"))
    else {
        return Ok(None);
    };
    let frames = media
        .value_schema()
        .get("oneOf")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut properties = Vec::new();
    for frame in frames {
        let Some(name) = frame
            .pointer("/properties/event/const")
            .and_then(Value::as_str)
        else {
            continue;
        };
        // `data` is JSON text: the client parses it into what `contentSchema` describes.
        let data = frame
            .pointer("/properties/data/contentSchema")
            .or_else(|| frame.pointer("/properties/data"))
            .unwrap_or(&Value::Null);
        let ty = converter.convert(data).map_err(|problem| {
            schema_error(
                &request.key,
                &format!("the event {}", string_literal(name)),
                problem,
            )
        })?;
        properties.push(Property {
            name: name.to_owned(),
            ty,
            optional: false,
            doc: doc_of(data),
        });
    }
    Ok(Some(Ts::Object(Object {
        properties,
        index: None,
    })))
}

/// The fields an operation's request body carries, added to `properties`, and how it travels;
/// the index signature of a body with one.
fn body_fields(
    request: &Request<'_>,
    converter: &mut Converter<'_>,
    properties: &mut Vec<Property>,
) -> Result<(BodyKind, Option<Box<Ts>>), IntegrationError> {
    let mut index = None;
    let kind = match &request.operation.request_body {
        None => BodyKind::Query,
        Some(body) if body.content.contains_key("application/octet-stream") => {
            // A raw body: the bytes of one Blob, sent as they are, the field `raw` of the input.
            let media = &body.content["application/octet-stream"];
            let ty = converter
                .convert(media.value_schema())
                .map_err(|problem| schema_error(&request.key, "the request body", problem))?;
            properties.push(Property {
                name: RAW_FIELD.to_owned(),
                ty,
                optional: !body.required,
                doc: doc_of(media.value_schema()),
            });
            BodyKind::Raw
        }
        Some(body) => {
            let (body_kind, media) = if let Some(media) = body.content.get("multipart/form-data") {
                (BodyKind::Multipart, media)
            } else if let Some(media) = body.content.get("application/json") {
                (BodyKind::Json, media)
            } else {
                return Err(IntegrationError::Body {
                    request: request.key.clone(),
                    media_types: body.content.keys().cloned().collect(),
                });
            };
            let ty = converter
                .convert(media.value_schema())
                .map_err(|problem| schema_error(&request.key, "the request body", problem))?;
            match ty {
                Ts::Object(object) => {
                    properties.extend(object.properties);
                    index = object.index;
                }
                // The document writes bodies as objects of the input's fields.
                _ => {
                    return Err(schema_error(
                        &request.key,
                        "the request body",
                        Problem {
                            at: "/".to_owned(),
                            problem: "it is not an object of fields".to_owned(),
                        },
                    ));
                }
            }
            body_kind
        }
    };
    Ok((kind, index))
}

/// The form field marked `x-streamed-file` (a `StreamedFile`), if the body is a form with one.
fn streamed_field(request: &Request<'_>) -> Option<String> {
    let body = request.operation.request_body.as_ref()?;
    let schema = body.content.get("multipart/form-data")?.value_schema();
    schema
        .get("properties")?
        .as_object()?
        .iter()
        .find(|(_, property)| property.get(STREAM_MARKER) == Some(&Value::Bool(true)))
        .map(|(name, _)| name.clone())
}

fn is_json(mime: &str) -> bool {
    let essence = mime.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The comment of an operation's input type: the request, its summary and description.
fn operation_doc(request: &Request<'_>) -> Doc {
    let operation = request.operation;
    let mut text = format!("`{}`", request.key);
    let summary = operation.summary.as_deref();
    let description = operation.description.as_deref();
    // A summary cut from the description adds nothing to it.
    let cut = summary.is_some_and(|s| {
        description.is_some_and(|d| d.starts_with(s.trim_end_matches('…').trim_end()))
    });
    if let Some(summary) = summary.filter(|_| !cut) {
        let _ = write!(text, ": {summary}");
    }
    if let Some(description) = description {
        let _ = write!(text, "\n\n{description}");
    }
    Doc {
        text: Some(text),
        deprecated: operation.deprecated,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Offset,
    Cursor,
}

/// The pagination style of an operation whose every success is a default envelope around a
/// page (`{status: "success", data: {…, nextCursor}}` or `{…, offset, limit, total}`) and whose
/// every error has a `status` other than `"success"`: what `hasMore` needs to tell them apart.
fn pagination(operation: &Operation, converter: &Converter<'_>) -> Option<Style> {
    let mut style = None;
    for (status, response) in &operation.responses {
        if response.content.is_empty() {
            return None;
        }
        for (mime, media) in &response.content {
            if !is_json(mime) {
                return None;
            }
            let envelope = converter.resolve(media.value_schema())?;
            let status_literal = envelope
                .get("properties")?
                .get("status")
                .and_then(|s| converter.resolve(s))?
                .get("const")?;
            if !required(envelope).contains("status") {
                return None;
            }
            let success = *status_literal == "success";
            if success != status.starts_with('2') {
                return None;
            }
            if !success {
                continue;
            }
            if !required(envelope).contains("data") {
                return None;
            }
            let page = converter.resolve(envelope.get("properties")?.get("data")?)?;
            let fields = required(page);
            let numeric = |name: &str| {
                page.get("properties")
                    .and_then(|p| p.get(name))
                    .and_then(|s| converter.resolve(s))
                    .and_then(|s| s.get("type"))
                    .is_some_and(|t| *t == "integer" || *t == "number")
            };
            let this = if fields.contains("nextCursor") {
                Style::Cursor
            } else if ["offset", "limit", "total"]
                .iter()
                .all(|name| fields.contains(*name) && numeric(name))
            {
                Style::Offset
            } else {
                return None;
            };
            if style.is_some_and(|known| known != this) {
                return None;
            }
            style = Some(this);
        }
    }
    style
}

fn required(schema: &serde_json::Map<String, Value>) -> BTreeSet<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_operation_ids_and_components() {
        assert_eq!(pascal_case("listBooks"), "ListBooks");
        assert_eq!(pascal_case("get-v1.users_id"), "GetV1UsersId");
        assert_eq!(pascal_case("9lives"), "Operation9lives");
        assert_eq!(type_name("OffsetPage_books_Book"), "OffsetPage_books_Book");
        assert_eq!(type_name("a.b-c"), "a_b_c");
        assert_eq!(type_name("1x"), "T1x");
        let mut used = BTreeSet::from(["Book".to_owned()]);
        assert_eq!(unique("Book", &mut used, |n, u| u.contains(n)), "Book2");
        assert_eq!(unique("Book", &mut used, |n, u| u.contains(n)), "Book3");
    }

    #[test]
    fn each_status_code_keys_its_body_type() {
        let (page, other) = (Ts::name("Page"), Ts::name("Other"));
        let error = Ts::name("ErrorResponse");
        let positive = Ts::union([page.clone(), Ts::name("undefined")]);
        let bodies = vec![
            ("200".to_owned(), page.clone()),
            ("204".to_owned(), Ts::name("undefined")),
            ("400".to_owned(), error.clone()),
            ("404".to_owned(), error.clone()),
            ("409".to_owned(), other.clone()),
            // No status code a `switch` can match: left out.
            ("4XX".to_owned(), error.clone()),
            ("default".to_owned(), error.clone()),
            ("2000".to_owned(), page.clone()),
        ];
        let negative = Ts::union([error.clone(), other.clone()]);
        let statuses = by_status("ListBooks", &bodies, &positive, &negative);
        assert_eq!(
            statuses,
            vec![
                (200, page.clone()),
                (204, Ts::name("undefined")),
                (400, error.clone()),
                (404, error.clone()),
                (409, other.clone()),
            ]
        );
        // A status whose body is all of the positive or negative type names it.
        let statuses = by_status("ListBooks", &bodies[..4], &page, &error);
        assert_eq!(
            statuses,
            vec![
                (200, Ts::name("ListBooksPositiveResponse")),
                (204, Ts::name("undefined")),
                (400, Ts::name("ListBooksNegativeResponse")),
                (404, Ts::name("ListBooksNegativeResponse")),
            ]
        );
    }

    #[test]
    fn status_maps_key_by_numbers() {
        let object = Ts::Object(Object {
            properties: vec![Property {
                name: "missing".to_owned(),
                ty: Ts::name("string"),
                optional: false,
                doc: Doc::default(),
            }],
            index: None,
        });
        let map = status_map(
            "GetUserResponseByStatus",
            &[
                (200, Ts::name("GetUserPositiveResponse")),
                (204, Ts::name("undefined")),
                (404, Ts::union([object, Ts::name("ErrorResponse")])),
            ],
        );
        assert_eq!(
            map,
            "export type GetUserResponseByStatus = {\n  200: GetUserPositiveResponse;\n  204: undefined;\n  404: {\n    missing: string;\n  } | ErrorResponse;\n};\n"
        );
        assert_eq!(
            status_map("NoneResponseByStatus", &[]),
            "export type NoneResponseByStatus = Record<never, never>;\n"
        );
    }
}
