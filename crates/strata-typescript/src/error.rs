//! [`IntegrationError`]: what the generator cannot type, named by route and schema.

use strata_openapi::DocumentationError;

/// Why no client could be generated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IntegrationError {
    /// The routing cannot be described (the client is generated from the same description).
    #[error("the routing cannot be described: {0}")]
    Documentation(#[from] DocumentationError),
    /// A schema has no TypeScript type.
    #[error("{request}: {schema} has no TypeScript type at {at}: {problem}")]
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
    #[error(
        "{request}: the client sends JSON or multipart bodies, the operation reads {}",
        .media_types.join(", ")
    )]
    Body {
        /// The request (`post /v1/hooks`).
        request: String,
        /// The media types the operation reads.
        media_types: Vec<String>,
    },
}
