//! Routes serving the document and a page that renders it.

use std::convert::Infallible;
use std::fmt::Write as _;

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Method, Response};
use strata_core::Body;
use strata_endpoint::{Endpoint, EndpointMeta};
use tower::util::BoxCloneSyncService;

use crate::document::OpenApi;

/// An endpoint left out of API descriptions that answers GET with `body` as `content_type`.
fn fixed(body: Bytes, content_type: &'static str) -> Endpoint {
    let mut meta = EndpointMeta::default();
    meta.methods = vec![Method::GET];
    meta.undocumented = true;
    Endpoint::from_parts(meta, move |_config| {
        let body = body.clone();
        BoxCloneSyncService::new(tower::service_fn(move |_request| {
            let mut response = Response::new(Body::from(body.clone()));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            response
                .headers_mut()
                .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            std::future::ready(Ok::<_, Infallible>(response))
        }))
    })
}

/// An endpoint serving `doc` as JSON (`application/json`), for a routing key such as
/// `"openapi.json"`. It is not itself described in documents.
///
/// ```
/// # fn demo(doc: strata_openapi::OpenApi, api: strata_routing::Routing) {
/// use strata_openapi::openapi_endpoint;
/// use strata_routing::routing;
///
/// let routing = routing! { "api" => api, "openapi.json" => openapi_endpoint(&doc) };
/// # }
/// ```
pub fn openapi_endpoint(doc: &OpenApi) -> Endpoint {
    fixed(Bytes::from(doc.to_json()), "application/json")
}

/// An endpoint serving `doc` as YAML (`application/yaml`).
pub fn openapi_yaml_endpoint(doc: &OpenApi) -> Endpoint {
    fixed(Bytes::from(doc.to_yaml()), "application/yaml")
}

/// The version of Swagger UI the default page loads from its public CDN: pinned, so that the
/// page does not change under the application (the same as `tests/tools/package.json`'s, whose
/// files CI checks the integrity hashes below against).
pub const SWAGGER_UI_VERSION: &str = "5.35.0";
/// The default Swagger UI script (its public CDN build, at [`SWAGGER_UI_VERSION`]).
pub const SWAGGER_UI_SCRIPT: &str =
    "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5.35.0/swagger-ui-bundle.js";
/// The subresource integrity of [`SWAGGER_UI_SCRIPT`]: a browser refuses a script that is not
/// these bytes (a CDN serving something else).
pub const SWAGGER_UI_SCRIPT_INTEGRITY: &str =
    "sha384-gjRm0bEPMeTmMh5jT2cHccIwCUZSTd8YC+j0d0sXw0MdGEfScduGpSyF3ZSSLkX9";
/// The default Swagger UI style sheet (its public CDN build, at [`SWAGGER_UI_VERSION`]).
pub const SWAGGER_UI_STYLESHEET: &str =
    "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5.35.0/swagger-ui.css";
/// The subresource integrity of [`SWAGGER_UI_STYLESHEET`].
pub const SWAGGER_UI_STYLESHEET_INTEGRITY: &str =
    "sha384-WlYgdmXYOOBWL5apwjDEZwN+U3HmXSSu5R6V5aGxEcf7z+KuRNwBhoxKVN1i3D5I";

/// A page rendering a document with [Swagger UI](https://swagger.io/tools/swagger-ui/), served by
/// [`docs_page`].
///
/// The viewer's script and style come from its public CDN build, at a pinned version and with
/// subresource integrity, unless set: to serve them offline, install the `swagger-ui-dist`
/// package, serve its folder with `ServeStatic` and point [`script_url`](Self::script_url) and
/// [`stylesheet_url`](Self::stylesheet_url) at it (which drops the pinned integrity; give your
/// own with [`script_integrity`](Self::script_integrity) and
/// [`stylesheet_integrity`](Self::stylesheet_integrity) when the assets come from elsewhere).
///
/// ```
/// use strata_openapi::{DocsPage, SWAGGER_UI_SCRIPT_INTEGRITY};
///
/// let html = DocsPage::new("/openapi.json").html();
/// assert!(html.contains("swagger-ui-dist@5.35.0/swagger-ui-bundle.js"));
/// assert!(html.contains(&format!("integrity=\"{SWAGGER_UI_SCRIPT_INTEGRITY}\"")));
/// let offline = DocsPage::new("/openapi.json").script_url("/ui/swagger-ui-bundle.js").html();
/// assert!(!offline.contains(SWAGGER_UI_SCRIPT_INTEGRITY));
/// ```
#[derive(Debug, Clone)]
pub struct DocsPage {
    document_url: String,
    title: String,
    script_url: String,
    stylesheet_url: String,
    script_integrity: Option<String>,
    stylesheet_integrity: Option<String>,
}

impl DocsPage {
    /// A page rendering the document at `document_url` (for example `/openapi.json`).
    pub fn new(document_url: impl Into<String>) -> Self {
        Self {
            document_url: document_url.into(),
            title: "API documentation".to_owned(),
            script_url: SWAGGER_UI_SCRIPT.to_owned(),
            stylesheet_url: SWAGGER_UI_STYLESHEET.to_owned(),
            script_integrity: Some(SWAGGER_UI_SCRIPT_INTEGRITY.to_owned()),
            stylesheet_integrity: Some(SWAGGER_UI_STYLESHEET_INTEGRITY.to_owned()),
        }
    }

    /// The page's title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// Where the browser loads `swagger-ui-bundle.js` from (without an integrity hash, unless
    /// [`script_integrity`](Self::script_integrity) gives one).
    #[must_use]
    pub fn script_url(mut self, url: impl Into<String>) -> Self {
        self.script_url = url.into();
        self.script_integrity = None;
        self
    }

    /// Where the browser loads `swagger-ui.css` from (without an integrity hash, unless
    /// [`stylesheet_integrity`](Self::stylesheet_integrity) gives one).
    #[must_use]
    pub fn stylesheet_url(mut self, url: impl Into<String>) -> Self {
        self.stylesheet_url = url.into();
        self.stylesheet_integrity = None;
        self
    }

    /// The subresource integrity of the script (`sha384-<base64>`).
    #[must_use]
    pub fn script_integrity(mut self, integrity: impl Into<String>) -> Self {
        self.script_integrity = Some(integrity.into());
        self
    }

    /// The subresource integrity of the style sheet (`sha384-<base64>`).
    #[must_use]
    pub fn stylesheet_integrity(mut self, integrity: impl Into<String>) -> Self {
        self.stylesheet_integrity = Some(integrity.into());
        self
    }

    /// The page's HTML.
    pub fn html(&self) -> String {
        let mut html = String::with_capacity(1024);
        let _ = write!(
            html,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{title}</title>\n<link rel=\"stylesheet\" href=\"{css}\"{css_integrity}>\n</head>\n<body>\n\
             <div id=\"swagger-ui\"></div>\n<script src=\"{js}\"{js_integrity}></script>\n<script>\n\
             window.ui = SwaggerUIBundle({{ url: {url}, dom_id: \"#swagger-ui\", deepLinking: true }});\n\
             </script>\n</body>\n</html>\n",
            title = escape_html(&self.title),
            css = escape_html(&self.stylesheet_url),
            js = escape_html(&self.script_url),
            css_integrity = integrity(self.stylesheet_integrity.as_deref()),
            js_integrity = integrity(self.script_integrity.as_deref()),
            url = script_string(&self.document_url),
        );
        html
    }
}

/// The attributes of a subresource integrity check, or nothing.
fn integrity(hash: Option<&str>) -> String {
    hash.map_or_else(String::new, |hash| {
        format!(
            " integrity=\"{}\" crossorigin=\"anonymous\"",
            escape_html(hash)
        )
    })
}

fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// A JavaScript string literal that cannot close the script element.
fn script_string(text: &str) -> String {
    serde_json::to_string(text)
        .unwrap_or_default()
        .replace("</", "<\\/")
}

/// An endpoint serving `page` as `text/html`, for a routing key such as `"docs"`. It is not
/// itself described in documents.
pub fn docs_page(page: &DocsPage) -> Endpoint {
    fixed(Bytes::from(page.html()), "text/html; charset=utf-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_escapes_what_it_embeds() {
        let html = DocsPage::new("/a\"</script>")
            .title("<API>")
            .script_url("/s.js?a=1&b=2")
            .html();
        assert!(html.contains("<title>&lt;API&gt;</title>"));
        assert!(html.contains("src=\"/s.js?a=1&amp;b=2\""));
        assert!(html.contains(r#"url: "/a\"<\/script>""#));
        assert!(html.contains(SWAGGER_UI_STYLESHEET));
    }
}
