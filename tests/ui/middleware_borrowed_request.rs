// `Middleware::new` lends the request parts: reading them inside `async move` does not
// compile. The docs say to copy what is needed first, or to use `Middleware::owned`.
use strata::prelude::*;

fn main() {
    let _auth = Middleware::new(|(): (), request, _logger| async move {
        match request.headers.get("token") {
            Some(_) => Ok(()),
            None => Err(http_error!(401, "No token")),
        }
    });
}
