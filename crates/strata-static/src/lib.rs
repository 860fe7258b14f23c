//! Static files for Strata routing ([`ServeStatic`], spec section 4.2): the files of a
//! directory served under a routing key's path, by tower-http's `ServeDir` behind Strata's
//! rules: JSON 404s (the error handler's), dotfiles refused unless allowed, no path escaping
//! the directory, express's `Cache-Control` and `; charset=utf-8`, and a file's bytes sent
//! from a file opened for each chunk (so that a download that waits holds no descriptor).
//!
//! ```
//! use strata_static::{Dotfiles, ServeStatic, StaticOptions};
//!
//! let assets = ServeStatic::new("assets", StaticOptions::default().dotfiles(Dotfiles::Deny));
//! assert_eq!(assets.directory(), std::path::Path::new("assets"));
//! ```

use std::path::PathBuf;

use http::HeaderValue;

mod service;

pub use service::StaticService;

/// What to do with files whose name starts with a dot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dotfiles {
    /// Serve them like other files.
    Allow,
    /// Refuse them (a 404, so their existence is not revealed).
    Deny,
    /// Act as if they did not exist (a 404; the default).
    #[default]
    Ignore,
}

/// Options of [`ServeStatic`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StaticOptions {
    /// Dotfile handling (default: ignore).
    pub dotfiles: Dotfiles,
    /// Serve `index.html` for a directory (default: true).
    pub index: bool,
    /// Redirect a directory without a trailing slash to the path with one (default: true).
    pub redirect: bool,
    /// The `Cache-Control` of files, redirects and 304s (default `public, max-age=0`, as
    /// express's static files: caches keep them but revalidate through `ETag` and
    /// `Last-Modified`); `None` sends none.
    pub cache_control: Option<HeaderValue>,
}

impl StaticOptions {
    strata_core::setters! {
        /// Sets [`dotfiles`](Self::dotfiles).
        dotfiles(dotfiles: Dotfiles) => dotfiles = dotfiles;
        /// Sets [`index`](Self::index).
        index(serve: bool) => index = serve;
        /// Sets [`redirect`](Self::redirect).
        redirect(redirect: bool) => redirect = redirect;
        /// Sets [`cache_control`](Self::cache_control).
        cache_control(value: Option<HeaderValue>) => cache_control = value;
    }
}

impl Default for StaticOptions {
    fn default() -> Self {
        Self {
            dotfiles: Dotfiles::default(),
            index: true,
            redirect: true,
            cache_control: Some(HeaderValue::from_static(DEFAULT_CACHE_CONTROL)),
        }
    }
}

/// The default `Cache-Control` of static files.
pub const DEFAULT_CACHE_CONTROL: &str = "public, max-age=0";

/// The files of a directory, served under the key's path (GET and HEAD), with ranges, `ETag`
/// and `Last-Modified` and content types, by tower-http's `ServeDir`. Missing files, refused
/// dotfiles and any path escaping the directory are the JSON 404.
#[derive(Debug, Clone)]
pub struct ServeStatic {
    dir: PathBuf,
    options: StaticOptions,
}

impl ServeStatic {
    /// Serves `dir` with `options`.
    pub fn new(dir: impl Into<PathBuf>, options: StaticOptions) -> Self {
        Self {
            dir: dir.into(),
            options,
        }
    }

    /// Serves `dir` with the default options.
    pub fn dir(dir: impl Into<PathBuf>) -> Self {
        Self::new(dir, StaticOptions::default())
    }

    /// The directory served.
    pub fn directory(&self) -> &std::path::Path {
        &self.dir
    }

    /// The options.
    pub fn options(&self) -> &StaticOptions {
        &self.options
    }
}
