//! Startup: flatten the tree, check it, build the trie and the per-path method tables.

use std::collections::HashMap;
use std::sync::Arc;

use http::{HeaderValue, Method};
use strata_core::{Security, is_query, query_method};
use strata_cors::{Cors, PathCors};
use strata_endpoint::{Endpoint, EndpointId, PipelineSettings, SharedService};
use strata_input::InputSource;
use strata_static::{ServeStatic, StaticService};

use crate::error::RoutingError;
use crate::settings::{MethodLikeRouteBehavior, RouterSettings};
use crate::tree::{Route, Routing};

/// The methods an endpoint may serve (HEAD comes with GET, OPTIONS with CORS).
fn routable(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) || is_query(method)
}

fn method_key(key: &str) -> Option<Method> {
    match key {
        "get" => Some(Method::GET),
        "post" => Some(Method::POST),
        "put" => Some(Method::PUT),
        "patch" => Some(Method::PATCH),
        "delete" => Some(Method::DELETE),
        "query" => Some(query_method()),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Segment {
    Static(String),
    Param(String),
}

fn display(segments: &[Segment]) -> String {
    if segments.is_empty() {
        return "/".to_owned();
    }
    segments
        .iter()
        .map(|s| match s {
            Segment::Static(s) => format!("/{s}"),
            Segment::Param(p) => format!("/:{p}"),
        })
        .collect()
}

/// The trie's pattern: parameters by position, so `:id` and `:slug` at one place are one shape.
fn shape(segments: &[Segment]) -> String {
    if segments.is_empty() {
        return "/".to_owned();
    }
    let mut index = 0;
    segments
        .iter()
        .map(|s| match s {
            Segment::Static(s) => format!("/{s}"),
            Segment::Param(_) => {
                index += 1;
                format!("/{{p{}}}", index - 1)
            }
        })
        .collect()
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=@".contains(c)
}

fn parse_segment(raw: &str, key: &str, parent: &[Segment]) -> Result<Segment, RoutingError> {
    let invalid = |reason| RoutingError::InvalidKey {
        key: key.to_owned(),
        parent: display(parent),
        reason,
    };
    if raw.is_empty() {
        return Err(invalid("empty path segment"));
    }
    if let Some(name) = raw.strip_prefix(':') {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(invalid(
                "a parameter name is letters, digits and underscores",
            ));
        }
        return Ok(Segment::Param(name.to_owned()));
    }
    if raw == "." || raw == ".." {
        return Err(invalid(
            "`.` and `..` are not path segments (clients remove them)",
        ));
    }
    if !raw.chars().all(is_path_char) {
        return Err(invalid(
            "a segment is ASCII letters, digits and -._~!$&'()*+,;=@",
        ));
    }
    Ok(Segment::Static(raw.to_owned()))
}

fn parse_path(raw: &str, key: &str, parent: &[Segment]) -> Result<Vec<Segment>, RoutingError> {
    let mut segments = parent.to_vec();
    let trimmed = raw.strip_prefix('/').unwrap_or(raw);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    if !trimmed.is_empty() {
        for part in trimmed.split('/') {
            segments.push(parse_segment(part, key, parent)?);
        }
    }
    Ok(segments)
}

/// One endpoint route after flattening.
pub(crate) struct FlatRoute {
    pub(crate) method: Method,
    segments: Vec<Segment>,
    pub(crate) endpoint: Endpoint,
}

/// A static directory after flattening.
pub(crate) struct FlatStatic {
    segments: Vec<Segment>,
    serve: ServeStatic,
}

struct Flattener {
    behavior: MethodLikeRouteBehavior,
    routes: Vec<FlatRoute>,
    statics: Vec<FlatStatic>,
}

impl Flattener {
    fn add_endpoint(
        &mut self,
        segments: &[Segment],
        endpoint: &Endpoint,
        explicit: Option<Method>,
    ) -> Result<(), RoutingError> {
        let path = display(segments);
        let declared = &endpoint.meta().methods;
        let methods = match explicit {
            Some(method) => {
                if !declared.is_empty() && !declared.contains(&method) {
                    return Err(RoutingError::MethodNotSupported { method, path });
                }
                vec![method]
            }
            None => endpoint.methods().to_vec(),
        };
        for method in methods {
            if !routable(&method) {
                return Err(RoutingError::UnsupportedMethod { method, path });
            }
            if let Some(declared) = &endpoint.meta().declared
                && (declared.method != method || declared.path != path)
            {
                return Err(RoutingError::NotAsDeclared {
                    declared: declared.to_string(),
                    mounted: format!("{method} {path}"),
                });
            }
            for segment in segments {
                if let Segment::Param(name) = segment
                    && !endpoint.meta().input_fields.iter().any(|f| f == name)
                {
                    return Err(RoutingError::UnknownParam {
                        param: name.clone(),
                        method,
                        path,
                    });
                }
            }
            self.routes.push(FlatRoute {
                method,
                segments: segments.to_vec(),
                endpoint: endpoint.clone(),
            });
        }
        Ok(())
    }

    fn walk(&mut self, parent: &[Segment], routing: &Routing) -> Result<(), RoutingError> {
        for (key, route) in &routing.entries {
            if key.is_empty() {
                return Err(RoutingError::InvalidKey {
                    key: key.clone(),
                    parent: display(parent),
                    reason: "an empty key (`Routing::operation` mounts only endpoints built with \
                             `implement(&OPERATION, ..)`)",
                });
            }
            // "<method> <path>"
            if let Some((method, path)) = key.split_once(' ') {
                let invalid = |reason| RoutingError::InvalidKey {
                    key: key.clone(),
                    parent: display(parent),
                    reason,
                };
                let method = method_key(method).ok_or_else(|| {
                    invalid(
                        "expected `<method> <path>` with get, post, put, patch, delete or query",
                    )
                })?;
                if !path.starts_with('/') {
                    return Err(invalid("the path of `<method> <path>` starts with /"));
                }
                let Route::Endpoint(endpoint) = route else {
                    return Err(invalid("a `<method> <path>` key holds an endpoint"));
                };
                let segments = parse_path(path, key, parent)?;
                self.add_endpoint(&segments, endpoint, Some(method))?;
                continue;
            }
            if self.behavior == MethodLikeRouteBehavior::Method
                && let (Some(method), Route::Endpoint(endpoint)) = (method_key(key), route)
            {
                self.add_endpoint(parent, endpoint, Some(method))?;
                continue;
            }
            let segments = if key.starts_with('/') {
                parse_path(key, key, parent)?
            } else {
                let mut segments = parent.to_vec();
                segments.push(parse_segment(key, key, parent)?);
                segments
            };
            match route {
                Route::Endpoint(endpoint) => self.add_endpoint(&segments, endpoint, None)?,
                Route::Nested(endpoint, children) => {
                    self.add_endpoint(&segments, endpoint, None)?;
                    self.walk(&segments, children)?;
                }
                Route::Routing(children) => self.walk(&segments, children)?,
                Route::Static(serve) => {
                    if segments.iter().any(|s| matches!(s, Segment::Param(_))) {
                        return Err(RoutingError::InvalidKey {
                            key: key.clone(),
                            parent: display(parent),
                            reason: "static files are served under a path without parameters",
                        });
                    }
                    self.statics.push(FlatStatic {
                        segments,
                        serve: serve.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// What a path answers to one method.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) service: SharedService,
    /// Parameter names in path order (the trie knows them by position).
    pub(crate) params: Arc<[Arc<str>]>,
    pub(crate) endpoint: Option<Endpoint>,
    /// The route as written (`/v1/users/:id`); for static files, the mount's path.
    pub(crate) path: Arc<str>,
}

/// Everything a path answers, with its header values computed once.
pub(crate) struct PathTable {
    pub(crate) methods: Vec<(Method, Target)>,
    /// `Some` for static directories: GET and HEAD go there, other methods find nothing (404).
    pub(crate) statics: Option<Target>,
    /// The `Allow` list of an endpoint path (also its CORS methods); `None` for static files.
    pub(crate) allow: Option<HeaderValue>,
    /// What CORS says of this path (its default headers only with a CORS function: 10,000
    /// paths would otherwise hold 10,000 unused maps, 3 MiB).
    pub(crate) cors: PathCors,
}

impl PathTable {
    pub(crate) fn find(&self, method: &Method) -> Option<&Target> {
        if let Some(statics) = &self.statics {
            return (*method == Method::GET || *method == Method::HEAD).then_some(statics);
        }
        let wanted = if *method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        self.methods
            .iter()
            .find(|(m, _)| m == wanted)
            .map(|(_, t)| t)
    }
}

/// `DELETE, GET, PATCH, HEAD, OPTIONS`: declared methods alphabetically, then HEAD when GET is
/// there, then OPTIONS when CORS is on.
fn allow_header(methods: &[Method], cors: bool) -> HeaderValue {
    let mut names: Vec<&str> = methods.iter().map(Method::as_str).collect();
    names.sort_unstable();
    names.dedup();
    if methods.contains(&Method::GET) {
        names.push("HEAD");
    }
    if cors {
        names.push("OPTIONS");
    }
    HeaderValue::from_str(&names.join(", ")).unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn conflict(
    displays: &HashMap<String, String>,
    route: String,
    error: matchit::InsertError,
) -> RoutingError {
    let with = match error {
        matchit::InsertError::Conflict { with } => displays.get(&with).cloned().unwrap_or(with),
        other => other.to_string(),
    };
    RoutingError::Conflict { route, with }
}

/// The compiled routing.
pub(crate) struct Compiled {
    pub(crate) trie: matchit::Router<usize>,
    pub(crate) tables: Vec<PathTable>,
    /// What CORS says of unknown paths.
    pub(crate) not_found_cors: PathCors,
    /// Static directories with the path they are served under.
    pub(crate) mounts: Vec<(String, ServeStatic)>,
}

pub(crate) fn compile(
    routing: &Routing,
    router: &RouterSettings,
    pipeline: &PipelineSettings,
) -> Result<Compiled, RoutingError> {
    let cors = router
        .cors
        .as_ref()
        .ok_or(RoutingError::CorsNotConfigured)?;
    if pipeline.uploads.is_some() && !strata_endpoint::MULTIPART {
        return Err(RoutingError::UploadsNotBuilt);
    }
    if pipeline.cookie_keys.is_none()
        && let Some(method) = pipeline.input_sources.reading(InputSource::SignedCookies)
    {
        return Err(RoutingError::NoCookieKeys { method });
    }
    let mut flattener = Flattener {
        behavior: router.method_like_route_behavior,
        routes: Vec::new(),
        statics: Vec::new(),
    };
    flattener.walk(&[], routing)?;

    let mut trie = matchit::Router::new();
    let mut tables: Vec<PathTable> = Vec::with_capacity(flattener.routes.len());
    let mut shapes: HashMap<String, usize> = HashMap::new();
    // The trie's patterns, shown to users as routes.
    let mut displays: HashMap<String, String> = HashMap::new();
    // One service per endpoint, however many paths it is mounted at.
    let mut services: HashMap<EndpointId, SharedService> = HashMap::new();
    for route in flattener.routes {
        let path = display(&route.segments);
        let pattern = shape(&route.segments);
        let params: Arc<[Arc<str>]> = route
            .segments
            .iter()
            .filter_map(|s| match s {
                Segment::Param(name) => Some(Arc::from(name.as_str())),
                Segment::Static(_) => None,
            })
            .collect();
        let service = services
            .entry(route.endpoint.id())
            .or_insert_with(|| route.endpoint.shared_service(pipeline))
            .clone();
        let target = Target {
            service,
            params,
            endpoint: Some(route.endpoint),
            path: Arc::from(path.as_str()),
        };
        if let Some(&index) = shapes.get(&pattern) {
            let methods = &mut tables[index].methods;
            if methods.iter().any(|(method, _)| *method == route.method) {
                return Err(RoutingError::Duplicate {
                    method: route.method,
                    path,
                });
            }
            methods.push((route.method, target));
        } else {
            let shown = format!("{} {path}", route.method);
            trie.insert(pattern.clone(), tables.len())
                .map_err(|e| conflict(&displays, shown, e))?;
            displays.insert(pattern.clone(), path);
            shapes.insert(pattern, tables.len());
            tables.push(PathTable {
                methods: vec![(route.method, target)],
                statics: None,
                allow: None,
                cors: PathCors::default(),
            });
        }
    }
    // Paths with the same methods share one `Allow` value.
    let mut allows: HashMap<Vec<Method>, HeaderValue> = HashMap::new();
    for table in &mut tables {
        let methods: Vec<Method> = table.methods.iter().map(|(m, _)| m.clone()).collect();
        let allow = allows
            .entry(methods)
            .or_insert_with_key(|methods| allow_header(methods, cors.is_enabled()))
            .clone();
        table.cors = PathCors::new(cors, Some(&allow), &header_credentials(table));
        table.allow = Some(allow);
    }
    let mounts = add_statics(
        flattener.statics,
        router.error_handler.as_ref(),
        cors,
        &mut trie,
        &mut tables,
        &mut displays,
    )?;
    Ok(Compiled {
        trie,
        tables,
        not_found_cors: PathCors::new(cors, None, &[]),
        mounts,
    })
}

/// The header credentials the middleware of a path's endpoints declare.
fn header_credentials(table: &PathTable) -> Vec<&str> {
    table
        .methods
        .iter()
        .filter_map(|(_, target)| target.endpoint.as_ref())
        .flat_map(|endpoint| endpoint.meta().security.iter().flat_map(Security::leaves))
        .filter_map(|security| match security {
            Security::Header { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

/// Inserts the static directories after the endpoints (a path both serve is a conflict).
fn add_statics(
    statics: Vec<FlatStatic>,
    errors: Option<&strata_core::ErrorHandler>,
    cors: &Cors,
    trie: &mut matchit::Router<usize>,
    tables: &mut Vec<PathTable>,
    displays: &mut HashMap<String, String>,
) -> Result<Vec<(String, ServeStatic)>, RoutingError> {
    let mut mounts = Vec::with_capacity(statics.len());
    for flat in statics {
        let prefix = display(&flat.segments);
        let prefix = if prefix == "/" { String::new() } else { prefix };
        let service = StaticService::new(&flat.serve, &prefix, errors.cloned()).shared();
        let root = if prefix.is_empty() {
            "/".to_owned()
        } else {
            prefix.clone()
        };
        let target = Target {
            service,
            params: Arc::from([]),
            endpoint: None,
            path: Arc::from(root.as_str()),
        };
        mounts.push((root.clone(), flat.serve.clone()));
        let shown = format!("static files under {root}");
        for pattern in [root.clone(), format!("{prefix}/{{*path}}")] {
            trie.insert(pattern.clone(), tables.len())
                .map_err(|e| conflict(displays, shown.clone(), e))?;
            displays.insert(pattern, shown.clone());
            tables.push(PathTable {
                methods: Vec::new(),
                statics: Some(target.clone()),
                allow: None,
                cors: PathCors::new(cors, None, &[]),
            });
        }
    }
    Ok(mounts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_lists_methods_alphabetically_then_head_then_options() {
        let methods = [Method::PATCH, Method::GET, Method::DELETE];
        assert_eq!(
            allow_header(&methods, true),
            "DELETE, GET, PATCH, HEAD, OPTIONS"
        );
        assert_eq!(allow_header(&[Method::POST], false), "POST");
        let with_query = [query_method(), Method::POST, Method::GET];
        assert_eq!(
            allow_header(&with_query, true),
            "GET, POST, QUERY, HEAD, OPTIONS"
        );
    }

    #[test]
    fn shapes_number_parameters() {
        let segments = parse_path("/a/:id/b/:slug", "k", &[]).unwrap();
        assert_eq!(shape(&segments), "/a/{p0}/b/{p1}");
        assert_eq!(display(&segments), "/a/:id/b/:slug");
        assert_eq!(shape(&[]), "/");
    }

    #[test]
    fn segments_are_checked() {
        for bad in [
            "",
            "a b",
            "a{b",
            "caf\u{e9}",
            ":",
            ":a-b",
            "a%20",
            ".",
            "..",
        ] {
            assert!(parse_segment(bad, bad, &[]).is_err(), "{bad:?}");
        }
        for good in ["v1", "a.b", "x-y_z", ":id", ":user_id"] {
            assert!(parse_segment(good, good, &[]).is_ok(), "{good:?}");
        }
    }
}
