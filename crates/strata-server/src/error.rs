use std::fmt;

use strata_routing::RoutingError;

/// Why a server could not start. Reported at startup, never at request time.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerError {
    /// The configuration does not describe a server that can run.
    Config(String),
    /// The routing is invalid.
    Routing(RoutingError),
    /// A listener could not be opened.
    Bind {
        /// The listener, as configured.
        listen: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The TLS material is unusable.
    Tls(String),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(message) => write!(f, "invalid server configuration: {message}"),
            Self::Routing(error) => write!(f, "invalid routing: {error}"),
            Self::Bind { listen, source } => write!(f, "cannot listen on {listen}: {source}"),
            Self::Tls(message) => write!(f, "invalid TLS material: {message}"),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Routing(error) => Some(error),
            Self::Bind { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<RoutingError> for ServerError {
    fn from(error: RoutingError) -> Self {
        Self::Routing(error)
    }
}
