use http::Method;
use strata_routing::RoutingError;

/// Why a routing cannot be described. Each names the route and the problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentationError {
    /// The routing itself is invalid (the server would refuse it too).
    #[error("the routing is invalid: {0}")]
    Routing(#[source] RoutingError),
    /// A `:param` of the path is not a field of the input.
    #[error("{method} {path}: the path parameter `{param}` is not a field of the input")]
    PathParam {
        /// The method.
        method: Method,
        /// The route.
        path: String,
        /// The parameter.
        param: String,
    },
    /// Two operations have one id.
    #[error(
        "{second}: the operation id `{id}` is already used by {first}; choose another with `.operation_id(..)`"
    )]
    DuplicateOperationId {
        /// The id.
        id: String,
        /// The first operation (`GET /v1/users`).
        first: String,
        /// The second one.
        second: String,
    },
    /// An input type whose fields are expected is not an object.
    #[error(
        "{method} {path}: the input `{type_name}` must be an object with fields, its schema is {found}"
    )]
    NotAnObject {
        /// The method.
        method: Method,
        /// The route.
        path: String,
        /// The Rust type.
        type_name: String,
        /// What its schema is instead.
        found: String,
    },
    /// An input field cannot be read where the configuration puts it (an object in the query,
    /// a file on a method that takes no files, a required field no source provides).
    #[error("{method} {path}: the input field `{field}` {problem}")]
    Field {
        /// The method.
        method: Method,
        /// The route.
        path: String,
        /// The field (wire name).
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// Two routes of one path shape name its parameters differently (`/users/:id` and
    /// `/users/:slug`): the router serves them, but an OpenAPI document cannot say so.
    #[error(
        "{second}: its path parameters are named differently from {first}'s at the same places; OpenAPI needs one name per place"
    )]
    ParamNames {
        /// One route (`GET /users/:id`).
        first: String,
        /// The other.
        second: String,
    },
    /// The input takes files but the configuration does not enable uploads.
    #[error(
        "{method} {path}: the input takes files ({}) but uploads are not enabled in the config",
        .fields.join(", ")
    )]
    UploadsDisabled {
        /// The method.
        method: Method,
        /// The route.
        path: String,
        /// The file fields.
        fields: Vec<String>,
    },
}

impl From<RoutingError> for DocumentationError {
    fn from(error: RoutingError) -> Self {
        match error {
            RoutingError::UnknownParam {
                param,
                method,
                path,
            } => Self::PathParam {
                method,
                path,
                param,
            },
            other => Self::Routing(other),
        }
    }
}
