//! Static directories: tower-http's `ServeDir` behind the routing's rules (JSON 404s, dotfiles).

use std::convert::Infallible;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use http::header::LOCATION;
use http::{HeaderValue, Request, Response, StatusCode, Uri};
use strata_core::text::percent_decode;
use strata_core::{RequestBody, ResponseBody, SharedService};
use tower_http::services::ServeDir;
use tower_service::Service;

use crate::router::not_found;
use crate::tree::{Dotfiles, ServeStatic, StaticOptions};

#[derive(Clone)]
pub(crate) struct StaticService {
    dir: ServeDir,
    root: Arc<PathBuf>,
    /// The directory's real path, found on first use (it may not exist at startup).
    real_root: Arc<OnceLock<PathBuf>>,
    prefix: Arc<str>,
    options: StaticOptions,
}

impl StaticService {
    pub(crate) fn new(serve: &ServeStatic, prefix: &str) -> Self {
        let dir = ServeDir::new(&serve.dir)
            .append_index_html_on_directories(serve.options.index)
            .redirect_to_trailing_slash(serve.options.redirect)
            .redirect_path_prefix(prefix);
        Self {
            dir,
            root: Arc::new(serve.dir.clone()),
            real_root: Arc::default(),
            prefix: Arc::from(prefix),
            options: serve.options,
        }
    }

    pub(crate) fn shared(self) -> SharedService {
        SharedService::new(self)
    }

    /// The path inside the directory and the file it names, or `None` when it must not be
    /// served (a dotfile, an escape, a bad escape).
    fn inner_path<'a>(&self, path: &'a str) -> Option<(&'a str, PathBuf)> {
        let rest = path.strip_prefix(&*self.prefix)?;
        let rest = if rest.is_empty() { "/" } else { rest };
        let mut relative = PathBuf::new();
        for segment in rest.split('/') {
            let decoded = percent_decode(segment.as_bytes(), false, 0).ok()?;
            if decoded.contains(['/', '\\', '\0']) || decoded == ".." {
                return None;
            }
            if decoded.starts_with('.') && self.options.dotfiles != Dotfiles::Allow {
                return None;
            }
            if !decoded.is_empty() && decoded != "." {
                relative.push(&*decoded);
            }
        }
        Some((rest, self.root.join(relative)))
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

type BoxedFuture = Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

impl Service<Request<RequestBody>> for StaticService {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = BoxedFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Service::<Request<RequestBody>>::poll_ready(&mut self.dir, cx)
    }

    fn call(&mut self, request: Request<RequestBody>) -> BoxedFuture {
        let (mut parts, body) = request.into_parts();
        let original = parts.uri.clone();
        let path = original.path();
        let not_found_here = |method: &http::Method| not_found(method, original.path());
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
                |_| not_found_here(&parts.method),
                |location| {
                    let mut response = Response::new(ResponseBody::empty());
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
            Some((target.parse::<Uri>().ok()?, file))
        });
        let Some((uri, file)) = inner else {
            return Box::pin(std::future::ready(Ok(not_found_here(&parts.method))));
        };
        parts.uri = uri;
        let method = parts.method.clone();
        let mut dir = self.dir.clone();
        let root = Arc::clone(&self.root);
        let real_root = Arc::clone(&self.real_root);
        let index = self.options.index;
        Box::pin(async move {
            if !stays_inside(&root, &real_root, file, index).await {
                return Ok(not_found(&method, original.path()));
            }
            let response = match dir.call(Request::from_parts(parts, body)).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok(match response.status() {
                StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED => {
                    not_found(&method, original.path())
                }
                _ => response.map(ResponseBody::stream),
            })
        })
    }
}
