//! [`Config`]: the options every stage reads, built once at startup.

use http::Method;

use crate::input::InputSource;

/// Development shows every error message; production hides the messages of 5xx errors and of
/// errors marked not exposed behind the status's reason phrase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Show every message (the default).
    #[default]
    Development,
    /// Hide internal messages.
    Production,
}

/// Which sources are merged into the input, per method (spec table 2.2).
///
/// HEAD uses GET's sources. Methods outside the five use body, query, params.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSources {
    get: Vec<InputSource>,
    post: Vec<InputSource>,
    put: Vec<InputSource>,
    patch: Vec<InputSource>,
    delete: Vec<InputSource>,
}

const FALLBACK_SOURCES: &[InputSource] =
    &[InputSource::Body, InputSource::Query, InputSource::Params];

impl Default for InputSources {
    fn default() -> Self {
        use InputSource::{Body, Files, Params, Query};
        Self {
            get: vec![Query, Params],
            post: vec![Body, Params, Files],
            put: vec![Body, Params],
            patch: vec![Body, Params],
            delete: vec![Query, Params],
        }
    }
}

impl InputSources {
    /// The sources of `method`, in merge order (later ones win).
    ///
    /// ```
    /// use http::Method;
    /// use strata_core::{InputSource, InputSources};
    ///
    /// let sources = InputSources::default();
    /// assert_eq!(sources.for_method(&Method::HEAD), [InputSource::Query, InputSource::Params]);
    /// ```
    pub fn for_method(&self, method: &Method) -> &[InputSource] {
        match *method {
            Method::GET | Method::HEAD => &self.get,
            Method::POST => &self.post,
            Method::PUT => &self.put,
            Method::PATCH => &self.patch,
            Method::DELETE => &self.delete,
            _ => FALLBACK_SOURCES,
        }
    }

    /// Replaces the sources of `method`, one of GET, POST, PUT, PATCH, DELETE, and returns
    /// `true`; other methods (HEAD follows GET) have no list of their own, and `false` is
    /// returned.
    pub fn set(&mut self, method: &Method, sources: impl Into<Vec<InputSource>>) -> bool {
        let slot = match *method {
            Method::GET => &mut self.get,
            Method::POST => &mut self.post,
            Method::PUT => &mut self.put,
            Method::PATCH => &mut self.patch,
            Method::DELETE => &mut self.delete,
            _ => return false,
        };
        *slot = sources.into();
        true
    }

    /// Whether the body is read for `method` (it is a source, directly or through files).
    pub fn reads_body(&self, method: &Method) -> bool {
        self.for_method(method)
            .iter()
            .any(|s| matches!(s, InputSource::Body | InputSource::Files))
    }
}

/// The default body limit: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;
/// The default limit of parameters in a query string or form body.
pub const DEFAULT_MAX_FIELDS: usize = 1000;

/// The configuration shared by the stages of every endpoint.
///
/// Build it with [`Config::builder`] (the facade's `create_config()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    input_sources: InputSources,
    body_limit: usize,
    max_fields: usize,
    mode: Mode,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            input_sources: InputSources::default(),
            body_limit: DEFAULT_BODY_LIMIT,
            max_fields: DEFAULT_MAX_FIELDS,
            mode: Mode::Development,
        }
    }
}

impl Config {
    /// A builder starting from the defaults.
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder {
            config: Config::default(),
        }
    }

    /// Input sources per method.
    pub fn input_sources(&self) -> &InputSources {
        &self.input_sources
    }

    /// The most body bytes read for one request.
    pub fn body_limit(&self) -> usize {
        self.body_limit
    }

    /// The most parameters accepted in a query string or a form body.
    pub fn max_fields(&self) -> usize {
        self.max_fields
    }

    /// Development or production.
    pub fn mode(&self) -> Mode {
        self.mode
    }
}

/// Builds a [`Config`].
///
/// ```
/// use http::Method;
/// use strata_core::{Config, InputSource, Mode};
///
/// let config = Config::builder()
///     .input_sources(&Method::GET, [InputSource::Headers, InputSource::Query, InputSource::Params])
///     .body_limit(64 * 1024)
///     .production()
///     .build();
/// assert_eq!(config.mode(), Mode::Production);
/// assert_eq!(config.body_limit(), 65536);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ConfigBuilder {
    config: Config,
}

impl ConfigBuilder {
    /// Replaces the input sources of one method (GET, POST, PUT, PATCH or DELETE; HEAD follows
    /// GET; other methods are ignored).
    pub fn input_sources(mut self, method: &Method, sources: impl Into<Vec<InputSource>>) -> Self {
        self.config.input_sources.set(method, sources);
        self
    }

    /// Sets the body limit in bytes (default 1 MiB).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.config.body_limit = bytes;
        self
    }

    /// Sets the limit of query or form parameters (default 1000).
    pub fn max_fields(mut self, fields: usize) -> Self {
        self.config.max_fields = fields;
        self
    }

    /// Sets the mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.config.mode = mode;
        self
    }

    /// Production mode: internal error messages are hidden.
    pub fn production(self) -> Self {
        self.mode(Mode::Production)
    }

    /// The configuration.
    pub fn build(self) -> Config {
        self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_five_methods_have_their_own_sources() {
        let mut sources = InputSources::default();
        assert!(sources.set(&Method::GET, [InputSource::Headers]));
        assert!(!sources.set(&Method::HEAD, [InputSource::Body]));
        assert!(!sources.set(&Method::OPTIONS, [InputSource::Body]));
        assert_eq!(sources.for_method(&Method::HEAD), [InputSource::Headers]);
        assert!(!sources.reads_body(&Method::GET));
        assert!(sources.reads_body(&Method::POST));
    }
}
