//! The service of a static directory: tower-http's `ServeDir` behind the routing's rules (JSON
//! 404s, dotfiles).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, LOCATION};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri};
use strata_core::error_response;
use strata_core::{ApiError, Body, ErrorHandler, ErrorKind, Logger};
use strata_endpoint::SharedService;
use strata_input::text::percent_decode;
use strata_output::CheckedFile;
use tower_http::services::ServeDir;
use tower_http::services::fs::ServeFileSystemResponseBody;
use tower_service::Service;

use crate::{Dotfiles, ServeStatic, StaticOptions};

/// The longest file name the common file systems accept (`NAME_MAX`).
const MAX_SEGMENT_BYTES: usize = 255;
/// The longest path below a mount served (well under `PATH_MAX`).
const MAX_PATH_BYTES: usize = 2048;

/// Why a path is not looked up.
enum Refused {
    /// A dotfile, an escape, a bad escape: the JSON 404, as if it did not exist.
    NotFound,
    /// Longer than a file system takes: a 400 naming the limit.
    TooLong(&'static str, usize),
}

/// A [`ServeStatic`] mounted at a path: what routing calls for the paths under it.
#[derive(Clone)]
pub struct StaticService {
    dir: ServeDir,
    root: Arc<PathBuf>,
    /// The directory's real path, found on first use (it may not exist at startup).
    real_root: Arc<OnceLock<PathBuf>>,
    prefix: Arc<str>,
    options: StaticOptions,
    /// The configuration's handler of errors outside endpoints.
    errors: Option<ErrorHandler>,
}

/// `ServeDir`'s answer as the routing gives it: files, ranges, caching and redirects with
/// express's headers; anything else the 404 of the error handler.
fn answer(
    response: Response<Body>,
    context: &ErrorContext,
    cache_control: Option<HeaderValue>,
    path: &str,
) -> Response<Body> {
    let status = response.status();
    match status {
        StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED => {
            context.respond(ApiError::route_not_found(&context.method, path))
        }
        // What a file server answers on purpose: files, ranges, caching, redirects.
        _ if status.is_success()
            || status.is_redirection()
            || status == StatusCode::PRECONDITION_FAILED
            || status == StatusCode::RANGE_NOT_SATISFIABLE =>
        {
            let mut response = response;
            finish_headers(response.headers_mut(), cache_control);
            response
        }
        // Anything else (a redirect `ServeDir` cannot build) is not the client's business.
        _ => {
            context.logger.debug(format_args!(
                "static files: {status} for {path}, answered 404"
            ));
            context.respond(ApiError::route_not_found(&context.method, path))
        }
    }
}

/// `ServeDir`'s answer to a GET with the file's bytes sent from a [`CheckedFile`], opened for
/// each chunk: `ServeDir`'s own body keeps the file open until the response is sent, so
/// downloads that wait (HTTP/2 streams without window) would hold a descriptor each. The file
/// `ServeDir` sent (`file`, or its `index.html`) is checked again; when it is no longer the one
/// `ServeDir` measured, its own body is kept.
async fn reopened(
    response: Response<ServeFileSystemResponseBody>,
    file: PathBuf,
    index: bool,
) -> Response<Body> {
    let Some((first, count, total)) = sent_span(&response) else {
        return response.map(Body::new);
    };
    let checked = tokio::task::spawn_blocking(move || {
        let served = if index && file.is_dir() {
            file.join("index.html")
        } else {
            file
        };
        CheckedFile::check(served)
    })
    .await;
    match checked {
        Ok(Ok(checked)) if checked.len() == total => {
            // Dropping `ServeDir`'s body closes its file.
            let (parts, _open) = response.into_parts();
            Response::from_parts(parts, checked.body(first, count))
        }
        _ => response.map(Body::new),
    }
}

/// The bytes a 200 or 206 of a file sends: the first, how many, and the file's length.
fn sent_span<B>(response: &Response<B>) -> Option<(u64, u64, u64)> {
    let number =
        |name| -> Option<u64> { response.headers().get(name)?.to_str().ok()?.parse().ok() };
    match response.status() {
        StatusCode::OK => {
            let len = number(CONTENT_LENGTH)?;
            (len > 0).then_some((0, len, len))
        }
        StatusCode::PARTIAL_CONTENT => {
            let range = response.headers().get(CONTENT_RANGE)?.to_str().ok()?;
            let (span, total) = range.strip_prefix("bytes ")?.split_once('/')?;
            let (first, last) = span.split_once('-')?;
            let (first, last): (u64, u64) = (first.parse().ok()?, last.parse().ok()?);
            let total = total.parse().ok()?;
            (first <= last && last < total).then_some((first, last - first + 1, total))
        }
        _ => None,
    }
}

/// The answer to an error `ServeDir` met instead of a file. Its `try_call` gives the error
/// itself (its `call` makes every one an empty 404 or 500, and so cannot tell a shortage from
/// a broken file): a shortage of descriptors or memory is a 503 to retry; anything else (no
/// such file, no permission, a name the OS refuses) the 404 of a file that is not there.
fn unreadable(error: io::Error, context: &ErrorContext, path: &str) -> ApiError {
    let error = match ApiError::from_shortage(error) {
        Ok(shortage) => {
            // A rate-limited warning: clients cause it at will.
            let line = format_args!("static files: {path}, answered 503");
            strata_log::server_error(&context.logger, line, &shortage);
            return shortage;
        }
        Err(error) => error,
    };
    if error.kind() != io::ErrorKind::NotFound {
        context.logger.debug(format_args!(
            "static files: {error} for {path}, answered 404"
        ));
    }
    ApiError::route_not_found(&context.method, path)
}

/// What an error answer needs once the request went to `ServeDir`.
struct ErrorContext {
    errors: Option<ErrorHandler>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    logger: Logger,
}

impl ErrorContext {
    fn respond(&self, error: ApiError) -> Response<Body> {
        match &self.errors {
            None => error_response(error),
            Some(handler) => {
                handler.respond(error, &self.method, &self.uri, &self.headers, &self.logger)
            }
        }
    }
}

impl StaticService {
    /// Serves `serve` under `prefix`, errors formatted by `errors` (the default envelope when
    /// `None`).
    pub fn new(serve: &ServeStatic, prefix: &str, errors: Option<ErrorHandler>) -> Self {
        let dir = ServeDir::new(serve.directory())
            .append_index_html_on_directories(serve.options().index)
            .redirect_to_trailing_slash(serve.options().redirect)
            .redirect_path_prefix(prefix);
        Self {
            dir,
            root: Arc::new(serve.directory().to_path_buf()),
            real_root: Arc::default(),
            prefix: Arc::from(prefix),
            options: serve.options().clone(),
            errors,
        }
    }

    /// The response to `error` for a request of `parts` to `uri`.
    fn error(&self, error: ApiError, parts: &http::request::Parts, uri: &Uri) -> Response<Body> {
        match self.errors.as_ref() {
            None => error_response(error),
            Some(handler) => {
                let logger = Logger::from_extensions(&parts.extensions);
                handler.respond(error, &parts.method, uri, &parts.headers, &logger)
            }
        }
    }

    /// As routing holds services.
    pub fn shared(self) -> SharedService {
        SharedService::new(self)
    }

    /// The path inside the directory and the file it names, or why it must not be served.
    fn inner_path<'a>(&self, path: &'a str) -> Result<(&'a str, PathBuf), Refused> {
        let rest = path.strip_prefix(&*self.prefix).ok_or(Refused::NotFound)?;
        let rest = if rest.is_empty() { "/" } else { rest };
        if rest.len() > MAX_PATH_BYTES {
            return Err(Refused::TooLong("path", MAX_PATH_BYTES));
        }
        let mut relative = PathBuf::new();
        for segment in rest.split('/') {
            let decoded =
                percent_decode(segment.as_bytes(), false, 0).map_err(|_| Refused::NotFound)?;
            if decoded.len() > MAX_SEGMENT_BYTES {
                return Err(Refused::TooLong("path segment", MAX_SEGMENT_BYTES));
            }
            if decoded.contains(['/', '\\', '\0']) || decoded == ".." {
                return Err(Refused::NotFound);
            }
            if decoded.starts_with('.') && self.options.dotfiles != Dotfiles::Allow {
                return Err(Refused::NotFound);
            }
            if !decoded.is_empty() && decoded != "." {
                relative.push(&*decoded);
            }
        }
        Ok((rest, self.root.join(relative)))
    }
}

/// Whether `file` (resolving symbolic links) is inside `root`. A file that does not exist is
/// left to `ServeDir`, which answers 404.
async fn stays_inside(
    root: &Path,
    real_root: &OnceLock<PathBuf>,
    file: PathBuf,
    index: bool,
) -> bool {
    let root = match real_root.get() {
        Some(root) => root.clone(),
        None => match tokio::fs::canonicalize(root).await {
            Ok(real) => real_root.get_or_init(|| real).clone(),
            Err(_) => return false,
        },
    };
    let Ok(real) = tokio::fs::canonicalize(&file).await else {
        return true;
    };
    if !real.starts_with(&root) {
        return false;
    }
    if index
        && tokio::fs::metadata(&real).await.is_ok_and(|m| m.is_dir())
        && let Ok(real_index) = tokio::fs::canonicalize(real.join("index.html")).await
    {
        return real_index.starts_with(&root);
    }
    true
}

/// What express's static files send and `ServeDir` does not: `Cache-Control`, and a charset on
/// text (files are served as they are; UTF-8 is the web's text encoding).
fn finish_headers(headers: &mut http::HeaderMap, cache_control: Option<HeaderValue>) {
    if let Some(value) = cache_control {
        headers.entry(CACHE_CONTROL).or_insert(value);
    }
    let with_charset = headers.get(CONTENT_TYPE).and_then(|value| {
        let text = value.to_str().ok()?;
        let essence = text.split(';').next()?.trim().to_ascii_lowercase();
        let textual = essence.starts_with("text/")
            || essence == "application/javascript"
            || essence == "application/json";
        (textual && !text.to_ascii_lowercase().contains("charset="))
            .then(|| HeaderValue::from_str(&format!("{text}; charset=utf-8")).ok())
            .flatten()
    });
    if let Some(value) = with_charset {
        headers.insert(CONTENT_TYPE, value);
    }
}

type BoxedFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl Service<Request<Body>> for StaticService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxedFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Service::<Request<Body>>::poll_ready(&mut self.dir, cx)
    }

    fn call(&mut self, request: Request<Body>) -> BoxedFuture {
        let (mut parts, body) = request.into_parts();
        let original = parts.uri.clone();
        let path = original.path();
        // With the URI as the client sent it (the one in `parts` is rewritten for `ServeDir`).
        let respond =
            |error: ApiError, parts: &http::request::Parts| self.error(error, parts, &original);
        if path == &*self.prefix
            && !self.prefix.is_empty()
            && self.options.redirect
            && self.options.index
        {
            // `/public` → `/public/`, so relative links in its index resolve under the mount.
            let location = match original.query() {
                Some(query) => format!("{path}/?{query}"),
                None => format!("{path}/"),
            };
            let response = HeaderValue::from_str(&location).map_or_else(
                |_| {
                    respond(
                        ApiError::route_not_found(&parts.method, original.path()),
                        &parts,
                    )
                },
                |location| {
                    let mut response = Response::new(Body::empty());
                    *response.status_mut() = StatusCode::TEMPORARY_REDIRECT;
                    response.headers_mut().insert(LOCATION, location);
                    response
                },
            );
            return Box::pin(std::future::ready(Ok(response)));
        }
        let inner = self.inner_path(path).and_then(|(rest, file)| {
            let target = match original.query() {
                Some(query) => format!("{rest}?{query}"),
                None => rest.to_owned(),
            };
            Ok((target.parse::<Uri>().map_err(|_| Refused::NotFound)?, file))
        });
        let (uri, file) = match inner {
            Ok(found) => found,
            Err(Refused::NotFound) => {
                let response = respond(
                    ApiError::route_not_found(&parts.method, original.path()),
                    &parts,
                );
                return Box::pin(std::future::ready(Ok(response)));
            }
            Err(Refused::TooLong(what, limit)) => {
                let error = ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!("The {what} is too long: at most {limit} bytes"),
                )
                .with_kind(ErrorKind::Routing);
                return Box::pin(std::future::ready(Ok(respond(error, &parts))));
            }
        };
        let logger = Logger::from_extensions(&parts.extensions);
        let context = ErrorContext {
            errors: self.errors.clone(),
            method: parts.method.clone(),
            uri: original.clone(),
            // A copy only for a handler that reads them.
            headers: if self
                .errors
                .as_ref()
                .is_some_and(ErrorHandler::reads_headers)
            {
                parts.headers.clone()
            } else {
                HeaderMap::new()
            },
            logger: logger.clone(),
        };
        parts.uri = uri;
        let mut dir = self.dir.clone();
        let root = Arc::clone(&self.root);
        let real_root = Arc::clone(&self.real_root);
        let index = self.options.index;
        let cache_control = self.options.cache_control.clone();
        Box::pin(async move {
            if !stays_inside(&root, &real_root, file.clone(), index).await {
                return Ok(
                    context.respond(ApiError::route_not_found(&context.method, original.path()))
                );
            }
            match dir.try_call(Request::from_parts(parts, body)).await {
                Ok(response) => {
                    let response = if context.method == Method::GET {
                        reopened(response, file, index).await
                    } else {
                        response.map(Body::new)
                    };
                    Ok(answer(response, &context, cache_control, original.path()))
                }
                Err(error) => {
                    let error = unreadable(error, &context, original.path());
                    Ok(context.respond(error))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> ErrorContext {
        ErrorContext {
            errors: None,
            method: Method::GET,
            uri: Uri::from_static("/public/a.txt"),
            headers: HeaderMap::new(),
            logger: Logger::default(),
        }
    }

    #[test]
    fn a_shortage_of_descriptors_or_memory_is_a_503_to_retry() {
        let mut errors = vec![io::Error::from(io::ErrorKind::OutOfMemory)];
        if cfg!(unix) {
            // EMFILE, ENFILE, ENOMEM.
            errors.extend([24, 23, 12].map(io::Error::from_raw_os_error));
        }
        for error in errors {
            let text = error.to_string();
            let answer = unreadable(error, &context(), "/public/a.txt");
            assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE, "{text}");
            assert_eq!(answer.headers().unwrap()[http::header::RETRY_AFTER], "1");
            assert!(answer.message().contains("retry"), "{}", answer.message());
        }
    }

    #[test]
    fn other_errors_are_the_404_of_a_missing_file() {
        for kind in [
            io::ErrorKind::NotFound,
            io::ErrorKind::PermissionDenied,
            io::ErrorKind::InvalidInput,
        ] {
            let answer = unreadable(io::Error::from(kind), &context(), "/public/a.txt");
            assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{kind}");
            assert_eq!(answer.message(), "Can not GET /public/a.txt");
        }
    }
}
