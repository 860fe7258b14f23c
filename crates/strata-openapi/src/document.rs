//! The OpenAPI 3.2 (or 3.1) document model: the parts Strata writes, serialized in the
//! specification's field order.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// The OpenAPI version written by default ([`OpenApiVersion::default`]).
pub const OPENAPI_VERSION: &str = "3.2.0";

/// The version of OpenAPI a document is written in.
///
/// 3.2 (the default, as express-zod-api 29 writes) describes QUERY operations and gives an event
/// stream's events as `itemSchema`. 3.1 is for tools that do not read 3.2 yet: it has no field for
/// QUERY operations, so they are left out of the document (and listed under the document's
/// `x-omitted-operations`), and an event stream's `schema` describes one event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpenApiVersion {
    /// OpenAPI 3.1.0.
    V3_1,
    /// OpenAPI 3.2.0.
    #[default]
    V3_2,
}

impl OpenApiVersion {
    /// The version as the document's `openapi` field states it (`3.2.0`).
    pub fn as_str(self) -> &'static str {
        match self {
            OpenApiVersion::V3_1 => "3.1.0",
            OpenApiVersion::V3_2 => OPENAPI_VERSION,
        }
    }
}

/// An OpenAPI 3.2 (or 3.1) document.
///
/// Built by [`Documentation::build`](crate::Documentation::build); fields are public so that an
/// application can adjust what was generated (a summary, a server, a schema) before writing it
/// out.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct OpenApi {
    /// `3.2.0` or `3.1.0`.
    pub openapi: String,
    /// Title, version, description.
    pub info: Info,
    /// Where the API is served.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<Server>,
    /// The tags used by operations, with their descriptions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<Tag>,
    /// Operations by path (`/v1/users/{id}`).
    pub paths: BTreeMap<String, PathItem>,
    /// Named schemas and security schemes.
    pub components: Components,
    /// The routes this version of OpenAPI cannot describe (`QUERY /v1/search` in a 3.1
    /// document), and why: served, but not in the document nor in clients generated from it.
    #[serde(
        rename = "x-omitted-operations",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub omitted_operations: BTreeMap<String, String>,
}

impl OpenApi {
    /// The document as pretty-printed JSON.
    pub fn to_json_pretty(&self) -> String {
        // The model holds strings, maps and JSON values only: serializing cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The document as compact JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The document as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The document as YAML.
    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(self).unwrap_or_default()
    }

    /// Writes the document to `path`: YAML when the name ends in `.yaml` or `.yml`, otherwise
    /// pretty JSON with a final newline.
    pub fn write_file(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        let yaml = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
        let text = if yaml {
            self.to_yaml()
        } else {
            self.to_json_pretty() + "\n"
        };
        std::fs::write(path, text)
    }
}

/// The document's `info`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Info {
    /// The API's name.
    pub title: String,
    /// The API's version (not OpenAPI's).
    pub version: String,
    /// A longer text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One server URL.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Server {
    /// The URL.
    pub url: String,
}

/// A tag and its description.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Tag {
    /// The name operations refer to.
    pub name: String,
    /// What the tag groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The operations of one path.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
#[allow(missing_docs)] // one field per method
pub struct PathItem {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub get: Option<Operation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub put: Option<Operation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post: Option<Operation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete: Option<Operation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<Operation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<Operation>,
    /// OpenAPI 3.2's QUERY operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<Operation>,
}

impl PathItem {
    /// The operation slot of `method` (`None` for methods Strata does not route).
    pub fn slot(&mut self, method: &http::Method) -> Option<&mut Option<Operation>> {
        Some(match method.as_str() {
            "GET" => &mut self.get,
            "PUT" => &mut self.put,
            "POST" => &mut self.post,
            "DELETE" => &mut self.delete,
            "HEAD" => &mut self.head,
            "PATCH" => &mut self.patch,
            "QUERY" => &mut self.query,
            _ => return None,
        })
    }

    /// The operations with their lower-case methods, in the document's order.
    pub fn operations(&self) -> impl Iterator<Item = (&'static str, &Operation)> {
        [
            ("get", &self.get),
            ("put", &self.put),
            ("post", &self.post),
            ("delete", &self.delete),
            ("head", &self.head),
            ("patch", &self.patch),
            ("query", &self.query),
        ]
        .into_iter()
        .filter_map(|(method, operation)| operation.as_ref().map(|o| (method, o)))
    }

    /// The operation of `method` (lower-case, as [`operations`](Self::operations) names it).
    pub fn operation(&self, method: &str) -> Option<&Operation> {
        self.operations()
            .find_map(|(name, operation)| (name == method).then_some(operation))
    }

    pub(crate) fn operations_mut(&mut self) -> impl Iterator<Item = &mut Operation> {
        [
            &mut self.get,
            &mut self.put,
            &mut self.post,
            &mut self.delete,
            &mut self.head,
            &mut self.patch,
            &mut self.query,
        ]
        .into_iter()
        .filter_map(Option::as_mut)
    }
}

/// One operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Operation {
    /// Unique in the document.
    pub operation_id: String,
    /// The endpoint's short description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The endpoint's long description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The endpoint's tag.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Whether the endpoint is deprecated.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deprecated: bool,
    /// Path, query and header parameters.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Parameter>,
    /// The body, for methods that read one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_body: Option<RequestBody>,
    /// Responses by status.
    pub responses: BTreeMap<String, Response>,
    /// Security requirements: one object listing every credential the middleware need.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub security: Vec<BTreeMap<String, Vec<String>>>,
}

/// Where a parameter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ParameterLocation {
    /// A path segment.
    Path,
    /// The query string.
    Query,
    /// A request header.
    Header,
    /// A cookie.
    Cookie,
}

/// One parameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Parameter {
    /// The name.
    pub name: String,
    /// Where it is.
    #[serde(rename = "in")]
    pub location: ParameterLocation,
    /// Whether the request must carry it (always for path parameters).
    pub required: bool,
    /// Its description (from the schema's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its schema.
    pub schema: Value,
    /// Serialization style (`form` for query arrays).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
    /// Repeated keys for arrays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explode: Option<bool>,
    /// An example value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<Value>,
}

/// A request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RequestBody {
    /// Whether a body is required.
    pub required: bool,
    /// Schemas by media type.
    pub content: BTreeMap<String, MediaType>,
}

/// A body of one media type.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MediaType {
    /// Its schema: the whole body's. Absent for an event stream in a 3.2 document, whose
    /// [`item_schema`](Self::item_schema) describes each event instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// OpenAPI 3.2: the schema of each item of a sequential body (an event of
    /// `text/event-stream`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_schema: Option<Value>,
    /// An example.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<Value>,
}

impl MediaType {
    /// A body of `schema`.
    pub fn new(schema: Value) -> Self {
        Self {
            schema: Some(schema),
            item_schema: None,
            example: None,
        }
    }

    /// What one value of this media type looks like: the body's schema, or the schema of one
    /// item of a sequential body (an event); `true` (anything) when neither is given.
    pub fn value_schema(&self) -> &Value {
        static ANYTHING: Value = Value::Bool(true);
        self.item_schema
            .as_ref()
            .or(self.schema.as_ref())
            .unwrap_or(&ANYTHING)
    }

    /// The schemas this media type holds, to rewrite or inspect in place.
    pub fn schemas_mut(&mut self) -> impl Iterator<Item = &mut Value> {
        [self.schema.as_mut(), self.item_schema.as_mut()]
            .into_iter()
            .flatten()
    }
}

/// A response.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Response {
    /// What it means (required by OpenAPI).
    pub description: String,
    /// Its headers.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, Header>,
    /// Its body by media type; empty for no body.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub content: BTreeMap<String, MediaType>,
}

/// A response header.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Header {
    /// What it says.
    pub description: String,
    /// Whether every such response carries it (written only when it does).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// Its value's schema.
    pub schema: Value,
}

/// Reusable parts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Components {
    /// Named schemas, referenced as `#/components/schemas/<name>`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub schemas: BTreeMap<String, Value>,
    /// Credentials, referenced by operations' security requirements.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
}

/// A credential (always an API key: a header, or an input field).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SecurityScheme {
    /// `apiKey`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The header or field name.
    pub name: String,
    /// `header` or `query`.
    #[serde(rename = "in")]
    pub location: String,
    /// What the credential is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where the credential really is when OpenAPI has no word for it (`body`).
    #[serde(rename = "x-in", skip_serializing_if = "Option::is_none")]
    pub actual_location: Option<String>,
}
