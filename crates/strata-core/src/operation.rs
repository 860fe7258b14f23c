//! Operations declared once, shared by the server that implements them and the clients that
//! call them.
//!
//! An [`Operation`] is a method, a path and two types, the input and the output, with no
//! handler: a `const` in a crate (or module) that both sides depend on. The server implements
//! it (the facade's `EndpointBuilder::implement`, whose handler must take the declared input
//! and return the declared output) and routing checks that it is mounted where it says; a
//! client (`strata-client`) calls it with the same types. A changed type breaks both sides at
//! compile time, and nothing is generated.
//!
//! ```
//! use strata_core::Operation;
//!
//! # struct BookId; struct Book;
//! pub const GET_BOOK: Operation<BookId, Book> = Operation::get("/v1/books/:id");
//!
//! assert_eq!(GET_BOOK.method(), http::Method::GET);
//! assert_eq!(GET_BOOK.path(), "/v1/books/:id");
//! assert_eq!(GET_BOOK.to_string(), "GET /v1/books/:id");
//! ```
//!
//! An event-stream operation (server-sent events) declares [`Events`] of its event type as
//! its output: the server implements it with the facade's `EndpointBuilder::implement_events`
//! and a client subscribes to it (`strata-client`'s `Client::subscribe`), a stream of typed
//! events.
//!
//! ```
//! use strata_core::{Events, Operation};
//!
//! # struct CountdownInput; enum Countdown {}
//! pub const COUNTDOWN: Operation<CountdownInput, Events<Countdown>> = Operation::get("/countdown");
//! # let _ = COUNTDOWN;
//! ```

use std::fmt;
use std::marker::PhantomData;

use derive_where::derive_where;
use http::Method;

/// A declared operation: its method and path, and its input `I` and output `O` types.
///
/// The path is written as routing displays it: segments after `/`, path parameters as `:name`
/// (fields of `I`).
// Whatever `I` and `O` are: an operation is a method and a path (the marker names the types).
#[derive_where(Clone, Copy, Debug)]
pub struct Operation<I, O> {
    method: &'static str,
    path: &'static str,
    types: PhantomData<fn(I) -> O>,
}

/// One constructor per method: `name => "METHOD"`.
macro_rules! constructors {
    ($($name:ident => $method:literal;)*) => {$(
        #[doc = concat!("A ", $method, " operation at `path`.")]
        pub const fn $name(path: &'static str) -> Self {
            Self {
                method: $method,
                path,
                types: PhantomData,
            }
        }
    )*};
}

impl<I, O> Operation<I, O> {
    constructors! {
        get => "GET";
        post => "POST";
        put => "PUT";
        patch => "PATCH";
        delete => "DELETE";
        query => "QUERY";
    }

    /// The method.
    pub fn method(&self) -> Method {
        method_of(self.method)
    }

    /// The path, `:name` for a parameter.
    pub const fn path(&self) -> &'static str {
        self.path
    }

    /// Where the operation is declared to be mounted.
    pub fn declared_route(&self) -> DeclaredRoute {
        DeclaredRoute {
            method: self.method(),
            path: self.path,
        }
    }
}

fn method_of(name: &str) -> Method {
    match name {
        "GET" => Method::GET,
        "POST" => Method::POST,
        "PUT" => Method::PUT,
        "PATCH" => Method::PATCH,
        "DELETE" => Method::DELETE,
        _ => crate::query_method(),
    }
}

impl<I, O> fmt::Display for Operation<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

/// An output sent as bytes, not as an envelope (a file, a stream): a client reads an operation
/// with such an output as a download (a stream of bytes), not as JSON. Implemented by
/// `strata_output`'s `FileResponse` and `StreamResponse`.
pub trait StreamedOutput {}

/// The output of an event-stream operation: not one value but a stream of events of `E`, an
/// enum whose variants are the events (the server's `Emitter<E>` sends them, a client's
/// subscription reads them back).
///
/// Only a marker for [`Operation`]'s output type: no value of it exists. It is neither an
/// output a handler returns nor a body a call reads, so an event-stream operation can only be
/// implemented as one (`EndpointBuilder::implement_events`) and subscribed to
/// (`Client::subscribe`).
pub struct Events<E>(PhantomData<fn() -> E>);

/// Where an endpoint that implements an [`Operation`] must be mounted: routing refuses it
/// anywhere else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredRoute {
    /// The method.
    pub method: Method,
    /// The path, as routing displays it.
    pub path: &'static str,
}

impl fmt::Display for DeclaredRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_constructor_declares_its_method() {
        let all: [Operation<(), ()>; 6] = [
            Operation::get("/a"),
            Operation::post("/a"),
            Operation::put("/a"),
            Operation::patch("/a"),
            Operation::delete("/a"),
            Operation::query("/a"),
        ];
        let methods: Vec<String> = all.iter().map(|op| op.method().to_string()).collect();
        assert_eq!(methods, ["GET", "POST", "PUT", "PATCH", "DELETE", "QUERY"]);
        assert_eq!(
            all[5].declared_route(),
            DeclaredRoute {
                method: crate::query_method(),
                path: "/a"
            }
        );
        assert_eq!(all[1].declared_route().to_string(), "POST /a");
    }
}
