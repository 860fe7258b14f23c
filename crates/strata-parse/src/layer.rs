use std::sync::Arc;

use strata_input::InputSources;
use strata_upload::UploadLimits;
use tower_layer::Layer;

use crate::budget::BodyBudget;
use crate::service::ParseService;

/// The default body limit: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;
/// The default limit of parameters in a query string or form body.
pub const DEFAULT_MAX_FIELDS: usize = 1000;

#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) body_limit: usize,
    pub(crate) max_fields: usize,
    pub(crate) input_sources: InputSources,
    pub(crate) upload: Option<UploadLimits>,
    /// Shared by every service given the same budget; `None`: no global budget.
    pub(crate) budget: Option<BodyBudget>,
    /// Bodies of any content type are kept as bytes (`ParsedBody::Raw`), not parsed.
    pub(crate) raw_body: bool,
    /// The input's `StreamedFile` field, when it has one.
    pub(crate) streamed_file: Option<StreamedField>,
    /// A JSON object body's check is left to the reading of the input (`JsonObject::deferred`).
    pub(crate) defer_json_check: bool,
}

/// An input's [`StreamedFile`](strata_input::StreamedFile) field, as the parse stage reads it:
/// a multipart body is read up to that field's part, and the fields `required` must have
/// arrived by then (in the form, the query, the path or the headers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamedField {
    /// The field's name.
    pub name: String,
    /// The input's other required fields.
    pub required: Vec<String>,
}

/// Applies [`ParseService`]: parses query, path parameters and body.
#[derive(Debug, Clone)]
pub struct ParseLayer {
    options: Arc<Options>,
}

impl Default for ParseLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl ParseLayer {
    /// A layer with the defaults: 1 MiB body limit, 1000 parameters, sources of spec table 2.2.
    pub fn new() -> Self {
        Self {
            options: Arc::new(Options {
                body_limit: DEFAULT_BODY_LIMIT,
                max_fields: DEFAULT_MAX_FIELDS,
                input_sources: InputSources::default(),
                upload: None,
                budget: None,
                raw_body: false,
                streamed_file: None,
                defer_json_check: false,
            }),
        }
    }

    /// Reads a multipart body up to the part of `field` (an input's `StreamedFile`), whose
    /// file the handler reads as it arrives (see
    /// [`ReadOptions::stream_field`](strata_upload::ReadOptions::stream_field)). A required field
    /// that has not arrived when the file's part begins is a 400 naming it.
    #[must_use]
    pub fn streamed_file(mut self, field: Option<StreamedField>) -> Self {
        Arc::make_mut(&mut self.options).streamed_file = field;
        self
    }

    /// Keeps bodies of any content type as their bytes (`ParsedBody::Raw`, which the combine
    /// stage puts under the input field `raw`) instead of parsing JSON, forms or multipart:
    /// for endpoints whose input has a [`RawBody`](strata_input::RawBody). The body limit
    /// still applies (413).
    #[must_use]
    pub fn raw_body(mut self, raw: bool) -> Self {
        Arc::make_mut(&mut self.options).raw_body = raw;
        self
    }

    /// Leaves the check of a JSON object body (is it well-formed?) to the reading of the input
    /// into its type, which then checks the body as it reads it: the body is read once instead
    /// of twice ([`JsonObject::deferred`](strata_input::JsonObject::deferred)). A body that is
    /// not JSON is still refused with this stage's 400 and message, by the validate stage's
    /// decoder (`strata_decode::Decoder`), and a body that is not an object here.
    ///
    /// Only for a stack where nothing looks at the request between this stage and the
    /// validate stage but the combine stage (no middleware, no layer after the body): they
    /// would run before a malformed body is refused, and see no members in it. The facade's
    /// endpoints turn it on where that holds. Off by default.
    #[must_use]
    pub fn defer_json_check(mut self, defer: bool) -> Self {
        Arc::make_mut(&mut self.options).defer_json_check = defer;
        self
    }

    /// Shares `budget` of bodies held in memory with every service of this layer (and others
    /// given the same budget): a body reserves its bytes as they arrive, and a request whose
    /// next chunk would go over the budget, or over its client address's share of it, gets a
    /// 503 with `Retry-After: 1` that closes the connection. See [`BodyBudget`].
    #[must_use]
    pub fn body_budget(mut self, budget: BodyBudget) -> Self {
        Arc::make_mut(&mut self.options).budget = Some(budget);
        self
    }

    /// Sets the most body bytes read.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.options).body_limit = bytes;
        self
    }

    /// Sets the most query or form parameters accepted.
    #[must_use]
    pub fn max_fields(mut self, fields: usize) -> Self {
        Arc::make_mut(&mut self.options).max_fields = fields;
        self
    }

    /// Sets the input sources; the body is read only for methods that use it.
    #[must_use]
    pub fn input_sources(mut self, sources: InputSources) -> Self {
        Arc::make_mut(&mut self.options).input_sources = sources;
        self
    }

    /// Turns uploads on: `multipart/form-data` bodies are read within `limits` (see
    /// [`strata_upload::read_multipart`]); without it they are refused with 415.
    #[must_use]
    pub fn upload(mut self, limits: impl Into<UploadLimits>) -> Self {
        Arc::make_mut(&mut self.options).upload = Some(limits.into());
        self
    }
}

impl<S> Layer<S> for ParseLayer {
    type Service = ParseService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ParseService::from_options(inner, Arc::clone(&self.options))
    }
}
