//! The axum reference: `Query`/`Json`/`Path` extractors, a `from_fn` middleware, garde by hand,
//! the same envelope.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, Request};
use axum::http::{Method, StatusCode, Uri};
use axum::middleware::{Next, from_fn};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use garde::Validate;
use serde::Serialize;
use tower_http::cors::{Any, CorsLayer};

use crate::model::{
    BulkOrder, CatalogInput, GENERATED_ROUTES, HelloInput, Order, Pong, User, UserInput,
    UserOutput, authenticate, catalog, describe_report, generated_path, hello, summarize,
    summarize_bulk,
};

#[derive(Serialize)]
struct Success<T> {
    status: &'static str,
    data: T,
}

#[derive(Serialize)]
struct Failure {
    status: &'static str,
    error: Message,
}

#[derive(Serialize)]
struct Message {
    message: String,
}

fn ok<T: Serialize>(data: T) -> Response {
    Json(Success {
        status: "success",
        data,
    })
    .into_response()
}

fn fail(status: StatusCode, message: String) -> Response {
    (
        status,
        Json(Failure {
            status: "error",
            error: Message { message },
        }),
    )
        .into_response()
}

async fn hello_handler(query: Result<Query<HelloInput>, QueryRejection>) -> Response {
    let Query(input) = match query {
        Ok(query) => query,
        Err(rejection) => return fail(StatusCode::BAD_REQUEST, rejection.body_text()),
    };
    if let Err(report) = input.validate() {
        return fail(StatusCode::BAD_REQUEST, describe_report(&report));
    }
    ok(hello(&input))
}

async fn order_handler(body: Result<Json<Order>, JsonRejection>) -> Response {
    let Json(order) = match body {
        Ok(body) => body,
        Err(rejection) => return fail(rejection.status(), rejection.body_text()),
    };
    if let Err(report) = order.validate() {
        return fail(StatusCode::BAD_REQUEST, describe_report(&report));
    }
    ok(summarize(order))
}

/// The large-input scenario's endpoint. axum's `Json` reads up to its default body limit
/// (2 MB), well over the ~100 KiB body.
async fn bulk_order_handler(body: Result<Json<BulkOrder>, JsonRejection>) -> Response {
    let Json(order) = match body {
        Ok(body) => body,
        Err(rejection) => return fail(rejection.status(), rejection.body_text()),
    };
    if let Err(report) = order.validate() {
        return fail(StatusCode::BAD_REQUEST, describe_report(&report));
    }
    ok(summarize_bulk(order))
}

/// The large-output scenario's endpoint: the list serialized by axum's `Json`, as the others.
async fn products_handler(query: Result<Query<CatalogInput>, QueryRejection>) -> Response {
    let Query(input) = match query {
        Ok(query) => query,
        Err(rejection) => return fail(StatusCode::BAD_REQUEST, rejection.body_text()),
    };
    if let Err(report) = input.validate() {
        return fail(StatusCode::BAD_REQUEST, describe_report(&report));
    }
    ok(catalog(&input))
}

async fn auth(mut request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get("token")
        .map(axum::http::HeaderValue::as_bytes);
    match authenticate(token) {
        Some(user) => {
            request.extensions_mut().insert(user);
            next.run(request).await
        }
        None => fail(StatusCode::UNAUTHORIZED, "Invalid token".to_owned()),
    }
}

async fn user_handler(Path(id): Path<String>, Extension(user): Extension<User>) -> Response {
    let input = UserInput { id };
    if let Err(report) = input.validate() {
        return fail(StatusCode::BAD_REQUEST, describe_report(&report));
    }
    ok(UserOutput {
        id: input.id,
        name: user.name,
    })
}

async fn pong() -> Response {
    ok(Pong { pong: true })
}

async fn not_found(method: Method, uri: Uri) -> Response {
    fail(
        StatusCode::NOT_FOUND,
        format!("Can not {method} {}", uri.path()),
    )
}

async fn wrong_method(method: Method) -> Response {
    fail(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not allowed"),
    )
}

/// The axum reference application.
pub(crate) fn app(many_routes: bool) -> Router {
    let users = Router::new()
        .route("/v1/users/{id}", get(user_handler))
        .route_layer(from_fn(auth));
    let mut router = Router::new()
        .route("/v1/hello", get(hello_handler))
        .route("/v1/orders", post(order_handler))
        .route("/v1/bulk-orders", post(bulk_order_handler))
        .route("/v1/products", get(products_handler))
        .merge(users);
    if many_routes {
        for i in 0..GENERATED_ROUTES {
            router = router.route(&generated_path(i), get(pong));
        }
    }
    router
        .fallback(not_found)
        .method_not_allowed_fallback(wrong_method)
        .layer(
            CorsLayer::new()
                .allow_origin(Any)
                .allow_methods(Any)
                .allow_headers([
                    axum::http::header::CONTENT_TYPE,
                    axum::http::header::AUTHORIZATION,
                ]),
        )
}

/// Binds `addr` and serves the axum reference on it with `axum::serve`. Call from a tokio
/// runtime.
pub(crate) async fn spawn(
    addr: std::net::SocketAddr,
    many_routes: bool,
) -> std::io::Result<(std::net::SocketAddr, tokio::task::JoinHandle<()>)> {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    // `into_make_service` prepares the routes once; `serve(listener, router)` would do it
    // again for every connection (O(routes) each: ~10 ms and ~10 MiB per connection with
    // 10,000 routes).
    let app = app(many_routes).into_make_service();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((addr, task))
}
