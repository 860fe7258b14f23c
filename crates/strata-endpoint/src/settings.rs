//! What every endpoint's stages are built with ([`PipelineSettings`]): the mode, the input
//! sources, the body limits, the body budget, uploads, the layers after the body and the keys
//! of signed cookies. Routing gives it to each endpoint once, at startup.

use strata_combine::CombineLayer;
use strata_core::Mode;
use strata_input::InputSources;
use strata_input::cookies::CookieKeys;
use strata_parse::{
    BodyBudget, DEFAULT_BODY_LIMIT, DEFAULT_MAX_FIELDS, ParseLayer, default_body_budget,
};
use strata_upload::UploadLimits;

use crate::after_body::AfterBody;

/// What every endpoint's stages are built with: the mode, the input sources, the body limits,
/// the body budget and uploads. Routing gives it to each endpoint once, at startup.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PipelineSettings {
    /// Development shows every error message; production (the default) hides internal ones.
    pub mode: Mode,
    /// The sources merged into the input, per method (spec table 2.2).
    pub input_sources: InputSources,
    /// The most body bytes read for one request (default 1 MiB); a larger body is a 413.
    pub body_limit: usize,
    /// The most parameters in a query string or a form body (default 1000); more is a 400.
    pub max_fields: usize,
    /// Bytes of request bodies held in memory at once, over all requests (default 256 MiB, or a
    /// sixteenth of the process's memory where that is less, of which one client address may
    /// hold a quarter; a handle, shared by clones), counted as
    /// bodies arrive: a request whose next chunk would go over it gets a 503 with
    /// `Retry-After` and a closed connection. `None`: no such budget.
    pub body_budget: Option<BodyBudget>,
    /// File uploads (spec 2.3 `upload`): `multipart/form-data` bodies are read within these
    /// limits, their text parts as a form and their files into the `files` source. `None` (the
    /// default): uploads are off and such bodies are refused with 415.
    pub uploads: Option<UploadLimits>,
    /// The application's own tower layers around each endpoint's work, after its body has
    /// been read ([`AfterBody`]): a timeout or a concurrency limit there does not count
    /// uploads still arriving. `None` (the default): none.
    pub after_body: Option<AfterBody>,
    /// The keys signed cookies are verified with ([`InputSource::SignedCookies`]); the first
    /// also signs what the cookie middleware sets. `None` (the default): no signed cookies.
    ///
    /// [`InputSource::SignedCookies`]: strata_input::InputSource::SignedCookies
    pub cookie_keys: Option<CookieKeys>,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        Self {
            mode: Mode::Production,
            input_sources: InputSources::default(),
            body_limit: DEFAULT_BODY_LIMIT,
            max_fields: DEFAULT_MAX_FIELDS,
            body_budget: Some(BodyBudget::new(default_body_budget())),
            uploads: None,
            after_body: None,
            cookie_keys: None,
        }
    }
}

impl PipelineSettings {
    strata_core::setters! {
        /// Sets [`mode`](Self::mode).
        mode(mode: Mode) => mode = mode;
        /// Sets [`input_sources`](Self::input_sources).
        input_sources(sources: InputSources) => input_sources = sources;
        /// Sets [`body_limit`](Self::body_limit).
        body_limit(bytes: usize) => body_limit = bytes;
        /// Sets [`max_fields`](Self::max_fields).
        max_fields(fields: usize) => max_fields = fields;
        /// Sets [`body_budget`](Self::body_budget).
        body_budget(budget: Option<BodyBudget>) => body_budget = budget;
        /// Sets [`uploads`](Self::uploads).
        uploads(limits: Option<UploadLimits>) => uploads = limits;
        /// Sets [`after_body`](Self::after_body).
        after_body(layers: Option<AfterBody>) => after_body = layers;
        /// Sets [`cookie_keys`](Self::cookie_keys).
        cookie_keys(keys: Option<CookieKeys>) => cookie_keys = keys;
    }

    /// The combine stage as these settings say: the sources, and the keys of signed cookies.
    pub fn combine_layer(&self) -> CombineLayer {
        let combine = CombineLayer::with_sources(self.input_sources.clone());
        match &self.cookie_keys {
            Some(keys) => combine.cookie_keys(keys.clone()),
            None => combine,
        }
    }

    /// The parse stage as these settings say: the limits, the sources, the shared body budget
    /// and uploads (what the facade's endpoints and the testing crate build it with).
    pub fn parse_layer(&self) -> ParseLayer {
        let mut parse = ParseLayer::new()
            .body_limit(self.body_limit)
            .max_fields(self.max_fields)
            .input_sources(self.input_sources.clone());
        if let Some(budget) = &self.body_budget {
            parse = parse.body_budget(budget.clone());
        }
        if let Some(limits) = &self.uploads {
            parse = parse.upload(limits.clone());
        }
        parse
    }
}

impl AsRef<PipelineSettings> for PipelineSettings {
    fn as_ref(&self) -> &PipelineSettings {
        self
    }
}
