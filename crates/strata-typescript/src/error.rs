//! [`IntegrationError`]: what the generator cannot type, named by route and schema.

use std::fmt;

use strata_openapi::DocumentationError;

/// Why no client could be generated.
#[derive(Debug)]
#[non_exhaustive]
pub enum IntegrationError {
    /// The routing cannot be described (the client is generated from the same description).
    Documentation(DocumentationError),
    /// A schema has no TypeScript type.
    Schema {
        /// The request that uses it (`get /v1/users/:id`).
        request: String,
        /// Which of its schemas: `the input field "when"`, `the response 200 (application/json)`,
        /// or a component (`#/components/schemas/Event`) the request reaches.
        schema: String,
        /// A JSON pointer inside that schema (`/properties/when`), `/` for the schema itself.
        at: String,
        /// What has no type there.
        problem: String,
    },
    /// A request body of media types the client cannot send.
    Body {
        /// The request (`post /v1/hooks`).
        request: String,
        /// The media types the operation reads.
        media_types: Vec<String>,
    },
}

impl fmt::Display for IntegrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Documentation(error) => write!(f, "the routing cannot be described: {error}"),
            Self::Schema {
                request,
                schema,
                at,
                problem,
            } => write!(
                f,
                "{request}: {schema} has no TypeScript type at {at}: {problem}"
            ),
            Self::Body {
                request,
                media_types,
            } => write!(
                f,
                "{request}: the client sends JSON or multipart bodies, the operation reads {}",
                media_types.join(", ")
            ),
        }
    }
}

impl std::error::Error for IntegrationError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Documentation(error) => Some(error),
            _ => None,
        }
    }
}

impl From<DocumentationError> for IntegrationError {
    fn from(error: DocumentationError) -> Self {
        Self::Documentation(error)
    }
}
