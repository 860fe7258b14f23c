//! The seam between endpoints and routing: what an endpoint is once built, type-erased
//! ([`Endpoint`]: its [`EndpointMeta`] and a way to build its service), and what every
//! endpoint's stages are built with ([`PipelineSettings`], with the application's own layers
//! after the body, [`AfterBody`]).
//!
//! Routing needs an endpoint's methods, the names of its input fields (to check `:param`s),
//! its descriptions, and a service to call, built once for the settings it is given; the
//! facade's `EndpointsFactory` builds an [`Endpoint`] from typed parts, stacking the seven
//! stages.

pub mod after_body;
mod endpoint;
mod settings;

pub use after_body::{AfterBody, AfterBodyInner, AfterBodyService, layer_error};
pub use endpoint::{
    AnyBody, Endpoint, EndpointFuture, EndpointId, EndpointMeta, EndpointService, EndpointStack,
    SharedService, into_request_body,
};
pub use settings::PipelineSettings;

/// Whether this build reads `multipart/form-data` bodies (Strata's `upload` feature): uploads
/// configured without it are refused at startup.
pub const MULTIPART: bool = strata_parse::MULTIPART;
