//! Static directories: tower-http's `ServeDir` behind the routing's rules (JSON 404s, dotfiles).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response, StatusCode, Uri};
use strata_core::text::percent_decode;
use strata_core::{EndpointService, RequestBody, ResponseBody};
use tower::util::BoxCloneSyncService;
use tower_http::services::ServeDir;
use tower_service::Service;

use crate::router::not_found;
use crate::tree::{Dotfiles, ServeStatic};

#[derive(Clone)]
pub(crate) struct StaticService {
    dir: ServeDir,
    prefix: Arc<str>,
    dotfiles: Dotfiles,
}

impl StaticService {
    pub(crate) fn new(serve: &ServeStatic, prefix: &str) -> Self {
        let dir = ServeDir::new(&serve.dir)
            .append_index_html_on_directories(serve.options.index)
            .redirect_to_trailing_slash(serve.options.redirect)
            .redirect_path_prefix(prefix);
        Self {
            dir,
            prefix: Arc::from(prefix),
            dotfiles: serve.options.dotfiles,
        }
    }

    pub(crate) fn boxed(self) -> EndpointService {
        BoxCloneSyncService::new(self)
    }

    /// The path inside the directory, or `None` when it must not be served.
    fn inner_path<'a>(&self, path: &'a str) -> Option<&'a str> {
        let rest = path.strip_prefix(&*self.prefix)?;
        let rest = if rest.is_empty() { "/" } else { rest };
        for segment in rest.split('/') {
            let decoded = percent_decode(segment.as_bytes(), false, 0).ok()?;
            if decoded.contains(['/', '\\']) || decoded == ".." {
                return None;
            }
            if decoded.starts_with('.') && self.dotfiles != Dotfiles::Allow {
                return None;
            }
        }
        Some(rest)
    }
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
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        let inner = self.inner_path(&path).and_then(|rest| {
            let target = match request.uri().query() {
                Some(query) => format!("{rest}?{query}"),
                None => rest.to_owned(),
            };
            target.parse::<Uri>().ok()
        });
        let Some(uri) = inner else {
            return Box::pin(std::future::ready(Ok(not_found(&method, &path))));
        };
        let (mut parts, body) = request.into_parts();
        parts.uri = uri;
        let future = self.dir.call(Request::from_parts(parts, body));
        Box::pin(async move {
            let response = match future.await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok(match response.status() {
                StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED => not_found(&method, &path),
                _ => response.map(ResponseBody::stream),
            })
        })
    }
}
