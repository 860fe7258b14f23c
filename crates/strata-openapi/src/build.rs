//! [`Documentation`]: walks a compiled routing and describes each operation.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use http::{Method, StatusCode};
use schemars::Schema;
use serde_json::Value;
use strata_core::{DeclaredError, ErrorKind, ResponseDescription, ResponseHeader, Security};
use strata_core::{DefaultResultHandler, ResultHandler};
use strata_endpoint::{EndpointMeta, PipelineSettings};
use strata_input::InputSource;
use strata_input::raw::{RAW_FIELD, RAW_MARKER};
use strata_input::stream::STREAM_MARKER;
use strata_routing::{RouteInfo, Router, RouterSettings, Routing, RoutingSettings};

use crate::document::{
    Components, Header, Info, MediaType, OpenApi, OpenApiVersion, Operation, Parameter,
    ParameterLocation, PathItem, RequestBody, Response, SecurityScheme, Server, Tag,
};
use crate::error::DocumentationError;
use crate::schemas::{
    Fields, Generators, Merged, drop_null_default, is_array, is_file, is_text, multipart_file,
    object_fields, rewrite_refs, with_integer_bounds, without_null,
};

/// Describes a routing as an OpenAPI 3.2 document (3.1 on request), exactly as a server with
/// the same configuration serves it.
///
/// ```no_run
/// use strata_openapi::Documentation;
/// # fn demo(routing: strata_routing::Routing, config: strata_routing::RoutingSettings) -> Result<(), Box<dyn std::error::Error>> {
/// let doc = Documentation::new(&routing, &config)
///     .title("Example API")
///     .version("1.2.0")
///     .server_url("https://example.com")
///     .tag_description("users", "Everything about users")
///     .build()?;
/// std::fs::write("openapi.yaml", doc.to_yaml())?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Documentation<'a> {
    routing: &'a Routing,
    config: RoutingSettings,
    title: String,
    version: String,
    description: Option<String>,
    servers: Vec<String>,
    tag_descriptions: BTreeMap<String, String>,
    openapi_version: OpenApiVersion,
}

impl<'a> Documentation<'a> {
    /// Describes `routing` as served with `config` (its input sources per method, uploads, the
    /// routing behaviours): a server's configuration, or a [`RoutingSettings`].
    pub fn new<C>(routing: &'a Routing, config: &C) -> Self
    where
        C: AsRef<RouterSettings> + AsRef<PipelineSettings>,
    {
        let router: &RouterSettings = config.as_ref();
        let pipeline: &PipelineSettings = config.as_ref();
        Self {
            routing,
            config: RoutingSettings::from_parts(router.clone(), pipeline.clone()),
            title: "API".to_owned(),
            version: "0.1.0".to_owned(),
            description: None,
            servers: Vec::new(),
            tag_descriptions: BTreeMap::new(),
            openapi_version: OpenApiVersion::default(),
        }
    }

    strata_core::setters! {
        /// The API's title (default `API`).
        #[must_use]
        title(title: impl Into<String>) => title = title.into();
        /// The API's version (default `0.1.0`).
        #[must_use]
        version(version: impl Into<String>) => version = version.into();
        /// A description of the whole API.
        #[must_use]
        description(text: impl Into<String>) => description = Some(text.into());
        /// The version of OpenAPI to write (default 3.2). A 3.1 document leaves QUERY
        /// operations out, as 3.1 has no field for them, and names them under
        /// `x-omitted-operations`.
        #[must_use]
        openapi_version(version: OpenApiVersion) => openapi_version = version;
    }

    /// Adds a server URL (repeatable).
    #[must_use]
    pub fn server_url(mut self, url: impl Into<String>) -> Self {
        self.servers.push(url.into());
        self
    }

    /// Describes a tag.
    #[must_use]
    pub fn tag_description(mut self, tag: impl Into<String>, text: impl Into<String>) -> Self {
        self.tag_descriptions.insert(tag.into(), text.into());
        self
    }

    /// Builds the document.
    pub fn build(self) -> Result<OpenApi, DocumentationError> {
        let router = Router::new(self.routing, &self.config)?;
        let mut generators = Generators::new();
        let mut paths: BTreeMap<String, PathItem> = BTreeMap::new();
        let mut security_schemes = BTreeMap::new();
        let mut ids: HashMap<String, String> = HashMap::new();
        let mut tags = BTreeSet::new();
        // Path shapes (`/users/{}`) → the first route documented with that shape.
        let mut shapes: HashMap<String, (String, String)> = HashMap::new();
        let mut omitted = BTreeMap::new();
        for route in router.routes() {
            let meta = route.endpoint().meta();
            if meta.undocumented {
                continue;
            }
            if self.openapi_version == OpenApiVersion::V3_1 && strata_core::is_query(route.method())
            {
                // Served, but 3.1 has no field for it: said in the document, not left silent.
                omitted.insert(
                    format!("{} {}", route.method(), openapi_path(route.path())),
                    "OpenAPI 3.1 has no QUERY operation (3.2 adds one)".to_owned(),
                );
                continue;
            }
            let described = Described::new(route, &self.config, &mut generators)?;
            let operation = described.operation(&mut generators, &mut security_schemes);
            tags.extend(meta.tag.clone());
            let path = openapi_path(route.path());
            let shown = format!("{} {}", route.method(), route.path());
            let (first_path, first_shown) = shapes
                .entry(shape_of(route.path()))
                .or_insert_with(|| (path.clone(), shown.clone()));
            if *first_path != path {
                return Err(DocumentationError::ParamNames {
                    first: first_shown.clone(),
                    second: shown,
                });
            }
            let item = paths.entry(path).or_default();
            let mut operations = vec![(route.method().clone(), operation)];
            if route.method() == Method::GET {
                let id = match &meta.operation_id {
                    Some(_) => format!("head{}", capitalize(&operations[0].1.operation_id)),
                    None => derived_operation_id(&Method::HEAD, route.path()),
                };
                let head = head_operation(&operations[0].1, id);
                operations.push((Method::HEAD, head));
            }
            for (method, operation) in operations {
                let shown = format!("{method} {}", route.path());
                if let Some(first) = ids.insert(operation.operation_id.clone(), shown.clone()) {
                    return Err(DocumentationError::DuplicateOperationId {
                        id: operation.operation_id,
                        first,
                        second: shown,
                    });
                }
                if let Some(slot) = item.slot(&method) {
                    *slot = Some(operation);
                }
            }
        }
        let merged = generators.finish();
        finish_operations(&mut paths, &merged, self.openapi_version);
        tags.extend(self.tag_descriptions.keys().cloned());
        Ok(OpenApi {
            openapi: self.openapi_version.as_str().to_owned(),
            info: Info {
                title: self.title,
                version: self.version,
                description: self.description,
            },
            servers: self.servers.into_iter().map(|url| Server { url }).collect(),
            tags: tags
                .into_iter()
                .map(|name| Tag {
                    description: self.tag_descriptions.get(&name).cloned(),
                    name,
                })
                .collect(),
            paths,
            components: Components {
                schemas: merged.schemas,
                security_schemes,
            },
            omitted_operations: omitted,
        })
    }
}

/// `/v1/users/:id` → `/v1/users/{id}`.
fn openapi_path(path: &str) -> String {
    path.split('/')
        .map(|segment| match segment.strip_prefix(':') {
            Some(name) => format!("{{{name}}}"),
            None => segment.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `/users/:id` → `/users/{}`: routes of one shape are one OpenAPI path.
fn shape_of(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with(':') {
                "{}"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_ascii_uppercase().to_string() + chars.as_str()
    })
}

/// `GET /v1/users/:id` → `getV1UsersId`.
fn derived_operation_id(method: &Method, path: &str) -> String {
    let mut id = method.as_str().to_ascii_lowercase();
    for word in path.split(|c: char| !c.is_ascii_alphanumeric()) {
        id.push_str(&capitalize(word));
    }
    id
}

fn operation_id(meta: &EndpointMeta, method: &Method, path: &str) -> String {
    match &meta.operation_id {
        Some(id) if meta.served_methods().len() > 1 => {
            format!("{id}{}", capitalize(&method.as_str().to_ascii_lowercase()))
        }
        Some(id) => id.clone(),
        None => derived_operation_id(method, path),
    }
}

/// The HEAD operation of a GET: the same request, the same statuses and headers, no body.
fn head_operation(get: &Operation, id: String) -> Operation {
    let mut head = get.clone();
    head.operation_id = id;
    for response in head.responses.values_mut() {
        response.content.clear();
    }
    head
}

/// One error status of an operation: why, its headers, and who may send it (the endpoint's
/// result handler, the router (with the config's error handler or the default envelope), or
/// both).
struct ErrorEntry {
    status: StatusCode,
    text: String,
    headers: Vec<ResponseHeader>,
    handler: bool,
    router: bool,
}

/// The fields of the middleware's and the endpoint's inputs, merged by name, and whether any
/// of them refuses unknown fields.
fn gather_fields(
    route: RouteInfo<'_>,
    generators: &mut Generators,
) -> Result<(Fields, bool), DocumentationError> {
    let meta = route.endpoint().meta();
    let method = route.method();
    let not_an_object = |type_name: &str, found: String| DocumentationError::NotAnObject {
        method: method.clone(),
        path: route.path().to_owned(),
        type_name: type_name.to_owned(),
        found,
    };
    let mut fields = Fields::new();
    let inputs = meta
        .middleware_inputs
        .iter()
        .map(|m| (m.type_name, m.schema))
        .chain(meta.input.map(|f| (meta.input_type.unwrap_or("input"), f)));
    let mut closed = false;
    for (type_name, schema_fn) in inputs {
        let schema: Schema = schema_fn(&mut generators.input);
        closed |= schema.get("additionalProperties") == Some(&Value::Bool(false));
        let found = object_fields(&schema, generators.input.definitions())
            .map_err(|found| not_an_object(type_name, found))?;
        for (name, schema, required) in found {
            match fields.iter_mut().find(|(n, _, _)| *n == name) {
                // A field read by two types must satisfy both.
                Some(existing) => {
                    if existing.1 != schema {
                        existing.1 = serde_json::json!({ "allOf": [existing.1.clone(), schema] });
                    }
                    existing.2 |= required;
                }
                None => fields.push((name, schema, required)),
            }
        }
    }
    Ok((fields, closed))
}

/// Where the field `name` is read from: `special` says where a path parameter, a file or a
/// header-like name goes (`Some(Body)` for a file the method takes; `None` for a file it does
/// not take is caught here), otherwise the body, then the query, by the method's `sources`.
fn place_field(
    name: &str,
    schema: &Value,
    required: bool,
    has: &dyn Fn(InputSource) -> bool,
    special: &dyn Fn(&str) -> Option<Place>,
) -> Result<Place, &'static str> {
    if special(name) == Some(Place::Path) {
        return if has(InputSource::Params) {
            Ok(Place::Path)
        } else {
            Err(
                "is a path parameter, but the config's input sources for this method leave out params",
            )
        };
    }
    if is_file(schema) {
        return special(name)
            .ok_or("is a file, but the config's input sources for this method take no files");
    }
    if has(InputSource::Headers) && special(name) == Some(Place::Header) {
        return Ok(Place::Header);
    }
    let cookies = has(InputSource::Cookies) || has(InputSource::SignedCookies);
    if cookies && special(name) == Some(Place::Cookie) {
        return Ok(Place::Cookie);
    }
    if has(InputSource::Body) {
        Ok(Place::Body)
    } else if has(InputSource::Query) {
        Ok(Place::Query)
    } else if cookies {
        Ok(Place::Cookie)
    } else if required {
        Err("is required, but no input source of this method provides it")
    } else {
        Ok(Place::Nowhere)
    }
}

/// The names of the credentials of one kind (header, cookie) the endpoint's security names.
fn credential_names<'m>(
    security: &'m [Security],
    of: fn(&'m Security) -> Option<&'m str>,
) -> Vec<&'m str> {
    security
        .iter()
        .flat_map(Security::leaves)
        .filter_map(of)
        .collect()
}

/// The statuses of an operation that reads a body: a timeout, a body too large (unless the
/// result handler answers it with a status of its own: `elsewhere`), too many bodies held, a
/// content type it does not read.
fn body_statuses(
    statuses: &mut Vec<ErrorEntry>,
    elsewhere: &dyn Fn(ErrorKind, StatusCode) -> bool,
) {
    add_status(
        statuses,
        StatusCode::REQUEST_TIMEOUT,
        "Request timeout: the body did not arrive in time (the connection is closed)",
        &[],
        false,
    );
    if !elsewhere(ErrorKind::PayloadTooLarge, StatusCode::PAYLOAD_TOO_LARGE) {
        add_status(
            statuses,
            StatusCode::PAYLOAD_TOO_LARGE,
            "Content too large: the body or a file exceeds its limit",
            &[],
            false,
        );
    }
    add_status(
        statuses,
        StatusCode::SERVICE_UNAVAILABLE,
        "Service unavailable: the server holds too many request bodies; retry shortly",
        &[ResponseHeader::new(
            "retry-after",
            "Seconds to wait before retrying",
        )],
        false,
    );
    if !elsewhere(
        ErrorKind::UnsupportedMediaType,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
    ) {
        add_status(
            statuses,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported media type: the body's content type is not one this operation reads",
            &[],
            false,
        );
    }
}

/// Adds `status` (or, when listed, its reason and headers) to `statuses`.
fn add_status(
    statuses: &mut Vec<ErrorEntry>,
    status: StatusCode,
    text: &str,
    headers: &[ResponseHeader],
    router: bool,
) {
    match statuses.iter_mut().find(|s| s.status == status) {
        // Declared twice (two middleware, or a handler and the router): both reasons.
        Some(existing) => {
            if !existing.text.contains(text) {
                existing.text = format!("{}; {text}", existing.text);
            }
            existing.headers.extend_from_slice(headers);
            existing.handler |= !router;
            existing.router |= router;
        }
        None => statuses.push(ErrorEntry {
            status,
            text: text.to_owned(),
            headers: headers.to_vec(),
            handler: !router,
            router,
        }),
    }
}

/// Where one input field is read from for this operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Path,
    Query,
    Header,
    /// A cookie: a cookie credential's field, or any field of a method whose only text source
    /// is its cookies.
    Cookie,
    Body,
    /// No source of the method provides it.
    Nowhere,
}

/// One route with its input split by where each field is read from.
struct Described<'r> {
    route: RouteInfo<'r>,
    fields: Vec<(String, Value, bool, Place)>,
    media: BodyMedia,
    reads_body: bool,
    /// The input refuses fields it does not know (`deny_unknown_fields`).
    closed: bool,
    /// What the router answers its own errors with (the config's error handler, or the
    /// default envelope).
    router_negative: Vec<ResponseDescription>,
}

/// The media types a body of the operation may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyMedia {
    /// `multipart/form-data`: the input takes files.
    Multipart,
    /// JSON or a urlencoded form: every body field is one text value.
    JsonOrForm,
    /// JSON only: some field is an object, which a form cannot carry, or a list, which a form
    /// carries as repeated names but cannot tell from one value when it has one item, nor send
    /// when it has none (the server reads such forms all the same).
    Json,
    /// The exact bytes of any content type (the input's `raw: RawBody`).
    Raw,
}

impl BodyMedia {
    /// The media of a body with these `fields`: raw, with files, or by the fields' types.
    fn of(
        raw: bool,
        files: bool,
        fields: &[(String, Value, bool, Place)],
        definitions: &serde_json::Map<String, Value>,
    ) -> Self {
        if raw {
            BodyMedia::Raw
        } else if files {
            BodyMedia::Multipart
        } else if fields
            .iter()
            .filter(|field| field.3 == Place::Body)
            .all(|(_, schema, _, _)| is_text(schema, definitions) && !is_array(schema))
        {
            BodyMedia::JsonOrForm
        } else {
            BodyMedia::Json
        }
    }
}

impl<'r> Described<'r> {
    fn new(
        route: RouteInfo<'r>,
        config: &RoutingSettings,
        generators: &mut Generators,
    ) -> Result<Self, DocumentationError> {
        let meta = route.endpoint().meta();
        let method = route.method();
        let (fields, closed) = gather_fields(route, generators)?;
        let params: Vec<&str> = route.params().collect();
        for param in &params {
            if !fields.iter().any(|(name, _, _)| name == param) {
                return Err(DocumentationError::PathParam {
                    method: method.clone(),
                    path: route.path().to_owned(),
                    param: (*param).to_owned(),
                });
            }
        }
        let sources = config.pipeline.input_sources.for_method(method);
        let has = |source| sources.contains(&source);
        let header_credentials = credential_names(&meta.security, |leaf| match leaf {
            Security::Header { name, .. } => Some(name.as_str()),
            _ => None,
        });
        let cookie_credentials = credential_names(&meta.security, |leaf| match leaf {
            Security::Cookie { name, .. } => Some(name.as_str()),
            _ => None,
        });
        // Headers reach the input under lower-case names: a name with capitals is never one.
        let looks_like_header = |name: &str| {
            strata_input::looks_like_header(name) || header_credentials.contains(&name)
        };
        // A raw body is the whole body: its field is the body, no other field comes from it.
        let raw = meta.raw_body && has(InputSource::Body);
        let is_raw = |name: &str| raw && name == RAW_FIELD;
        let file_fields: Vec<String> = fields
            .iter()
            .filter(|(name, schema, _)| is_file(schema) && !is_raw(name))
            .map(|(name, _, _)| name.clone())
            .collect();
        let files = has(InputSource::Files) && !file_fields.is_empty();
        if files && config.pipeline.uploads.is_none() {
            return Err(DocumentationError::UploadsDisabled {
                method: method.clone(),
                path: route.path().to_owned(),
                fields: file_fields,
            });
        }
        let reads_body = has(InputSource::Body) || has(InputSource::Files);
        let definitions = generators.input.definitions();
        let problem = |field: &str, problem: String| DocumentationError::Field {
            method: method.clone(),
            path: route.path().to_owned(),
            field: field.to_owned(),
            problem,
        };
        let mut placed = Vec::with_capacity(fields.len());
        for (name, schema, required) in fields {
            let from = |source| has(source) && !(raw && source == InputSource::Body);
            let place = place_field(&name, &schema, required, &from, &|name| {
                if is_raw(name) {
                    Some(Place::Body)
                } else if params.contains(&name) {
                    Some(Place::Path)
                } else if is_file(&schema) {
                    files.then_some(Place::Body)
                } else if cookie_credentials.contains(&name) {
                    Some(Place::Cookie)
                } else if looks_like_header(name) {
                    Some(Place::Header)
                } else {
                    None
                }
            })
            .map_err(|text| problem(&name, text.to_owned()))?;
            // Text sources (path, query, headers) give text values, read by the field's type;
            // an object cannot be written there.
            let carrier = match place {
                Place::Path => "path parameter",
                Place::Header => "header",
                Place::Query => "query parameter",
                Place::Cookie => "cookie",
                Place::Body | Place::Nowhere => "",
            };
            if !carrier.is_empty() && !is_text(&schema, definitions) {
                return Err(problem(
                    &name,
                    format!("is an object, which a {carrier} cannot carry"),
                ));
            }
            placed.push((
                name,
                as_documented(schema, !carrier.is_empty()),
                required,
                place,
            ));
        }
        let fields = placed;
        let media = BodyMedia::of(raw, files, &fields, generators.input.definitions());
        Ok(Self {
            route,
            fields,
            media,
            reads_body,
            closed,
            router_negative: router_negative(config),
        })
    }

    fn place_of(&self, field: &str) -> Place {
        self.fields
            .iter()
            .find(|(name, ..)| name == field)
            .map_or(Place::Nowhere, |field| field.3)
    }

    fn operation(
        &self,
        generators: &mut Generators,
        schemes: &mut BTreeMap<String, SecurityScheme>,
    ) -> Operation {
        let meta = self.route.endpoint().meta();
        let method = self.route.method();
        let summary = meta.short_description.clone().or_else(|| {
            meta.description.as_ref().map(|text| {
                let mut chars = text.chars();
                let short: String = chars.by_ref().take(50).collect();
                if chars.next().is_some() {
                    format!("{}…", short.trim_end())
                } else {
                    short
                }
            })
        });
        Operation {
            operation_id: operation_id(meta, method, self.route.path()),
            summary,
            description: meta.description.clone(),
            tags: meta.tag.iter().cloned().collect(),
            deprecated: meta.deprecated,
            parameters: self.parameters(),
            request_body: self.request_body(),
            responses: self.responses(generators),
            security: self.security(schemes),
        }
    }

    fn parameters(&self) -> Vec<Parameter> {
        let mut parameters = Vec::new();
        // Path parameters in path order, then the others in field order.
        for param in self.route.params() {
            if let Some((name, schema, _, Place::Path)) =
                self.fields.iter().find(|(name, ..)| name == param)
            {
                parameters.push(parameter(name, schema, true, ParameterLocation::Path));
            }
        }
        for (name, schema, required, place) in &self.fields {
            let location = match place {
                Place::Query => ParameterLocation::Query,
                Place::Header => ParameterLocation::Header,
                Place::Cookie => ParameterLocation::Cookie,
                _ => continue,
            };
            parameters.push(parameter(name, schema, *required, location));
        }
        parameters
    }

    fn request_body(&self) -> Option<RequestBody> {
        let body: Vec<&(String, Value, bool, Place)> = self
            .fields
            .iter()
            .filter(|field| field.3 == Place::Body)
            .collect();
        if body.is_empty() {
            return None;
        }
        if self.media == BodyMedia::Raw {
            // Any content type; the bytes are handed over as they came.
            let (_, schema, required, _) = body.iter().find(|field| field.0 == RAW_FIELD)?;
            let mut schema = schema.clone();
            if let Some(object) = schema.as_object_mut() {
                object.remove(RAW_MARKER);
            }
            let media = MediaType::new(schema);
            return Some(RequestBody {
                required: *required,
                content: BTreeMap::from([("application/octet-stream".to_owned(), media)]),
            });
        }
        let mut properties = serde_json::Map::new();
        let mut required = Vec::new();
        let mut example = serde_json::Map::new();
        for (name, schema, is_required, _) in &body {
            properties.insert(name.clone(), schema.clone());
            if *is_required {
                required.push(Value::from(name.as_str()));
            }
            if let Some(value) = first_example(schema) {
                example.insert(name.clone(), value);
            }
        }
        let mut schema = serde_json::json!({ "type": "object", "properties": properties });
        if !required.is_empty() {
            schema["required"] = Value::Array(required.clone());
        }
        if self.closed {
            schema["additionalProperties"] = Value::Bool(false);
        }
        let example = (!example.is_empty()).then_some(Value::Object(example));
        let mut content = BTreeMap::new();
        if self.media == BodyMedia::Multipart {
            if let Some(properties) = schema["properties"].as_object_mut() {
                properties.values_mut().for_each(|property| {
                    // Form fields are text or files: no `null`.
                    without_null(property);
                    multipart_file(property);
                    streamed_last(property);
                });
            }
            if !self.closed {
                // The names extra parts may have.
                schema["propertyNames"] = serde_json::json!({ "pattern": MULTIPART_NAME });
            }
            content.insert("multipart/form-data".to_owned(), MediaType::new(schema));
        } else {
            let media_types: &[&str] = if self.media == BodyMedia::JsonOrForm {
                &["application/json", "application/x-www-form-urlencoded"]
            } else {
                // A form's values are text: an object field can only come as JSON.
                &["application/json"]
            };
            for media in media_types {
                content.insert(
                    (*media).to_owned(),
                    MediaType {
                        example: example.clone(),
                        ..MediaType::new(schema.clone())
                    },
                );
            }
        }
        Some(RequestBody {
            required: !required.is_empty(),
            content,
        })
    }

    fn responses(&self, generators: &mut Generators) -> BTreeMap<String, Response> {
        let meta = self.route.endpoint().meta();
        let mut responses = BTreeMap::new();
        let outcomes = self.outcomes(generators);
        let positive = if let Some((successes, _)) = &outcomes {
            successes.clone()
        } else {
            let positive = match (&meta.positive_fn, meta.output) {
                (Some(positive), Some(output)) => positive.call(&output(&mut generators.output)),
                _ => meta.positive.clone(),
            };
            with_success_statuses(positive, &meta.success_statuses)
        };
        for description in &positive {
            responses.insert(
                description.status.as_str().to_owned(),
                response(
                    description,
                    description.description.clone(),
                    &meta.success_headers,
                ),
            );
        }
        let router_envelope = &self.router_negative;
        for ErrorEntry {
            status,
            text,
            headers,
            handler,
            router,
        } in self.error_statuses()
        {
            let mut entry = Response {
                description: text.clone(),
                headers: headers_of(&headers),
                content: BTreeMap::new(),
            };
            // What the endpoint's result handler sends, and what the router sends for its own
            // errors (the config's error handler, or the default envelope).
            let handler = handler.then(|| {
                meta.negative
                    .iter()
                    .find(|d| d.status == status)
                    .or_else(|| meta.negative.first())
            });
            let router = router.then(|| router_envelope.first());
            for description in [handler, router].into_iter().flatten().flatten() {
                let mut description = description.clone();
                description.status = status;
                let mut part = response(&description, Some(text.clone()), &headers);
                let shared = generators.error_envelope(description.schema.as_value());
                for (mime, mut media) in std::mem::take(&mut part.content) {
                    media.schema = Some(shared.clone());
                    match entry.content.get_mut(&mime) {
                        Some(existing) if existing.schema != media.schema => {
                            existing.schema = Some(serde_json::json!({
                                "anyOf": [existing.schema.take(), media.schema]
                            }));
                        }
                        Some(_) => {}
                        None => {
                            entry.content.insert(mime, media);
                        }
                    }
                }
            }
            responses.entry(status.as_str().to_owned()).or_insert(entry);
        }
        let declared = outcomes.map(|(_, errors)| errors).unwrap_or_default();
        merge_declared_errors(&mut responses, declared, generators);
        responses
    }

    /// The responses of the declared outcomes, success and error apart, each as the result
    /// handler answers it with its own body, description and headers; `None` for an endpoint
    /// with one success.
    fn outcomes(
        &self,
        generators: &mut Generators,
    ) -> Option<(Vec<ResponseDescription>, Vec<ResponseDescription>)> {
        let meta = self.route.endpoint().meta();
        let describe = meta.outcome_fn.as_ref()?;
        if meta.outcomes.is_empty() {
            return None;
        }
        let (mut successes, mut errors) = (Vec::new(), Vec::new());
        for outcome in &meta.outcomes {
            let body = outcome.body.map(|body| body(&mut generators.output));
            for status in &outcome.statuses {
                let mut description = describe.call(*status, body.as_ref());
                if body.is_none() && !status.is_success() {
                    // An ordinary error of its status: the envelope every error shares, by
                    // reference (one schema, one client type, no `anyOf` of twins where the
                    // pipeline answers the status too).
                    let shared = generators.error_envelope(description.schema.as_value());
                    if let Ok(shared) = Schema::try_from(shared) {
                        description.schema = shared;
                    }
                }
                if outcome.description.is_some() {
                    description.description.clone_from(&outcome.description);
                }
                description.headers.extend(outcome.headers.iter().cloned());
                if status.is_success() {
                    successes.push(description);
                } else {
                    errors.push(description);
                }
            }
        }
        Some((successes, errors))
    }

    /// Every error status the pipeline can answer this operation with, with why.
    fn error_statuses(&self) -> Vec<ErrorEntry> {
        let meta = self.route.endpoint().meta();
        let mut statuses: Vec<ErrorEntry> = Vec::new();
        // Errors of a kind the result handler answers with another status of its own
        // (`ResponseDescription::for_kind`) are not described under the pipeline's.
        let elsewhere = |kind: ErrorKind, status: StatusCode| {
            meta.negative
                .iter()
                .any(|d| d.status != status && d.kinds.contains(&kind))
        };
        add_status(
            &mut statuses,
            StatusCode::BAD_REQUEST,
            if elsewhere(ErrorKind::InputValidation, StatusCode::BAD_REQUEST) {
                "Bad request: a parameter or the body cannot be read"
            } else {
                "Bad request: the input fails validation, or a parameter or the body cannot be read"
            },
            &[],
            false,
        );
        for DeclaredError {
            status,
            description,
            headers,
            ..
        } in &meta.errors
        {
            add_status(&mut statuses, *status, description, headers, false);
        }
        // The middleware stage answers 401 to a request without a credential the security
        // names; a middleware's own 401 says it already.
        if meta
            .security
            .iter()
            .flat_map(Security::leaves)
            .next()
            .is_some()
            && !statuses
                .iter()
                .any(|s| s.status == StatusCode::UNAUTHORIZED)
        {
            add_status(
                &mut statuses,
                StatusCode::UNAUTHORIZED,
                "Unauthorized: a credential the operation's security names is missing",
                &[],
                false,
            );
        }
        // Statuses the result handler itself says it answers with.
        for description in &meta.negative {
            // A status already listed keeps its reason unless the handler gives its own.
            let text = match &description.description {
                Some(text) => text.as_str(),
                None if statuses.iter().any(|s| s.status == description.status) => continue,
                None => description.status.canonical_reason().unwrap_or("Error"),
            };
            add_status(
                &mut statuses,
                description.status,
                text,
                &description.headers,
                false,
            );
        }
        if self.route.params().len() > 0 {
            add_status(
                &mut statuses,
                StatusCode::NOT_FOUND,
                "Not found: no route matches the path (for example an empty path parameter)",
                &[],
                true,
            );
        }
        if self.reads_body {
            body_statuses(&mut statuses, &elsewhere);
        }
        add_status(
            &mut statuses,
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal server error",
            &[],
            false,
        );
        statuses
    }

    fn security(
        &self,
        schemes: &mut BTreeMap<String, SecurityScheme>,
    ) -> Vec<BTreeMap<String, Vec<String>>> {
        let meta = self.route.endpoint().meta();
        let mut requirement = BTreeMap::new();
        for leaf in meta.security.iter().flat_map(Security::leaves) {
            let (name, scheme) = match leaf {
                Security::Header {
                    name, description, ..
                } => (
                    format!("header_{name}"),
                    SecurityScheme {
                        kind: "apiKey".to_owned(),
                        name: name.clone(),
                        location: "header".to_owned(),
                        description: description.clone(),
                        actual_location: None,
                    },
                ),
                Security::Cookie {
                    name, description, ..
                } => (
                    format!("cookie_{name}"),
                    SecurityScheme {
                        kind: "apiKey".to_owned(),
                        name: name.clone(),
                        location: "cookie".to_owned(),
                        description: description.clone(),
                        actual_location: None,
                    },
                ),
                Security::Input {
                    name, description, ..
                } => {
                    let (location, actual) = match self.place_of(name) {
                        Place::Header => ("header", None),
                        Place::Cookie => ("cookie", None),
                        Place::Query | Place::Nowhere => ("query", None),
                        Place::Path => ("query", Some("path")),
                        Place::Body => ("query", Some("body")),
                    };
                    let key = actual.unwrap_or(location);
                    (
                        format!("{key}_{name}"),
                        SecurityScheme {
                            kind: "apiKey".to_owned(),
                            name: name.clone(),
                            location: location.to_owned(),
                            description: description.clone().or_else(|| {
                                actual.map(|actual| {
                                    format!("The input field `{name}`, sent in the {actual}")
                                })
                            }),
                            actual_location: actual.map(str::to_owned),
                        },
                    )
                }
                // `leaves` flattens combinations.
                _ => continue,
            };
            let name = scheme_name(&name);
            schemes.entry(name.clone()).or_insert(scheme);
            requirement.insert(name, Vec::new());
        }
        if requirement.is_empty() {
            Vec::new()
        } else {
            vec![requirement]
        }
    }
}

/// A [`StreamedFile`](strata_input::StreamedFile) property says that it is the form's last part.
/// Neither OpenAPI 3.1 nor 3.2 orders the parts of a `multipart/form-data` body described as
/// an object (the Encoding Object leaves their order to the implementation; 3.2's ordered
/// parts need the form modelled as an array of items, which no generator reads as a form):
/// the description says it for people, and the schema keeps its `x-streamed-file` keyword
/// (an annotation validators ignore) for generators, Strata's TypeScript client among them.
fn streamed_last(property: &mut Value) {
    let Some(object) = property.as_object_mut() else {
        return;
    };
    if object.get(STREAM_MARKER) != Some(&Value::Bool(true)) {
        return;
    }
    let said = "Streamed: the form's last part, sent after every other field.";
    let description = match object.get("description").and_then(Value::as_str) {
        Some(text) => format!("{text}\n\n{said}"),
        None => said.to_owned(),
    };
    object.insert("description".to_owned(), description.into());
}

/// A multipart part's name travels in its `Content-Disposition` header, where any UTF-8 text
/// passes but a control character other than tab (which HTTP header values cannot hold, and the
/// HTML form encoding leaves as it is but for CR and LF) makes the body unreadable: a 400.
const MULTIPART_NAME: &str = r"^[^\u0000-\u0008\u000A-\u001F\u007F]*$";

/// What the router answers its own errors with.
fn router_negative(config: &RoutingSettings) -> Vec<ResponseDescription> {
    config.router.error_handler.as_ref().map_or_else(
        || DefaultResultHandler.negative(),
        strata_core::ErrorHandler::negative,
    )
}

/// Points the operations' references at the components' final names and, in 3.2, gives event
/// streams by their items.
fn finish_operations(
    paths: &mut BTreeMap<String, PathItem>,
    merged: &Merged,
    version: OpenApiVersion,
) {
    for operation in paths.values_mut().flat_map(PathItem::operations_mut) {
        for parameter in &mut operation.parameters {
            rewrite_refs(&mut parameter.schema, &merged.input_names);
        }
        let bodies = operation
            .request_body
            .iter_mut()
            .flat_map(|b| b.content.values_mut());
        for media in bodies {
            media
                .schemas_mut()
                .for_each(|schema| rewrite_refs(schema, &merged.input_names));
        }
        for response in operation.responses.values_mut() {
            for (mime, media) in &mut response.content {
                media
                    .schemas_mut()
                    .for_each(|schema| rewrite_refs(schema, &merged.output_names));
                if version == OpenApiVersion::V3_2 && is_event_stream(mime) {
                    // 3.2: `schema` would describe the whole stream, `itemSchema` one event
                    // (what 3.1 documents give as `schema`).
                    media.item_schema = media.schema.take();
                }
            }
            for header in response.headers.values_mut() {
                rewrite_refs(&mut header.schema, &merged.output_names);
            }
        }
    }
}

/// Whether `mime` is `text/event-stream` (parameters and case aside).
fn is_event_stream(mime: &str) -> bool {
    mime.split(';')
        .next()
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("text/event-stream"))
}

fn scheme_name(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn first_example(schema: &Value) -> Option<Value> {
    schema
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|examples| examples.first())
        .or_else(|| schema.get("example"))
        .cloned()
}

/// A field's schema as the document states it: sized integers with their bounds, and no `null`
/// where the field is text (a path, query or header value cannot carry one) nor a `default` of
/// `null` its schema refuses.
fn as_documented(mut schema: Value, text: bool) -> Value {
    with_integer_bounds(&mut schema);
    if text {
        // An `Option` there is a parameter that may be absent.
        without_null(&mut schema);
    } else {
        drop_null_default(&mut schema);
    }
    schema
}

fn parameter(name: &str, schema: &Value, required: bool, location: ParameterLocation) -> Parameter {
    let array = is_array(schema);
    Parameter {
        name: name.to_owned(),
        location,
        required,
        description: schema
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        schema: schema.clone(),
        style: (array && location == ParameterLocation::Query).then(|| "form".to_owned()),
        explode: (array && location == ParameterLocation::Query).then_some(true),
        example: first_example(schema),
    }
}

/// The result handler's success responses, one per declared status (the first call of
/// `success_status` replaces the default).
fn with_success_statuses(
    positive: Vec<ResponseDescription>,
    statuses: &[StatusCode],
) -> Vec<ResponseDescription> {
    if statuses.is_empty() {
        return positive;
    }
    let Some(template) = positive.first().cloned() else {
        return positive;
    };
    statuses
        .iter()
        .map(|status| {
            let mut description = positive
                .iter()
                .find(|d| d.status == *status)
                .cloned()
                .unwrap_or_else(|| template.clone());
            description.status = *status;
            description
        })
        .collect()
}

fn headers_of(headers: &[ResponseHeader]) -> BTreeMap<String, Header> {
    headers
        .iter()
        .map(|header| {
            (
                header.name.clone(),
                Header {
                    description: header.description.clone(),
                    required: header.required,
                    schema: header.schema.as_value().clone(),
                },
            )
        })
        .collect()
}

/// Adds the declared error outcomes to `responses`, each with its own body; where the pipeline
/// answers the same status too, the body is either (one schema when they are the same) and
/// the description both (once when they say the same).
fn merge_declared_errors(
    responses: &mut BTreeMap<String, Response>,
    declared: Vec<ResponseDescription>,
    generators: &Generators,
) {
    for description in declared {
        let mut declared = response(&description, None, &[]);
        // A body that is one of the error envelopes (a bodyless outcome answered as the
        // handler's error, a handler whose error format is the outcome's body) is that
        // envelope's shared component: the same body twice is not an `anyOf` of itself.
        for media in declared.content.values_mut() {
            if let Some(shared) = media
                .schema
                .as_ref()
                .and_then(|schema| generators.known_error_envelope(schema))
            {
                media.schema = Some(shared);
            }
        }
        match responses.entry(description.status.as_str().to_owned()) {
            std::collections::btree_map::Entry::Vacant(entry) => {
                entry.insert(declared);
            }
            std::collections::btree_map::Entry::Occupied(mut entry) => {
                let existing = entry.get_mut();
                if declared.description != existing.description {
                    existing.description =
                        format!("{}; or: {}", declared.description, existing.description);
                }
                existing.headers.extend(declared.headers);
                for (mime, media) in declared.content {
                    match existing.content.get_mut(&mime) {
                        Some(known) if known.schema != media.schema => {
                            known.schema = Some(serde_json::json!({
                                "anyOf": [media.schema, known.schema.take()]
                            }));
                        }
                        Some(_) => {}
                        None => {
                            existing.content.insert(mime, media);
                        }
                    }
                }
            }
        }
    }
}

fn response(
    description: &ResponseDescription,
    text: Option<String>,
    extra_headers: &[ResponseHeader],
) -> Response {
    let mut headers = headers_of(&description.headers);
    headers.extend(headers_of(extra_headers));
    let text = text
        .or_else(|| description.description.clone())
        .unwrap_or_else(|| {
            description
                .status
                .canonical_reason()
                .unwrap_or("Response")
                .to_owned()
        });
    // These statuses have no body (RFC 9110): hyper sends none whatever the handler wrote.
    let bodiless = matches!(description.status.as_u16(), 204 | 205 | 304);
    Response {
        description: text,
        headers,
        content: description
            .mime_types
            .iter()
            .filter(|_| !bodiless)
            .map(|mime| {
                (
                    mime.clone(),
                    MediaType::new(description.schema.as_value().clone()),
                )
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_use_braces_and_ids_camel_case() {
        assert_eq!(openapi_path("/v1/users/:id"), "/v1/users/{id}");
        assert_eq!(openapi_path("/"), "/");
        assert_eq!(
            derived_operation_id(&Method::GET, "/v1/users/:id"),
            "getV1UsersId"
        );
        assert_eq!(
            derived_operation_id(&Method::POST, "/v1/book-covers/:book_id"),
            "postV1BookCoversBookId"
        );
        assert_eq!(derived_operation_id(&Method::GET, "/"), "get");
    }
}
